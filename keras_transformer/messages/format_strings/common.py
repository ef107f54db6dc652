"""What gettext's format-*.c parsers share: the reasons they give, the byte view they step
through, the numbering of printf-like arguments and the comparison of numbered arguments."""

import re


class Invalid(Exception):
    """A string that is not a valid format string; the argument is gettext's reason."""


ARGUMENT_NUMBER = re.compile(r"([0-9]+)\$")  # ASCII digits only, as in C
DIGITS = re.compile(r"[0-9]*")
UNTERMINATED = "The string ends in the middle of a directive."
MIXES_NUMBERED = ("The string refers to arguments both through absolute argument numbers and "
                  "through unnumbered argument specifications.")


def conversion_error(directive, char, what="a valid conversion specifier"):
    """gettext's reason for a directive that `char` ends (INVALID_CONVERSION_SPECIFIER): the
    character is named when printable ASCII."""
    if " " <= char <= "~":
        return f"In the directive number {directive}, the character '{char}' is not {what}."
    return f"The character that terminates the directive number {directive} is not {what}."


def c_order(name):
    """Sorts names as C's strcmp does on their UTF-8 bytes."""
    return name.encode("utf-8", "surrogateescape")


def bytes_view(text):
    """The text as gettext's C parsers step through it: one character per UTF-8 byte."""
    return text.encode("utf-8", "surrogateescape").decode("latin-1")


def typed_arguments(pairs):
    """{number: type} of (number, type) pairs; a number given two types is refused as
    gettext refuses it (the smallest such number)."""
    types = {}
    for number, kind in sorted(pairs, key=lambda pair: pair[0]):
        if types.setdefault(number, kind) != kind:
            raise Invalid(f"The string refers to argument number {number} in incompatible ways.")
    return types


def compare_numbered(wanted, found, strict, pretty, lenient=None):
    """gettext's common check of numbered arguments: msgstr may not use an argument msgid does
    not; in strict checking it must use each one msgid uses; shared ones have one type (or,
    relaxed, `lenient` on either side)."""
    msgid, msgstr = pretty
    for number in sorted(set(wanted) | set(found)):
        if number not in wanted:
            return (f"a format specification for argument {number}, as in '{msgstr}', doesn't "
                    f"exist in '{msgid}'")
        if number not in found and strict:
            return f"a format specification for argument {number} doesn't exist in '{msgstr}'"
    for number in sorted(found):
        same = wanted[number] == found[number] or (
            not strict and lenient is not None and lenient in (wanted[number], found[number]))
        if not same:
            return (f"format specifications in '{msgid}' and '{msgstr}' for argument {number} "
                    "are not the same")
    return None


def argument_number(text, at, directive, what=""):
    """An optional `n$` at `at` (ASCII digits): (n or 0, the index after it). `what`:
    "width's " or "precision's " for one after a `*`."""
    match = ARGUMENT_NUMBER.match(text, at)
    if not match:
        return 0, at
    if int(match.group(1)) == 0:
        raise Invalid(f"In the directive number {directive}, the {what}argument number 0 is not "
                      "a positive integer.")
    return int(match.group(1)), match.end()


def directive_type(char, types, directive):
    """The argument type of a conversion character, from `types`; refuses another one."""
    if char in types and char:
        return types[char]
    raise Invalid(UNTERMINATED if not char else conversion_error(directive, char))


class Arguments:
    """The (number, type) pairs of a printf-like string as gettext collects them: an
    unnumbered argument takes the next number of its own count (`%m$` leaves the count
    alone); `exclusive`: numbered and unnumbered arguments do not mix."""

    def __init__(self, exclusive):
        self.pairs, self.numbered, self.unnumbered, self.exclusive = [], 0, 0, exclusive

    def add(self, number, kind):
        """Adds argument `number` (0: the next unnumbered one); returns its number."""
        if self.exclusive and (self.unnumbered if number else self.numbered):
            raise Invalid(MIXES_NUMBERED)
        if number:
            self.numbered += 1
        else:
            self.unnumbered += 1
            number = self.unnumbered
        self.pairs.append((number, kind))
        return number

    def types(self):
        return typed_arguments(self.pairs)


def width_and_precision(text, at, directive, arguments, kind):
    """A width and a `.precision` at `at`, each digits or `*` with an optional `m$` (C, awk,
    Boost): the `*` ones added to `arguments` with type `kind`; the index after them."""
    for what in ("width's ", "precision's "):
        if what == "precision's ":
            if text[at:at + 1] != ".":
                break
            at += 1
        if text[at:at + 1] == "*":
            number, at = argument_number(text, at + 1, directive, what)
            arguments.add(number, kind)
        else:
            at = DIGITS.match(text, at).end()
    return at
