r"""Machine translation of GNU gettext catalogs (`.po` files), read and written by `po_file`.

`translate_catalog` fills the untranslated entries of a `PoFile` with a
translator's output (one batched call for the whole catalog), marks each one
`fuzzy` so that a person reviews it, and never touches a translation that is
already there: every line of the file but those of the filled entries (and of
the header, when it gains Plural-Forms or Language) comes back as it was.
`write_catalog` saves the result atomically.

Each entry's flags say which placeholders its text has, as for
`msgfmt --check-format`: `c-format`, `python-format`, `python-brace-format`,
`sh-format`; an entry with none of them has none (`50% of the files` is text).
A plural entry's forms come from `msgid` or `msgid_plural` by the counts each
form serves under the header's plural rule (`PluralRule`).

Example:
>>> from keras_transformer.messages.po_file import parse_po
>>> from keras_transformer.tasks.translation import Translation
>>> class Shout:  # any object with `translations(...)` will do
...     target_language = "de"
...     def translations(self, texts, beam_size=4, num_return=1, progress=False,
...                      format_flags=None):
...         return [[Translation(text.upper(), -1.0)] for text in texts]
>>> catalog = parse_po('msgid ""\nmsgstr ""\n"Language: de\\n"\n\nmsgid "Open"\nmsgstr ""\n')
>>> translate_catalog(catalog, Shout()).summary()
'1 translated (0 with notes), 0 kept, 0 obsolete skipped; charset changed to UTF-8'
>>> catalog.entries[1].msgstr, catalog.entries[1].flags
(['OPEN'], ('fuzzy',))
"""

import collections
import dataclasses
import os
import re
import secrets

from keras_transformer.messages import charsets
from keras_transformer.messages.message_checks import format_flags_in_effect
from keras_transformer.messages.message_checks import is_checked
from keras_transformer.messages.message_checks import message_problem
from keras_transformer.messages.placeholders import FORMAT_FLAGS
from keras_transformer.messages.placeholders import find_placeholders
from keras_transformer.messages.placeholders import is_ordered
from keras_transformer.messages.placeholders import matches
from keras_transformer.messages.plural_forms import header_parts
from keras_transformer.messages.plural_forms import PluralRule
from keras_transformer.messages.plural_forms import plural_forms
from keras_transformer.messages.plural_forms import primary_subtag
from keras_transformer.messages.po_file import PoFile
from keras_transformer.messages.po_file import PoSyntaxError
from keras_transformer.termination import terminate_by_exception

_CHARSET = re.compile(r"charset\s*=\s*([^\s;]+)", re.IGNORECASE)
_MAX_FILLED_FORMS = 100
"""The most plural forms an untranslated entry is filled with (msgl-check.c keeps statistics
of at most 100 forms: beyond, no form is checked strictly)."""
_TEMPLATE_PLURAL_FORMS = "INTEGER"  # .pot files say "nplurals=INTEGER; plural=EXPRESSION;"
_MACHINE_NOTE = "machine translation: "
_NUMBERED = re.compile(r"%\d+\$")
_LANGUAGE_CODE = re.compile(r"[A-Za-z]{2,8}(?:[_-][A-Za-z0-9]{1,8})*(?:\.[A-Za-z0-9_-]+)?(?:@[A-Za-z0-9]+)?")
_CHECKED_FORMATS = tuple(flag for flag in FORMAT_FLAGS if flag not in ("any", "none"))


