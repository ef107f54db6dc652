"""Java MessageFormat strings, read as gettext 0.21's format-java.c reads them (byte by
byte): `{n}`, `{n,time|date[,style]}`, `{n,number[,style]}`, `{n,choice[,pattern]}` where a
choice pattern holds message formats in turn; quotes make braces text."""

import re

from keras_transformer.messages.format_strings.common import bytes_view
from keras_transformer.messages.format_strings.common import c_unsigned
from keras_transformer.messages.format_strings.common import check_nesting
from keras_transformer.messages.format_strings.common import compare_numbered
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.format_strings.common import merging
from keras_transformer.messages.format_strings.common import typed_arguments
from keras_transformer.messages.format_strings.common import view_text

_HEX_ESCAPE = re.compile(r"\\u[0-9A-Fa-f]{4}")
_ARGUMENT = re.compile(r"[0-9]+")
_FLAT = re.compile(r"(?:[^{}]|\{[^{}]*\})*")  # text and braces that hold no braces
# What each loop stops at; the characters between them only step (a quote is always one).
_MESSAGE_STOPS = re.compile(r"['{}]")
_NUMBER_STOPS = re.compile(r"['<#|\\]")
_CHOICE_STOPS = re.compile(r"['|]")


class _Reader:
    """A position in a pattern and its quoting, stepped as format-java.c steps: a quote
    toggles quoting and is skipped, `''` is one quote (HANDLE_QUOTE)."""

    def __init__(self, text):
        self.text, self.at, self.quoting = text, 0, False
        self.handle_quote()

    def char(self):
        return self.text[self.at:self.at + 1]

    def unquoted(self, chars):
        return not self.quoting and self.char() != "" and self.char() in chars

    def step(self, count=1):
        self.at += count
        self.handle_quote()

    def step_to(self, stops):
        """Steps once, then on to the next of `stops` (or the end): what stepping character by
        character would do, at the cost of one search. Returns where it stopped (before a
        quote there is stepped over)."""
        found = stops.search(self.text, self.at + 1)
        self.at = stop = found.start() if found else len(self.text)
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
            self.step(6 if _HEX_ESCAPE.match(self.text, self.at) else 2)

    def at_end(self):
        return self.at >= len(self.text)


class _Spec:
    def __init__(self):
        self.directives, self.pairs = 0, []
        self.depth = 0  # how many message formats are open (a choice holds message formats)

    def refuse(self, reason):
        raise Invalid(f"In the directive number {self.directives}, {reason}.")


def _message_format(text, spec):
    spec.depth += 1
    check_nesting(spec.depth)
    reader = _Reader(text)
    while True:
        if reader.unquoted("{"):
            spec.directives += 1
            start = reader.at + 1
            end = _closing_brace(text, start)
            if end < 0:
                raise Invalid("The string ends in the middle of a directive: found '{' without "
                              "matching '}'.")
            _element(text[start:end], spec)
            reader.at = end
            reader.step()
        elif reader.unquoted("}"):
            raise Invalid("The string starts in the middle of a directive: found '}' without "
                          "matching '{'.")
        elif not reader.at_end():
            reader.step_to(_MESSAGE_STOPS)
        else:
            spec.depth -= 1
            return


def _closing_brace(text, start):
    """The index of the `}` that closes a `{` before `start`, braces counted whatever the
    quotes (as format-java.c counts them), or -1. Text and `{...}` without braces inside are
    skipped in one search."""
    depth, at = 0, start
    while True:
        at = _FLAT.match(text, at).end()
        if at >= len(text):
            return -1
        if text[at] == "{":
            depth += 1
        elif depth == 0:
            return at
        else:
            depth -= 1
        at += 1


def _element(element, spec):
    number = _ARGUMENT.match(element)
    if not number:
        spec.refuse("'{' is not followed by an argument number")
    rest = element[number.end():]
    for word, kind in (("", "object"), (",time", "date"), (",date", "date"), (",number", "number"),
                       (",choice", "number")):
        if word and rest.startswith(word) or rest == word:
            break
    else:
        spec.refuse('the argument number is not followed by a comma and one of "time", "date", '
                    '"number", "choice"')
    style = rest[len(word):]
    if style[:1] not in ("", ","):
        spec.refuse(f'"{word[1:]}" is not followed by a comma')
    has_style, style = bool(style), style[1:]
    if word == ",number" and has_style and style not in ("currency", "percent", "integer") \
            and not _number_format(style):
        spec.refuse(f'the substring "{view_text(style)}" is not a valid number style')
    if word == ",choice" and style:
        _choice_format(style, spec)
    spec.pairs.append((c_unsigned(number.group()), kind))


def _number_format(text):
    """Whether a DecimalFormat pattern is valid as format-java.c sees it."""
    reader = _Reader(text)
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


def _choice_format(text, spec):
    reader = _Reader(text)
    if reader.at_end():
        return
    while True:
        nonempty = False
        while not reader.at_end() and not (reader.unquoted("<#|") or not reader.quoting and
                                           text.startswith("\\u2264", reader.at)):
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
        elif text.startswith("\\u2264", reader.at):
            reader.step(6)
        else:
            spec.refuse("a choice contains a number that is not followed by '<', '#' or '\\u2264'")
        message = []
        while not reader.at_end() and not reader.unquoted("|"):
            at = reader.at
            message.append(text[at:reader.step_to(_CHOICE_STOPS)])
        _message_format("".join(message), spec)
        if reader.at_end():
            return
        reader.step()


def java_arguments(text, encoding="utf-8"):
    spec = _Spec()
    _message_format(bytes_view(text, encoding), spec)
    return typed_arguments(spec.pairs, merging("object"))


def compare_java(wanted, found, strict, pretty):
    return compare_numbered(wanted, found, strict, pretty, label="{{{}}}")
