r"""GNU gettext `.po` files, read as strictly as `msgfmt --check` and written back losslessly.

`parse_po` reads a catalog and refuses, with one message naming the file and
line, what `msgfmt --check` refuses: an unterminated string, an unknown escape,
bytes the declared charset cannot decode, a keyword out of place, a `msgstr[N]`
out of order, a duplicate (msgctxt, msgid), a `#~` used for part of an entry,
a byte-order mark. It accepts what `msgfmt` accepts: comments with or without a
space after `#` (`#TRANSLATORS:`, `#:src/a.c:1`), several strings on one line,
keywords indented, CRLF line ends, and every C escape of GNU gettext (`\a`,
`\033`, `\x1b`, ...).

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

import codecs
import dataclasses
import os
import re

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
    r'|"(?P<string>(?:[^"\\]|\\.)*)"'
    r'|(?P<open>")'
    r'|(?P<end>$)'
    r'|(?P<other>\S+))'
)
_SIMPLE_LINE = re.compile(
    r'(?:(msgctxt|msgid_plural|msgid|msgstr)|msgstr\[(0|[1-9]\d*)\])?(?(1) |(?(2) |))'
    r'"((?:[^"\\]|\\.)*)"\Z')
_CHARSET = re.compile(r"charset\s*=\s*([^\s;\\\"]+)", re.IGNORECASE)
_FUZZY = "fuzzy"
_MO_MAGIC = (b"\xde\x12\x04\x95", b"\x95\x04\x12\xde")


class PoSyntaxError(ValueError):
    """A catalog `msgfmt --check` would refuse; the message starts with `file:line: `."""


@dataclasses.dataclass
class PoEntry:
    r"""One message of a catalog, as read (its values decoded).

    Args:
        msgctxt: the context, or None.
        msgid: the source text.
        msgid_plural: the plural source text, or None for a singular entry.
        msgstr: the translations: one for a singular entry, one per
            `msgstr[N]` for a plural entry (empty strings when untranslated).
        flags: the `#,` flags, in order (`"fuzzy"`, `"c-format"`, ...).
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
    _flag_line: int = dataclasses.field(default=None, init=False, repr=False)  # first `#,` line
    # The line after its last translator comment, or _start.
    _comment_end: int = dataclasses.field(default=0, init=False, repr=False)

    @property
    def translated(self):
        """Whether any form has a translation (fuzzy ones count)."""
        return any(self.msgstr)

    @property
    def is_header(self):
        return self.msgid == "" and self.msgctxt is None and not self.obsolete


def _decode_string(body, where):
    r"""The value of a string's body (between the quotes), its escapes decoded as GNU gettext does.

    An octal (`\033`, at most 3 digits) or hexadecimal (`\x1b`, every hex digit
    that follows) escape stands for one byte: they are collected and decoded as
    UTF-8, and a byte that is not part of a character stays as a surrogate
    escape (written back as the same escape).
    """
    if "\\" not in body:
        return body
    out, pending = [], bytearray()
    position = 0
    for match in _ESCAPE.finditer(body):
        if match.start() > position:
            if pending:
                out.append(pending.decode("utf-8", "surrogateescape"))
                pending.clear()
            out.append(body[position:match.start()])
        octal, hexadecimal, char = match.groups()
        if octal or hexadecimal:
            pending.append(int(octal, 8) & 0xFF if octal else int(hexadecimal, 16) & 0xFF)
        else:
            if pending:
                out.append(pending.decode("utf-8", "surrogateescape"))
                pending.clear()
            if char not in _ESCAPES:
                raise PoSyntaxError(f"{where}: invalid control sequence \\{char or ''}")
            out.append(_ESCAPES[char])
        position = match.end()
    if pending:
        out.append(pending.decode("utf-8", "surrogateescape"))
    out.append(body[position:])
    return "".join(out)


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
    quoted = _quote(value)
    pieces = re.findall(r".*?\\n|.+", quoted) or [""]
    if len(pieces) == 1 and (not wrap or len(prefix) + len(keyword) + len(quoted) + 3 <= _WIDTH):
        return [f'{prefix}{keyword} "{quoted}"']
    lines = [f'{prefix}{keyword} ""']
    room = _WIDTH - len(prefix) - 2
    for piece in pieces:
        while wrap and len(piece) > room:
            cut = piece.rfind(" ", 0, room) + 1
            if cut <= 0:
                cut = piece.find(" ", room) + 1
            if cut <= 0 or cut >= len(piece):
                break
            if piece[cut - 2:cut] == "\\ ":  # never split an escape from its character
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
    flag_line: int = None
    obsolete: bool = None
    keywords: int = None
    fields: dict = dataclasses.field(default_factory=dict)  # keyword -> (first line, parts)
    plural: list = dataclasses.field(default_factory=list)  # [(line, parts)]
    last: str = None  # the keyword the strings being read belong to
    msgstr_start: tuple = None  # (line, column)
    end: tuple = None  # (line, column) after its last token


