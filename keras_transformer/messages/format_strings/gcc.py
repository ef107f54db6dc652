"""GCC's own diagnostic format strings, read as gettext 0.21's format-gcc-internal.c and
format-gfc-internal.c read them (byte by byte)."""

import dataclasses
import re

from keras_transformer.messages.format_strings.common import argument_number
from keras_transformer.messages.format_strings.common import Arguments
from keras_transformer.messages.format_strings.common import bytes_view
from keras_transformer.messages.format_strings.common import c_unsigned
from keras_transformer.messages.format_strings.common import compare_numbered
from keras_transformer.messages.format_strings.common import compare_positional
from keras_transformer.messages.format_strings.common import directive_type
from keras_transformer.messages.format_strings.common import gapless
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.format_strings.common import MIXES_NUMBERED
from keras_transformer.messages.format_strings.common import scan_directives
from keras_transformer.messages.format_strings.common import typed_arguments
from keras_transformer.messages.format_strings.common import UNTERMINATED
from keras_transformer.messages.format_strings.common import zero_number


@dataclasses.dataclass
class GccSpec:
    arguments: object  # {number: type} (gcc-internal) or types in order (gfc-internal)
    special: bool  # uses %m (gcc-internal) or %C (gfc-internal)


_GCC_TYPES = {"c": "char", "s": "string", "i": "integer", "d": "integer", "o": "unsigned",
              "u": "unsigned", "x": "unsigned", "p": "pointer", "H": "location", "J": "tree decl",
              "K": "tree statement", "D": "tree decl", "F": "tree funcdecl", "T": "tree type",
              "E": "tree expression", "A": "tree argument", "C": "tree code", "L": "languages",
              "O": "tree code binop", "P": "funcparam", "Q": "tree code assop", "V": "tree cv"}
_GCC_FLAGS = {"q": 1, "l": 2, "w": 1, "+": 1, "#": 1}  # how often each may be given


def gcc_internal_arguments(text, encoding="utf-8"):
    """`%%`, `%<`, `%>`, `%'`, `%m`, or `%[m$][flags]c`, `%[m$].NNNs`, `%[m$].*[(m-1)$]s`;
    numbered and unnumbered arguments do not mix."""
    text, arguments, uses_errno = bytes_view(text, encoding), Arguments(exclusive=True), []

    def directive(at, directive):
        char = text[at:at + 1]
        if char and char in "%<>'m":
            uses_errno.append(char == "m")
            return at + 1
        number, at = argument_number(text, at, directive)
        flags = re.compile(r"[qlw+#]*").match(text, at).group()
        at += len(flags)
        if "l" in flags and "w" in flags or any(flags.count(flag) > most
                                                for flag, most in _GCC_FLAGS.items()):
            raise Invalid(f"In the directive number {directive}, the flags combination is invalid.")
        size = {2: " long long", 1: " long"}.get(flags.count("l"), " wide" if "w" in flags else "")
        char = text[at:at + 1]
        if char == ".":
            at += 1
            digits = re.compile(r"[0-9]+").match(text, at)
            if digits:
                at = digits.end()
            elif text[at:at + 1] == "*":
                at += 1
                match = re.compile(r"([0-9]+)\$").match(text, at)
                if match:
                    star = c_unsigned(match.group(1))
                    if star == 0:
                        raise Invalid(zero_number(directive, "width's "))
                    if arguments.unnumbered or not number:
                        raise Invalid(MIXES_NUMBERED)
                    if star != number - 1:
                        raise Invalid(f"In the directive number {directive}, the argument number "
                                      f"for the precision must be equal to {number - 1}.")
                    at = match.end()
                arguments.add(c_unsigned(match.group(1)) if match else 0, "integer")
            else:
                raise Invalid(f"In the directive number {directive}, the precision specification "
                              "is invalid.")
            if text[at:at + 1] != "s":
                if at >= len(text):
                    raise Invalid(UNTERMINATED)
                what = "a precision" if digits else "a precision specification"
                raise Invalid(f"In the directive number {directive}, {what} is not allowed before "
                              f"'{text[at]}'.")
            kind = "string"
        else:
            kind = directive_type(char, _GCC_TYPES, directive)
            kind += size * (char in "iduox")
        arguments.add(number, kind)
        return at + 1

    scan_directives(text, directive)
    return GccSpec(arguments.types(), any(uses_errno))


def _compare_special(wanted, found, pretty, problem, directive):
    """The arguments' `problem`, else one with the use of the `directive` (%m, %C) only one
    side makes."""
    msgid, msgstr = pretty
    if problem or wanted.special == found.special:
        return problem
    if wanted.special:
        return f"'{msgid}' uses %{directive} but '{msgstr}' doesn't"
    return f"'{msgid}' does not use %{directive} but '{msgstr}' uses %{directive}"


def compare_gcc_internal(wanted, found, strict, pretty):
    """Numbered arguments as gettext compares them, then the same use of %m."""
    problem = compare_numbered(wanted.arguments, found.arguments, strict, pretty)
    return _compare_special(wanted, found, pretty, problem, "m")


_GFC_TYPES = {"C": "void", "L": "locus", "c": "char", "s": "string"}
_GFC_INTEGERS = {"i": "integer", "d": "integer", "u": "unsigned"}


def gfc_internal_arguments(text, encoding="utf-8"):
    """`%%`, or `%[m$]c` where `m$` sets the current argument; all arguments up to the
    highest used."""
    text, pairs, current = bytes_view(text, encoding), [], [1]

    def directive(at, directive):
        if text[at:at + 1] == "%":
            return at + 1
        number, at = argument_number(text, at, directive)
        current[0] = number or current[0]
        kind = _GFC_TYPES.get(text[at:at + 1])
        if not kind:
            long = text[at:at + 1] == "l"
            at += long
            kind = directive_type(text[at:at + 1], _GFC_INTEGERS, directive) + " long" * long
        pairs.append((current[0], kind))
        current[0] += 1
        return at + 1

    scan_directives(text, directive)
    types = gapless(typed_arguments(pairs))
    return GccSpec([kind for kind in types if kind != "void"], "void" in types)


def compare_gfc_internal(wanted, found, strict, pretty):
    """Arguments in order as C's, then the same use of %C."""
    problem = compare_positional(wanted.arguments, found.arguments, strict, pretty)
    return _compare_special(wanted, found, pretty, problem, "C")
