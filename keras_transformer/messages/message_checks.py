r"""The checks `msgfmt --check` makes of each translated message, in its words.

A catalog whose existing translations fail them does not compile
(`msgfmt --check` exits 1), so `translate_catalog` refuses it before any work,
naming the file and line as msgfmt does. `message_problem` gives the first
problem of one entry:

- a translation must begin and end with a newline exactly when msgid does
  (and msgid_plural likewise);
- in an entry flagged with a format language msgfmt checks (`c-format`,
  `possible-c-format`, ...), each translation must be a valid format string
  of that language whose arguments fit the msgid's (msgid_plural's for a
  plural entry), as GNU gettext 0.21 compares them: the same argument types
  in order for C (`%5d` and `%2$d` stand for `%d`; `%ld` and `%u` do not),
  the same names for Python and shell, the same numbers for Qt and KDE. A
  plural form that few counts take may leave arguments out (msgfmt relaxes
  its check for a form taken by fewer than 5 of the counts 0 to 1000, and
  for one taken by at most one count of a `range:` flag).

The languages checked, each ported from gettext's format-*.c: c, objc,
python, python-brace, sh, php, javascript, lua, qt, qt-plural, kde,
kde-kuit, perl-brace, smalltalk, ycp, csharp, java (MessageFormat),
java-printf, perl, tcl, awk, boost, object-pascal, elisp, librep, ruby,
gcc-internal, gfc-internal, lisp, scheme (the parsers of the later ones are
in the `format_strings` package; KUIT markup is read by the libxml2 msgfmt
links, and goes unchecked where it cannot be loaded; where gettext's code
reads or writes memory it never set on a Lisp or Scheme string, msgfmt's
verdict on its arguments cannot be known and they go unchecked, but its
syntax, and that of the entry's other strings, is checked). Every language is read in the
catalog's bytes (`bytes_view`), as msgfmt reads it: a BIG5 character's second
byte can be a `{`, and a UTF-8 é is two bytes, no brace field's fill.

An entry is checked when msgfmt compiles it: not obsolete, not fuzzy, with a
first form that is not empty.

This is a different question from `placeholders.matches`, which decides
whether a machine translation kept the source's placeholders verbatim; msgfmt
compares argument types, so it accepts `%2$s %1$d` for `%d %s`.

Example:
>>> from keras_transformer.messages.po_file import PoEntry
>>> message_problem(PoEntry(msgid="%d files in %s", msgstr=["%5d Dateien"],
...                         flags=("c-format",)))
"number of format specifications in 'msgid' and 'msgstr' does not match"
>>> print(message_problem(PoEntry(msgid="%d of %s", msgstr=["%2$s von %1$d"],
...                               flags=("c-format",))))
None
"""

import dataclasses
import functools
import re

from keras_transformer.messages.format_strings.common import argument_number
from keras_transformer.messages.format_strings.common import Arguments
from keras_transformer.messages.format_strings.common import bytes_view
from keras_transformer.messages.format_strings.common import c_order
from keras_transformer.messages.format_strings.common import compare_named
from keras_transformer.messages.format_strings.common import compare_numbered
from keras_transformer.messages.format_strings.common import compare_positional
from keras_transformer.messages.format_strings.common import conversion_error
from keras_transformer.messages.format_strings.common import DIGITS
from keras_transformer.messages.format_strings.common import directive_type
from keras_transformer.messages.format_strings.common import gapless
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.format_strings.common import MIXES_NAMED
from keras_transformer.messages.format_strings.common import numbered_star
from keras_transformer.messages.format_strings.common import UNTERMINATED
from keras_transformer.messages.format_strings.common import view_text
from keras_transformer.messages.format_strings.common import width_and_precision
from keras_transformer.messages.format_strings import gcc
from keras_transformer.messages.format_strings import java
from keras_transformer.messages.format_strings import kuit
from keras_transformer.messages.format_strings import lisp
from keras_transformer.messages.format_strings import printf
from keras_transformer.messages.format_strings import ruby
from keras_transformer.messages.format_strings import scheme
from keras_transformer.messages.format_strings.arglists import compare_lists
from keras_transformer.messages.format_strings.arglists import Undefined
from keras_transformer.messages.plural_forms import PluralRule

__all__ = ["format_flags_in_effect", "is_checked", "message_problem"]

_OFTEN = 5  # msgfmt: a form taken by at least 5 counts of 0..1000 is taken "infinitely often"
_GERMANIC = PluralRule.parse("nplurals=2; plural=(n != 1);")


