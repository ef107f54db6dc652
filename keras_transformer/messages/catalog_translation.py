r"""Machine translation of GNU gettext catalogs (`.po` files), read and written with polib.

`translate_catalog` fills the untranslated entries of a `polib.POFile` with a
translator's output (one batched call for the whole catalog), marks each one
`fuzzy` so that a person reviews it, and never touches a translation that is
already there. `write_catalog` saves the result atomically.

Example:
>>> import polib
>>> from keras_transformer.tasks.translation import Translation
>>> class Shout:  # any object with `translations(...)` will do
...     target_language = "de"
...     def translations(self, texts, beam_size=4, num_return=1, progress=False):
...         return [[Translation(text.upper(), -1.0)] for text in texts]
>>> catalog = polib.pofile('msgid ""\nmsgstr ""\n"Language: de\\n"\n\nmsgid "Open"\nmsgstr ""\n')
>>> translate_catalog(catalog, Shout()).summary()
'1 translated (0 with notes), 0 kept, 0 obsolete skipped; charset changed to UTF-8'
>>> catalog[0].msgstr, catalog[0].flags
('OPEN', ['fuzzy'])
"""

import codecs
import dataclasses
import os
import re
import secrets

from keras_transformer.messages.placeholders import matches
from keras_transformer.optional_dependencies import require

_GETTEXT_ONE = "nplurals=1; plural=0;"
_GETTEXT_TWO = "nplurals=2; plural=(n != 1);"
_GETTEXT_TWO_FRENCH = "nplurals=2; plural=(n > 1);"
_GETTEXT_SLAVIC = (
    "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
    "(n%100<10 || n%100>=20) ? 1 : 2);"
)

PLURAL_FORMS = {
    # One form.
    "ja": _GETTEXT_ONE,
    "ko": _GETTEXT_ONE,
    "vi": _GETTEXT_ONE,
    "zh": _GETTEXT_ONE,  # not in plural-table.c; CLDR has only "other" for Chinese
    # Two forms, singular for n == 1 only.
    "bg": _GETTEXT_TWO,
    "da": _GETTEXT_TWO,
    "de": _GETTEXT_TWO,
    "el": _GETTEXT_TWO,
    "en": _GETTEXT_TWO,
    "eo": _GETTEXT_TWO,
    "es": _GETTEXT_TWO,
    "et": _GETTEXT_TWO,
    "fi": _GETTEXT_TWO,
    "fo": _GETTEXT_TWO,
    "he": _GETTEXT_TWO,
    "hu": _GETTEXT_TWO,
    "it": _GETTEXT_TWO,
    "nb": _GETTEXT_TWO,
    "nl": _GETTEXT_TWO,
    "nn": _GETTEXT_TWO,
    "no": _GETTEXT_TWO,
    "pt": _GETTEXT_TWO,
    "sv": _GETTEXT_TWO,
    "tr": _GETTEXT_TWO,
    # Two forms, singular for n == 0 and n == 1.
    "fr": _GETTEXT_TWO_FRENCH,
    "pt_BR": _GETTEXT_TWO_FRENCH,
    # Three or four forms.
    "lv": "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n != 0 ? 1 : 2);",
    "ga": "nplurals=3; plural=n==1 ? 0 : n==2 ? 1 : 2;",
    "ro": "nplurals=3; plural=n==1 ? 0 : (n==0 || (n%100 > 0 && n%100 < 20)) ? 1 : 2;",
    "lt": (
        "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && "
        "(n%100<10 || n%100>=20) ? 1 : 2);"
    ),
    "be": _GETTEXT_SLAVIC,
    "hr": _GETTEXT_SLAVIC,
    "ru": _GETTEXT_SLAVIC,
    "sr": _GETTEXT_SLAVIC,
    "uk": _GETTEXT_SLAVIC,
    "cs": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
    "sk": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
    "pl": (
        "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && "
        "(n%100<10 || n%100>=20) ? 1 : 2);"
    ),
    "sl": "nplurals=4; plural=(n%100==1 ? 0 : n%100==2 ? 1 : n%100==3 || n%100==4 ? 2 : 3);",
}
"""GNU `Plural-Forms` header values of common languages, by gettext language code.

Copied from GNU gettext 0.21's `gettext-tools/src/plural-table.c` (the table
`msginit` uses; the strings are the ones the gettext manual lists under
"Plural forms"), plus Chinese (`zh`, one form, as in the Unicode CLDR plural
rules and the Translation Project's `zh_CN`/`zh_TW` catalogs). Look codes up
with `plural_forms`, which also accepts `de_DE`, `zh_CN` or `pt-BR`.
"""

