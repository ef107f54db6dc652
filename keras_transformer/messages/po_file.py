r"""GNU gettext `.po` files, read as strictly as `msgfmt --check` and written back losslessly.

`parse_po` reads a catalog and refuses, with one message naming the file and
line, what `msgfmt --check` refuses: an unterminated string, an unknown escape,
bytes the declared charset cannot decode, a keyword out of place, a `msgstr[N]`
out of order, a duplicate (msgctxt, msgid), a `#~` used for part of an entry,
a byte-order mark. It accepts what `msgfmt` accepts: comments with or without a
space after `#` (`#TRANSLATORS:`, `#:src/a.c:1`), several strings on one line,
keywords indented, CRLF line ends, every C escape of GNU gettext (`\a`,
`\033`, `\x1b`, ...), and a backslash at the end of a line, which continues it
(`"a\` then `b"` is the string "ab").

A `PoFile` keeps the text it was read from. Filling a translation changes only
the lines of that entry's `msgstr`, its flags line and an added comment;
`PoFile.text()` gives every other line back exactly as it was: existing
entries, obsolete (`#~`) entries with their previous msgids (`#~|`), lone `#`
comment lines, `#, no-wrap` entries, escapes and CRLF line ends.

Why not polib: it writes `\033` back as the four characters `\\033`, drops
`#~|` lines and lone `#` lines, re-wraps every entry, writes CRLF files with LF,
and reads `msgid "Quit` (no closing quote) as `Qui`
(tests/messages/test_po_file.py shows each).

Example:
>>> po = parse_po('msgid ""\nmsgstr "Language: de\\n"\n\n#, c-format\nmsgid "Open %s"\nmsgstr ""\n')
>>> entry = po.entries[1]
>>> entry.msgid, entry.flags, entry.translated
('Open %s', ('c-format',), False)
>>> po.fill(entry, ["%s öffnen"])
>>> print(po.text(), end="")
msgid ""
msgstr "Language: de\n"
<BLANKLINE>
#, fuzzy, c-format
msgid "Open %s"
msgstr "%s öffnen"
"""

import bisect
import codecs
import dataclasses
import itertools
import os
import re
import unicodedata

from keras_transformer.messages import charsets

__all__ = ["PoEntry", "PoFile", "PoSyntaxError", "parse_po", "read_po"]

_WIDTH = 79  # gettext's default page width (msgcat --width)
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "r": "\r", "f": "\f", "v": "\v", "a": "\a",
            "\\": "\\", '"': '"'}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]+)|(.)|$)")
_OUT_ESCAPES = {"\n": "\\n", "\t": "\\t", "\b": "\\b", "\r": "\\r", "\f": "\\f", "\v": "\\v",
                "\a": "\\a", "\\": "\\\\", '"': '\\"'}
_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f\x7f\\"\udc80-\udcff]')
_TOKEN = re.compile(
    r'[ \t\f\v\r]*(?:'
    r'msgstr[ \t]*\[[ \t]*(?P<index>\d+)[ \t]*\]'
    r'|(?P<keyword>msgctxt|msgid_plural|msgid|msgstr|domain)(?![\w\[])'
    r'|"(?P<string>[^"\\]*(?:\\.[^"\\]*)*)"'
    r'|(?P<open>")'
    r'|(?P<end>$)'
    r'|(?P<other>\S+|.))'
)
_SIMPLE_LINE = re.compile(
    r'(?:(msgctxt|msgid_plural|msgid|msgstr)|msgstr\[(0|[1-9]\d*)\])?(?(1) |(?(2) |))'
    r'"([^"\\]*(?:\\.[^"\\]*)*)"\Z')
_BLANKS = re.compile(r"[ \t\f\v\r]*")
_FUZZY = "fuzzy"
_FLAG_SEPARATORS = re.compile(r"[\n \t\r\f\v,]+")  # gettext's: `#, fuzzy c-format` is two flags
_MO_MAGIC = (b"\xde\x12\x04\x95", b"\x95\x04\x12\xde")


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def printable(text):
    r"""The text with its control characters, line separators and undecoded bytes (surrogate
    escapes) written as escapes, so that a message naming them is one printable line.

    Example:
    >>> printable("a\0b\tc\udce9")
    'a\\x00b\\x09c\\xe9'
    """
    def escape(match):
        code = ord(match.group())
        if 0xDC80 <= code <= 0xDCFF:  # a byte the charset could not decode
            return f"\\x{code - 0xDC00:02x}"
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return _CONTROL.sub(escape, text)


class PoSyntaxError(ValueError):
    """A catalog `msgfmt --check` would refuse; the message starts with `file:line: ` and is one
    printable line (control characters in it are escaped, see `printable`).

    Args:
        message: what is wrong, `file:line: ...`.
        *args: further exception arguments, kept as `ValueError` keeps them.

    Example:
    >>> str(PoSyntaxError("de.po:3: end-of-line within string"))
    'de.po:3: end-of-line within string'
    """

    def __init__(self, message, *args):
        super().__init__(printable(str(message)), *args)