# C argument types, as bit sets (format-c-parse.h): a basic type, then size and sign bits.
_INTEGER, _DOUBLE, _CHAR, _STRING, _OBJC_OBJECT, _POINTER, _COUNT_POINTER = range(1, 8)
_UNSIGNED = 1 << 3
_SHORT, _SIZE_CHAR, _LONG, _LONGLONG = 1 << 4, 2 << 4, 1 << 6, 2 << 6
_INTMAX, _INTPTR, _SIZE_T, _PTRDIFF = 1 << 20, 1 << 21, 1 << 22, 1 << 23
_INTTYPES = {  # the <inttypes.h> macro suffixes after PRI and a conversion letter
    **{f"{kind}{bits}": 1 << (shift + index) for kind, shift in (("", 8), ("LEAST", 12), ("FAST", 16))
       for index, bits in enumerate((8, 16, 32, 64))},
    "MAX": _INTMAX, "PTR": _INTPTR,
}
_PRI = re.compile(r"<PRI([diouxX])(" + "|".join(sorted(_INTTYPES, key=len, reverse=True)) + ")?(>)?")
_SIZES = {"L": _LONGLONG, "q": _LONGLONG, "j": _INTMAX, "z": _SIZE_T, "Z": _SIZE_T, "t": _PTRDIFF}


def _c_arguments(text, translated, objc=False):
    """The argument types a C (or Objective C) format string takes, in order.

    `translated`: the string is a translation, where glibc's `I` flag is allowed."""
    arguments, directive, at, end = Arguments(exclusive=True), 0, 0, len(text)

    while True:
        at = text.find("%", at)
        if at < 0:
            break
        at += 1
        directive += 1
        number, at = argument_number(text, at, directive)
        while at < end and (text[at] in " +-#0'" or translated and text[at] == "I"):
            at += 1
        at = width_and_precision(text, at, numbered_star(text, directive, arguments, _INTEGER))
        if text[at:at + 1] == "<":
            macro = _PRI.match(text, at)
            if not macro or not macro.group(2):
                raise Invalid(f"In the directive number {directive}, the token after '<' is not "
                              "the name of a format specifier macro. The valid macro names are "
                              "listed in ISO C 99 section 7.8.1.")
            if not macro.group(3):
                raise Invalid(f"In the directive number {directive}, the token after '<' is not "
                              "followed by '>'.")
            kind = _INTEGER | (0 if macro.group(1) in "di" else _UNSIGNED) | _INTTYPES[macro.group(2)]
            at = macro.end() - 1
        else:
            size = 0
            while at < end and text[at] in "hlLqjzZt":
                char = text[at]
                if char == "h":
                    size = _SIZE_CHAR if size & (_SHORT | _SIZE_CHAR) else _SHORT
                elif char == "l":
                    size = _LONGLONG if size & (_LONG | _LONGLONG) else _LONG
                else:
                    size = _SIZES[char]
                at += 1
            char = text[at:at + 1]
            wide = _LONG if size & (_LONG | _LONGLONG) else 0
            if char in ("%", "m"):
                kind = None
            elif char == "c":
                kind = _CHAR | wide
            elif char == "C":
                kind = _CHAR | _LONG
            elif char == "s":
                kind = _STRING | wide
            elif char == "S":
                kind = _STRING | _LONG
            elif char and char in "di":
                kind = _INTEGER | size
            elif char and char in "uoxX":
                kind = _INTEGER | _UNSIGNED | size
            elif char and char in "eEfFgGaA":
                kind = _DOUBLE | (size & _LONGLONG)
            elif char == "@" and objc:
                kind = _OBJC_OBJECT
            elif char == "p":
                kind = _POINTER
            elif char == "n":
                kind = _COUNT_POINTER | size
            elif not char:
                raise Invalid(UNTERMINATED)
            else:
                raise Invalid(conversion_error(directive, char))
        if kind is not None:
            arguments.add(number, kind)
        at += 1
    return gapless(arguments.types())


# Python %-format types (format-python.c).
_ANY, _PY_CHAR, _PY_STRING, _PY_INTEGER, _PY_FLOAT = "any", "char", "string", "integer", "float"
_PY_CONVERSIONS = {"c": _PY_CHAR, "s": _PY_STRING, "r": _PY_STRING,
                   **dict.fromkeys("iduoxX", _PY_INTEGER), **dict.fromkeys("eEfgG", _PY_FLOAT)}


@dataclasses.dataclass
class _PythonSpec:
    named: dict  # name -> type
    unnamed: list  # types


