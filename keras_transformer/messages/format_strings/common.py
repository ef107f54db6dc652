"""What gettext's format-*.c parsers share: the reasons they give, the byte view they step
through, the numbering of printf-like arguments and the comparison of numbered arguments."""

import re

from keras_transformer.messages import charsets


class Invalid(Exception):
    """A string that is not a valid format string; the argument is gettext's reason."""


ARGUMENT_NUMBER = re.compile(r"([0-9]+)\$")  # ASCII digits only, as in C
DIGITS = re.compile(r"[0-9]*")
UNTERMINATED = "The string ends in the middle of a directive."


MIXES_NAMED = ("The string refers to arguments both through argument names and through "
               "unnamed argument specifications.")
MIXES_NUMBERED = ("The string refers to arguments both through absolute argument numbers and "
                  "through unnumbered argument specifications.")


def conversion_error(directive, char, what="a valid conversion specifier"):
    """gettext's reason for a directive that `char` ends (INVALID_CONVERSION_SPECIFIER): the
    character is named when printable ASCII."""
    if " " <= char <= "~":
        return f"In the directive number {directive}, the character '{char}' is not {what}."
    return f"The character that terminates the directive number {directive} is not {what}."


def c_unsigned(digits):
    """The number ASCII digits make in a C `unsigned int` (it wraps at 2**32)."""
    return int(digits) % 2**32


def c_order(name):
    """Sorts names as C's strcmp does on their UTF-8 bytes."""
    return name.encode("utf-8", "surrogateescape")


def bytes_view(text, encoding="utf-8"):
    """The text as gettext's C parsers step through it: one character per byte of it in
    `encoding`, the catalog's (msgfmt checks the catalog's bytes, where a BIG5 or SHIFT_JIS
    character's second byte can be a `~`, `{` or `\\`).

    Raises:
        UnicodeEncodeError: `encoding` cannot hold the text.
    """
    return charsets.encode(text, encoding, "surrogateescape").decode("latin-1")


def view_text(view):
    """A name or character of a `bytes_view` as the text msgfmt prints (its bytes, read as
    UTF-8; a byte that is not is kept as a surrogate): one name for one byte string, and
    `c_order` sorts them as strcmp sorts the bytes."""
    return view.encode("latin-1").decode("utf-8", "surrogateescape")


def scan_directives(text, parse_directive):
    """Runs `parse_directive(at, directive)` (at: the index after the `%`; it returns the
    index after the directive) on each directive of `text`, as gettext's loops do."""
    directive, at = 0, 0
    while True:
        at = text.find("%", at) + 1
        if not at:
            return
        directive += 1
        at = parse_directive(at, directive)


def typed_arguments(pairs, merge=None):
    """{number: type} of (number, type) pairs; a number given two types is refused as
    gettext refuses it (the smallest such number). `merge(known, type)`: the one type of two,
    None when they are incompatible (default: the same type only)."""
    types = {}
    for number, kind in sorted(pairs, key=lambda pair: pair[0]):
        known = types.setdefault(number, kind)
        types[number] = merge(known, kind) if merge else known if known == kind else None
        if types[number] is None:
            raise Invalid(f"The string refers to argument number {number} in incompatible ways.")
    return types


def merging(neutral):
    """A `merge` for `typed_arguments` where the type `neutral` (Java's object, Boost's any)
    gives way to any other."""
    def merge(known, kind):
        return kind if known == neutral else known if kind in (neutral, known) else None
    return merge


def gapless(types):
    """The types of {number: type} in order of number; refuses, as gettext does, a string that
    leaves an argument out."""
    for index, number in enumerate(sorted(types), start=1):
        if number != index:
            raise Invalid(f"The string refers to argument number {number} but ignores argument "
                          f"number {index}.")
    return [types[number] for number in sorted(types)]


def compare_numbered(wanted, found, strict, pretty, lenient=None, label="{}"):
    """gettext's common check of numbered arguments: msgstr may not use an argument msgid does
    not; in strict checking it must use each one msgid uses; shared ones have one type (or,
    relaxed, `lenient` on either side). `label`: how a message shows an argument number."""
    msgid, msgstr = pretty
    for number in sorted(set(wanted) | set(found)):
        if number not in wanted:
            return (f"a format specification for argument {label.format(number)}, as in "
                    f"'{msgstr}', doesn't exist in '{msgid}'")
        if number not in found and strict:
            return (f"a format specification for argument {label.format(number)} doesn't exist "
                    f"in '{msgstr}'")
    for number in sorted(found):
        same = wanted[number] == found[number] or (
            not strict and lenient is not None and lenient in (wanted[number], found[number]))
        if not same:
            return (f"format specifications in '{msgid}' and '{msgstr}' for argument "
                    f"{label.format(number)} are not the same")
    return None