@dataclasses.dataclass
class PoEntry:
    r"""One message of a catalog, as read (its values decoded, and as msgfmt compiles them: a
    NUL ends the string it is in, `msgid "a\\0b" "c"` is "ac").

    Args:
        msgctxt: the context, or None.
        msgid: the source text.
        msgid_plural: the plural source text, or None for a singular entry.
        msgstr: the translations: one for a singular entry, one per
            `msgstr[N]` for a plural entry (empty strings when untranslated).
        flags: the flags of its `#,` line, in order (`"fuzzy"`, `"c-format"`,
            ...); of several `#,` lines the last counts, as for gettext.
        obsolete: whether the entry is commented out with `#~`.
        line: the 1-based line of its `msgid` keyword.

    Example:
    >>> entry = parse_po('#, c-format\nmsgid "%d file"\nmsgid_plural "%d files"\n'
    ...                  'msgstr[0] ""\nmsgstr[1] ""\n').entries[0]
    >>> entry.msgid_plural, entry.msgstr, entry.flags, entry.line, entry.translated
    ('%d files', ['', ''], ('c-format',), 2, False)
    """

    msgctxt: str = None
    msgid: str = ""
    msgid_plural: str = None
    msgstr: list = dataclasses.field(default_factory=list)
    flags: tuple = ()
    obsolete: bool = False
    line: int = 0
    # Where the entry is in the file's lines (0-based, end exclusive), set by the reader.
    _start: int = dataclasses.field(default=0, init=False, repr=False)  # first comment line
    _keywords: int = dataclasses.field(default=0, init=False, repr=False)  # msgctxt or msgid line
    # (line, column) of its first msgstr keyword, and of the end of its last msgstr string:
    # the text a new translation replaces.
    _msgstr: tuple = dataclasses.field(default=((0, 0), (0, 0)), init=False, repr=False)
    _flag_at: tuple = dataclasses.field(default=None, init=False, repr=False)  # (line, column) of the last `#,`
    # The line after its last translator comment, or _start.
    _comment_end: int = dataclasses.field(default=0, init=False, repr=False)
    # Where its first keyword starts when another entry's tokens precede it on that line.
    _shared_column: int = dataclasses.field(default=None, init=False, repr=False)

    @property
    def translated(self):
        """Whether any form has a translation (fuzzy ones count)."""
        return any(self.msgstr)

    @property
    def fuzzy(self):
        """Whether it is flagged fuzzy (msgfmt leaves it out unless `--use-fuzzy`)."""
        return _FUZZY in self.flags

    @property
    def is_header(self):
        return self.msgid == "" and self.msgctxt is None and not self.obsolete


def _decode_string(body, charset, where):
    r"""The value of a string's body (between the quotes), its escapes decoded as GNU gettext does.

    An octal (`\033`, at most 3 digits) or hexadecimal (`\x1b`, every hex digit
    that follows) escape stands for one byte: they are collected and decoded in
    the file's charset, and a byte that is not part of a character stays as a
    surrogate escape (written back as the same escape). `where(index)` is the
    `file:line:column` of the body's character at `index`.
    """
    if "\\" not in body:
        return body
    out, pending = [], bytearray()
    position = 0
    for match in _ESCAPE.finditer(body):
        if match.start() > position:
            if pending:
                out.append(pending.decode(charset, "surrogateescape"))
                pending.clear()
            out.append(body[position:match.start()])
        octal, hexadecimal, char = match.groups()
        if octal or hexadecimal:
            pending.append(int(octal, 8) & 0xFF if octal else int(hexadecimal, 16) & 0xFF)
        else:
            if pending:
                out.append(pending.decode(charset, "surrogateescape"))
                pending.clear()
            if char not in _ESCAPES:
                raise PoSyntaxError(f"{where(match.start() + 1)}: invalid control "
                                    f"sequence \\{char or ''}")
            out.append(_ESCAPES[char])
        position = match.end()
    if pending:
        out.append(pending.decode(charset, "surrogateescape"))
    out.append(body[position:])
    return "".join(out)


def _c_join(parts):
    """The value of a keyword's strings as msgfmt reads them (po-gram-gen.y's
    string_list_concat): each string up to its first NUL (`\\0`), joined."""
    return "".join(part.partition("\0")[0] for part in parts)


def _quote(value):
    r"""A value as the body of a PO string: `"` and `\` escaped, control characters as escapes."""
    def escape(match):
        char = match.group()
        if char in _OUT_ESCAPES:
            return _OUT_ESCAPES[char]
        code = ord(char) - 0xDC00 if char >= "\udc80" else ord(char)
        return f"\\{code:03o}"
    return _NEEDS_ESCAPE.sub(escape, value)


def _string_lines(keyword, value, prefix, wrap):
    """The lines of `keyword "value"` as msgcat writes them: one line if it fits and has no
    inner newline, else `keyword ""` and one string per line, broken after each `\\n` and,
    unless `wrap` is False, after spaces so that each line fits in 79 columns."""
    pieces = [_quote(piece) for piece in re.findall(r".*?\n|.+", value, re.DOTALL)] or [""]
    quoted = "".join(pieces)
    if len(pieces) == 1 and (not wrap or len(prefix) + len(keyword) + len(quoted) + 3 <= _WIDTH):
        return [f'{prefix}{keyword} "{quoted}"']
    lines = [f'{prefix}{keyword} ""']
    room = _WIDTH - len(prefix) - 2
    for piece in pieces:
        while wrap and len(piece) > room:
            cut = piece.rfind(" ", 1, room) + 1  # after a space; a leading one stays put
            if cut <= 1:
                cut = piece.find(" ", room) + 1
            if cut <= 1 or cut >= len(piece):
                break
            lines.append(f'{prefix}"{piece[:cut]}"')
            piece = piece[cut:]
        lines.append(f'{prefix}"{piece}"')
    return lines


@dataclasses.dataclass
class _Pending:
    """The entry being read."""

    start: int
    comment_end: int
    flags: list
    flag_at: tuple = None
    obsolete: bool = None
    keywords: int = None
    fields: dict = dataclasses.field(default_factory=dict)  # keyword -> (first line, parts)
    plural: list = dataclasses.field(default_factory=list)  # [(line, parts)]
    last: str = None  # the keyword the strings being read belong to
    keywords_column: int = 0
    msgstr_start: tuple = None  # (line, column)
    msgid_at: tuple = None  # (line, column) of its msgid keyword
    end: tuple = None  # (line, column) after its last token


@dataclasses.dataclass
class _Previous:
    """The `#|` lines being read: an entry's previous msgctxt, msgid and msgid_plural, which
    msgfmt reads as tokens (po-gram-gen.y's `prev`), before the entry's first keyword."""

    obsolete: bool  # `#~|`: they must be followed by an obsolete entry
    last: str = None  # the keyword the strings being read belong to
    strings: int = 0  # how many strings it has so far