def _python_arguments(text):
    """The named and unnamed arguments of a Python %-format string."""
    named, unnamed = [], []
    directive, at, end = 0, 0, len(text)

    def add_unnamed(kind):
        if named:
            raise Invalid(MIXES_NAMED)
        unnamed.append(kind)

    while True:
        at = text.find("%", at)
        if at < 0:
            break
        at += 1
        directive += 1
        name = None
        if text[at:at + 1] == "(":
            depth, start = 0, at + 1
            at = start
            while at < end:
                if text[at] == "(":
                    depth += 1
                elif text[at] == ")":
                    if depth == 0:
                        break
                    depth -= 1
                at += 1
            if at >= end:
                raise Invalid(UNTERMINATED)
            name = view_text(text[start:at])
            at += 1
        while at < end and text[at] in "-+ #0":
            at += 1
        zero_precision = False
        if text[at:at + 1] == "*":
            at += 1
            add_unnamed(_PY_INTEGER)
        else:
            at = DIGITS.match(text, at).end()
        if text[at:at + 1] == ".":
            at += 1
            if text[at:at + 1] == "*":
                at += 1
                add_unnamed(_PY_INTEGER)
            else:
                digits = DIGITS.match(text, at).group()
                zero_precision = bool(digits) and set(digits) == {"0"}
                at += len(digits)
        if text[at:at + 1] in ("h", "l", "L"):
            at += 1
        char = text[at:at + 1]
        if char == "%":
            kind = None
        elif char and char in _PY_CONVERSIONS:
            kind = _PY_CONVERSIONS[char]
            if char in "sr" and zero_precision:
                kind = _ANY
        elif not char:
            raise Invalid(UNTERMINATED)
        else:
            raise Invalid(conversion_error(directive, char))
        if name is not None:
            if unnamed:
                raise Invalid(MIXES_NAMED)
            named.append((name, kind))
        elif kind is not None:
            add_unnamed(kind)
        at += 1
    types = {}
    for name, kind in named:  # one type per name: the same, or `_ANY` and another
        known = types.setdefault(name, kind)
        if _ANY not in (known, kind) and known != kind:
            raise Invalid(f"The string refers to the argument named '{name}' in incompatible ways.")
        types[name] = known if kind == _ANY else kind
    return _PythonSpec(types, unnamed)


def _compare_python(msgid_spec, msgstr_spec, strict, pretty):
    msgid, msgstr = pretty
    if msgid_spec.named and msgstr_spec.unnamed:
        return f"format specifications in '{msgid}' expect a mapping, those in '{msgstr}' expect a tuple"
    if msgid_spec.unnamed and msgstr_spec.named:
        return f"format specifications in '{msgid}' expect a tuple, those in '{msgstr}' expect a mapping"

    problem = compare_named(msgid_spec.named, msgstr_spec.named, strict, pretty, _ANY)
    if problem:
        return problem
    if msgid_spec.unnamed or msgstr_spec.unnamed:
        if len(msgid_spec.unnamed) != len(msgstr_spec.unnamed):
            return f"number of format specifications in '{msgid}' and '{msgstr}' does not match"
        for index, (wanted, found) in enumerate(zip(msgid_spec.unnamed, msgstr_spec.unnamed), 1):
            if not (wanted == found or not strict and _ANY in (wanted, found)):
                return (f"format specifications in '{msgid}' and '{msgstr}' for argument {index} "
                        "are not the same")
    return None


_IDENTIFIER_START = re.compile(r"[A-Za-z_]")
_BRACE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_BRACE_ATTRIBUTE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STANDARD_SPEC = re.compile(r"(?:(?s:.)?[<>=^])?[-+ ]?#?0?[0-9]*(?:\.[0-9]*)?[bcdoxXneEfFgG%]?")


def _brace_directive(text, at, directive, toplevel):
    """Reads the field at `text[at] == "{"`; (its name or None for `{{`, the index after it).

    The name is the field's text up to its closing brace, format spec included, as gettext
    0.21 takes it: `{0:>8}` and `{0}` are different arguments to msgfmt."""
    at += 1
    if text[at:at + 1] == "{":
        return None, at + 1
    start = at
    name = _BRACE_NAME.match(text, at)
    if not name:
        raise Invalid(f"In the directive number {directive}, '{view_text(text[at:at + 1])}' "
                      "cannot start a field name.")
    at = name.end()
    while text[at:at + 1] in (".", "["):
        if text[at] == ".":
            attribute = _BRACE_ATTRIBUTE.match(text, at + 1)
            if not attribute:
                raise Invalid(f"In the directive number {directive}, "
                              f"'{view_text(text[at + 1:at + 2])}' cannot start a getattr argument.")
            at = attribute.end()
        else:
            key = _BRACE_NAME.match(text, at + 1)
            if not key:
                raise Invalid(f"In the directive number {directive}, "
                              f"'{view_text(text[at + 1:at + 2])}' cannot start a getitem argument.")
            at = key.end()
            if text[at:at + 1] != "]":
                raise Invalid(UNTERMINATED)
            at += 1
    if text[at:at + 1] == ":":
        if not toplevel:
            raise Invalid(f"In the directive number {directive}, no more nesting is allowed in "
                          "a format specifier.")
        at += 1
        if text[at:at + 1] == "{":
            _, at = _brace_directive(text, at, directive, False)
        else:
            at = _STANDARD_SPEC.match(text, at).end()
        if text[at:at + 1] != "}":
            raise Invalid(UNTERMINATED)
    if text[at:at + 1] != "}":
        raise Invalid(f"In the directive number {directive}, there is an unterminated format "
                      "directive.")
    return view_text(text[start:at]), at + 1


