r"""Placeholders of program messages: find them, shield them from the model, repair them.

A placeholder is the part of a message that the program fills in at run time:
printf/C and Python %-format directives, Python brace fields and shell
variables. A translation must keep them exactly (`msgfmt --check-format`
rejects a catalog whose translations lose, invent or reorder them), but a
subword tokenizer splits `%(count)d` into pieces the model is free to rewrite.

`protect` replaces each distinct placeholder by one private-use character (a
"slot") that NFKC normalization leaves alone, `restore` puts them back, and
`repair` is the last line of defence: whatever a model wrote, it returns a
translation whose placeholders `matches` the source's.

What counts as a placeholder (scanning left to right, `PLACEHOLDER`):

- printf directives as GNU `msgfmt` parses c-format and python-format:
  `%` [`n$`] [`(name)`] [flags `-+ #0'I`] [width `n`, `*` or `*n$`]
  [precision `.n`, `.*`] [length `hh h ll l L q j z Z t`] and a conversion
  `diouxXeEfFgGaAcspnmr%` or an `<inttypes.h>` macro such as `<PRIu64>`.
  The space is a flag, so `100% sure` holds the directive `% s` and
  `50% off` holds `% o`, exactly as `msgfmt` reads them. `r` is Python's
  `repr` conversion.
- Python brace fields: `{}`, `{0}`, `{name}`, `{0.attr}`, `{0[key]}`, a
  conversion `!r`/`!s`/`!a` and a format spec without white space (a space
  is allowed only as the fill before an alignment: `{0: >8}`), which may nest
  one level of fields (`{0:{width}}`). The escapes `{{` and `}}` are literal
  text, but they are placeholders here so that they are kept verbatim.
- shell variables: `$NAME` and `${NAME}` (an ASCII identifier after `$`).

Private-use slot characters (U+E000 to U+E01F) are never part of a placeholder.

Which of these a message can hold depends on the language of the program that
formats it, and a gettext catalog says so in each entry's flags. Every
function here takes `format_flag`, as `msgfmt --check-format` does:

- `"c-format"`: printf directives of C (with `%C`, `%S`, `%1$s`, `<PRIu64>`;
  without Python's `%(name)s` and `%r`).
- `"python-format"`: Python's %-directives (`%(name)s`, `%r`, `%a`; no `%1$s`).
- `"python-brace-format"`: brace fields only.
- `"sh-format"`: shell variables only.
- `"none"`: nothing is a placeholder (`50% of the files` is plain text), as
  for a catalog entry without a format flag.
- `"any"` (the default): all of the above, for text of unknown origin.
"""

import collections
import dataclasses
import re

__all__ = [
    "FORMAT_FLAGS",
    "PLACEHOLDER",
    "SLOT_SYMBOLS",
    "Protected",
    "find_placeholders",
    "is_ordered",
    "matches",
    "protect",
    "protect_pair",
    "repair",
    "restore",
]

SLOT_SYMBOLS = tuple(chr(0xE000 + k) for k in range(32))
"""Slot k stands for the k-th distinct placeholder of a source text: private-use
characters, which NFKC normalization (SentencePiece's default) leaves unchanged."""

_SLOT_RANGE = f"{SLOT_SYMBOLS[0]}-{SLOT_SYMBOLS[-1]}"
_SLOT = re.compile(f"[{_SLOT_RANGE}]")