def compare_positional(msgid_types, msgstr_types, strict, pretty):
    """Types of arguments in order (C, Ruby's numbered ones): as many (relaxed, msgstr may
    have fewer), the same type each."""
    msgid, msgstr = pretty
    if len(msgid_types) != len(msgstr_types) if strict else len(msgid_types) < len(msgstr_types):
        return f"number of format specifications in '{msgid}' and '{msgstr}' does not match"
    for index, (wanted, found) in enumerate(zip(msgid_types, msgstr_types), start=1):
        if wanted != found:
            return (f"format specifications in '{msgid}' and '{msgstr}' for argument {index} "
                    "are not the same")
    return None


def compare_named(wanted, found, strict, pretty, lenient=None):
    """{name: type} of msgid and msgstr (Python, Ruby): msgstr names only msgid's names, all
    of them in strict checking, with the same types (relaxed, `lenient` matches any)."""
    msgid, msgstr = pretty
    for name in sorted(set(wanted) | set(found), key=c_order):
        if name not in wanted:
            return (f"a format specification for argument '{name}', as in '{msgstr}', doesn't "
                    f"exist in '{msgid}'")
        if name not in found and strict:
            return f"a format specification for argument '{name}' doesn't exist in '{msgstr}'"
    for name in sorted(found, key=c_order):
        if not (wanted[name] == found[name] or not strict and lenient is not None
                and lenient in (wanted[name], found[name])):
            return (f"format specifications in '{msgid}' and '{msgstr}' for argument '{name}' "
                    "are not the same")
    return None


def zero_number(directive, what=""):
    """gettext's reason for an argument number 0 (INVALID_ARGNO_0 and its width's and
    precision's kin)."""
    return f"In the directive number {directive}, the {what}argument number 0 is not a positive integer."


def argument_number(text, at, directive, what=""):
    """An optional `n$` at `at` (ASCII digits): (n or 0, the index after it). `what`:
    "width's " or "precision's " for one after a `*`."""
    match = ARGUMENT_NUMBER.match(text, at)
    if not match:
        return 0, at
    if c_unsigned(match.group(1)) == 0:
        raise Invalid(zero_number(directive, what))
    return c_unsigned(match.group(1)), match.end()


def directive_type(char, types, directive):
    """The argument type of a conversion character, from `types`; refuses another one."""
    if char in types and char:
        return types[char]
    raise Invalid(UNTERMINATED if not char else conversion_error(directive, char))


class Arguments:
    """The (number, type) pairs of a printf-like string as gettext collects them: an
    unnumbered argument takes the next number of its own count (`%m$` leaves the count
    alone); `exclusive`: numbered and unnumbered arguments do not mix; `merge`: as in
    `typed_arguments`."""

    def __init__(self, exclusive, merge=None):
        self.pairs, self.numbered, self.unnumbered, self.exclusive = [], 0, 0, exclusive
        self.merge = merge

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
        return typed_arguments(self.pairs, self.merge)


def width_and_precision(text, at, star, bare_dot=True, width=DIGITS):
    """A width and a `.precision` at `at`, each digits (`width`: those of a width) or, where
    `star` is given, `*`: then `star(at, what)` (at: the index after the `*`; what: "width's "
    or "precision's ") reads what follows it and gives the index after that. `bare_dot`: a `.`
    without digits is a precision (else it is left for the conversion). The index after them."""
    for prefix, what in (("", "width's "), (".", "precision's ")):
        if not text.startswith(prefix, at):
            break
        if star and text.startswith(prefix + "*", at):
            at = star(at + len(prefix) + 1, what)
        else:
            digits = (width if not prefix else DIGITS).match(text, at + len(prefix)).end()
            at = digits if bare_dot or digits > at + len(prefix) else at
    return at


def numbered_star(text, directive, arguments, kind):
    """A `star` for `width_and_precision` (C, awk, Boost): an optional `m$` after the `*`, an
    argument of type `kind`."""
    def star(at, what):
        number, at = argument_number(text, at, directive, what)
        arguments.add(number, kind)
        return at
    return star