@dataclasses.dataclass(frozen=True)
class CatalogReport:
    """What `translate_catalog` did to one catalog.

    Args:
        translated: entries it filled (each is now flagged `fuzzy`).
        kept: entries that already had a translation (fuzzy ones included),
            left exactly as they were.
        repaired: the filled entries whose translation came with notes (the
            translator changed its output after decoding, e.g. "placeholders
            repaired"); they also got a `machine translation: ...` comment.
            Counted in `translated` too.
        obsolete_skipped: obsolete (`#~`) entries, never translated.
        left_untranslated: entries still empty because the translator
            returned an empty text for one of their forms.
        charset_changed_to: `"UTF-8"` when the catalog's declared charset
            could not hold the new translations (or it declared none) and the
            catalog was switched to UTF-8; None when it kept its charset.

    Example:
    >>> CatalogReport(translated=3, kept=2, repaired=1).summary()
    '3 translated (1 with notes), 2 kept, 0 obsolete skipped'
    """

    translated: int = 0
    kept: int = 0
    repaired: int = 0
    obsolete_skipped: int = 0
    left_untranslated: int = 0
    charset_changed_to: str = None

    def summary(self):
        """One line for people: what was filled, kept and skipped.

        Returns:
            A string without a trailing newline.

        Example:
        >>> CatalogReport(translated=1, left_untranslated=1, charset_changed_to="UTF-8").summary()
        '1 translated (0 with notes), 0 kept, 0 obsolete skipped, 1 left untranslated; charset changed to UTF-8'
        """
        line = (
            f"{self.translated} translated ({self.repaired} with notes), {self.kept} kept, "
            f"{self.obsolete_skipped} obsolete skipped"
        )
        if self.left_untranslated:
            line += f", {self.left_untranslated} left untranslated"
        if self.charset_changed_to:
            line += f"; charset changed to {self.charset_changed_to}"
        return line


def _header_language(catalog):
    return catalog.header_field("Language") or None


def target_language(catalog, translator, language=None):
    """The language to translate a catalog into, checked against its header and the translator.

    Args:
        catalog: a `PoFile`.
        translator: a `Translator` (its `target_language`, when set, is checked).
        language: the language the user named, or None to take the header's.

    Returns:
        The language code, or None when neither the user, the header nor the
        translator names one.

    Raises:
        ValueError: `language` is not a language code, or the three disagree.
    """
    if language is not None and not (isinstance(language, str) and _LANGUAGE_CODE.fullmatch(language)):
        raise ValueError(f"language must be a language code such as 'de', 'pt_BR' or 'sr@latin', "
                         f"or None; got {language!r}.")
    header = _header_language(catalog)
    if language and header and primary_subtag(language) != primary_subtag(header):
        raise ValueError(
            f"language={language!r} but the catalog's header says Language: {header}; "
            "pass a catalog in that language, or no language argument."
        )
    target = language or header
    model = getattr(translator, "target_language", None)
    if target and model and primary_subtag(target) != primary_subtag(model):
        raise ValueError(
            f"the translator translates into {model!r} but the catalog is in {target!r}; "
            "use a translator for that language, or a catalog in the translator's language."
        )
    return target or model


def _is_plural(entry):
    return entry.msgid_plural is not None


def format_flag(entry):
    """The format language of an entry's text: its first format flag in effect as gettext
    reads flags (`format_flags_in_effect`: the last flag of a language decides, and
    `possible-c-format` counts as `c-format`) when it is `c-format`, `python-format`,
    `python-brace-format` or `sh-format`; `"any"` for another format msgfmt checks
    (`perl-format`, `qt-format`, ...: every kind of placeholder known here is kept); else
    `"none"` (msgfmt checks no placeholders then).

    Args:
        entry: a `PoEntry`.

    Example:
    >>> from keras_transformer.messages.po_file import PoEntry
    >>> format_flag(PoEntry(msgid="%d%%", flags=("fuzzy", "c-format"))), format_flag(PoEntry())
    ('c-format', 'none')
    >>> format_flag(PoEntry(flags=("c-format", "no-c-format", "perl-format")))
    'any'
    """
    for flag in format_flags_in_effect(entry.flags):
        return flag if flag in _CHECKED_FORMATS else "any"
    return "none"