_NPLURALS = re.compile(r"\bnplurals\s*=\s*(\d+)")
_CHARSET = re.compile(r"charset\s*=\s*([^\s;]+)", re.IGNORECASE)
_TEMPLATE_PLURAL_FORMS = "INTEGER"  # .pot files say "nplurals=INTEGER; plural=EXPRESSION;"
_MACHINE_NOTE = "machine translation: "


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


def _language_tag(language):
    """`de_DE.UTF-8@euro` -> `de_DE`; `pt-BR` -> `pt_BR`."""
    return re.split(r"[.@]", language.strip(), maxsplit=1)[0].replace("-", "_")


def primary_subtag(language):
    """The language without its region, script or encoding, in lower case.

    Args:
        language: a gettext or BCP 47 language code, e.g. `"de_DE"`, `"pt-BR"`,
            `"sr@latin"`.

    Returns:
        The primary subtag, e.g. `"de"`.

    Example:
    >>> primary_subtag("de_DE.UTF-8"), primary_subtag("pt-BR"), primary_subtag("sr@latin")
    ('de', 'pt', 'sr')
    """
    return _language_tag(language).split("_")[0].lower()


def plural_forms(language):
    """The standard GNU `Plural-Forms` header value of a language.

    Looks up the full code first (so `pt_BR` differs from `pt`), then its
    primary subtag (`de_AT` -> `de`, `zh_CN` -> `zh`).

    Args:
        language: a gettext or BCP 47 language code (`"de"`, `"de_DE"`, `"pt-BR"`).

    Returns:
        The header value, e.g. `"nplurals=2; plural=(n != 1);"`.

    Raises:
        ValueError: the language is not in `PLURAL_FORMS`.

    Example:
    >>> plural_forms("de_AT")
    'nplurals=2; plural=(n != 1);'
    >>> plural_forms("pt-BR")
    'nplurals=2; plural=(n > 1);'
    """
    if isinstance(language, str) and language.strip():
        tag = _language_tag(language)
        by_lower = {code.lower(): value for code, value in PLURAL_FORMS.items()}
        for key in (tag.lower(), primary_subtag(language)):
            if key in by_lower:
                return by_lower[key]
    raise ValueError(
        f"language={language!r} has no built-in Plural-Forms (known: "
        f"{', '.join(sorted(PLURAL_FORMS))}); pass a catalog whose header has Plural-Forms."
    )


def _header_language(catalog):
    value = catalog.metadata.get("Language", "").strip()
    return value or None


def _target_language(catalog, translator, language):
    """The language to translate into, checked against the header and the translator."""
    if language is not None and not (isinstance(language, str) and language.strip()):
        raise ValueError(f"language must be a language code such as 'de' or None, got {language!r}.")
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
    return bool(entry.msgid_plural)


def _has_translation(entry):
    return bool(entry.msgstr) or any(entry.msgstr_plural.values())


def _header_nplurals(catalog):
    """nplurals from the header's Plural-Forms; None when it has none (or the .pot placeholder)."""
    value = catalog.metadata.get("Plural-Forms", "").strip()
    if not value or _TEMPLATE_PLURAL_FORMS in value:
        return None
    match = _NPLURALS.search(value)
    if not match or int(match.group(1)) < 1:
        raise ValueError(
            f"the catalog's header has Plural-Forms: {value!r}, without a valid nplurals=N; "
            "fix it (e.g. 'nplurals=2; plural=(n != 1);') or remove it."
        )
    return int(match.group(1))


def _plural_count(catalog, language, needed):
    """(nplurals, Plural-Forms to write into the header or None)."""
    nplurals = _header_nplurals(catalog)
    if nplurals is not None:
        return nplurals, None
    try:
        value = plural_forms(language)
    except ValueError as error:
        if not needed:
            return None, None
        raise ValueError(
            f"the catalog has plural entries, its header has no Plural-Forms, and {error}"
        ) from None
    return int(_NPLURALS.search(value).group(1)), value


_SINGULAR_ONLY_FORM_0 = ("n!=1", "(n!=1)")
"""Plural expressions whose form 0 serves n = 1 alone (English, German, ...)."""


def _sources(entry, nplurals, expression=""):
    """The English text of each form to fill: msgid for form 0, msgid_plural for the others.

    A one-form language uses its only form for every count, so that form
    comes from msgid_plural (msgfmt checks it against msgid_plural too). Where
    form 0 also serves other counts (Russian's 21, 31, ...; French's 0) and
    msgid lacks msgid_plural's placeholders (`"One file"` / `"%d files"`),
    form 0 comes from msgid_plural as well, as msgfmt requires.
    """
    if not _is_plural(entry):
        return [entry.msgid]
    if nplurals == 1:
        return [entry.msgid_plural]
    singular_only = "".join(expression.split()) in _SINGULAR_ONLY_FORM_0
    same = matches(entry.msgid_plural, entry.msgid) and matches(entry.msgid, entry.msgid_plural)
    first = entry.msgid if singular_only or same else entry.msgid_plural
    return [first] + [entry.msgid_plural] * (nplurals - 1)