# gnulib's uc_width, which msgfmt 0.21 counts an error's column with (po-lex.c's mb_width), as
# libunistring 1.0 has it: unassigned code points in these blocks are wide, these nonspacing
# marks take a column, and in these charsets (is_cjk_encoding) every character from U+00A1 to
# U+FF60 but U+20A9 takes two.
_WIDE_BLOCKS = ((0x2E80, 0x303E), (0x3040, 0xA4CF), (0xF900, 0xFAFF), (0xFE10, 0xFE1F),
                (0xFE30, 0xFE6F), (0xFF00, 0xFF60), (0x1F200, 0x1F2FF), (0x20000, 0x3FFFF))
_SPACING_MARKS = frozenset({0xCBF, 0xCC6, 0x11A07, 0x11A08, 0x11C3F})
_CJK_CODECS = frozenset({"euc_jp", "gb2312", "gbk", "EUC-TW", "big5", "euc_kr", "cp949", "johab"})


def _column(text, codec, decoded):
    """The column msgfmt counts after `text` (0-based), in a catalog in `codec`: a tab to the
    next multiple of 8, controls none; where msgfmt reads characters (`decoded`: after the
    header entry that names a charset), nonspacing marks and format characters none, wide
    characters two (in a CJK charset most are), an undecoded byte one; before, every other
    byte one."""
    if not decoded:
        try:
            text = charsets.encode(text, codec, "surrogateescape").decode("latin-1")
        except UnicodeEncodeError:  # text built in memory, not read from the charset's bytes
            pass
    column, cjk = 0, codec in _CJK_CODECS
    for char in text:
        code = ord(char)
        if char == "\t":
            column += 8 - column % 8
            continue
        if code < 0x20 or code == 0x7F or decoded and 0x7F <= code < 0xA0:
            continue
        if code < 0x7F or not decoded:
            column += 1
            continue
        category = unicodedata.category(char)
        if category == "Cn":
            wide = any(low <= code <= high for low, high in _WIDE_BLOCKS)
        elif code not in _SPACING_MARKS and (category in ("Mn", "Me", "Cf") or 0x1160 <= code < 0x1200
                                             or 0xD7B0 <= code < 0xD800):
            continue
        else:
            wide = unicodedata.east_asian_width(char) in ("W", "F")
        column += 2 if wide or cjk and 0xA1 <= code < 0xFF61 and code != 0x20A9 else 1
    return column