class _Reader:
    """Reads the lines of a decoded catalog into `PoEntry`s."""

    def __init__(self, lines, name):
        self.lines, self.name = lines, name
        self.entries = []
        self.pending = None
        self.comment_start = None
        self.comment_end = None
        self.flags, self.flag_line = [], None
        self.seen = {}

    def error(self, number, message, column=None):
        where = f"{self.name}:{number + 1}" + (f":{column + 1}" if column is not None else "")
        raise PoSyntaxError(f"{where}: {message}")

    def read(self):
        for number, line in enumerate(self.lines):
            stripped = line.lstrip(" \t\f\v\r")
            if stripped.startswith("#~"):
                rest = stripped[2:]
                if rest.startswith("|"):
                    self.comment(number, "|")
                    continue
                self.tokens(number, rest, obsolete=True, offset=len(line) - len(rest))
            elif stripped.startswith("#"):
                self.comment(number, stripped[1:2])
            else:
                self.tokens(number, line, obsolete=False, offset=0)
        self.finish(len(self.lines))
        return self.entries

    def comment(self, number, kind):
        if self.pending is not None and self.pending.last is not None:
            self.finish(number)
        if self.comment_start is None:
            self.comment_start = number
            self.comment_end = number
        if kind == ",":
            if self.flag_line is None:
                self.flag_line = number
            text = self.lines[number].lstrip()[2:]
            self.flags += [flag.strip() for flag in text.split(",") if flag.strip()]
        elif kind not in (":", ".", "|", "~"):
            self.comment_end = number + 1

    def tokens(self, number, text, obsolete, offset):
        simple = _SIMPLE_LINE.match(text)  # most lines: `keyword "string"` or `"string"`
        if simple:
            keyword, index, body = simple.groups()
            end = offset + len(text)
            if keyword or index:
                self.keyword(number, keyword or "msgstr[]", offset, offset + simple.start(3) - 2,
                             obsolete, None if index is None else int(index))
            self.string(number, body, offset + simple.start(3) - 1, end, obsolete)
            return
        position = 0
        while True:
            match = _TOKEN.match(text, position)
            token = match.group()
            column = offset + match.start() + len(token) - len(token.lstrip(" \t\f\v\r"))
            kind = match.lastgroup
            if kind == "end":
                return
            if kind == "open":
                self.error(number, "end-of-line within string", column)
            if kind == "other":
                word = match.group("other")
                if word.startswith("#"):  # a comment after the tokens of a line
                    return
                self.error(number, f"syntax error: unexpected {word[:20]!r}", column)
            end = offset + match.end()
            if kind == "string":
                self.string(number, match.group("string"), column, end, obsolete)
            elif kind == "index":
                self.keyword(number, "msgstr[]", column, end, obsolete, int(match.group("index")))
            else:
                self.keyword(number, match.group("keyword"), column, end, obsolete)
            position = match.end()

    def keyword(self, number, keyword, column, end, obsolete, index=None):
        pending = self.pending
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
            start = self.comment_start if self.comment_start is not None else number
            end = self.comment_end if self.comment_start is not None else number
            pending = self.pending = _Pending(start, end, self.flags, self.flag_line)
            self.comment_start, self.flags, self.flag_line = None, [], None
            pending.keywords = number
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
        value = _decode_string(body, f"{self.name}:{number + 1}:{column + 1}")
        parts = pending.plural[-1][1] if pending.last == "msgstr[]" else pending.fields[pending.last][1]
        parts.append(value)
        pending.end = (number, end)

    def finish(self, number):
        pending, self.pending = self.pending, None
        if pending is None:
            return
        if not pending.last.startswith("msgstr"):
            missing = "msgstr" if pending.last != "msgctxt" else "msgid"
            self.error(pending.keywords, f"missing '{missing}' section")
        fields = {key: "".join(parts) for key, (_, parts) in pending.fields.items()}
        plural = "msgid_plural" in fields
        if plural and not pending.plural:
            self.error(pending.fields["msgid_plural"][0], "missing 'msgstr[0]' section")
        entry = PoEntry(
            msgctxt=fields.get("msgctxt"),
            msgid=fields["msgid"],
            msgid_plural=fields.get("msgid_plural"),
            msgstr=["".join(parts) for _, parts in pending.plural] if plural else [fields["msgstr"]],
            flags=tuple(pending.flags),
            obsolete=pending.obsolete,
            line=pending.fields["msgid"][0] + 1,
        )
        entry._start, entry._keywords = pending.start, pending.keywords
        entry._msgstr = (pending.msgstr_start, pending.end)
        entry._flag_line, entry._comment_end = pending.flag_line, pending.comment_end
        key = (entry.msgctxt, entry.msgid)
        if key in self.seen:
            self.error(entry.line - 1, f"duplicate message definition (first defined on line "
                       f"{self.seen[key]})")
        self.seen[key] = entry.line
        self.entries.append(entry)