def _header_rule(catalog, needed):
    """The header's plural rule, found as GNU gettext finds it: `nplurals=` and `plural=`
    anywhere in the header (`plural-forms:` in lower case too). None when both are missing, or
    for the .pot placeholder `nplurals=INTEGER; plural=EXPRESSION;`.

    Raises:
        ValueError: both are there and do not make a rule (msgfmt --check refuses that, with
            or without plural entries), or one of them is missing and `needed` (the catalog
            has plural entries that need the rule).
    """
    text = _header_text(catalog)
    count_at, expression_at = text.find("nplurals="), text.find("plural=")
    count = _count_text(text)
    if count_at < 0 and expression_at < 0 or _is_template_rule(catalog):
        return None
    if count_at < 0 or expression_at < 0:
        if not needed:
            return None
        raise ValueError(
            f"the catalog's header has {'plural=' if count_at < 0 else 'nplurals='} but no "
            f"{'nplurals=' if count_at < 0 else 'plural='} (msgfmt --check refuses that in a "
            "catalog with plural entries); fix it (e.g. 'Plural-Forms: nplurals=2; "
            "plural=(n != 1);')")
    # gettext's parser ends the expression at ';', a newline or the end of the header.
    expression = header_parts(text)[1]
    digits = re.match(r"[0-9]*", count).group()
    value = f"nplurals={digits or count.partition(';')[0]}; plural={expression.strip(' ')};"
    try:
        return PluralRule.from_header(text, value)  # strtoul's nplurals: at most ULONG_MAX
    except ValueError as error:
        raise ValueError(f"the catalog's header has {error}; fix it (e.g. "
                         "'Plural-Forms: nplurals=2; plural=(n != 1);') or remove it.") from None


def _header_text(catalog):
    return catalog.header.msgstr[0] if catalog.header is not None else ""


def _is_template_rule(catalog):
    """Whether the header has the .pot placeholder `nplurals=INTEGER; plural=EXPRESSION;`."""
    text = _header_text(catalog)
    return "plural=" in text and _count_text(text).startswith(_TEMPLATE_PLURAL_FORMS)


def _count_text(text):
    """What follows the header's first `nplurals=`, after C's white space ("" without one)."""
    return text.partition("nplurals=")[2].lstrip(" \t\n\v\f\r")


def _plural_rule(catalog, language, needed):
    """(the plural rule, the Plural-Forms to write into the header or None). Without plural
    entries (`needed` False) the rule is None, and the header's .pot placeholder
    `nplurals=INTEGER` is still replaced by the language's rule when one is known (msgfmt
    --check refuses the placeholder)."""
    rule = _header_rule(catalog, needed)
    template = _is_template_rule(catalog)
    if rule is not None or not needed and not template:
        return (rule if needed else None), None
    try:
        value = plural_forms(language)
    except ValueError as error:
        if not needed:
            return None, None  # the placeholder stays: no rule is known for the language
        raise ValueError(
            f"the catalog has plural entries, its header has no Plural-Forms, and {error}"
        ) from None
    return (PluralRule.parse(value) if needed else None), value


def _sources(entry, rule, flag):
    """The English text of each form to fill.

    The form that n = 1 takes comes from msgid when it serves no other count
    (English's and German's form 0) and msgid's placeholders are msgid_plural's
    with some left out (`_fewer`), or when msgid has msgid_plural's
    placeholders (Russian's form 0 serves 1, 21, 31, ...: `"%d file"` fits them,
    `"One file"` would not, and msgfmt requires the directive there). Every
    other form comes from msgid_plural, and so does the only form of a
    one-form language (msgfmt checks it against msgid_plural).
    """
    if not _is_plural(entry):
        return [entry.msgid]
    if rule.nplurals == 1:
        return [entry.msgid_plural]
    same = (matches(entry.msgid_plural, entry.msgid, flag)
            and matches(entry.msgid, entry.msgid_plural, flag))
    singular = rule.form(1)
    use_msgid = same or rule.serves_only_one(singular) and _fewer(entry.msgid, entry.msgid_plural, flag)
    return [entry.msgid if form == singular and use_msgid else entry.msgid_plural
            for form in range(rule.nplurals)]


def _fewer(msgid, msgid_plural, flag):
    """Whether msgid's placeholders are msgid_plural's with some left out, as msgfmt allows a
    form serving one count: the ordered ones a prefix of msgid_plural's (they take the same
    arguments), the others among msgid_plural's (`"One file in %s"` fails: its `%s` would
    take the `%d`'s argument)."""
    def split(text):
        found = find_placeholders(text, flag)
        return [p for p in found if is_ordered(p)], collections.Counter(
            p for p in found if not is_ordered(p))

    (ordered, named), (plural_ordered, plural_named) = split(msgid), split(msgid_plural)
    if any(_NUMBERED.match(p) for p in named):  # %2$s alone would skip argument 1: keep all
        return named == plural_named and ordered == plural_ordered
    return ordered == plural_ordered[:len(ordered)] and not named - plural_named