class _Reader:
    """Reads the lines of a decoded catalog into `PoEntry`s, token by token as GNU gettext's
    po-lex.c does: `#~` makes the rest of a line obsolete and `#|` previous, wherever they
    stand; any other `#` starts a comment that runs to the end of the line."""

    def __init__(self, layout, name, charset, stop_at_header=False):
        self.layout, self.lines = layout, layout.logical
        self.name, self.charset = name, charset
        self.undecodable = None  # a pattern of the bytes the charset could not decode, if any
        # (logical line, column) where the charset starts to apply: msgfmt learns it from the
        # header entry, and reads the file up to the end of that entry as bytes (None: all of
        # it, no portable charset named).
        self.decoded_from = None
        self.stop_at_header = stop_at_header  # stop reading once the header entry is read
        self.previous = None  # the `#|` lines being read, a `_Previous`
        self.entries = []
        self.pending = None
        self.comment_start = None
        self.comment_end = None
        self.flags, self.flag_at = [], None  # flag_at: (line, column) of the last `#,`
        self.seen = {}

    def location(self, number, column=None):
        """`file:line[:column]` (1-based, in the file's physical lines) of a logical line's
        0-based (number, column); the column as msgfmt counts it (`_display_column`)."""
        line, at = self.layout.physical(number, column or 0)
        if column is None:
            return f"{self.name}:{line + 1}"
        before = self.layout.lines[line][:at] if line < len(self.layout.lines) else ""
        decoded = self.decoded_from is not None and (number, column) >= self.decoded_from
        return f"{self.name}:{line + 1}:{_column(before, self.charset, decoded) + 1}"

    def error(self, number, message, column=None):
        raise PoSyntaxError(f"{self.location(number, column)}: {message}")

    def read(self):
        for number, line in enumerate(self.lines):
            comment_at = self.line(number, line)
            if self.undecodable is not None and number >= self.decoded_from[0]:
                start = self.decoded_from[1] if number == self.decoded_from[0] else 0
                bad = self.undecodable.search(line, start, comment_at)  # comments are bytes
                if bad:
                    self.error(number, f"invalid multibyte sequence (the file is not "
                               f"{self.charset}, the charset its header declares)", bad.start())
            if self.stop_at_header and any(entry.is_header for entry in self.entries[-1:]):
                return self.entries
        if self.previous is not None:
            self.error(len(self.lines), "syntax error: #| lines without the entry they "
                       "belong to after them")
        self.finish(len(self.lines))
        return self.entries

    def line(self, number, line):
        """Reads one logical line; returns the column of its comment (its length if none)."""
        obsolete = previous = False
        position, tokens = 0, False
        while True:
            position = _BLANKS.match(line, position).end()
            if line.startswith("#~", position):
                obsolete, position = True, position + 2
                if line.startswith("|", position):
                    previous, position = True, position + 1
                continue
            if line.startswith("#|", position):
                previous, position = True, position + 2
                continue
            if line.startswith("#", position):
                self.comment(number, position, line[position + 1:], shared=tokens)
                return position
            if position == len(line):
                return position
            position = self.tokens(number, line, position, obsolete, previous)
            tokens = True

    def comment(self, number, column, text, shared):
        """A comment (`text`: after its `#`); `shared`: tokens precede it on its line."""
        if self.previous is not None:
            self.error(number, "syntax error: a comment between the #| lines and their entry",
                       column)
        if self.pending is not None:  # it ends the entry being read
            self.finish(number)
        kind = text[:1]
        at = number + 1 if shared else number  # a comment after tokens belongs to the next line
        if self.comment_start is None:
            self.comment_start = at
            self.comment_end = at
        if kind == ",":  # each `#,` line replaces the flags before it, as gettext reads them
            self.flag_at = (number, column)
            self.flags = [flag for flag in _FLAG_SEPARATORS.split(text[1:]) if flag]
        elif kind not in (":", "."):
            self.comment_end = number + 1

    def tokens(self, number, text, position, obsolete, previous):
        """Reads the tokens of a line from `position`; returns the column of the first `#`
        outside a string, or the line's length."""
        simple = _SIMPLE_LINE.match(text, position)  # most lines: `keyword "string"` or `"string"`
        if simple:
            keyword, index, body = simple.groups()
            column, end = simple.start(3) - 1, len(text)
            if keyword or index:
                self.token(number, keyword or "msgstr[]", None if index is None else int(index),
                           position, column - 1, obsolete, previous)
            self.token(number, None, body, column, end, obsolete, previous)
            return end
        while True:
            match = _TOKEN.match(text, position)
            token = match.group()
            column = match.start() + len(token) - len(token.lstrip(" \t\f\v\r"))
            kind = match.lastgroup
            if kind == "end":
                return len(text)
            if kind == "open":
                self.error(number, "end-of-line within string", column)
            if kind == "other":
                word = match.group("other")
                if word.startswith("#"):
                    return column
                self.error(number, f"syntax error: unexpected {word[:20]!r}", column)
            if kind == "string":
                self.token(number, None, match.group("string"), column, match.end(), obsolete,
                           previous)
            elif kind == "index":
                self.token(number, "msgstr[]", int(match.group("index")), column, match.end(),
                           obsolete, previous)
            else:
                self.token(number, match.group("keyword"), None, column, match.end(), obsolete,
                           previous)
            position = match.end()

    def token(self, number, keyword, value, column, end, obsolete, previous):
        """One token: a keyword (`value` the index of `msgstr[N]`) or, when `keyword` is None, a
        string (`value` its body between the quotes); `previous`: on a `#|` line."""
        if previous:
            self.previous_token(number, keyword, value, column, obsolete)
        elif self.previous is not None and keyword not in ("msgctxt", "msgid"):
            self.error(number, f"syntax error: {keyword.replace('[]', '[N]') if keyword else 'a string'}"
                       " after #| lines (msgctxt or msgid must follow them)", column)
        elif keyword is None:
            self.string(number, value, column, end, obsolete)
        else:
            self.keyword(number, keyword, column, end, obsolete, value)

    def previous_token(self, number, keyword, body, column, obsolete):
        """A token of a `#|` line, read as po-gram-gen.y reads `prev`: `[msgctxt STRING+]
        msgid STRING+ [msgid_plural STRING+]`, then the entry's msgctxt or msgid."""
        if self.pending is not None:  # the entry before must be complete
            self.finish(number)
        if keyword in ("msgstr", "msgstr[]", "domain"):
            self.error(number, f'keyword "msgstr" unknown (a #| line holds msgctxt, msgid '
                       f'and msgid_plural only)' if keyword != "domain" else
                       'keyword "domain" unknown', column)
        previous = self.previous
        if previous is None:
            previous = self.previous = _Previous(obsolete)
            if self.comment_start is None:  # a fuzzy flag added later goes before the #| lines
                self.comment_start = self.comment_end = number
        if previous.obsolete != obsolete:
            self.error(number, "inconsistent use of #~")
        if keyword is None:
            if previous.last is None:
                self.error(number, "syntax error: a #| string without its keyword", column)
            self.decode(number, body, column)
            previous.strings += 1
            return
        allowed = {"msgctxt": (None,), "msgid": (None, "msgctxt"), "msgid_plural": ("msgid",)}
        if previous.last not in allowed[keyword] or previous.last and not previous.strings:
            self.error(number, f"syntax error: unexpected #| {keyword}", column)
        previous.last, previous.strings = keyword, 0

    def end_previous(self, number, column, obsolete):
        """The `#|` lines before an entry's first keyword: they must be complete (a msgid with
        its strings) and as obsolete as the entry."""
        previous, self.previous = self.previous, None
        if previous is None:
            return
        if previous.last not in ("msgid", "msgid_plural") or not previous.strings:
            self.error(number, "syntax error: the #| lines before it end without a msgid "
                       "and its string", column)
        if previous.obsolete != obsolete:
            self.error(number, "inconsistent use of #~")

    def decode(self, number, body, column):
        """The value of a string whose body starts after the quote at `column`."""
        value = _decode_string(body, self.charset,
                               lambda index: self.location(number, column + 1 + index))
        if "\x04" in value:  # msgfmt: the separator of msgctxt and msgid in a .mo file
            self.error(number, "context separator <EOT> within string")
        return value

    def keyword(self, number, keyword, column, end, obsolete, index=None):
        pending = self.pending
        if pending is not None and pending.last is not None and not self._strings(pending):
            self.error(number, "syntax error: a keyword without its string before it", column)
        if keyword == "domain":
            self.error(number, "'domain' directives are not supported; split the catalog "
                       "into one file per domain", column)
        if keyword in ("msgctxt", "msgid") and pending is not None and (
                pending.last in ("msgid", "msgid_plural")
                or keyword == "msgctxt" and pending.last == "msgctxt"):
            self.error(pending.keywords, "missing 'msgstr' section")
        if keyword in ("msgctxt", "msgid") and (pending is None or pending.last is not None
                                                 and pending.last.startswith("msgstr")):
            if pending is not None:
                self.finish(number)
            self.end_previous(number, column, obsolete)
            start = self.comment_start if self.comment_start is not None else number
            end = self.comment_end if self.comment_start is not None else number
            pending = self.pending = _Pending(start, end, self.flags, self.flag_at)
            self.comment_start, self.flags, self.flag_at = None, [], None
            pending.keywords, pending.keywords_column = number, column
            pending.obsolete = obsolete
        if pending is None:
            self.error(number, f"syntax error: {keyword.replace('[]', '[N]')} before msgid", column)
        if pending.obsolete != obsolete:
            self.error(number, "inconsistent use of #~")
        order = {"msgctxt": (None,), "msgid": (None, "msgctxt"), "msgid_plural": ("msgid",),
                 "msgstr": ("msgid",), "msgstr[]": ("msgid_plural", "msgstr[]")}[keyword]
        if pending.last not in order:
            self.error(number, f"syntax error: unexpected {keyword.replace('[]', '[N]')}", column)
        if keyword == "msgstr[]":
            if index != len(pending.plural):
                self.error(number, "plural form has wrong index" if pending.plural
                           else "first plural form has nonzero index")
            pending.plural.append((number, []))
        else:
            pending.fields[keyword] = (number, [])
            if keyword == "msgid":
                pending.msgid_at = (number, column)
        if keyword.startswith("msgstr") and pending.msgstr_start is None:
            pending.msgstr_start = (number, column)
        pending.last = keyword
        pending.end = (number, end)

    def string(self, number, body, column, end, obsolete):
        pending = self.pending
        if pending is None or pending.last is None:
            self.error(number, "syntax error: a string outside an entry", column)
        if pending.obsolete != obsolete:
            self.error(number, "inconsistent use of #~")
        value = self.decode(number, body, column)
        parts = pending.plural[-1][1] if pending.last == "msgstr[]" else pending.fields[pending.last][1]
        parts.append(value)
        pending.end = (number, end)

    @staticmethod
    def _strings(pending):
        """The strings read for the last keyword so far."""
        return pending.plural[-1][1] if pending.last == "msgstr[]" else pending.fields[pending.last][1]

    def finish(self, number):
        pending, self.pending = self.pending, None
        if pending is None:
            return
        if pending.last is not None and not self._strings(pending):
            self.error(pending.end[0], f"syntax error: {pending.last.replace('[]', '[N]')} "
                       "without a string")
        if not pending.last.startswith("msgstr"):
            missing = "msgstr" if pending.last != "msgctxt" else "msgid"
            self.error(pending.keywords, f"missing '{missing}' section")
        fields = {key: _c_join(parts) for key, (_, parts) in pending.fields.items()}
        plural = "msgid_plural" in fields
        if plural and not pending.plural:
            self.error(pending.fields["msgid_plural"][0], "missing 'msgstr[0]' section")
        entry = PoEntry(
            msgctxt=fields.get("msgctxt"),
            msgid=fields["msgid"],
            msgid_plural=fields.get("msgid_plural"),
            msgstr=[_c_join(parts) for _, parts in pending.plural] if plural else [fields["msgstr"]],
            flags=tuple(pending.flags),
            obsolete=pending.obsolete,
            line=self.layout.physical(*pending.msgid_at)[0] + 1,
        )
        entry._start, entry._keywords = pending.start, pending.keywords
        entry._msgstr = (pending.msgstr_start, pending.end)
        entry._flag_at, entry._comment_end = pending.flag_at, pending.comment_end
        before = self.lines[pending.keywords][:pending.keywords_column]
        if before.strip() and not before.lstrip().startswith("#~"):
            entry._shared_column = pending.keywords_column
        key = (entry.msgctxt, entry.msgid)
        if key in self.seen:
            self.error(pending.fields["msgid"][0], f"duplicate message definition (first defined on line "
                       f"{self.seen[key]})")
        self.seen[key] = self.layout.physical(*pending.msgstr_start)[0] + 1  # where msgfmt says
        self.entries.append(entry)