def _split_lines(text):
    """(lines without their line ends, the line end, whether the text ends with one).

    CRLF when every line ends so; in a file with mixed ends each `\\r` stays in its line."""
    final_newline = text.endswith("\n") or not text
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    ended = lines if final_newline else lines[:-1]
    crlf = bool(ended) and all(line.endswith("\r") for line in ended)
    if crlf:
        lines = [line[:-1] for line in ended] + lines[len(ended):]
    return lines, ("\r\n" if crlf else "\n"), final_newline


def _header_charset(text):
    """The charset a catalog declares (in its first 64 KiB); bytes are read as Latin-1, which
    any charset gettext allows agrees with on the header's ASCII."""
    if isinstance(text, bytes):
        text = text[:65536].decode("latin-1")
    match = _CHARSET.search(text[:65536])
    if not match or match.group(1).upper() == "CHARSET":
        return "utf-8"
    try:
        return codecs.lookup(match.group(1)).name
    except LookupError:
        return None


def _decode(data, name):
    if data.startswith(codecs.BOM_UTF8):
        raise PoSyntaxError(f"{name}:1:1: syntax error: a byte-order mark (remove it; "
                            "gettext tools refuse it)")
    charset = _header_charset(data)
    if charset is None:
        raise PoSyntaxError(f"{name}: the header declares a charset Python does not know")
    try:
        return data.decode(charset), charset
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise PoSyntaxError(f"{name}:{line}:{column}: invalid multibyte sequence "
                            f"(the file is not {charset}, the charset its header declares)") from None


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
        text, charset = _decode(bytes(source), name)
    elif isinstance(source, str):
        text, charset = source, _header_charset(source) or "utf-8"
        if text.startswith("\ufeff"):
            raise PoSyntaxError(f"{name}:1:1: syntax error: a byte-order mark (remove it; "
                                "gettext tools refuse it)")
    else:
        raise TypeError(f"source must be the catalog's str or bytes, got {type(source).__name__}.")
    lines, newline, final_newline = _split_lines(text)
    entries = _Reader(lines, name).read()
    return PoFile(lines, entries, newline, final_newline, charset)


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
        raise PoSyntaxError(f"{name}: a compiled .mo catalog, not a .po file; decompile it "
                            f"first: msgunfmt {name} -o {os.path.splitext(name)[0]}.po")
    return parse_po(data, name)