def check_catalog(catalog):
    r"""Refuses a catalog whose existing translations `msgfmt --check` refuses.

    That is: a translation `message_checks.message_problem` finds a problem
    in (a lost directive in a c-format, objc-format, python-format,
    python-brace-format or sh-format entry, a newline at one end of msgid
    only, ...), a translated plural entry with another number of forms than
    the header's Plural-Forms, or without one, and a Plural-Forms that cannot
    be evaluated (even in a catalog without plural entries, as msgfmt does).
    Fuzzy, untranslated and obsolete entries are not checked (msgfmt does not
    compile them); nor are the directives of the format languages
    `message_checks` does not port (java, perl, tcl, ...: its docstring lists
    them), which msgfmt does check. A catalog without a header entry, an
    empty header, and the .pot placeholder `nplurals=INTEGER;
    plural=EXPRESSION;` are refused, as msgfmt --check refuses them; only a
    template (a catalog named `*.pot`) may keep the placeholder, which
    `translate_catalog` replaces with the language's rule.
    `translate_catalog` calls it before any work.

    Args:
        catalog: a `PoFile`.

    Raises:
        PoSyntaxError: the first problem, as `file:line: what`, at the line of
            the entry's first msgstr (where msgfmt reports it; the header's
            for its Plural-Forms, line 1 for a missing header).

    Example:
    >>> from keras_transformer.messages.po_file import parse_po
    >>> check_catalog(parse_po('msgid ""\nmsgstr ""\n"Language: de\\n"\n\n'
    ...                        '#, c-format\nmsgid "%d files"\nmsgstr "Dateien"\n', "de.po"))
    Traceback (most recent call last):
    ...
    keras_transformer.messages.po_file.PoSyntaxError: de.po:7: number of format specifications in 'msgid' and 'msgstr' does not match (msgfmt --check refuses that)
    """
    for line, problem in catalog_problems(catalog):
        raise PoSyntaxError(f"{catalog.name}:{line}: {problem} (msgfmt --check refuses that)")


def catalog_problems(catalog):
    r"""Every existing translation `msgfmt --check` refuses, as `check_catalog` names them.

    Args:
        catalog: a `PoFile`.

    Yields:
        `(line, problem)`: the line of the entry's first msgstr, and msgfmt's
        message for a problem of the translation itself (a plural entry with
        the wrong number of forms, or without a Plural-Forms, in our words);
        problems of the header (none, empty, a Plural-Forms msgfmt refuses)
        in our words, at the header's msgstr line (line 1 without a header).

    Example:
    >>> from keras_transformer.messages.po_file import parse_po
    >>> list(catalog_problems(parse_po('msgid ""\nmsgstr "Language: de\\n"\n\n'
    ...                                'msgid "Done\\n"\nmsgstr "Fertig"\n')))
    [(5, "'msgid' and 'msgstr' entries do not both end with '\\n'")]
    """
    _require_po_file(catalog)
    header = catalog.header
    if header is None:
        yield 1, ("the catalog has no header entry (msgid \"\" with its Content-Type; msgfmt "
                  "--check: PO file header missing or invalid); create the catalog with xgettext "
                  "or msginit")
    elif not header.msgstr[0]:
        yield catalog.msgstr_line(header), ("the header entry is empty (msgfmt --check: PO file "
                                            "header missing or invalid); fill in its Content-Type")
    # A header with msgid_plural is a plural entry to msgfmt too: it needs the Plural-Forms.
    checked = [entry for entry in catalog.entries
               if is_checked(entry) or entry is header and _is_plural(entry)]
    try:
        rule = _header_rule(catalog, needed=any(map(_is_plural, checked)))
    except ValueError as error:  # msgfmt names the header's msgstr line
        yield catalog.msgstr_line(header), str(error)
        return
    if _is_template_rule(catalog) and not catalog.name.lower().endswith(".pot"):
        yield catalog.msgstr_line(header), (
            "the header's Plural-Forms is the .pot placeholder 'nplurals=INTEGER; "
            "plural=EXPRESSION;' (msgfmt --check: invalid nplurals value); fill in the "
            "language's, e.g. 'Plural-Forms: nplurals=2; plural=(n != 1);'")
    for entry in checked:
        if _is_plural(entry) and rule is None:
            problem = ("a translated plural entry, but the header has no Plural-Forms; add one, "
                       "e.g. 'Plural-Forms: nplurals=2; plural=(n != 1);'")
        elif _is_plural(entry) and len(entry.msgstr) != rule.nplurals:
            problem = (f"{len(entry.msgstr)} plural forms, but the header's Plural-Forms says "
                       f"nplurals={rule.nplurals}")
        else:
            problem = message_problem(entry, rule, catalog.encoding)
        if problem:
            yield catalog.msgstr_line(entry), problem


