"""Ruby format strings, read as gettext 0.21's format-ruby.c reads them (byte by byte):
`%` then flags, `m$`, `<name>`, a width and a precision in any order (flags first, width
before precision), then a conversion or `{name}`. Arguments are all numbered, all unnumbered
or all named."""

import dataclasses

from keras_transformer.messages.format_strings.common import ARGUMENT_NUMBER
from keras_transformer.messages.format_strings.common import bytes_view
from keras_transformer.messages.format_strings.common import c_order
from keras_transformer.messages.format_strings.common import compare_named
from keras_transformer.messages.format_strings.common import compare_positional
from keras_transformer.messages.format_strings.common import DIGITS
from keras_transformer.messages.format_strings.common import directive_type
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.format_strings.common import MIXES_NAMED
from keras_transformer.messages.format_strings.common import MIXES_NUMBERED
from keras_transformer.messages.format_strings.common import scan_directives
from keras_transformer.messages.format_strings.common import typed_arguments
from keras_transformer.messages.format_strings.common import UNTERMINATED
from keras_transformer.messages.format_strings.common import view_text
from keras_transformer.messages.format_strings.common import zero_number

_TYPES = {"%": None, "\n": None, "s": "any", "p": "escaped any", "c": "character",
          **dict.fromkeys("diuoxXbB", "integer"), **dict.fromkeys("fgGeEaA", "float")}
_UINT_MAX = 2**32 - 1


@dataclasses.dataclass
class RubySpec:
    named: dict  # name -> type
    numbered: list  # types, by argument number


def _number(digits):
    """An argument number as format-ruby.c reads it: UINT_MAX - 1 once it would overflow."""
    number = 0
    for digit in digits:
        number = 10 * number + int(digit) if number < _UINT_MAX // 10 else _UINT_MAX - 1
    return number


def ruby_arguments(text, encoding="utf-8"):
    text = bytes_view(text, encoding)
    named, numbered, unnumbered = [], [], []

    def directive(at, directive):
        def refuse(reason):
            raise Invalid(f"In the directive number {directive}, {reason}.")

        def name_at(at, close):  # `<name>` or `{name}` at `at`: (name, index of its end)
            if numbered or number or width[1] or precision[1] or unnumbered or width[2] or precision[2]:
                raise Invalid(MIXES_NAMED)
            if name is not None:
                refuse("two names are given for the same argument")
            end = text.find(close, at + 1)
            if end < 0:
                raise Invalid(UNTERMINATED)
            return view_text(text[at + 1:end]), end

        def star(what, after_width):  # `*` or `*m$`: (seen, number, takes the next)
            match = ARGUMENT_NUMBER.match(text, at)
            mixes = (unnumbered or width[2] or precision[2]) if match else (
                numbered or number or width[1] or precision[1])
            if named or name is not None:
                raise Invalid(MIXES_NAMED)
            if mixes:
                raise Invalid(MIXES_NUMBERED)
            if after_width and precision[0]:
                refuse("the width is given after the precision")
            if what[0]:
                refuse(f"a {'width' if after_width else 'precision'} is given twice")
            if match and _number(match.group(1)) == 0:
                raise Invalid(zero_number(directive))
            return (True, _number(match.group(1)), False) if match else (True, 0, True)

        name, number = None, 0
        width = precision = (False, 0, False)  # (seen, argument number, takes the next argument)
        while True:
            char = text[at:at + 1]
            if char and char in " #+-0":
                if width[0]:
                    refuse("a flag is given after the width")
                if precision[0]:
                    refuse("a flag is given after the precision")
                at += 1
            elif char == "<":
                name, at = name_at(at, ">")
                at += 1
            elif char.isdigit() and char.isascii():
                digits = DIGITS.match(text, at).group()
                at += len(digits)
                if text[at:at + 1] == "$":
                    if named or name is not None:
                        raise Invalid(MIXES_NAMED)
                    if unnumbered or width[2] or precision[2]:
                        raise Invalid(MIXES_NUMBERED)
                    if number:
                        refuse("two numbers are given for the same argument")
                    number, at = _number(digits), at + 1
                else:
                    if precision[0]:
                        refuse("the width is given after the precision")
                    if width[0]:
                        refuse("a width is given twice")
                    width = (True, 0, False)
            elif char == "*":
                at += 1
                width = star(width, True)
                at = ARGUMENT_NUMBER.match(text, at).end() if width[1] else at
            elif char == "." and text[at + 1:at + 2] == "*":
                at += 2
                precision = star(precision, False)
                at = ARGUMENT_NUMBER.match(text, at).end() if precision[1] else at
            elif char == ".":
                at = DIGITS.match(text, at + 1).end()
                if precision[0]:
                    refuse("a precision is given twice")
                precision = (True, 0, False)
            else:
                break
        if text[at:at + 1] == "{":
            name, at = name_at(at, "}")
            kind = "any"
        else:
            kind = directive_type(text[at:at + 1], _TYPES, directive)
        for seen, star_number, takes_next in (width, precision):
            if star_number:
                numbered.append((star_number, "integer"))
            elif takes_next:
                unnumbered.append("integer")
        if kind is not None:
            if name is not None:
                named.append((name, kind))
            elif number:
                numbered.append((number, kind))
            elif named or numbered:
                raise Invalid(MIXES_NAMED if named else MIXES_NUMBERED)
            else:
                unnumbered.append(kind)
        return at + 1

    scan_directives(text, directive)
    if unnumbered:
        return RubySpec({}, unnumbered)
    types = typed_arguments(numbered)
    names = {}
    for name, kind in sorted(named, key=lambda pair: c_order(pair[0])):
        if names.setdefault(name, kind) != kind:
            raise Invalid(f"The string refers to the argument named '{name}' in incompatible ways.")
    return RubySpec(names, [types[number] for number in sorted(types)])


def compare_ruby(msgid_spec, msgstr_spec, strict, pretty):
    """format-ruby.c's check: names as Python's; numbered arguments as many, each of the same
    type, whatever the strictness."""
    msgid, msgstr = pretty
    if msgid_spec.named and msgstr_spec.numbered:
        return (f"format specifications in '{msgid}' expect a hash table, those in '{msgstr}' "
                "expect individual arguments")
    if msgid_spec.numbered and msgstr_spec.named:
        return (f"format specifications in '{msgid}' expect individual arguments, those in "
                f"'{msgstr}' expect a hash table")
    if msgid_spec.named or msgstr_spec.named:
        problem = compare_named(msgid_spec.named, msgstr_spec.named, strict, pretty)
        if problem:
            return problem
    if msgid_spec.numbered or msgstr_spec.numbered:
        return compare_positional(msgid_spec.numbered, msgstr_spec.numbered, True, pretty)
    return None