_STAR = r"\*(?:\d+\$)?"  # a width or precision taken from an argument
_PRINTF = (
    r"%"
    r"(?:\d+\$)?"  # positional argument: %1$s
    rf"(?:\([^(){_SLOT_RANGE}]*\))?"  # Python mapping key: %(name)s
    r"[-+ #0'I]*"  # flags; the space flag makes `% s` a directive
    rf"(?:\d+|{_STAR})?"  # width
    rf"(?:\.(?:\d+|{_STAR})?)?"  # precision
    r"(?:hh|h|ll|l|L|q|j|z|Z|t)?"  # length modifier
    r"(?:[diouxXeEfFgGaAcspnmr%]|<PRI[diouxX](?:(?:LEAST|FAST)?(?:8|16|32|64)|MAX|PTR)>)"
)
_FIELD_NAME = r"(?:\d+|[^\W\d]\w*)"
_BRACE = (
    r"\{\{|\}\}"  # escapes first: `{{0}}` is literal text
    r"|\{"
    rf"{_FIELD_NAME}?"
    rf"(?:\.[^\W\d]\w*|\[[^\]{{}}\s{_SLOT_RANGE}]+\])*"  # .attr and [key]
    r"(?:![rsa])?"
    rf"(?::(?:\s(?=[<>=^]))?(?:[^{{}}\s{_SLOT_RANGE}]|\{{{_FIELD_NAME}?\}})*)?"
    r"\}"
)
_SHELL = r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)"
_C_PRINTF = (_PRINTF.replace(rf"(?:\([^(){_SLOT_RANGE}]*\))?", "")
             .replace("[diouxXeEfFgGaAcspnmr%]", "[diouxXeEfFgGaAcCsSpnm%]"))
_PYTHON_PRINTF = (_PRINTF.replace(r"(?:\d+\$)?", "", 1)
                  .replace("[diouxXeEfFgGaAcspnmr%]", "[diouxXeEfFgGcrsa%]"))
_ANY_PRINTF = _PRINTF.replace("[diouxXeEfFgGaAcspnmr%]", "[diouxXeEfFgGaAcCsSpnmr%]")

PLACEHOLDER = re.compile(f"{_ANY_PRINTF}|{_BRACE}|{_SHELL}")
"""Matches one placeholder of any format language; `finditer` gives them in order."""


@dataclasses.dataclass(frozen=True)
class _Syntax:
    """The placeholders of one format language, and the characters that would start one."""

    placeholder: re.Pattern
    item: re.Pattern  # what `protect` replaces: placeholders and slot characters in the text
    starters: str


def _syntax(pattern, starters):
    return _Syntax(re.compile(pattern), re.compile(f"{pattern}|{_SLOT.pattern}"), starters)


_SYNTAXES = {
    "any": _syntax(PLACEHOLDER.pattern, "%{}"),
    "c-format": _syntax(_C_PRINTF, "%"),
    "python-format": _syntax(_PYTHON_PRINTF, "%"),
    "python-brace-format": _syntax(_BRACE, "{}"),
    "sh-format": _syntax(_SHELL, ""),
    "none": _syntax("(?!)", ""),
}
FORMAT_FLAGS = tuple(_SYNTAXES)
"""The values of `format_flag`: the gettext flags of the format languages known here,
`"any"` (all of them) and `"none"`."""


def _syntax_of(format_flag):
    try:
        return _SYNTAXES[format_flag]
    except (KeyError, TypeError):
        raise ValueError(f"format_flag must be one of {', '.join(map(repr, FORMAT_FLAGS))}, "
                         f"got {format_flag!r}") from None
_POSITIONAL = re.compile(r"%\d+\$")
_TAIL = re.compile(r"(?:\s*[.:!?…]+)?\s*\Z")  # final punctuation and white space
_CLOSING = tuple(".,:;!?…)")  # punctuation that follows a word without a space
_STRAY = str.maketrans("", "", "%{}$")  # characters that can start a placeholder
_BARE_VARIABLE = re.compile(r"\$[A-Za-z_][A-Za-z0-9_]*")  # the only one a word can extend
_WORD_START = re.compile(r"[A-Za-z0-9_]")


def find_placeholders(text, format_flag="any"):
    """The placeholders of a text, in order of occurrence.

    Args:
        text: a message or a translation.
        format_flag: the format language (see the module's docstring).

    Returns:
        A list of strings, one per occurrence.

    Example:
    >>> find_placeholders("%s: cannot open '%s': %s\\n")
    ['%s', '%s', '%s']
    >>> find_placeholders("{{literal}} {name!r:>10} for $USER")
    ['{{', '}}', '{name!r:>10}', '$USER']
    >>> find_placeholders("100% of %s", "c-format"), find_placeholders("100% of %s", "none")
    (['% o', '%s'], [])
    """
    return _syntax_of(format_flag).placeholder.findall(text)