def _translate_texts(translator, keys, beam_size, progress):
    """{(text, format flag): Translation} from one call to `translator.translations`."""
    if not keys:
        return {}
    results = translator.translations([text for text, _ in keys], beam_size=beam_size,
                                      num_return=1, progress=progress,
                                      format_flags=[flag for _, flag in keys])
    if len(results) != len(keys) or not all(results):
        raise ValueError(
            f"translator.translations returned {len(results)} lists for {len(keys)} texts "
            "(some empty); it must return one non-empty list per text."
        )
    return {key: found[0] for key, found in zip(keys, results)}


def _notes(translations):
    notes = []
    for translation in translations:
        notes += [" ".join(str(note).split()) for note in translation.notes]
    return list(dict.fromkeys(notes))


def _header_codec(catalog):
    """The header's charset when Python or glibc's iconv knows it and the catalog was read in
    it, else None (missing, `CHARSET`, unknown, or one msgfmt reads as bytes, as ISO-2022-JP)."""
    match = _CHARSET.search(catalog.header_field("Content-Type") or "")
    if not match:
        return None
    found = charsets.lookup(match.group(1))
    if found is None:
        return None
    return found.name if found.name == catalog.encoding else None


def _encodes(texts, encoding):
    try:
        for text in texts:
            charsets.encode(text, encoding)
    except UnicodeEncodeError:
        return False
    return True


def _utf8_content_type(catalog):
    content_type = catalog.header_field("Content-Type") or ""
    if _CHARSET.search(content_type):
        return _CHARSET.sub("charset=UTF-8", content_type, count=1)
    return f"{content_type or 'text/plain'}; charset=UTF-8"


def _require_po_file(catalog):
    if not isinstance(catalog, PoFile):
        raise TypeError(f"catalog must be a PoFile (read_po(path) or parse_po(text)), "
                        f"got {type(catalog).__name__}.")


def _check_arguments(catalog, beam_size):
    _require_po_file(catalog)
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a whole number >= 1, got {beam_size!r}.")