class PoFile:
    r"""A catalog read by `parse_po`: its entries, and its text with the changes made to it.

    Build one with `parse_po` or `read_po`.

    Args:
        lines: the file's lines, without their line ends.
        entries: the `PoEntry`s in file order, the header (msgid "") and
            obsolete ones included (an attribute).
        newline: the line end to write, `"\n"` or `"\r\n"`.
        final_newline: whether the text ends with a line end.
        encoding: the Python codec of the charset the file is written in
            (an attribute; `translate_catalog` may switch it to UTF-8).

    Example:
    >>> po = parse_po('msgid ""\nmsgstr "Language: de\\n"\n\nmsgid "Quit"\nmsgstr ""\n')
    >>> po.metadata, len(po.entries), po.header.msgstr
    ({'Language': 'de'}, 2, ['Language: de\n'])
    """

    def __init__(self, lines, entries, newline, final_newline, encoding):
        self._lines = list(lines)
        self.entries = entries
        self._newline, self._final_newline = newline, final_newline
        self.encoding = encoding
        # (start, end, rank, lines): the text from (line, column) start to end becomes the
        # lines, joined by the file's line end; rank orders edits that start together.
        self._edits = []
        self._header_fields = None

    @property
    def header(self):
        """The header entry (msgid ""), or None."""
        return next((entry for entry in self.entries if entry.is_header), None)

    @property
    def metadata(self):
        """The header's fields, `{"Language": "de", ...}`, in order (a copy)."""
        if self._header_fields is not None:
            return dict(self._header_fields)
        header = self.header
        fields = {}
        for line in (header.msgstr[0] if header else "").split("\n"):
            name, colon, value = line.partition(":")
            if colon and name.strip():
                fields[name.strip()] = value.strip()
        return fields

    def set_metadata(self, fields):
        """Replaces the header's fields; the header is created at the top when there is none.

        Args:
            fields: `{name: value}` in the order to write them.
        """
        self._header_fields = dict(fields)
        value = "".join(f"{name}: {text}\n" for name, text in fields.items())
        lines = ['msgstr ""'] + [f'"{_quote(line)}"' for line in re.findall(r".*?\n|.+", value)]
        header = self.header
        if header is None:
            header = PoEntry(msgid="", msgstr=[value])
            self.entries.insert(0, header)
            self._edits.append(((0, 0), (0, 0), 0, ['msgid ""', *lines, "", ""]))
            return
        header.msgstr = [value]
        self._edits.append((*header._msgstr, 3, lines))

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
        if _FUZZY not in entry.flags:
            entry.flags = (_FUZZY, *entry.flags)
            if entry._flag_line is not None:
                old = self._lines[entry._flag_line]
                rest = old.lstrip()[2:].strip()
                line = entry._flag_line
                self._edits.append(((line, 0), (line, len(old)), 3, [f"#, {_FUZZY}, {rest}"]))
        if comment is not None:
            at = (entry._comment_end, 0)
            self._edits.append((at, at, 1, [f"# {comment}", ""]))
        if _FUZZY in entry.flags and entry._flag_line is None:
            before = min((number for number in range(entry._start, entry._keywords)
                          if self._lines[number].lstrip().startswith(("#|", "#~|"))),
                         default=entry._keywords)
            self._edits.append(((before, 0), (before, 0), 2, [f"#, {_FUZZY}", ""]))

    def text(self):
        """The catalog as text: the lines read, with the changes made since.

        Returns:
            A `str`, with the line ends the file had.
        """
        newline = self._newline
        starts, offset = [], 0
        for line in self._lines:
            starts.append(offset)
            offset += len(line) + len(newline)
        original = newline.join(self._lines) + (newline if self._lines and self._final_newline else "")

        def at(position):
            line, column = position
            return min(starts[line] + column, len(original)) if line < len(starts) else len(original)

        out, position = [], 0
        for start, end, _, lines in sorted(self._edits, key=lambda edit: (edit[0], edit[2])):
            begin = at(start)
            out.append(original[position:begin])
            out.append(newline.join(lines))
            position = max(position, begin, at(end))
        out.append(original[position:])
        return "".join(out)