def _brace_arguments(text):
    """The argument names of a Python brace format string."""
    names, directive, at = set(), 0, 0
    while True:
        at = text.find("{", at)
        if at < 0:
            return names
        name, at = _brace_directive(text, at, directive, True)
        if name is not None:
            directive += 1
            names.add(name)


def _compare_names(msgid_names, msgstr_names, strict, pretty, extra_allowed=False):
    """Named arguments (sh-format; python-brace-format with `extra_allowed`): in strict
    checking both sides name the same; relaxed, msgstr may leave some out."""
    msgid, msgstr = pretty
    for name in sorted(msgid_names | msgstr_names, key=c_order):
        if name not in msgid_names and not (extra_allowed and not strict):
            if extra_allowed:
                return f"a format specification for argument '{name}' doesn't exist in '{msgid}'"
            return (f"a format specification for argument '{name}', as in '{msgstr}', doesn't "
                    f"exist in '{msgid}'")
        if name not in msgstr_names and strict:
            return f"a format specification for argument '{name}' doesn't exist in '{msgstr}'"
    return None


def _sh_arguments(text):
    """The variable names of a shell format string (`$NAME`, `${NAME}`)."""
    names, at, end = set(), 0, len(text)
    while True:
        at = text.find("$", at)
        if at < 0:
            return names
        at += 1
        if text[at:at + 1] == "{":
            start = at = at + 1
            while at < end and text[at] != "}":
                char = text[at]
                if not char.isascii():
                    raise Invalid("The string refers to a shell variable with a non-ASCII name.")
                if at > start and char in "-=+?:":
                    raise Invalid("The string refers to a shell variable with complex shell "
                                  "brace syntax. This syntax is unsupported here due to "
                                  "security reasons.")
                if not (char.isalnum() or char == "_") or at == start and char.isdigit():
                    raise Invalid("The string refers to a shell variable whose value may be "
                                  "different inside shell functions.")
                at += 1
            if at >= end:
                raise Invalid(UNTERMINATED)
            if at == start:
                raise Invalid("The string refers to a shell variable with an empty name.")
            names.add(text[start:at])
            at += 1
        elif at < end and (_IDENTIFIER_START.match(text[at])):
            start = at
            while at < end and text[at].isascii() and (text[at].isalnum() or text[at] == "_"):
                at += 1
            names.add(text[start:at])
        elif at < end:
            if not text[at].isascii():
                raise Invalid("The string refers to a shell variable with a non-ASCII name.")
            raise Invalid("The string refers to a shell variable whose value may be different "
                          "inside shell functions.")
        else:
            raise Invalid(UNTERMINATED)


# --- Languages whose directives take numbered arguments of a type (format-php.c,
# format-javascript.c, ...): parsed into {number: type}, compared by `compare_numbered`.

_PHP_TYPES = {**dict.fromkeys("bduoxX", "integer"), **dict.fromkeys("ef", "float"),
              "c": "character", "s": "string"}


def _php_arguments(text, encoding="utf-8"):
    """The arguments of a PHP format string (format-php.c): `%[n$][flags][width][.prec][l]c`."""
    text, arguments, directive, at = bytes_view(text, encoding), Arguments(exclusive=False), 0, 0
    while True:
        at = text.find("%", at) + 1
        if not at:
            return arguments.types()
        directive += 1
        if text[at:at + 1] == "%":
            at += 1
            continue
        number, at = argument_number(text, at, directive)
        while text[at:at + 1] in ("0", "-", " ", "'") and at < len(text):
            if text[at] == "'":
                at += 1
                if at >= len(text):
                    raise Invalid(UNTERMINATED)
            at += 1
        at = DIGITS.match(text, at).end()
        if text[at:at + 1] == ".":
            digits = DIGITS.match(text, at + 1).end()
            at = digits if digits > at + 1 else at  # `.` without digits: an invalid conversion
        if text[at:at + 1] == "l":
            at += 1
        arguments.add(number, directive_type(text[at:at + 1], _PHP_TYPES, directive))
        at += 1


_JAVASCRIPT_TYPES = {"%": None, "c": "character", "s": "string", "f": "float", "j": "any",
                     **dict.fromkeys("bdoxX", "integer")}


