"""printf-like format strings of Java, Perl, Tcl, awk, Boost, Object Pascal, Emacs Lisp and
librep, read as gettext 0.21's format-*.c read them (byte by byte): each parser gives
{argument number: type}, which `common.compare_numbered` compares."""

import re

from keras_transformer.messages.format_strings.common import ARGUMENT_NUMBER
from keras_transformer.messages.format_strings.common import argument_number
from keras_transformer.messages.format_strings.common import Arguments
from keras_transformer.messages.format_strings.common import bytes_view
from keras_transformer.messages.format_strings.common import c_unsigned
from keras_transformer.messages.format_strings.common import conversion_error
from keras_transformer.messages.format_strings.common import DIGITS
from keras_transformer.messages.format_strings.common import directive_type
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.format_strings.common import merging
from keras_transformer.messages.format_strings.common import MIXES_NUMBERED
from keras_transformer.messages.format_strings.common import numbered_star
from keras_transformer.messages.format_strings.common import scan_directives
from keras_transformer.messages.format_strings.common import typed_arguments
from keras_transformer.messages.format_strings.common import UNTERMINATED
from keras_transformer.messages.format_strings.common import zero_number
from keras_transformer.messages.format_strings.common import width_and_precision

_NONZERO_NUMBER = re.compile(r"([1-9][0-9]*)\$")  # Perl's `m$`: no leading zero
_FLAGS = re.compile(r"[-+ #0]*")
_PERL_WIDTH = re.compile(r"(?:[1-9][0-9]*)?")


def _printf_arguments(text, parse_directive, arguments, encoding):
    """The types of `arguments` after `parse_directive(text, at, directive, arguments)` has
    read each directive of the byte view of `text`."""
    text = bytes_view(text, encoding)
    scan_directives(text, lambda at, directive: parse_directive(text, at, directive, arguments))
    return arguments.types()


# --- Java printf (format-java-printf.c): `%[m$|<][flags][width][.precision]c`.

_JAVA_FLAGS = re.compile(r"[-#0 +,(]*")
_JAVA_DATETIME_SUFFIXES = "HIklMSLNpzZsQBbhAaCYyjmdeRTrDFc"
_JAVA_CONVERSIONS = {  # conversion: (type, flags, width and precision it refuses)
    "%": (None, "#0 +,(."), "n": (None, "#0- +,(w."),
    **dict.fromkeys("bBhHsS", ("general", "0 +,(")), **dict.fromkeys("cC", ("character", "#0 +,(.")),
    "d": ("integer", "#."), **dict.fromkeys("oxX", ("integer", ",.")),
    **dict.fromkeys("eEfgG", ("floating-point", "")), **dict.fromkeys("aA", ("floating-point", ",(")),
    **dict.fromkeys("tT", ("date/time", "#0 +,(.")),
}


class _JavaArguments(Arguments):
    last = 0  # `%<` takes the previous directive's argument


def _java_printf_directive(text, at, directive, arguments):
    if text[at:at + 1] == "<":
        if not arguments.last:
            raise Invalid(f"In the directive number {directive}, the reference to the argument "
                          "of the previous directive is invalid.")
        number, at = arguments.last, at + 1
    else:
        number, at = argument_number(text, at, directive)
    given = _JAVA_FLAGS.match(text, at).group()
    at += len(given)
    width = DIGITS.match(text, at).end()
    given += "w" * (width > at)
    at = width
    if text[at:at + 1] == ".":
        precision = DIGITS.match(text, at + 1).end()
        if precision == at + 1:
            raise Invalid(UNTERMINATED if precision == len(text) else
                          f"In the directive number {directive}, the precision is missing.")
        given += "."
        at = precision
    char = text[at:at + 1]
    kind, refused = directive_type(char, _JAVA_CONVERSIONS, directive)
    for flag in "#0- +,(w.":
        if flag in refused and flag in given:
            what = {"w": "a width is", ".": "a precision is"}.get(flag, f"the flag '{flag}' is")
            raise Invalid(f"In the directive number {directive}, {what} invalid for the "
                          f"conversion '{char}'.")
    if kind == "date/time":
        at += 1
        suffix = text[at:at + 1]
        if not suffix:
            raise Invalid(UNTERMINATED)
        if suffix not in _JAVA_DATETIME_SUFFIXES:
            raise Invalid(f"In the directive number {directive}, for the conversion '{char}', the "
                          f"character '{suffix}' is not a valid conversion suffix.")
    if kind is not None:
        arguments.last = arguments.add(number, kind)
    return at + 1


def java_printf_arguments(text, encoding="utf-8"):
    return _printf_arguments(text, _java_printf_directive, _JavaArguments(exclusive=False), encoding)


