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
            start = end = reader.at + 1
            depth = 0
            while end < len(text) and not (text[end] == "}" and depth == 0):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                end += 1
            if end >= len(text):
                raise Invalid("The string ends in the middle of a directive: found '{' without "
                              "matching '}'.")
            _element(text[start:end], spec)
            reader.at = end
            reader.step()
        elif reader.unquoted("}"):
            raise Invalid("The string starts in the middle of a directive: found '}' without "
                          "matching '{'.")
        elif not reader.at_end():
            reader.step()
        else:
            spec.depth -= 1
            return


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
            reader.escape()
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
            message.append(reader.char())
            reader.step()
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