def translate_catalog(catalog, translator, language=None, beam_size=4, progress=False):
    r"""Fills the untranslated entries of a catalog with machine translations, in place.

    Singular entries get `msgstr`; plural entries get one `msgstr[k]` per
    form of the header's Plural-Forms, each from `msgid` or `msgid_plural` by
    the counts it serves (see the module docstring). When an entry is filled
    and the header has no Plural-Forms, the language's standard one
    (`PLURAL_FORMS`) is written into it if a plural entry is filled, and
    a missing `Language` header is set to the target language; a catalog with
    nothing to fill comes back unchanged.

    Every filled entry is flagged `fuzzy`; one whose translation has notes
    also gets the translator comment `machine translation: <notes>`. Entries
    with any translation (fuzzy ones too) and obsolete entries are left as
    they are, and so is every line of the file outside the filled entries'
    `msgstr`, flags and new comment. All texts go to the translator in one
    `translations` call, each distinct (text, format flag) once. Nothing is
    changed when an error is raised.

    The catalog keeps its charset when every new text encodes in it;
    otherwise (or when it declares none) it is switched to UTF-8.

    Args:
        catalog: a `PoFile` (`read_po(path)` or `parse_po(text)`).
        translator: a `keras_transformer.tasks.Translator`, or any object with
            its `translations(texts, beam_size, num_return, progress,
            format_flags)` method and `target_language` attribute.
        language: the catalog's language code (`"de"`, `"pt_BR"`); None takes
            the header's `Language`, then `translator.target_language`.
        beam_size: the beam width of the search, a whole number >= 1.
        progress: passed on to the translator (show its progress bar).

    Returns:
        A `CatalogReport`.

    Raises:
        ValueError: `language` is not a language code, or disagrees with the
            header's Language or with `translator.target_language` (compared
            by primary subtag: `de_DE` matches `de`); the catalog has plural
            entries, no Plural-Forms and a language missing from
            `PLURAL_FORMS`; the header's Plural-Forms cannot be evaluated or
            gives a form out of range; `beam_size` is not a whole number >= 1;
            the translator returned the wrong number of results.
        PoSyntaxError: an existing translation that `msgfmt --check` refuses
            (`check_catalog`), named by file and line; nothing is translated.
        TypeError: `catalog` is not a `PoFile`.

    Example:
    >>> from keras_transformer.messages.po_file import parse_po
    >>> from keras_transformer.tasks.translation import Translation
    >>> class Tagged:
    ...     target_language = "de"
    ...     def translations(self, texts, beam_size=4, num_return=1, progress=False,
    ...                      format_flags=None):
    ...         return [[Translation("DE:" + t, -1.0, notes=("placeholders repaired",))]
    ...                 for t in texts]
    >>> catalog = parse_po('''msgid ""
    ... msgstr ""
    ... "Content-Type: text/plain; charset=UTF-8\\n"
    ...
    ... #, c-format
    ... msgid "%d file"
    ... msgid_plural "%d files"
    ... msgstr[0] ""
    ... msgstr[1] ""
    ... ''')
    >>> translate_catalog(catalog, Tagged()).summary()
    '1 translated (1 with notes), 0 kept, 0 obsolete skipped'
    >>> print(catalog.text(), end="")
    msgid ""
    msgstr ""
    "Content-Type: text/plain; charset=UTF-8\n"
    "Plural-Forms: nplurals=2; plural=(n != 1);\n"
    "Language: de\n"
    <BLANKLINE>
    # machine translation: placeholders repaired
    #, fuzzy, c-format
    msgid "%d file"
    msgid_plural "%d files"
    msgstr[0] "DE:%d file"
    msgstr[1] "DE:%d files"
    """
    _check_arguments(catalog, beam_size)
    target = target_language(catalog, translator, language)
    live = [entry for entry in catalog.entries if not entry.obsolete and not entry.is_header]
    kept = sum(entry.translated for entry in live)
    todo = [entry for entry in live if not entry.translated]
    plural = [entry for entry in live if _is_plural(entry)]
    check_catalog(catalog)
    rule, new_plural_forms = _plural_rule(catalog, target, bool(plural))
    if rule is not None and rule.nplurals > _MAX_FILLED_FORMS and any(map(_is_plural, todo)):
        raise ValueError(
            f"the header's Plural-Forms says nplurals={rule.nplurals}: more forms than this "
            f"tool fills (at most {_MAX_FILLED_FORMS}, where msgfmt stops checking forms "
            "strictly); fix the header's Plural-Forms (e.g. 'nplurals=2; plural=(n != 1);')")
    flags = {id(entry): format_flag(entry) for entry in todo}
    sources = {id(entry): _sources(entry, rule, flags[id(entry)]) for entry in todo}
    keys = list(dict.fromkeys((text, flags[id(entry)]) for entry in todo
                              for text in sources[id(entry)]))
    found = _translate_texts(translator, keys, beam_size, progress)

    translations = {id(entry): [found[text, flags[id(entry)]] for text in sources[id(entry)]]
                    for entry in todo}
    filled = [entry for entry in todo if all(t.text for t in translations[id(entry)])]
    notes = {id(entry): _notes(translations[id(entry)]) for entry in filled}
    comments = {key: _MACHINE_NOTE + "; ".join(value) for key, value in notes.items() if value}
    texts = [t.text for entry in filled for t in translations[id(entry)]] + list(comments.values())
    charset_changed = bool(filled) and not (
        _header_codec(catalog) is not None and _encodes(texts, catalog.encoding))
    changes = {}
    if filled and new_plural_forms:
        changes["Plural-Forms"] = new_plural_forms
    if filled and target and not _header_language(catalog):
        changes["Language"] = target
    if charset_changed:
        changes["Content-Type"] = _utf8_content_type(catalog)
        catalog.encoding = "utf-8"
    if changes:
        catalog.set_header_fields(changes)
    for entry in filled:
        catalog.fill(entry, [t.text for t in translations[id(entry)]], comments.get(id(entry)))
    return CatalogReport(
        translated=len(filled),
        kept=kept,
        repaired=len(comments),
        obsolete_skipped=sum(entry.obsolete for entry in catalog.entries),
        left_untranslated=len(todo) - len(filled),
        charset_changed_to="UTF-8" if charset_changed else None,
    )