def _javascript_arguments(text, encoding="utf-8"):
    """The arguments of a JavaScript format string (format-javascript.c):
    `%[n$][-+ 0I][width][.prec]c`; numbered and unnumbered ones do not mix."""
    text, arguments, directive, at = bytes_view(text, encoding), Arguments(exclusive=True), 0, 0
    while True:
        at = text.find("%", at) + 1
        if not at:
            return arguments.types()
        directive += 1
        number, at = argument_number(text, at, directive)
        while text[at:at + 1] and text[at] in "-+ 0I":
            at += 1
        at = DIGITS.match(text, at).end()
        if text[at:at + 1] == ".":
            at = DIGITS.match(text, at + 1).end()
        kind = directive_type(text[at:at + 1], _JAVASCRIPT_TYPES, directive)
        if kind is not None:
            arguments.add(number, kind)
        at += 1


_LUA_TYPES = {"c": "character", "s": "string", "q": "escaped string",
              **dict.fromkeys("diouXx", "integer"), **dict.fromkeys("aAEefgG", "float")}


def _lua_arguments(text, encoding="utf-8"):
    """The arguments of a Lua format string (format-lua.c), numbered in order:
    `%[width][.prec]c`."""
    text, kinds, at = bytes_view(text, encoding), [], 0
    while True:
        at = text.find("%", at) + 1
        if not at:
            return {number: kind for number, kind in enumerate(kinds, start=1)}
        if text[at:at + 1] == "%":
            at += 1
            continue
        at = DIGITS.match(text, at).end()
        if text[at:at + 1] == ".":
            at = DIGITS.match(text, at + 1).end()
        kinds.append(directive_type(text[at:at + 1], _LUA_TYPES, len(kinds) + 1))
        at += 1


def _compare_lua(wanted, found, strict, pretty):
    """format-lua.c's check, argument by argument in order, whatever the strictness: each one
    on both sides, with one type."""
    msgid, msgstr = pretty
    for number in range(1, max(len(wanted), len(found)) + 1):
        if number not in wanted:
            return (f"a format specification for argument {number}, as in '{msgstr}', doesn't "
                    f"exist in '{msgid}'")
        if number not in found:
            return f"a format specification for argument {number} doesn't exist in '{msgstr}'"
        if wanted[number] != found[number]:
            return (f"format specifications in '{msgid}' and '{msgstr}' for argument {number} "
                    "are not the same")
    return None


# --- Languages whose directives only name arguments.

def _qt_arguments(text):
    """(whether simple: no `L` flag and one-digit numbers only, the argument numbers used) of a
    Qt format string (format-qt.c): `%[L]n` with n of one or two ASCII digits."""
    simple, used, at = True, set(), 0
    while True:
        at = text.find("%", at) + 1
        if not at:
            return simple, used
        locale = text[at:at + 1] == "L"
        at += locale
        digits = re.match(r"[0-9]{1,2}", text[at:at + 2])
        if digits:
            simple = simple and not locale and len(digits.group()) == 1
            used.add(int(digits.group()))
            at += len(digits.group())


def _compare_qt(wanted, found, strict, pretty):
    """format-qt.c's check, strict whatever the plural form: `%1`..`%99` as in msgid."""
    if wanted[0] and not found[0]:
        return (f"'{pretty[0]}' is a simple format string, but '{pretty[1]}' is not: it contains "
                "an 'L' flag or a double-digit argument number")
    return _compare_used(wanted[1], found[1], True, pretty)


def _compare_used(wanted, found, strict, pretty):
    """Argument numbers used on each side (Qt, Smalltalk): the same ones, or relaxed, msgstr's
    among msgid's."""
    msgid, msgstr = pretty
    for number in sorted(wanted ^ found):
        if number in wanted and strict:
            return f"a format specification for argument {number} doesn't exist in '{msgstr}'"
        if number in found:
            return (f"a format specification for argument {number}, as in '{msgstr}', doesn't "
                    f"exist in '{msgid}'")
    return None


def _qt_plural_arguments(text):
    """How many `%n` (or `%Ln`) directives a Qt plural format string has (format-qt-plural.c)."""
    return len(re.findall(r"%L?n", text))


def _compare_qt_plural(wanted, found, strict, pretty):
    if wanted == 0 and found > 0 or strict and wanted > 0 and found == 0:
        return f"number of format specifications in '{pretty[0]}' and '{pretty[1]}' does not match"
    return None


def _kde_arguments(text):
    """The argument numbers of a KDE format string (format-kde.c): `%n`, n >= 1 in ASCII
    digits, all of 1..max used but at most one."""
    numbers = sorted({int(number) for number in re.findall(r"%([1-9][0-9]*)", text)})
    gaps = [index + 1 for index, number in enumerate(numbers) if number > index + 1]
    for index, number in enumerate(numbers):
        if gaps and index + 1 >= gaps[0] and number > index + 2:
            raise Invalid(f"The string refers to argument number {number} but ignores the "
                          f"arguments {gaps[0]} and {index + 2}.")
    return numbers