def _translate_texts(translator, texts, beam_size, progress):
    """{text: Translation} from one call to `translator.translations`."""
    if not texts:
        return {}
    results = translator.translations(texts, beam_size=beam_size, num_return=1, progress=progress)
    if len(results) != len(texts) or not all(results):
        raise ValueError(
            f"translator.translations returned {len(results)} lists for {len(texts)} texts "
            "(some empty); it must return one non-empty list per text."
        )
    return {text: found[0] for text, found in zip(texts, results)}


def _notes(translations):
    notes = []
    for translation in translations:
        notes += [" ".join(str(note).split()) for note in translation.notes]
    return list(dict.fromkeys(notes))


def _fill(entry, translations):
    """Writes the forms, the fuzzy flag and the notes comment. Returns True when it had notes."""
    texts = [translation.text for translation in translations]
    if _is_plural(entry):
        entry.msgstr_plural = dict(enumerate(texts))
    else:
        entry.msgstr = texts[0]
    entry.fuzzy = True
    notes = _notes(translations)
    if notes:
        line = _MACHINE_NOTE + "; ".join(notes)
        entry.tcomment = f"{entry.tcomment}\n{line}" if entry.tcomment else line
    return bool(notes)


def _declared_charset(catalog):
    """The header's charset when Python knows it, else None (missing, `CHARSET`, unknown)."""
    match = _CHARSET.search(catalog.metadata.get("Content-Type", ""))
    if not match:
        return None
    try:
        return codecs.lookup(match.group(1)).name
    except LookupError:
        return None


def _encodes(texts, encoding):
    try:
        for text in texts:
            text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def _switch_to_utf8(catalog):
    content_type = catalog.metadata.get("Content-Type", "").strip()
    if _CHARSET.search(content_type):
        content_type = _CHARSET.sub("charset=UTF-8", content_type, count=1)
    else:
        content_type = f"{content_type or 'text/plain'}; charset=UTF-8"
    catalog.metadata["Content-Type"] = content_type
    catalog.encoding = "utf-8"


def _settle_charset(catalog, filled):
    """Switches the catalog to UTF-8 when the filled entries need it; returns "UTF-8" or None."""
    if not filled:
        return None
    texts = [text for entry in filled
             for text in (entry.msgstr, entry.tcomment, *entry.msgstr_plural.values())]
    if _declared_charset(catalog) is not None and _encodes(texts, catalog.encoding):
        return None
    _switch_to_utf8(catalog)
    return "UTF-8"


def _check_arguments(catalog, beam_size):
    if not isinstance(catalog, require("polib", "translate_catalog").POFile):
        raise TypeError(f"catalog must be a polib.POFile, got {type(catalog).__name__}.")
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a whole number >= 1, got {beam_size!r}.")


