"""Java MessageFormat strings, read as gettext 0.21's format-java.c reads them (byte by
byte): `{n}`, `{n,time|date[,style]}`, `{n,number[,style]}`, `{n,choice[,pattern]}` where a
choice pattern holds message formats in turn; quotes make braces text.

message_format_parse and choice_format_parse call each other for each choice nested in a
choice, and each copies the text it hands down; here they are generators that `run_nested`
runs, however deep they nest, reading one string through views (a start and an
end in it) where the text handed down is a part of it, with the positions of its braces and
stops found once."""

import bisect
import re

from keras_transformer.messages.format_strings.common import bytes_view
from keras_transformer.messages.format_strings.common import c_unsigned
from keras_transformer.messages.format_strings.common import compare_numbered
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.format_strings.common import merging
from keras_transformer.messages.format_strings.common import typed_arguments
from keras_transformer.messages.format_strings.common import view_text
from keras_transformer.messages.format_strings.explicit_stack import collector_paused
from keras_transformer.messages.format_strings.explicit_stack import run_nested

_HEX_ESCAPE = re.compile(r"\\u[0-9A-Fa-f]{4}")
_ARGUMENT = re.compile(r"[0-9]+")
_BRACES = re.compile(r"[{}]")
# What each loop stops at; the characters between them only step (a quote is always one).
_MESSAGE_STOPS = re.compile(r"['{}]")
_NUMBER_STOPS = re.compile(r"['<#|\\]")
_CHOICE_STOPS = re.compile(r"['|]")
# msgfmt 0.21 (Debian's) reads a choice nested 12,186 levels deep with 4 MiB of stack and 3,454
# with 2 MiB: about 240 bytes a level, after at most about 1.25 MB that the innermost levels
# take for the copies xmalloca puts on the stack (those under 4 KB). With the default 8 MiB it
# would crash past about 29,600 levels (extrapolated: a string of 385 KB at least, a level
# taking 13 bytes at least, `{0,choice,0#}`), and its memory grows with the square of the
# depth (each level copies what it holds: 3 GB at 15,384 levels, about 8 GB at 29,600).
# Given the stack and memory, it would judge any depth: these parsers do, in memory linear in
# the depth.


class _Text:
    """A string the parsers read, with what they look up in it found once: where the `}`
    closing each `{` is (format-java.c counts braces to it whatever the quotes) and where the
    characters each loop stops at are."""

    def __init__(self, text):
        self.text, self._closing, self._stops = text, None, {}

    def closing_brace(self, at, end):
        """The index of the `}` that closes the `{` at `at` in the part of the text that ends
        at `end`, or -1."""
        if self._closing is None:
            self._closing, opened = {}, []
            for brace in _BRACES.finditer(self.text):
                if brace.group() == "{":
                    opened.append(brace.start())
                elif opened:
                    self._closing[opened.pop()] = brace.start()
        closing = self._closing.get(at, -1)
        return closing if closing < end else -1

    def next_stop(self, stops, at, end):
        """The index of the first of `stops` from `at` on, before `end` (or `end`)."""
        if stops not in self._stops:
            self._stops[stops] = [stop.start() for stop in stops.finditer(self.text)]
        positions = self._stops[stops]
        index = bisect.bisect_left(positions, at)
        return min(positions[index], end) if index < len(positions) else end


class _Reader:
    """A position in a part of a pattern (`source.text[start:end]`) and its quoting,
    stepped as format-java.c steps: a quote toggles quoting and is skipped, `''` is one quote
    (HANDLE_QUOTE)."""

    def __init__(self, source, start=0, end=None):
        self.source, self.text = source, source.text
        self.at, self.end = start, len(source.text) if end is None else end
        self.quoting = False
        self.handle_quote()

    def char(self):
        return self.text[self.at] if self.at < self.end else ""

    def unquoted(self, chars):
        return not self.quoting and self.char() != "" and self.char() in chars

    def startswith(self, prefix):
        return self.text.startswith(prefix, self.at, self.end)

    def step(self, count=1):
        self.at += count
        self.handle_quote()

    def step_to(self, stops):
        """Steps once, then on to the next of `stops` (or the end): what stepping character by
        character would do, at the cost of one search. Returns where it stopped (before a
        quote there is stepped over)."""
        self.at = stop = self.source.next_stop(stops, self.at + 1, self.end)
        self.handle_quote()
        return stop

    def handle_quote(self):
        if self.char() == "'":
            self.at += 1
            if self.char() != "'":
                self.quoting = not self.quoting

    def escape(self):
        """Steps over a character, `\\uXXXX` or a backslash and the byte after it."""
        if self.char() != "\\":
            self.step()
        else:
            self.step(6 if _HEX_ESCAPE.match(self.text, self.at, self.end) else 2)

    def at_end(self):
        return self.at >= self.end