def _kuit_arguments(text, encoding):
    """A KDE KUIT format string's arguments (format-kde-kuit.c): KDE's, in well-formed markup
    (libxml2 reads the string's bytes in the catalog's `encoding` as UTF-8, as msgfmt gives
    them to it)."""
    problem = kuit.kuit_problem(text, encoding)
    if problem:
        raise Invalid(problem)
    return _kde_arguments(bytes_view(text, encoding))


def _compare_kde(wanted, found, strict, pretty):
    """format-kde.c's check: msgstr uses msgid's arguments, relaxed all but one."""
    msgid, msgstr = pretty
    missing = None
    for number in sorted(set(wanted) | set(found)):
        if number not in wanted:
            return (f"a format specification for argument {number}, as in '{msgstr}', doesn't "
                    f"exist in '{msgid}'")
        if number in found:
            continue
        if strict:
            return f"a format specification for argument {number} doesn't exist in '{msgstr}'"
        if missing is not None:
            return (f"a format specification for arguments {missing} and {number} doesn't exist "
                    f"in '{msgstr}', only one argument may be ignored")
        missing = number
    return None


def _perl_brace_arguments(text):
    """The names of a Perl brace format string (format-perl-brace.c): `{name}` with an ASCII
    identifier; anything else is text."""
    return set(re.findall(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", text))  # ASCII: the view's text


def _compare_perl_brace(wanted, found, strict, pretty):
    """msgstr may add names (they print as themselves); strict, it keeps all of msgid's."""
    missing = sorted(wanted - found)
    if strict and missing:
        return f"a format specification for argument '{missing[0]}' doesn't exist in '{pretty[1]}'"
    return None


def _smalltalk_arguments(text):
    """The argument numbers of a Smalltalk format string (format-smalltalk.c): `%1`..`%9`, `%%`."""
    used, directive, at = set(), 0, 0
    while True:
        at = text.find("%", at) + 1
        if not at:
            return used
        directive += 1
        char = text[at:at + 1]
        if char and char in "123456789":
            used.add(int(char))
        elif char != "%":
            raise Invalid(conversion_error(directive, char, "a digit between 1 and 9") if char
                          else UNTERMINATED)
        at += 1


def _csharp_arguments(text, encoding="utf-8"):
    """How many arguments a C# format string takes (format-csharp.c): one more than its highest
    `{n[,width][:format]}`; `{{` and `}}` are braces."""
    text = bytes_view(text, encoding)
    count, directive, at, end = 0, 0, 0, len(text)
    while at < end:
        char = text[at]
        at += 1
        if char == "}":
            if text[at:at + 1] != "}":
                raise Invalid("The string starts in the middle of a directive: found '}' without "
                              "matching '{'." if directive == 0 else
                              f"The string contains a lone '}}' after directive number {directive}.")
            at += 1
        elif char == "{" and text[at:at + 1] == "{":
            at += 1
        elif char == "{":
            directive += 1
            number = DIGITS.match(text, at).group()
            if not number:
                raise Invalid(f"In the directive number {directive}, '{{' is not followed by an "
                              "argument number.")
            at += len(number)
            if text[at:at + 1] == ",":
                at += 1 + (text[at + 1:at + 2] == "-")
                width = DIGITS.match(text, at).end()
                if width == at:
                    raise Invalid(f"In the directive number {directive}, ',' is not followed by "
                                  "a number.")
                at = width
            if text[at:at + 1] == ":":
                close = text.find("}", at)
                at = end if close < 0 else close
            if at >= end:
                raise Invalid("The string ends in the middle of a directive: found '{' without "
                              "matching '}'.")
            if text[at] != "}":
                raise Invalid(f"The directive number {directive} ends with an invalid character "
                              f"'{text[at]}' instead of '}}'." if " " <= text[at] <= "~" else
                              f"The directive number {directive} ends with an invalid character "
                              "instead of '}'.")
            at += 1
            count = max(count, int(number) + 1)
    return count


def _compare_counts(wanted, found, strict, pretty):
    """C#'s check: as many arguments (relaxed: no more than msgid's)."""
    if wanted != found if strict else wanted < found:
        return f"number of format specifications in '{pretty[0]}' and '{pretty[1]}' does not match"
    return None


@dataclasses.dataclass(frozen=True)
class _Language:
    pretty: str  # msgfmt's name of it in messages
    parse: object  # (text, translated, encoding: the catalog's) -> a description of its arguments; raises Invalid
    compare: object  # (msgid's, msgstr's, strict, (pretty msgid, pretty msgstr)) -> problem or None


def _in_view(parse):
    """A `parse` of a language this module reads in the catalog's bytes: `parse(view)` of the
    text's `bytes_view` in the catalog's encoding."""
    return lambda text, translated, encoding: parse(bytes_view(text, encoding))


def _in_bytes(parse):
    """A `parse` of a language read in the catalog's bytes: `parse(text, encoding)`."""
    return lambda text, translated, encoding: parse(text, encoding)


_LANGUAGES = {
    "c": _Language("C", lambda text, translated, encoding: _c_arguments(
        bytes_view(text, encoding), translated), compare_positional),
    "objc": _Language("Objective C", lambda text, translated, encoding: _c_arguments(
        bytes_view(text, encoding), translated, True), compare_positional),
    "python": _Language("Python", _in_view(_python_arguments), _compare_python),
    "python-brace": _Language("Python brace", _in_view(_brace_arguments),
                              lambda a, b, strict, pretty: _compare_names(a, b, strict, pretty, True)),
    "sh": _Language("Shell", _in_view(_sh_arguments), _compare_names),
    "php": _Language("PHP", _in_bytes(_php_arguments), compare_numbered),
    "javascript": _Language("JavaScript", _in_bytes(_javascript_arguments),
                            lambda a, b, strict, pretty: compare_numbered(a, b, strict, pretty, "any")),
    "lua": _Language("Lua", _in_bytes(_lua_arguments), _compare_lua),
    "qt": _Language("Qt", _in_view(_qt_arguments), _compare_qt),
    "qt-plural": _Language("Qt plural", _in_view(_qt_plural_arguments), _compare_qt_plural),
    "kde": _Language("KDE", _in_view(_kde_arguments), _compare_kde),
    "kde-kuit": _Language("KDE KUIT", _in_bytes(_kuit_arguments), _compare_kde),
    "perl-brace": _Language("Perl brace", _in_view(_perl_brace_arguments), _compare_perl_brace),
    "smalltalk": _Language("Smalltalk", _in_view(_smalltalk_arguments), _compare_used),
    "ycp": _Language("YCP", _in_view(_smalltalk_arguments), _compare_used),
    "csharp": _Language("C#", _in_bytes(_csharp_arguments), _compare_counts),
    **{language: _Language(pretty, _in_bytes(parse), compare_numbered)
       for language, pretty, parse in [
           ("java-printf", "Java printf", printf.java_printf_arguments),
           ("perl", "Perl", printf.perl_arguments), ("tcl", "Tcl", printf.tcl_arguments),
           ("awk", "awk", printf.awk_arguments), ("boost", "Boost", printf.boost_arguments),
           ("object-pascal", "Object Pascal", printf.pascal_arguments),
           ("elisp", "Emacs Lisp", printf.elisp_arguments),
           ("librep", "librep", printf.librep_arguments),
       ]},
    "java": _Language("Java MessageFormat", _in_bytes(java.java_arguments), java.compare_java),
    "ruby": _Language("Ruby", _in_bytes(ruby.ruby_arguments), ruby.compare_ruby),
    "gcc-internal": _Language("GCC internal", _in_bytes(gcc.gcc_internal_arguments),
                              gcc.compare_gcc_internal),
    "gfc-internal": _Language("GFC internal", _in_bytes(gcc.gfc_internal_arguments),
                              gcc.compare_gfc_internal),
    "lisp": _Language("Lisp", _in_bytes(lisp.lisp_arguments), compare_lists),
    "scheme": _Language("Scheme", _in_bytes(scheme.scheme_arguments), compare_lists),
}
_FORMAT_FLAG = re.compile(r"(no-|possible-|impossible-)?(.+)-format")
_RANGE = re.compile(r"([0-9]+)\.\.([0-9]+)")
_INT_MAX = 2**31 - 1


def _read_flags(flags):
    """(flags other than a range, the range (min, max) or None), as gettext reads an
    entry's flags: `range:` takes the word after it whatever it is, a range with min > max
    is none, and numbers stop at INT_MAX."""
    words, counts, index = [], None, 0
    while index < len(flags):
        if flags[index] == "range:":
            match = _RANGE.match(flags[index + 1]) if index + 1 < len(flags) else None
            if match:
                low, high = (min(int(group), _INT_MAX) for group in match.groups())
                counts = (low, high) if low <= high else counts
            index += 2
            continue
        words.append(flags[index])
        index += 1
    return words, counts


def format_flags_in_effect(flags):
    """The format flags of an entry that gettext takes as `yes` or `possible`, in order of
    their first appearance: the last flag of a language decides (`c-format, no-c-format` is
    none); `possible-c-format` counts as `c-format`.

    Example:
    >>> format_flags_in_effect(("fuzzy", "possible-c-format", "python-format", "no-python-format"))
    ['c-format']
    """
    state = {}
    for flag in _read_flags(flags)[0]:
        match = _FORMAT_FLAG.fullmatch(flag)
        if match:
            state[match.group(2)] = match.group(1) in (None, "possible-")
    return [f"{language}-format" for language, on in state.items() if on]


def _strict(entry, form, rule):
    """Whether msgfmt checks this form strictly (all of msgid_plural's arguments): for a
    singular entry, a plural entry with one form, and a form that many counts take."""
    if entry.msgid_plural is None or len(entry.msgstr) < 2:
        return True
    rule = rule or _GERMANIC  # msgfmt's default without a Plural-Forms
    if rule.nplurals > 100:  # msgfmt keeps no statistics of so many forms: all relaxed
        return False
    if form >= rule.nplurals or rule.counts_taking(form) < _OFTEN:
        return False
    counts = _read_flags(entry.flags)[1]
    return counts is None or rule.counts_taking(form, *counts) > 1


def _c_string(text):
    """The text as msgfmt's C code sees it: up to its first NUL."""
    return text.partition("\0")[0]


def _newline_problem(entry):
    texts = [("msgid_plural", entry.msgid_plural)] if entry.msgid_plural is not None else []
    names = ([f"msgstr[{index}]" for index in range(len(entry.msgstr))]
             if entry.msgid_plural is not None else ["msgstr"])
    texts = [(name, _c_string(text)) for name, text in texts + list(zip(names, entry.msgstr))]
    for where, test in (("begin", lambda text: text.startswith("\n")),
                        ("end", lambda text: text.endswith("\n"))):
        wanted = test(_c_string(entry.msgid))
        for name, text in texts:
            if test(text) != wanted:
                return f"'msgid' and '{name}' entries do not both {where} with '\\n'"
    return None


def _format_problem(entry, language, rule, encoding):
    syntax = _LANGUAGES[language]
    parse = functools.partial(syntax.parse, encoding=encoding)
    plural = entry.msgid_plural is not None
    pretty_msgid = "msgid_plural" if plural else "msgid"
    try:
        wanted = parse(_c_string(entry.msgid_plural if plural else entry.msgid), translated=False)
    except Invalid:
        return None  # msgfmt checks translations only against a valid msgid
    except Undefined:  # gettext reads memory it never set: its arguments are unknown
        wanted = None
    for form, text in enumerate(entry.msgstr):
        pretty_msgstr = f"msgstr[{form}]" if plural else "msgstr"
        try:
            found = parse(_c_string(text), translated=True)
        except Invalid as error:
            return (f"'{pretty_msgstr}' is not a valid {syntax.pretty} format string, unlike "
                    f"'{pretty_msgid}'. Reason: {error.args[0]}")
        except Undefined:  # the same for this form: the later ones are still checked
            continue
        if wanted is None:
            continue
        try:
            problem = syntax.compare(wanted, found, _strict(entry, form, rule),
                                     (pretty_msgid, pretty_msgstr))
        except Undefined:  # the comparison reads memory gettext never set
            continue
        if problem:
            return problem
    return None


def is_checked(entry):
    """Whether msgfmt compiles, and so checks, an entry: live, not fuzzy, not the header,
    with a first form that is not empty."""
    return (not entry.obsolete and not entry.is_header and "fuzzy" not in _read_flags(entry.flags)[0]
            and bool(entry.msgstr) and _c_string(entry.msgstr[0]) != "")


def message_problem(entry, rule=None, encoding="utf-8"):
    """The first problem `msgfmt --check` finds in an entry's translation, in its words.

    Args:
        entry: a `PoEntry`.
        rule: the catalog's `PluralRule`, for a plural entry (None: msgfmt's
            default for a catalog without Plural-Forms, `n != 1`).
        encoding: the catalog's (`PoFile.encoding`): format strings are read in
            its bytes, as msgfmt reads them (a BIG5 character's second byte
            can be a `~` or a `{`; libxml2 reads KUIT markup's bytes as UTF-8).

    Returns:
        A one-line message, or None when msgfmt accepts the entry (or does not
        check it: see `is_checked`). A format string `encoding` cannot hold
        (the catalog cannot be written so) is a problem too, in our words.
    """
    if not is_checked(entry) or _c_string(entry.msgid) == "":
        return None
    problem = _newline_problem(entry)
    for flag in format_flags_in_effect(entry.flags):
        language = flag[:-len("-format")]
        if language in _LANGUAGES and not problem:
            try:
                problem = _format_problem(entry, language, rule, encoding)
            except UnicodeEncodeError as error:
                problem = (f"the {flag} string has a character {encoding} cannot hold "
                           f"({error.object[error.start:error.end]!r}); the catalog cannot be "
                           "written in its charset")
    return problem