class _Layout:
    """A catalog's text as physical lines (what is written back) and as the logical lines the
    reader reads.

    GNU gettext reads a backslash right before a line feed as nothing, wherever it is
    (po-lex.c's `lex_getc`): `"a\\` then `b"` on the next line is the string "ab", and a
    comment ending in a backslash goes on over the next line. A logical line is its physical
    lines with those pairs removed. In a CRLF file the backslash is followed by a carriage
    return, so no line continues there (msgfmt reads an invalid escape).

    Attributes:
        lines: the physical lines, without their line ends.
        newline: the line end, `"\\n"`, or `"\\r\\n"` when every line ends so (in a file
            with mixed ends each `\\r` stays in its line).
        final_newline: whether the text ends with a line end.
        logical: the logical lines.
    """

    def __init__(self, text):
        self.final_newline = text.endswith("\n") or not text
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        ended = lines if self.final_newline else lines[:-1]
        crlf = bool(ended) and all(line.endswith("\r") for line in ended)
        if crlf:
            lines = [line[:-1] for line in ended] + lines[len(ended):]
        self.lines, self.newline = lines, ("\r\n" if crlf else "\n")
        # each physical line's offset in the text
        self.starts = list(itertools.accumulate(
            (len(line) + len(self.newline) for line in lines), initial=0))
        offset = self.starts.pop()
        self.length = offset - (len(self.newline) if lines and not self.final_newline else 0)
        if crlf or "\\\n" not in text:  # no line continues: each is a logical line
            self.logical, self._segments = list(lines), None
            return
        # For each logical line, where its physical lines begin: [(logical column, line)].
        self.logical, self._segments = [], []
        pieces, segments, width = [], [], 0  # width: the logical line's length so far
        for number, line in enumerate(lines):
            continued = (not crlf and line.endswith("\\")
                         and (number + 1 < len(lines) or self.final_newline))
            segments.append((width, number))
            pieces.append(line[:-1] if continued else line)
            width += len(pieces[-1])
            if not continued or number + 1 == len(lines):
                self.logical.append("".join(pieces))
                self._segments.append(segments)
                pieces, segments, width = [], [], 0

    def physical(self, line, column):
        """The physical (line, column) of a logical one (both 0-based)."""
        if line >= len(self.logical):
            return len(self.lines), 0
        if self._segments is None:
            return line, column
        segments = self._segments[line]
        at = bisect.bisect_right(segments, (column, len(self.lines))) - 1  # the last start <= column
        start, number = segments[max(at, 0)]
        return number, column - start

    def offset(self, line, column):
        """The offset in the text of a logical (line, column); past the end, the text's length."""
        number, column = self.physical(line, column)
        if number >= len(self.lines):
            return self.length
        return min(self.starts[number] + column, self.length)

    def text(self):
        return self.newline.join(self.lines) + (
            self.newline if self.lines and self.final_newline else "")