class _Spec:
    def __init__(self):
        self.directives, self.pairs = 0, []

    def refuse(self, reason):
        raise Invalid(f"In the directive number {self.directives}, {reason}.")


def _message_format(source, start, end, spec):
    """message_format_parse on `source.text[start:end]`; a generator for `run_nested`."""
    reader = _Reader(source, start, end)
    while True:
        if reader.unquoted("{"):
            spec.directives += 1
            closing = source.closing_brace(reader.at, end)
            if closing < 0:
                raise Invalid("The string ends in the middle of a directive: found '{' without "
                              "matching '}'.")
            yield _element(source, reader.at + 1, closing, spec)
            reader.at = closing
            reader.step()
        elif reader.unquoted("}"):
            raise Invalid("The string starts in the middle of a directive: found '}' without "
                          "matching '{'.")
        elif not reader.at_end():
            reader.step_to(_MESSAGE_STOPS)
        else:
            return


def _element(source, start, end, spec):
    """What message_format_parse reads between a `{` and its `}` (`source.text[start:end]`);
    a generator, as it reads a choice's message formats."""
    text = source.text
    number = _ARGUMENT.match(text, start, end)
    if not number:
        spec.refuse("'{' is not followed by an argument number")
    at = number.end()
    for word, kind in (("", "object"), (",time", "date"), (",date", "date"), (",number", "number"),
                       (",choice", "number")):
        if word and text.startswith(word, at, end) or not word and at == end:
            break
    else:
        spec.refuse('the argument number is not followed by a comma and one of "time", "date", '
                    '"number", "choice"')
    at += len(word)
    if at < end and text[at] != ",":
        spec.refuse(f'"{word[1:]}" is not followed by a comma')
    has_style, at = at < end, at + 1
    if word == ",number" and has_style:
        style = text[at:end]
        if style not in ("currency", "percent", "integer") and not _number_format(style):
            spec.refuse(f'the substring "{view_text(style)}" is not a valid number style')
    if word == ",choice" and at < end:
        yield _choice_format(source, at, end, spec)
    spec.pairs.append((c_unsigned(number.group()), kind))


def _number_format(text):
    """Whether a DecimalFormat pattern is valid as format-java.c sees it."""
    reader = _Reader(_Text(text))
    while True:
        while not reader.at_end() and not reader.unquoted("0#"):
            reader.escape()  # prefix
        if not reader.unquoted("0#"):
            return False
        for digit in "#0":  # integer
            while reader.unquoted(digit):
                reader.step()
                if reader.unquoted(","):
                    reader.step()
        if reader.unquoted("."):  # fraction
            reader.step()
            for digit in "0#":
                while reader.unquoted(digit):
                    reader.step()
        if reader.unquoted("E"):  # exponent
            at = reader.at
            reader.step()
            if reader.unquoted("0"):
                while reader.unquoted("0"):
                    reader.step()
            else:
                reader.at, reader.quoting = at, False
        while not reader.at_end() and not reader.unquoted(";"):
            reader.escape()  # suffix
        if not reader.unquoted(";"):
            return reader.at_end()


def _choice_format(source, start, end, spec):
    """choice_format_parse on `source.text[start:end]`; a generator for `run_nested`. A
    choice's message format is its text with its quotes taken out (HANDLE_QUOTE): where it has
    none, it is read in place."""
    reader = _Reader(source, start, end)
    if reader.at_end():
        return
    while True:
        nonempty = False
        while not reader.at_end() and not (reader.unquoted("<#|") or not reader.quoting and
                                           reader.startswith("\\u2264")):
            if reader.char() == "\\":
                reader.escape()
            else:
                reader.step_to(_NUMBER_STOPS)
            nonempty = True
        if reader.at_end():
            return
        if not nonempty:
            spec.refuse("a choice contains no number")
        if reader.char() in ("<", "#"):
            reader.step()
        elif reader.startswith("\\u2264"):
            reader.step(6)
        else:
            spec.refuse("a choice contains a number that is not followed by '<', '#' or '\\u2264'")
        pieces = []
        while not reader.at_end() and not reader.unquoted("|"):
            at = reader.at
            pieces.append((at, reader.step_to(_CHOICE_STOPS)))
        if len(pieces) == 1:
            yield _message_format(source, *pieces[0], spec)
        else:
            message = _Text("".join(source.text[piece_start:piece_end]
                                    for piece_start, piece_end in pieces))
            yield _message_format(message, 0, len(message.text), spec)
        if reader.at_end():
            return
        reader.step()


def java_arguments(text, encoding="utf-8"):
    spec = _Spec()
    view = _Text(bytes_view(text, encoding))
    with collector_paused():
        run_nested(_message_format(view, 0, len(view.text), spec))
    return typed_arguments(spec.pairs, merging("object"))


def compare_java(wanted, found, strict, pretty):
    return compare_numbered(wanted, found, strict, pretty, label="{{{}}}")