def translate_catalog(catalog, translator, language=None, beam_size=4, progress=False):
    r"""Fills the untranslated entries of a catalog with machine translations, in place.

    Singular entries get `msgstr`; plural entries get `msgstr[0]` from `msgid`
    and `msgstr[1..n-1]` from `msgid_plural`, n being the header's nplurals
    (a one-form language such as Japanese gets its only form from
    `msgid_plural`, as msgfmt expects). When the header has no Plural-Forms,
    the language's standard one (`PLURAL_FORMS`) is written into it, and a
    missing `Language` header is set to the target language.

    Every filled entry is flagged `fuzzy`; one whose translation has notes
    also gets the translator comment `machine translation: <notes>`. Entries
    with any translation (fuzzy ones too), obsolete entries, contexts,
    comments, references, flags and previous msgids are left as they are.
    All texts go to the translator in one `translations` call, each distinct
    text once. Nothing is changed when an error is raised.

    The catalog keeps its charset when every new text encodes in it;
    otherwise (or when it declares none) it is switched to UTF-8.

    Args:
        catalog: a `polib.POFile` (e.g. `polib.pofile(path)`).
        translator: a `keras_transformer.tasks.Translator`, or any object with
            its `translations(texts, beam_size, num_return, progress)` method
            and `target_language` attribute.
        language: the catalog's language code (`"de"`, `"pt_BR"`); None takes
            the header's `Language`, then `translator.target_language`.
        beam_size: the beam width of the search, a whole number >= 1.
        progress: passed on to the translator (show its progress bar).

    Returns:
        A `CatalogReport`.

    Raises:
        ValueError: `language` disagrees with the header's Language or with
            `translator.target_language` (compared by primary subtag: `de_DE`
            matches `de`); the catalog has plural entries to fill, no
            Plural-Forms and a language missing from `PLURAL_FORMS`; the
            header's Plural-Forms has no valid nplurals; `beam_size` is not a
            whole number >= 1; the translator returned the wrong number of
            results.
        TypeError: `catalog` is not a `polib.POFile`.

    Example:
    >>> import polib
    >>> from keras_transformer.tasks.translation import Translation
    >>> class Tagged:
    ...     target_language = "de"
    ...     def translations(self, texts, beam_size=4, num_return=1, progress=False):
    ...         return [[Translation("DE:" + t, -1.0, notes=("placeholders repaired",))]
    ...                 for t in texts]
    >>> catalog = polib.pofile('''msgid ""
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
    >>> catalog[0].msgstr_plural, catalog[0].flags, catalog[0].tcomment
    ({0: 'DE:%d file', 1: 'DE:%d files'}, ['fuzzy', 'c-format'], 'machine translation: placeholders repaired')
    >>> catalog.metadata["Plural-Forms"], catalog.metadata["Language"]
    ('nplurals=2; plural=(n != 1);', 'de')
    """
    _check_arguments(catalog, beam_size)
    target = _target_language(catalog, translator, language)
    live = [entry for entry in catalog if not entry.obsolete]
    kept = sum(map(_has_translation, live))
    todo = [entry for entry in live if entry.msgid and not _has_translation(entry)]
    nplurals, new_plural_forms = _plural_count(catalog, target, any(map(_is_plural, todo)))
    plural_header = new_plural_forms or catalog.metadata.get("Plural-Forms", "")
    expression = plural_header.partition("plural=")[2].rstrip().rstrip(";")
    sources = {id(entry): _sources(entry, nplurals, expression) for entry in todo}
    texts = list(dict.fromkeys(text for forms in sources.values() for text in forms))
    found = _translate_texts(translator, texts, beam_size, progress)

    filled = [entry for entry in todo if all(found[text].text for text in sources[id(entry)])]
    repaired = sum(_fill(entry, [found[t] for t in sources[id(entry)]]) for entry in filled)
    if new_plural_forms:
        catalog.metadata["Plural-Forms"] = new_plural_forms
    if target and not _header_language(catalog):
        catalog.metadata["Language"] = target
    return CatalogReport(
        translated=len(filled),
        kept=kept,
        repaired=repaired,
        obsolete_skipped=len(catalog) - len(live),
        left_untranslated=len(todo) - len(filled),
        charset_changed_to=_settle_charset(catalog, filled),
    )


def _new_file_name(target):
    folder, name = os.path.split(target)
    return os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")


def write_catalog(catalog, path):
    """Writes a catalog to `path` atomically, in the catalog's encoding.

    The text goes to a temporary file in the same folder, which then replaces
    `path` in one `os.replace`: a failure leaves `path` as it was (or absent)
    and no temporary file behind. A `path` that is a symbolic link has its
    target replaced; a file that already exists keeps its permissions.

    Args:
        catalog: a `polib.POFile`.
        path: where to write (a string or `os.PathLike`).

    Raises:
        ValueError: the catalog has text its encoding cannot hold (pass it
            through `translate_catalog`, which switches to UTF-8 when needed,
            or set `catalog.encoding = "utf-8"` and its Content-Type).
        OSError: the folder does not exist or cannot be written.

    Example:
    >>> import os, tempfile, polib
    >>> catalog = polib.pofile('msgid "Open"\\nmsgstr "Öffnen"\\n')
    >>> path = os.path.join(tempfile.mkdtemp(), "de.po")
    >>> write_catalog(catalog, path)
    >>> polib.pofile(path)[0].msgstr
    'Öffnen'
    """
    try:
        data = str(catalog).encode(catalog.encoding)
    except UnicodeEncodeError as error:
        raise ValueError(
            f"the catalog has text that {catalog.encoding} cannot hold ({error}); "
            "set catalog.encoding to 'utf-8' and its Content-Type charset to UTF-8."
        ) from None
    target = os.path.realpath(os.fspath(path))
    temporary, descriptor = None, None
    while descriptor is None:
        temporary = _new_file_name(target)
        try:
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        if os.path.exists(target):
            os.chmod(temporary, os.stat(target).st_mode & 0o7777)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