# gettext's portable charsets (po-charset.c's standard_charsets): only a header naming one of
# these (in any case) makes msgfmt decode the file; with another name, or none, it reads bytes.
_PORTABLE_CHARSETS = {name.upper(): name for name in (
    "ASCII", "ANSI_X3.4-1968", "US-ASCII", *(f"ISO{sep}8859-{n}" for n in
                                              (1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15) for sep in "-_"),
    "KOI8-R", "KOI8-U", "KOI8-T", "CP850", "CP866", "CP874", "CP932", "CP949", "CP950",
    *(f"CP125{n}" for n in range(8)), "GB2312", "EUC-JP", "EUC-KR", "EUC-TW", "BIG5",
    "BIG5-HKSCS", "GBK", "GB18030", "SHIFT_JIS", "JOHAB", "TIS-620", "VISCII", "GEORGIAN-PS",
    "UTF-8")}
_UNDECODED = re.compile("[\udc80-\udcff]")
_NON_ASCII = re.compile("[^\x00-\x7f]+")


def _declared_charset(text, name):
    """(the charset name the header declares or None, its 1-based line, where the header entry
    ends: (its logical line, that line's text up to there) or None), found as msgfmt finds
    it (po-charset.c): `charset=` in the header entry's msgstr (its strings joined and their
    escapes read, so a name split across strings or lines counts), up to a space, tab or
    newline. The header is read from `text` (the file's bytes as Latin-1, or its text) up to its
    entry; a file that does not read that far declares nothing here (the reader says why later).
    """
    reader = _Reader(_Layout(text), name, "latin-1", stop_at_header=True)
    try:
        reader.read()
    except PoSyntaxError:  # after the header, msgfmt knows the charset (`msgid "\q"` next)
        pass
    header = next((entry for entry in reader.entries if entry.is_header), None)
    if header is None or "charset=" not in header.msgstr[0]:
        return None, None, None
    declared = re.split("[ \t\n]", header.msgstr[0].split("charset=", 1)[1], maxsplit=1)[0]
    (first, _), (last, end) = header._msgstr
    lines = reader.layout.lines
    line = next((number for number in range(first, min(last + 1, len(lines)))
                 if "charset=" in lines[number]), first)
    return declared, line + 1, (last, reader.lines[last][:end])


def _codec(charset):
    """The name `charsets` converts one of gettext's portable charsets by: Python's codec's,
    else the name glibc's iconv knows (EUC-TW, VISCII, GEORGIAN-PS, which Python lacks); None
    when neither knows it (iconv on a C library without one)."""
    found = charsets.lookup(charset)
    return found.name if found is not None else None


def _refuse_byte_order_mark(name):
    raise PoSyntaxError(f"{name}:1:1: syntax error: a byte-order mark (remove it; "
                        "gettext tools refuse it)")


def _decode_as_bytes(data, declared):
    """(text, codec) of a file msgfmt reads as bytes (no portable charset declared): the
    declared charset when Python reads the file's ASCII bytes with it as they are (ISO-8859-1
    spelled `latin1`), or glibc's iconv does and gives the same bytes back (ARMSCII-8, not
    TCVN, which composes), else UTF-8 where the bytes are UTF-8 and the others kept as surrogate
    escapes (ISO-2022-JP, UTF-16 or CP037 on an ASCII file; 8-bit text without a charset)."""
    if data.isascii():
        return data.decode("ascii"), "ascii"
    try:
        found = charsets.lookup(declared or "utf-8")  # Python's codec, else glibc's iconv
        text = found.decode(data)
        if (getattr(codecs.lookup(found.codec), "_is_text_encoding", True) if found.codec
                else found.encode(text) == data) and (
                    _NON_ASCII.sub("", text) == _NON_ASCII.sub("", data.decode("latin-1"))):
            return text, found.name
    except (AttributeError, LookupError, UnicodeError, ValueError):  # AttributeError: not found
        pass
    return data.decode("utf-8", "surrogateescape"), "utf-8"


def _decode(data, name):
    """(text, codec, the logical (line, column) from which the charset applies or None,
    whether a byte it cannot decode is there (kept as a surrogate escape; refused from that
    point): msgfmt reads the file as bytes up to the end of the header entry, which names the
    charset, and throughout when it names none of gettext's portable ones)."""
    if data.startswith(codecs.BOM_UTF8):
        _refuse_byte_order_mark(name)
    declared, line, header_end = _declared_charset(data.decode("latin-1"), name)
    portable = _PORTABLE_CHARSETS.get((declared or "").upper())
    if portable is None:
        return (*_decode_as_bytes(data, declared), None, False)
    charset = _codec(portable)
    if charset is None:  # msgfmt reads an ASCII file whatever its header calls the charset
        if not data.isascii():
            raise PoSyntaxError(f"{name}:{line}: charset={declared} is one Python cannot decode "
                                "(and this C library has no iconv for it), and the file is not "
                                "ASCII; convert it with msgconv -t UTF-8")
        charset = "ascii"
    end, before = header_end  # the header's text on its last line, as Latin-1
    start = (end, len(charsets.decode(before.encode("latin-1"), charset, "surrogateescape")))
    try:
        return charsets.decode(data, charset), charset, start, False
    except UnicodeDecodeError:
        return charsets.decode(data, charset, "surrogateescape"), charset, start, True