# --- Perl (format-perl.c): `%[m$][flags][vector][width][.precision][size]c`; numbered
# arguments (`m$` with no leading zero) leave the count of unnumbered ones alone.

_PERL_SIZES = re.compile(r"h|ll|l|L|q|V|I64|I32|I")
_PERL_SIZE = {"h": "short", "l": "long", "ll": "long long", "L": "long long", "q": "long long",
              "I64": "long long", "V": "V", "I": "ptr", "I32": ""}
_PERL_CONVERSIONS = {"%": None, "c": ("char",), "s": ("string",), "_": ("vector",), "p": ("pointer",),
                     "D": ("integer", "V"), "U": ("unsigned", "V"), "O": ("unsigned", "V"),
                     **dict.fromkeys("id", "integer"), **dict.fromkeys("ubxXo", "unsigned"),
                     **dict.fromkeys("eEfFgG", "double"), "n": "count pointer"}


def _perl_number(text, at):
    """An optional `m$` with m from 1: (m or 0, the index after it)."""
    match = _NONZERO_NUMBER.match(text, at)
    return (c_unsigned(match.group(1)), match.end()) if match else (0, at)


def _perl_directive(text, at, directive, arguments):
    number, at = _perl_number(text, at)
    at = _FLAGS.match(text, at).end()
    vector = text[at:at + 1] == "v"
    if vector:
        at += 1
    elif text[at:at + 1] == "*":
        vector_number, after = _perl_number(text, at + 1)
        if text[after:after + 1] == "v":
            vector, at = True, after + 1
            arguments.add(vector_number, ("vector",))
    if vector:
        arguments.add(number, ("vector",))

    def star(at, what):
        star_number, at = _perl_number(text, at)
        arguments.add(star_number, ("integer", ""))
        return at

    at = width_and_precision(text, at, star, width=_PERL_WIDTH)
    size = _PERL_SIZES.match(text, at)
    size, at = (_PERL_SIZE[size.group()], size.end()) if size else ("", at)
    char = text[at:at + 1]
    kind = directive_type(char, _PERL_CONVERSIONS, directive)
    if kind == "double" and size in ("short", "long"):
        raise Invalid(f"In the directive number {directive}, the size specifier is incompatible "
                      f"with the conversion specifier '{char}'.")
    if kind is not None and not vector:
        arguments.add(number, kind if isinstance(kind, tuple) else (kind, size))
    return at + 1


def perl_arguments(text, encoding="utf-8"):
    return _printf_arguments(text, _perl_directive, Arguments(exclusive=False), encoding)


# --- awk (format-awk.c) and Boost (format-boost.c): C's directives, where numbered and
# unnumbered arguments do not mix.

_AWK_TYPES = {"%": None, "c": "character", "s": "string", **dict.fromkeys("id", "integer"),
              **dict.fromkeys("uoxX", "unsigned integer"), **dict.fromkeys("eEfgG", "float")}


def _awk_directive(text, at, directive, arguments):
    number, at = argument_number(text, at, directive)
    at = _FLAGS.match(text, at).end()
    at = width_and_precision(text, at, numbered_star(text, directive, arguments, "integer"))
    kind = directive_type(text[at:at + 1], _AWK_TYPES, directive)
    if kind is not None:
        arguments.add(number, kind)
    return at + 1


def awk_arguments(text, encoding="utf-8"):
    return _printf_arguments(text, _awk_directive, Arguments(exclusive=True), encoding)


_BOOST_FLAGS = re.compile(r"[-+ #0'_=hl]*")
_BOOST_TYPES = {**dict.fromkeys("cC", "char"), **dict.fromkeys("sS", "any"),
                **dict.fromkeys("idouxX", "integer"), **dict.fromkeys("eEfgG", "double"),
                "p": "pointer", "t": None, "T": None, "n": None}


def _boost_directive(text, at, directive, arguments):
    """`%%`, `%m%`, or `%[|][m$][flags][width][.precision][size]c` (`|` ... `|` with the
    conversion optional)."""
    if text[at:at + 1] == "%":
        return at + 1
    brackets = text[at:at + 1] == "|"
    at += brackets
    number, kind, done = 0, None, False
    match = re.compile(r"[1-9][0-9]*([$%])").match(text, at)
    if match and not (brackets and match.group(1) == "%"):
        number, at = c_unsigned(match.group()[:-1]), match.end()
        if number == 0:
            raise Invalid(zero_number(directive))
        done = match.group(1) == "%"
        kind = "any" if done else None
    if not done:
        at = _BOOST_FLAGS.match(text, at).end()
        at = width_and_precision(text, at, numbered_star(text, directive, arguments, "integer"))
        at = re.compile(r"[hlL]*").match(text, at).end()
        char = text[at:at + 1]
        if brackets and char == "|":
            kind = "any"
        else:
            kind = directive_type(char, _BOOST_TYPES, directive)
            at += 1
            if char == "T":
                if at >= len(text):
                    raise Invalid(UNTERMINATED)
                at += 1
        if brackets:
            if text[at:at + 1] != "|":
                raise Invalid(UNTERMINATED if at >= len(text) else
                              f"The directive number {directive} starts with | but does not end "
                              "with |.")
            at += 1
    if kind is not None:
        arguments.add(number, kind)
    return at