def is_ordered(placeholder):
    """Whether the argument a placeholder takes depends on its position.

    Unnamed printf directives (`%s`, `%-10lu`, `%*d`) and auto-numbered brace
    fields (`{}`, `{:>8}`, `{!r}`) are ordered: moving one moves its argument.
    Positional or named ones (`%1$s`, `%(x)s`, `{0}`, `{name}`, `$VAR`) and
    those that take no argument (`%%`, `%m`, `{{`, `}}`) are not.

    Args:
        placeholder: one placeholder, as `find_placeholders` returns it.

    Returns:
        True for ordered placeholders.

    Raises:
        ValueError: `placeholder` is not exactly one placeholder.

    Example:
    >>> [is_ordered(p) for p in ("%d", "%1$s", "{}", "{0}", "%%")]
    [True, False, True, False, False]
    """
    if not isinstance(placeholder, str) or not PLACEHOLDER.fullmatch(placeholder):
        raise ValueError(f"placeholder must be exactly one placeholder, got {placeholder!r}")
    if placeholder in ("{{", "}}") or placeholder.startswith("$"):
        return False
    if placeholder.startswith("{"):
        return placeholder[1] in ".[!:}"  # no field name: numbered automatically
    if placeholder.startswith("%(") or _POSITIONAL.match(placeholder):
        return False
    takes_no_argument = placeholder[-1] in "%m" and "*" not in placeholder
    return not takes_no_argument


def _ordered(placeholders):
    return [p for p in placeholders if is_ordered(p)]


def matches(source, translation, format_flag="any"):
    """Whether a translation keeps the source's placeholders.

    True iff both hold the same placeholders the same number of times, the
    ordered ones (see `is_ordered`) in the same sequence, and the translation
    has no more stray `%`, `{` or `}` (outside placeholders) than the source: then
    `msgfmt --check-format` accepts the pair as c-format, python-format or
    python-brace-format (this check is stricter: `%5d` does not stand for
    `%d`, and `%2$s %1$d` does not stand for `%d %s`).

    Args:
        source: the original message.
        translation: its translation.
        format_flag: the format language (see the module's docstring).

    Returns:
        A bool.

    Example:
    >>> matches("%d of %s", "%d von %s"), matches("%d of %s", "%s von %d")
    (True, False)
    >>> matches("{0} of {1}", "{1} von {0}")
    True
    """
    syntax = _syntax_of(format_flag)
    wanted, found = syntax.placeholder.findall(source), syntax.placeholder.findall(translation)
    allowed = _strays(source, syntax)
    return (collections.Counter(wanted) == collections.Counter(found)
            and _ordered(wanted) == _ordered(found)
            and all(count <= allowed[c] for c, count in _strays(translation, syntax).items()))


def _strays(text, syntax):
    """How many `%`, `{` and `}` (those the format language has) stand outside placeholders:
    msgfmt reads each as a broken directive (`"100%"` in c-format, a lone `{` in python-brace)."""
    outside = "".join(_split(text, syntax)[0])
    return collections.Counter(c for c in outside if c in syntax.starters)


@dataclasses.dataclass(frozen=True)
class Protected:
    r"""A text whose placeholders are slot symbols.

    Args:
        text: the text with `SLOT_SYMBOLS[k]` wherever `slots[k]` stood.
        slots: the distinct placeholders, by first occurrence.

    Example:
    >>> protect("%s and %s, %d")
    Protected(text='\ue000 and \ue000, \ue001', slots=('%s', '%d'))
    """

    text: str
    slots: tuple


def _is_slot_symbol(item):
    return len(item) == 1 and _SLOT.match(item) is not None


def _choose_slots(items):
    """Slot values for the distinct items, by first occurrence: every slot
    character already in the text (at most 32 of them, so they always fit, and
    `restore` gives them back), then placeholders while slots remain."""
    distinct = list(dict.fromkeys(items))
    stray = [item for item in distinct if _is_slot_symbol(item)]
    room = len(SLOT_SYMBOLS) - len(stray)
    placeholders = [item for item in distinct if not _is_slot_symbol(item)][:room]
    chosen = set(stray) | set(placeholders)
    return tuple(item for item in distinct if item in chosen)