def parse_po(source, name="<string>"):
    r"""Reads a `.po` catalog from its text or bytes.

    Args:
        source: the file's content: `bytes` (decoded with the charset the
            header declares, UTF-8 without one) or `str`.
        name: the file's name in error messages.

    Returns:
        A `PoFile`.

    Raises:
        PoSyntaxError: (a `ValueError`) what `msgfmt --check` refuses; the
            message starts with `name:line:`.
        TypeError: `source` is neither `str` nor `bytes`.

    Example:
    >>> parse_po('msgid "Quit\nmsgstr ""\n', name="de.po")
    Traceback (most recent call last):
    ...
    keras_transformer.messages.po_file.PoSyntaxError: de.po:1:7: end-of-line within string
    """
    if isinstance(source, (bytes, bytearray)):
        text, charset, decoded_from, undecodable = _decode(bytes(source), name)
    elif isinstance(source, str):
        declared, _, header_end = _declared_charset(source, name)
        portable = _PORTABLE_CHARSETS.get((declared or "").upper())
        charset = (portable and _codec(portable)) or "utf-8"
        text, undecodable = source, False
        decoded_from = (header_end[0], len(header_end[1])) if portable else None
        if text.startswith("\ufeff"):
            _refuse_byte_order_mark(name)
    else:
        raise TypeError(f"source must be the catalog's str or bytes, got {type(source).__name__}.")
    layout = _Layout(text)
    reader = _Reader(layout, name, charset)
    reader.decoded_from = decoded_from
    if undecodable:
        reader.undecodable = _UNDECODED
    entries = reader.read()
    catalog = PoFile(layout, entries, charset, name)
    if isinstance(source, (bytes, bytearray)) and not bytes(source).isascii():
        catalog._spellings = (charset, charsets.spellings(text, bytes(source), charset))
    return catalog


def read_po(path):
    """Reads a `.po` file with `parse_po`.

    Args:
        path: the file (a string or `os.PathLike`).

    Returns:
        A `PoFile`.

    Raises:
        PoSyntaxError: the file is not a catalog `msgfmt --check` accepts, or
            it is a compiled `.mo` catalog (the message says how to decompile it).
        OSError: it cannot be read.

    Example:
    >>> read_po("/nonexistent.po")
    Traceback (most recent call last):
    ...
    FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent.po'
    """
    name = os.fspath(path)
    with open(name, "rb") as file:
        data = file.read()
    if data[:4] in _MO_MAGIC:
        raise PoSyntaxError(f"{name}:1: a compiled .mo catalog, not a .po file; decompile it "
                            f"first: msgunfmt {name} -o {os.path.splitext(name)[0]}.po")
    return parse_po(data, name)