def boost_arguments(text, encoding="utf-8"):
    return _printf_arguments(text, _boost_directive,
                             Arguments(exclusive=True, merge=merging("any")), encoding)


# --- Object Pascal (format-pascal.c): `%[index:][-][width][.precision]c` with 0-based
# argument numbers; `*` reads an integer argument.

_PASCAL_TYPES = {**dict.fromkeys("dux", "integer"), **dict.fromkeys("efgnm", "float"),
                 "s": "string", "p": "pointer"}


def pascal_arguments(text, encoding="utf-8"):
    text, pairs, count = bytes_view(text, encoding), [], [0]

    def unnumbered(kind):
        pairs.append((count[0], kind))
        count[0] += 1

    def directive(at, directive):
        if text[at:at + 1] == "%":
            return at + 1
        index = re.compile(r"([0-9]*):").match(text, at)
        main = "unnumbered"
        if index:
            main, at = c_unsigned(index.group(1) or 0), index.end()
        elif text.startswith("*:", at):
            main, at = "unknown", at + 2
        at += text[at:at + 1] == "-"
        at = width_and_precision(text, at, lambda at, what: unnumbered("integer") or at, bare_dot=False)
        char = text[at:at + 1]
        kind = _PASCAL_TYPES.get(char.lower() if char.isascii() else char)
        if not kind:
            raise Invalid(conversion_error(directive, char) if char else UNTERMINATED)
        if main == "unnumbered":
            unnumbered(kind)
        elif main == "unknown":
            unnumbered("integer")
        else:
            pairs.append((main, kind))
        return at + 1

    scan_directives(text, directive)
    return typed_arguments(pairs)


# --- Tcl (format-tcl.c), Emacs Lisp (format-elisp.c), librep (format-librep.c): `%m$` sets
# the current argument number, which each argument read increments.

_TCL_TYPES = {"c": "character", "s": "string", **dict.fromkeys("id", "integer"),
              **dict.fromkeys("uoxX", "unsigned integer"), **dict.fromkeys("eEfgG", "float")}
_ELISP_TYPES = {"%": None, "c": "character", **dict.fromkeys("dixXo", "integer"),
                **dict.fromkeys("eEfgG", "float"), "s": "object pretty", "S": "object"}
_LIBREP_TYPES = {"%": None, "c": "character", **dict.fromkeys("dxXo", "integer"),
                 "s": "object pretty", "S": "object"}


def _current_numbered(text, flags, stars, types, tcl=False, encoding="utf-8"):
    """The arguments of a string whose `%m$` moves the current argument (`stars`: a width
    and a precision may be `*`; `tcl`: `%%` is text, `m$` may not be 0, numbered and
    unnumbered directives do not mix, and `h` makes an integer short)."""
    text, pairs, current, seen = bytes_view(text, encoding), [], [1], set()

    def add(kind):
        pairs.append((current[0], kind))
        current[0] += 1

    def directive(at, directive):
        if tcl and text[at:at + 1] == "%":
            return at + 1
        match = ARGUMENT_NUMBER.match(text, at)
        if match and (tcl or c_unsigned(match.group(1)) > 0):
            if tcl:
                argument_number(text, at, directive)
            current[0], at = c_unsigned(match.group(1)), match.end()
        if tcl:
            seen.add(bool(match))
            if len(seen) > 1:
                raise Invalid(MIXES_NUMBERED)
        at = flags.match(text, at).end()
        at = width_and_precision(text, at, stars and (lambda at, what: add("integer") or at))
        short = tcl and text[at:at + 1] == "h"
        at += tcl and text[at:at + 1] in ("h", "l")
        kind = directive_type(text[at:at + 1], types, directive)
        if kind is not None:
            add("short " + kind if short and kind.endswith("integer") else kind)
        return at + 1

    scan_directives(text, directive)
    return typed_arguments(pairs)


def tcl_arguments(text, encoding="utf-8"):
    return _current_numbered(text, _FLAGS, True, _TCL_TYPES, tcl=True, encoding=encoding)


def elisp_arguments(text, encoding="utf-8"):
    return _current_numbered(text, _FLAGS, True, _ELISP_TYPES, encoding=encoding)


def librep_arguments(text, encoding="utf-8"):
    return _current_numbered(text, re.compile(r"[-^0+ ]*"), False, _LIBREP_TYPES, encoding=encoding)