def _new_file_name(target):
    folder, name = os.path.split(target)
    # At most 100 characters of the name: a name near the 255-byte limit still has room.
    return os.path.join(folder, f".{name[:100]}.{secrets.token_hex(4)}.tmp")


def catalog_bytes(catalog):
    """The catalog's text in its encoding, as `write_catalog` writes it.

    Args:
        catalog: a `PoFile`.

    Raises:
        ValueError: the catalog has text its encoding cannot hold.

    Example:
    >>> from keras_transformer.messages.po_file import parse_po
    >>> catalog_bytes(parse_po('msgid "Open"\\nmsgstr "Öffnen"\\n'))
    b'msgid "Open"\\nmsgstr "\\xc3\\x96ffnen"\\n'
    """
    try:
        # surrogateescape: the bytes of comments the charset could not decode, as they were
        return catalog.encoded("surrogateescape")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"the catalog has text that {catalog.encoding} cannot hold ({error}); "
            "translate_catalog switches such a catalog to UTF-8."
        ) from None


def write_catalog(catalog, path):
    """Writes a catalog to `path` atomically, in the catalog's encoding.

    The text goes to a temporary file in the same folder, which then replaces
    `path` in one `os.replace`: a failure, Ctrl-C or SIGTERM leaves `path` as it
    was (or absent) and no temporary file behind (SIGTERM is acted on once the
    temporary file is removed). A `path` that is a symbolic link has its
    target replaced; a file that already exists is replaced, as GNU gettext's
    tools replace their `-o` file, and keeps its permissions.

    Args:
        catalog: a `PoFile`.
        path: where to write (a string or `os.PathLike`).

    Raises:
        ValueError: the catalog has text its encoding cannot hold (pass it
            through `translate_catalog`, which switches to UTF-8 when needed);
            `path` exists and is not a regular file (a folder, a device, a
            pipe: replacing it would destroy it).
        OSError: the folder does not exist or cannot be written.

    Example:
    >>> import os, tempfile
    >>> from keras_transformer.messages.po_file import parse_po, read_po
    >>> catalog = parse_po('msgid "Open"\\nmsgstr "Öffnen"\\n')
    >>> path = os.path.join(tempfile.mkdtemp(), "de.po")
    >>> write_catalog(catalog, path)
    >>> read_po(path).entries[0].msgstr
    ['Öffnen']
    """
    data = catalog_bytes(catalog)
    target = os.path.realpath(os.fspath(path))
    if os.path.exists(target) and not os.path.isfile(target):
        raise ValueError(f"{os.fspath(path)} exists and is not a regular file; "
                         "write the catalog to a file path")
    with terminate_by_exception("write_catalog"):
        _replace(target, data)


def _replace(target, data):
    temporary, descriptor = None, None
    try:
        while descriptor is None:
            temporary = _new_file_name(target)
            try:
                descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                continue
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        if os.path.exists(target):
            os.chmod(temporary, os.stat(target).st_mode & 0o7777)
        os.replace(temporary, target)
    except BaseException:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        raise