def protect(text, format_flag="any"):
    r"""Replaces each placeholder by the slot symbol of its distinct string.

    Distinct placeholders beyond the 32 slots stay literal text. A slot
    character already in `text` is protected as if it were a placeholder
    (its slot's value is itself), so every text round-trips:
    `restore(p.text, p.slots) == text` for `p = protect(text)`.

    Args:
        text: a message.
        format_flag: the format language (see the module's docstring).

    Returns:
        A `Protected`.

    Example:
    >>> p = protect("Copy %s to %(dest)s? {0}\n")
    >>> p.text, p.slots
    ('Copy \ue000 to \ue001? \ue002\n', ('%s', '%(dest)s', '{0}'))
    >>> restore(p.text, p.slots)
    'Copy %s to %(dest)s? {0}\n'
    """
    item = _syntax_of(format_flag).item
    slots = _choose_slots(item.findall(text))
    symbols = dict(zip(slots, SLOT_SYMBOLS))
    return Protected(item.sub(lambda m: symbols.get(m.group(), m.group()), text), slots)


def protect_pair(source, target, format_flag="any"):
    r"""Protects a training pair with the source's slots on both sides.

    A target placeholder that the source lacks stays literal text (the model
    should learn not to invent it); a slot character in the target that is not
    one of the source's slots is removed (it would read as a slot).

    Args:
        source: the original message.
        target: its reference translation.
        format_flag: the format language (see the module's docstring).

    Returns:
        `(protected source, protected target)`.

    Example:
    >>> protect_pair("%s files", "%s Dateien %d")
    ('\ue000 files', '\ue000 Dateien %d')
    """
    protected = protect(source, format_flag)
    symbols = dict(zip(protected.slots, SLOT_SYMBOLS))

    def substitute(match):
        item = match.group()
        if item in symbols:
            return symbols[item]
        return "" if _is_slot_symbol(item) else item

    return protected.text, _syntax_of(format_flag).item.sub(substitute, target)


def restore(text, slots):
    r"""Puts placeholders back where their slot symbols are.

    Args:
        text: a protected text or a model's output for one.
        slots: `Protected.slots` of the source.

    Returns:
        The text with each slot symbol replaced by its placeholder; a slot
        symbol with no slot (index >= `len(slots)`) is removed, with one of
        the spaces around it when it stood between two.

    Raises:
        ValueError: `slots` has more entries than `SLOT_SYMBOLS`.

    Example:
    >>> restore("\ue001 von \ue000\ue007", ("%s", "%d"))
    '%d von %s'
    """
    if len(slots) > len(SLOT_SYMBOLS):
        raise ValueError(f"slots has {len(slots)} entries, at most {len(SLOT_SYMBOLS)} are possible")

    unknown = SLOT_SYMBOLS[len(slots):]
    if unknown:  # removed, with the space that set them apart
        text = re.sub(f"(?<= )[{''.join(unknown)}]+ ", "", text)
        text = re.sub(f"[{''.join(unknown)}]", "", text)

    def substitute(match):
        return slots[ord(match.group()) - ord(SLOT_SYMBOLS[0])]

    return _SLOT.sub(substitute, text)


def _split(text, syntax):
    """`(texts, placeholders)` with `len(texts) == len(placeholders) + 1`:
    text between placeholders, alternating, so the text is their interleaving."""
    texts, found, start = [], [], 0
    for match in syntax.placeholder.finditer(text):
        texts.append(text[start : match.start()])
        found.append(match.group())
        start = match.end()
    texts.append(text[start:])
    return texts, found


def _interleave(texts, found):
    return "".join(t + p for t, p in zip(texts, found)) + texts[-1]