class PoFile:
    r"""A catalog read by `parse_po`: its entries, and its text with the changes made to it.

    Build one with `parse_po` or `read_po`.

    Args:
        layout: the file's text, as lines.
        entries: the `PoEntry`s in file order, the header (msgid "") and
            obsolete ones included (an attribute).
        encoding: the Python codec of the charset the file is written in
            (an attribute; `translate_catalog` may switch it to UTF-8).
        name: the file's name in messages (an attribute).

    Example:
    >>> po = parse_po('msgid ""\nmsgstr "Language: de\\n"\n\nmsgid "Quit"\nmsgstr ""\n')
    >>> po.metadata, len(po.entries), po.header.msgstr
    ({'Language': 'de'}, 2, ['Language: de\n'])
    """

    def __init__(self, layout, entries, encoding, name="<string>"):
        self._layout = layout
        self._lines = layout.logical
        self.entries = entries
        self.encoding = encoding
        self.name = name
        # (start, end, rank, lines): the text from (line, column) start to end becomes the
        # lines, joined by the file's line end; rank orders edits that start together.
        self._edits = []
        self._header_edit, self._header_created = None, False
        # (codec, {offset in the text read: bytes}): characters read in a spelling the codec
        # does not write (charsets.spellings), kept where their text is
        self._spellings = (encoding, {})

    @property
    def header(self):
        """The header entry (msgid ""), or None."""
        return next((entry for entry in self.entries if entry.is_header), None)

    def msgstr_line(self, entry):
        """The 1-based line of an entry's first `msgstr` keyword, where msgfmt reports the
        problems of its translation.

        Args:
            entry: one of `entries`.

        Example:
        >>> po = parse_po('msgid "a"\\nmsgid_plural "as"\\nmsgstr[0] "b"\\nmsgstr[1] "bs"\\n')
        >>> po.entries[0].line, po.msgstr_line(po.entries[0])
        (1, 3)
        """
        return self._layout.physical(*entry._msgstr[0])[0] + 1

    def header_field(self, name):
        """The value of the header's first field of this name, in any case (`Content-type`
        is `Content-Type`), stripped; None when there is none.

        Args:
            name: the field's name.

        Example:
        >>> parse_po('msgid ""\\nmsgstr "Content-type: text/plain; charset=UTF-8\\\\n"\\n'
        ...          ).header_field("Content-Type")
        'text/plain; charset=UTF-8'
        """
        wanted = name.lower()
        return next((value for field, value in self.metadata.items()
                     if field.lower() == wanted), None)

    @property
    def metadata(self):
        """The header's fields, `{"Language": "de", ...}`, in order (a copy; the first of two
        fields of one name counts, as for gettext)."""
        header = self.header
        fields = {}
        for line in (header.msgstr[0] if header else "").split("\n"):
            name, colon, value = line.partition(":")
            if colon and name.strip():
                fields.setdefault(name.strip(), value.strip())
        return fields

    def set_header_fields(self, changes):
        """Sets header fields: each replaces the value of the first line of its name (in any
        case, spelled as the file spells it), or is added at the end; every other line of the
        header stays as it was. The header is created at the top when there is none.

        Args:
            changes: `{name: value}`.

        Raises:
            ValueError: a name or value holds a line break, or a name a colon.
        """
        for name, text in changes.items():
            if not name or ":" in name or any(c in f"{name}{text}" for c in "\n\r"):
                raise ValueError(f"a header field must be one line, Name: value; got "
                                 f"{name!r}: {text!r}")
        header = self.header
        old = header.msgstr[0] if header else ""
        lines = old.split("\n")
        for name, text in changes.items():
            for index, line in enumerate(lines):
                written = line.partition(":")[0].strip()
                if written.lower() == name.lower() and ":" in line:  # `Content-type` too
                    lines[index] = f"{written}: {text}"
                    break
            else:
                if lines and lines[-1]:  # the last field had no line end
                    lines.append("")
                lines.insert(len(lines) - 1 if lines else 0, f"{name}: {text}")
        value = "\n".join(lines)
        rendered = ['msgstr ""'] + [f'"{_quote(piece)}"' for piece in re.findall(r".*?\n|.+", value)]
        if self._header_edit is not None:  # an earlier change: this one replaces it
            self._edits.remove(self._header_edit)
        if header is None or self._header_created:
            if header is None:
                self.entries.insert(0, PoEntry(msgid="", msgstr=[value]))
                self._header_created = True
            self.header.msgstr = [value]
            self._header_edit = ((0, 0), (0, 0), 0, ['msgid ""', *rendered, "", ""])
        else:
            header.msgstr = [value]
            self._header_edit = (*header._msgstr, 3, rendered)
        self._edits.append(self._header_edit)

    def fill(self, entry, forms, comment=None):
        """Gives an untranslated entry its translations, flags it fuzzy, and adds a comment.

        Args:
            entry: one of `entries`, not obsolete, without a translation.
            forms: its translations: one text for a singular entry, one per
                plural form for a plural one.
            comment: a translator comment to add (one line), or None.

        Raises:
            ValueError: the entry is obsolete, translated, or `forms` has the
                wrong number of texts.
        """
        if entry.obsolete or entry.translated or entry.is_header:
            raise ValueError("fill takes an untranslated, live entry other than the header.")
        if entry.msgid_plural is None and len(forms) != 1:
            raise ValueError(f"a singular entry takes one form, got {len(forms)}.")
        entry.msgstr = list(forms)
        wrap = "no-wrap" not in entry.flags
        if entry.msgid_plural is None:
            lines = _string_lines("msgstr", forms[0], "", wrap)
        else:
            lines = [line for index, form in enumerate(forms)
                     for line in _string_lines(f"msgstr[{index}]", form, "", wrap)]
        self._edits.append((*entry._msgstr, 3, lines))
        new_flag_line = _FUZZY not in entry.flags and entry._flag_at is None
        if _FUZZY not in entry.flags:
            entry.flags = (_FUZZY, *entry.flags)
            if entry._flag_at is not None:
                line, column = entry._flag_at
                old = self._lines[line]
                rest = old[column + 2:].strip()
                flags = f"#, {_FUZZY}, {rest}" if rest else f"#, {_FUZZY}"
                self._edits.append(((line, column), (line, len(old)), 3, [flags]))
        if entry._shared_column is not None:  # after another entry on its line: start a new one
            added = ([f"# {comment}"] if comment is not None else []) + (
                [f"#, {_FUZZY}"] if new_flag_line else [])
            at = (entry._keywords, entry._shared_column)
            self._edits.append((at, at, 1, ["", *added, ""]))
            return
        if comment is not None:
            at = (entry._comment_end, 0)
            self._edits.append((at, at, 1, [f"# {comment}", ""]))
        if new_flag_line:
            before = min((number for number in range(entry._start, entry._keywords)
                          if self._lines[number].lstrip().startswith(("#|", "#~|"))),
                         default=entry._keywords)
            self._edits.append(((before, 0), (before, 0), 2, [f"#, {_FUZZY}", ""]))

    def text(self):
        """The catalog as text: the lines read, with the changes made since.

        Returns:
            A `str`, with the line ends the file had.
        """
        return "".join(piece for piece, _ in self._pieces())

    def encoded(self, errors="strict"):
        r"""The catalog's text in its encoding, each character read kept in the bytes it was
        read from (EUC-TW's 4-byte spelling of a 2-byte character stays 4 bytes).

        Args:
            errors: `"strict"`, or `"surrogateescape"` to write the bytes the charset
                could not decode as they were.

        Returns:
            `bytes`.

        Raises:
            UnicodeEncodeError: text the encoding cannot hold.

        Example:
        >>> parse_po('msgid "a"\nmsgstr "ä"\n'.encode()).encoded()
        b'msgid "a"\nmsgstr "\xc3\xa4"\n'
        """
        codec, spelled = self._spellings
        spelled = spelled if codec == self.encoding else {}
        offsets, out = sorted(spelled), []
        for piece, start in self._pieces():
            at = 0
            if start is not None:
                for offset in offsets[bisect.bisect_left(offsets, start):
                                      bisect.bisect_left(offsets, start + len(piece))]:
                    out.append(charsets.encode(piece[at:offset - start], self.encoding, errors))
                    out.append(spelled[offset])
                    at = offset - start + 1
            out.append(charsets.encode(piece[at:], self.encoding, errors))
        return b"".join(out)

    def _pieces(self):
        """The catalog's text in order: (text, its offset in the text read, or None for an
        edit's)."""
        layout = self._layout
        newline, original, at = layout.newline, layout.text(), layout.offset

        position = 0
        for start, end, _, lines in sorted(self._edits, key=lambda edit: (edit[0], edit[2])):
            begin = at(*start)
            if begin > position:
                yield original[position:begin], position
            yield newline.join(lines), None
            position = max(position, begin, at(*end))
        yield original[position:], position