def _close_gap(before, after, at_start, at_end):
    """Joins the text around a removed placeholder without the space that
    separated it: no doubled space, no new space at either end of the message
    and none left before the punctuation that followed it (`"%s …"`)."""
    if before.endswith(" ") and after.startswith(" "):
        after = after[1:]
    elif at_start and not before and after.startswith(" "):
        after = after[1:]
    elif before.endswith(" ") and (at_end and not after or after[:1] in _CLOSING):
        before = before[:-1]
    return before + after


def _drop_extra(texts, found, wanted):
    """Removes the occurrences beyond the source's count, keeping the first ones."""
    kept = collections.Counter()
    new_texts, new_found = [texts[0]], []
    for index, (placeholder, after) in enumerate(zip(found, texts[1:])):
        if kept[placeholder] < wanted[placeholder]:
            kept[placeholder] += 1
            new_found.append(placeholder)
            new_texts.append(after)
        else:
            at_end = index == len(found) - 1
            new_texts[-1] = _close_gap(new_texts[-1], after, not new_found, at_end)
    return new_texts, new_found


def _add_missing(texts, found, missing):
    """Inserts `missing` at the end of the text, before its final punctuation."""
    if not missing:
        return texts, found
    last = texts[-1]
    cut = _TAIL.search(last).start()
    head = last[:cut]
    space = " " if found or head else ""
    middle = [" "] * (len(missing) - 1)
    return texts[:-1] + [head + space] + middle + [last[cut:]], found + missing


def _missing(source_placeholders, found):
    """The source's placeholders that `found` lacks, in the source's order."""
    lacking = collections.Counter(source_placeholders) - collections.Counter(found)
    missing = []
    for placeholder in source_placeholders:
        if lacking[placeholder]:
            lacking[placeholder] -= 1
            missing.append(placeholder)
    return missing


def _reorder(found, source_placeholders):
    """Gives the ordered positions the source's ordered placeholders, in order."""
    found = list(found)
    positions = [i for i, p in enumerate(found) if is_ordered(p)]
    for position, placeholder in zip(positions, _ordered(source_placeholders)):
        found[position] = placeholder
    return found


def _inert(texts, found):
    """The interleaving with the text made unable to join a placeholder: the
    characters that start one are dropped, and `$NAME` is kept apart from a
    following word character. Used only when the plain edit formed a new
    placeholder out of stray text (`"%"` before an inserted `"%d"`)."""
    texts = [t.translate(_STRAY) for t in texts]
    for index, placeholder in enumerate(found):
        if _BARE_VARIABLE.fullmatch(placeholder) and _WORD_START.match(texts[index + 1]):
            texts[index + 1] = " " + texts[index + 1]
    return _interleave(texts, found)


def repair(source, translation, format_flag="any"):
    """A minimal change of a translation that makes it keep the source's placeholders.

    In turn: occurrences the source lacks or has fewer of are removed (the
    later ones, with the space that set them apart: no doubled space, new
    outer space or space before punctuation is left), missing ones are inserted at the end, before final punctuation
    `.:!?…` and separated by a space, and the ordered placeholders are given
    the source's order position by position. Should that edit leave stray
    `%`, `{` or `}` the source lacks, or make stray text join a placeholder (a
    lone `%` before an inserted `%d`), the characters `%{}$` are dropped from
    the text. The result always `matches` the source.

    Args:
        source: the original message.
        translation: a translation, e.g. a model's output.
        format_flag: the format language (see the module's docstring).

    Returns:
        `translation` itself when it already matches, else the repaired text.

    Example:
    >>> repair("%d files in %s", "%s Dateien in %s")
    '%d Dateien in %s'
    >>> repair("Copy %s?", "Kopieren?")
    'Kopieren %s?'
    >>> repair("%d of %s", "%s von %d")
    '%d von %s'
    """
    syntax = _syntax_of(format_flag)
    if matches(source, translation, format_flag):
        return translation
    wanted = syntax.placeholder.findall(source)
    texts, found = _split(translation, syntax)
    texts, found = _drop_extra(texts, found, collections.Counter(wanted))
    texts, found = _add_missing(texts, found, _missing(wanted, found))
    found = _reorder(found, wanted)
    repaired = _interleave(texts, found)
    return repaired if matches(source, repaired, format_flag) else _inert(texts, found)
