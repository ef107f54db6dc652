"""Lisp format strings, read as gettext 0.21's format-lisp.c reads them (byte by byte): `~`,
parameters (digits, signed digits, `'c`, `v`, `#`) apart by commas, the modifiers `:` and `@`,
then a directive. The directives that nest (`~( ~)`, `~[ ~; ~]`, `~{ ~}`, `~< ~>`) and `~^`
narrow the argument list constraints of `arglists`; format-scheme.c's parser is this one with
its own simple directives (`scheme`). parse_upto calls itself for each directive that nests;
here it is a generator that `run_nested` runs, so that a string is read however deep it nests.
msgfmt 0.21 with the default 8 MiB stack crashes (SIGSEGV) on `~(` nested past 22,763 levels
(Scheme: 23,814; each level is a parse_upto frame of about 370 bytes, and where the stack
starts varies by a few levels) and judges such strings given a larger stack (`ulimit -s`):
the verdict here is that one, whatever the depth.

Where gettext's list operations read memory they never set (or abort), msgfmt's verdict on the
arguments cannot be known (`arglists.Undefined`), but not on the syntax: `parse_arguments`
then reads the string again for its syntax only (`SYNTAX_ONLY`), and a syntax error anywhere
in it is reported in msgfmt's words. msgfmt reports it too, unless it crashes, aborts or loops
first on what it read; we refuse the string in every case."""

import dataclasses

from keras_transformer.messages.format_strings import arglists as al
from keras_transformer.messages.format_strings.common import bytes_view
from keras_transformer.messages.format_strings.common import conversion_error
from keras_transformer.messages.format_strings.common import Invalid
from keras_transformer.messages.format_strings.common import UNTERMINATED
from keras_transformer.messages.format_strings.explicit_stack import collector_paused
from keras_transformer.messages.format_strings.explicit_stack import run_nested

NIL, CHARACTER, INTEGER, ARGCOUNT, V = range(5)  # parameter types
I = (al.INTEGER_NULL,)
II = (al.INTEGER_NULL,) * 2
ICCI = (al.INTEGER_NULL, al.CHARACTER_NULL, al.CHARACTER_NULL, al.INTEGER_NULL)
IIIC = (al.INTEGER_NULL,) * 3 + (al.CHARACTER_NULL,)
IICCI = (al.INTEGER_NULL,) * 2 + (al.CHARACTER_NULL,) * 2 + (al.INTEGER_NULL,)
IIICC = (al.INTEGER_NULL,) * 3 + (al.CHARACTER_NULL,) * 2
IIIICCC = (al.INTEGER_NULL,) * 4 + (al.CHARACTER_NULL,) * 3
THREE = (al.CHARACTER_INTEGER_NULL,) * 3
_PARAMETER_NAMES = {al.CHARACTER_NULL: "character", al.INTEGER_NULL: "integer"}


def _int32(value):
    """A C `int` of the value (it wraps)."""
    return (value + 2**31) % 2**32 - 2**31


def cases(letters, meaning):
    """A directive table's entries for letters in both cases."""
    return {char: meaning for letter in letters for char in (letter.lower(), letter.upper())}


# The simple directives of Common Lisp: (parameter types, the type of the argument they
# take or None); the others are the parser's own.
LISP = {
    **cases("AS", (IIIC, al.OBJECT)), **cases("W", ((), al.OBJECT)),
    **cases("DBOX", (ICCI, al.INTEGER)), **cases("R", (IICCI, al.INTEGER)),
    **cases("C", ((), al.CHARACTER)), **cases("F", (IIICC, al.REAL)),
    **cases("EG", (IIIICCC, al.REAL)), "$": (IIIC, al.REAL),
    **cases("%&|~I", (I, None)), **cases("\n_", ((), None)), **cases("T", (II, None)),
}


@dataclasses.dataclass
class Dialect:
    simple: dict  # char -> (parameter types, argument type or None)
    indirection: str  # the letters of ~?
    character_with_parameter: bool  # Scheme's ~c: takes an argument without a parameter only
    lisp_only: bool  # ~/name/, ~< ~>, ~!


COMMON_LISP = Dialect(LISP, "?", False, True)


@dataclasses.dataclass
class _Spec:
    directives: int = 0


class _Parser:
    def __init__(self, text, dialect, lists):
        self.text, self.at, self.dialect = text, 0, dialect
        self.lists = lists  # `arglists`, or `SYNTAX_ONLY`

    def char(self, offset=0):
        return self.text[self.at + offset:self.at + offset + 1]

    def parameters(self, spec, position):
        params = []
        while True:
            kind, value, char = NIL, 0, self.char()
            if char.isdigit() and char.isascii() or char in ("+", "-") and char:
                kind, sign = INTEGER, char
                if char in "+-":
                    self.at += 1
                    after = self.char()
                    if not (after.isdigit() and after.isascii()):
                        raise Invalid(UNTERMINATED if not after else
                                      f"In the directive number {spec.directives}, '{sign}' is "
                                      "not followed by a digit.")
                while self.char().isdigit() and self.char().isascii():
                    value = _int32(10 * value + int(self.char()))
                    self.at += 1
                value = _int32(-value) if sign == "-" else value
            elif char == "'":
                kind = CHARACTER
                self.at += 1
                if not self.char():
                    raise Invalid(UNTERMINATED)
                self.at += 1
            elif char in ("V", "v") and char:
                kind, value = V, position
                self.at += 1
                if position >= 0:
                    position = _int32(position + 1)
            elif char == "#":
                kind = ARGCOUNT
                self.at += 1
            params.append((kind, value))
            if self.char() != ",":
                return tuple(params), position
            self.at += 1

    def parse_upto(self, position, arglist, escape, spec, terminator, separator):
        """format-lisp.c's parse_upto: reads up to `terminator` (or the end: ""); returns
        (position, list, escape, separator: 0, 1 or 2 with colon). A generator for
        `run_nested`: it yields the parse_upto calls of the directives that nest."""
        dialect, text = self.dialect, self.text
        while True:
            self.at = text.find("~", self.at) + 1
            if not self.at:
                self.at = len(text)
                break
            colon = atsign = False
            spec.directives += 1
            params, position = self.parameters(spec, position)
            while self.char() in (":", "@") and self.char():
                colon, atsign = colon or self.char() == ":", atsign or self.char() == "@"
                self.at += 1
            char = self.char()
            self.at += 1

            if char in dialect.simple and char:
                types, kind = dialect.simple[char]
                arglist = self._check_params(arglist, params, types, spec.directives)
                if kind is not None:
                    arglist, position = self._take(arglist, position, kind)
            elif char in "Cc" and char and dialect.character_with_parameter:
                arglist = self._check_params(arglist, params, I, spec.directives)
                if not params or len(params) == 1 and params[0][0] == NIL:
                    arglist, position = self._take(arglist, position, al.CHARACTER)
            elif char in "Pp" and char:
                arglist = self._check_params(arglist, params, (), spec.directives)
                if colon and position > 0:
                    position -= 1
                arglist, position = self._take(arglist, position, al.OBJECT)
            elif char == "*":
                arglist = self._check_params(arglist, params, I, spec.directives)
                if not params or params[0][0] == NIL:
                    n = 0 if atsign else 1
                elif params[0][0] == INTEGER:
                    n = params[0][1]
                else:
                    position = -1
                    continue
                if n < 0:
                    raise Invalid(f"In the directive number {spec.directives}, the argument {n} "
                                  "is negative.")
                if atsign:
                    position = n
                elif colon:
                    if n > 0:
                        position = -1 if position < 0 else position - n if position >= n else 0
                elif position >= 0:
                    position = _int32(position + n)
            elif char in dialect.indirection and char:
                arglist = self._check_params(arglist, params, (), spec.directives)
                arglist, position = self._take(arglist, position, al.FORMATSTRING)
                if atsign:
                    position = -1
                elif position >= 0:
                    arglist, position = self._take(arglist, position, al.LIST,
                                                   self.lists.make_unconstrained_list())
            elif char == "/" and dialect.lisp_only:
                arglist = self._check_params(arglist, params, (), spec.directives)
                arglist, position = self._take(arglist, position, al.OBJECT)
                end = self.text.find("/", self.at)
                if end < 0:
                    raise Invalid("The string ends in the middle of a ~/.../ directive.")
                self.at = end + 1
            elif char == "!" and dialect.lisp_only:
                for kind, value in params:  # nocheck_params
                    if kind == V:
                        if value < 0 and self.lists is al:
                            raise al.Undefined("~v! at an unknown position")  # msgfmt aborts
                        arglist = self.lists.add_req_type_constraint(arglist, value,
                                                                     al.CHARACTER_INTEGER_NULL)
                arglist, position = self._take(arglist, position, al.FUNCTION)
                arglist, position = self._take(arglist, position, al.OBJECT)
            elif char == "(":
                arglist = self._check_params(arglist, params, (), spec.directives)
                position, arglist, escape, _ = yield self.parse_upto(position, arglist, escape,
                                                                      spec, ")", False)
            elif char == "[":
                arglist, position, escape = yield self.conditional(params, colon, atsign, position,
                                                                   arglist, escape, spec)
            elif char == "{":
                arglist = self._check_params(arglist, params, I, spec.directives)
                arglist, position = yield self.iteration(colon, atsign, position, arglist, spec)
            elif char == "<" and dialect.lisp_only:
                arglist = self._check_params(arglist, params, IIIC, spec.directives)
                sub_escape = None
                while True:
                    position, arglist, sub_escape, sub_separator = yield self.parse_upto(
                        position, arglist, sub_escape, spec, ">", True)
                    if not sub_separator:
                        break
                if sub_escape is not None:
                    position = -1
                arglist = self.lists.union(arglist, sub_escape)
            elif char == "^":
                arglist = self._check_params(arglist, params, THREE, spec.directives)
                if (position >= 0 and arglist is not None
                        and self.lists.is_required(arglist, position)):
                    continue  # never taken
                if arglist is not None:
                    this_escape = arglist.copy()
                    if position >= 0:
                        this_escape = self.lists.add_end_constraint(this_escape, position)
                    escape = self.lists.unite_exit(escape, this_escape)
                if position >= 0:
                    arglist = self.lists.add_required_constraint(arglist, position)
            elif char == ";":
                if not separator:
                    raise Invalid(f"In the directive number {spec.directives}, '~;' is used in "
                                  "an invalid position.")
                arglist = self._check_params(arglist, params, I if terminator == ">" else (),
                                        spec.directives)
                return position, arglist, escape, 2 if colon else 1
            elif char in ")]}>" and char and (char != ">" or dialect.lisp_only):
                if terminator != char:
                    opening = {")": "(", "]": "[", "}": "{", ">": "<"}[char]
                    raise Invalid(f"Found '~{char}' without matching '~{opening}'.")
                arglist = self._check_params(arglist, params, (), spec.directives)
                return position, arglist, escape, 0
            else:
                raise Invalid(conversion_error(spec.directives, char) if char else UNTERMINATED)
        if terminator:
            raise Invalid(f"Found '~{chr(ord(terminator) - 1)}' without matching '~{terminator}'.")
        return position, arglist, escape, 0

    def conditional(self, params, colon, atsign, position, arglist, escape, spec):
        """~[...~] in its three forms: (list, position, escape). A generator, as parse_upto."""
        directive = spec.directives
        if atsign and colon:
            raise Invalid(f"In the directive number {directive}, both the @ and the : modifiers "
                          "are given.")
        if atsign:
            arglist = self._check_params(arglist, params, (), directive)
            nil_list = arglist.copy() if arglist is not None else None
            if position >= 0:
                nil_list = self.lists.add_req_type_constraint(nil_list, position, al.LIST,
                                                              self.lists.ArgList())
            sub_list = arglist.copy() if arglist is not None else None
            sub_position, sub_list, escape, _ = yield self.parse_upto(position, sub_list, escape,
                                                                      spec, "]", False)
            if position >= 0:
                position = position + 1 if sub_list is None or sub_position == position + 1 else -1
            return self.lists.union(nil_list, sub_list), position, escape
        if colon:
            arglist = self._check_params(arglist, params, (), directive)
            if position >= 0:
                arglist = self.lists.add_req_type_constraint(arglist, position, al.OBJECT)
                position += 1
            union_position, union_list = -2, None
            sub_list = arglist.copy() if arglist is not None else None
            if position >= 0:
                sub_list = self.lists.add_req_type_constraint(sub_list, position - 1, al.LIST,
                                                              self.lists.ArgList())
            sub_position, sub_list, escape, sub_separator = yield self.parse_upto(
                position, sub_list, escape, spec, "]", True)
            if not sub_separator:
                raise Invalid(f"In the directive number {spec.directives}, '~:[' is not followed by "
                              "two clauses, separated by '~;'.")
            if sub_list is not None:
                union_position = sub_position
            union_list = self.lists.union(union_list, sub_list)
            sub_list = arglist.copy() if arglist is not None else None
            sub_position, sub_list, escape, _ = yield self.parse_upto(position, sub_list, escape,
                                                                      spec, "]", False)
            if sub_list is not None:
                union_position = _merge_position(union_position, sub_position)
            union_list = self.lists.union(union_list, sub_list)
            return union_list, position if union_position == -2 else union_position, escape
        arglist = self._check_params(arglist, params, I, directive)
        arg_position = -1
        if not (params and params[0][0] != NIL) and position >= 0:
            arg_position = position
            arglist = self.lists.add_req_type_constraint(arglist, position, al.OBJECT)
            position += 1
        union_position, union_list, last = -2, None, False
        while True:
            sub_list = arglist.copy() if arglist is not None else None
            sub_position, sub_list, escape, sub_separator = yield self.parse_upto(
                position, sub_list, escape, spec, "]", not last)
            if not last and arg_position >= 0:
                sub_list = self.lists.add_req_type_constraint(sub_list, arg_position, al.INTEGER)
            if sub_list is not None:
                union_position = _merge_position(union_position, sub_position)
            union_list = self.lists.union(union_list, sub_list)
            if sub_separator == 2:
                last = True
            if not sub_separator:
                break
        if not last:
            union_position = _merge_position(union_position, position)
            if arglist is not None:
                union_list = self.lists.union(union_list, arglist.copy())
        return union_list, position if union_position == -2 else union_position, escape

    def iteration(self, colon, atsign, position, arglist, spec):
        """~{...~}: (list, position). A generator, as parse_upto."""
        empty_body = self.char() == "~"
        sub_spec = _Spec()
        sub_position, sub_list, sub_escape, _ = yield self.parse_upto(
            0, self.lists.make_unconstrained_list(), None, sub_spec, "}", False)
        spec.directives += sub_spec.directives
        if empty_body and sub_spec.directives == 1 and position >= 0:
            arglist = self.lists.add_req_type_constraint(arglist, position, al.FORMATSTRING)
            position += 1
        sub_list = self.lists.union(sub_list, sub_escape)  # ~{ catches ~^
        if colon:
            sub_list = self.lists.make_repeated_list_of_lists(sub_list)
        elif sub_list is None:
            sub_list = self.lists.ArgList()
        elif sub_position <= 0:
            sub_list = self.lists.make_union_with_empty_list(sub_list)
        else:
            sub_list = self.lists.make_repeated_list(sub_list, sub_position)
        if atsign:
            if arglist is not None and position >= 0:
                self.lists.shift_list(sub_list, position)
                arglist = self.lists.make_intersected_list(arglist, sub_list)
            return arglist, -1
        if position >= 0:
            arglist = self.lists.add_req_type_constraint(arglist, position, al.LIST, sub_list)
            position += 1
        return arglist, position

    def _take(self, arglist, position, kind, sublist=None):
        """A directive takes the argument at `position` (if known), of type `kind`: (the
        list, the position after it)."""
        if position < 0:
            return arglist, position
        return (self.lists.add_req_type_constraint(arglist, position, kind, sublist),
                _int32(position + 1))

    def _check_params(self, arglist, params, types, directive):
        """format-lisp.c's check_params: the parameters' types against `types`; a `v`
        parameter constrains its argument, beyond `types` to NIL. The list."""
        for index, (kind, value) in enumerate(params[:len(types)], start=1):
            wanted = types[index - 1]
            given = {CHARACTER: "character", INTEGER: "integer", ARGCOUNT: "integer"}.get(kind)
            if wanted != al.CHARACTER_INTEGER_NULL and given and given != _PARAMETER_NAMES[wanted]:
                raise Invalid(f"In the directive number {directive}, parameter {index} is of "
                              f"type '{given}' but a parameter of type "
                              f"'{_PARAMETER_NAMES[wanted]}' is expected.")
            if kind == V and value >= 0:
                arglist = self.lists.add_req_type_constraint(arglist, value, wanted)
        for kind, value in params[len(types):]:
            if kind in (CHARACTER, INTEGER, ARGCOUNT):
                raise Invalid(f"In the directive number {directive}, too many parameters are "
                              f"given; expected at most {len(types)} "
                              f"parameter{'' if len(types) == 1 else 's'}.")
            if kind == V and value >= 0:
                arglist = self.lists.add_req_type_constraint(arglist, value, al.LIST,
                                                             self.lists.ArgList())
        return arglist


def _merge_position(union_position, sub_position):
    """The position after alternatives: -2 none yet, -1 unknown (they differ)."""
    if union_position == -2:
        return sub_position
    return -1 if sub_position < 0 or sub_position != union_position else union_position


class _Unknown:
    """A list after msgfmt has read memory it never set: what it holds cannot be known."""

    def copy(self):
        return self


_UNKNOWN = _Unknown()


class _SyntaxOnly:
    """The list operations of a parse that reads the syntax only: each of `arglists` gives an
    unknown list, and no argument is known to be required (so every `~^` may be taken)."""

    def __getattr__(self, name):
        getattr(al, name)  # an operation of arglists, or AttributeError
        return lambda *_: _UNKNOWN

    @staticmethod
    def is_required(*_):
        return False


SYNTAX_ONLY = _SyntaxOnly()


def parse_arguments(text, dialect, encoding="utf-8"):
    """format_parse: the normalized argument list constraints of a format string.

    Raises:
        Invalid: msgfmt rejects the string (its reason).
        arglists.Undefined: msgfmt's verdict on the arguments cannot be known, and the
            string, read again for its syntax only, is valid.
    """
    try:
        return list_arguments(text, dialect, encoding)
    except al.Undefined:
        read_syntax(text, dialect, encoding)
        raise


def read_syntax(text, dialect, encoding="utf-8"):
    """Reads a format string for its syntax only (`SYNTAX_ONLY`): raises Invalid, with
    msgfmt's reason, at its first syntax error."""
    _parse(bytes_view(text, encoding), dialect, SYNTAX_ONLY)


def list_arguments(text, dialect, encoding="utf-8"):
    """format_parse as gettext runs it: `parse_arguments`, but `arglists.Undefined` where
    gettext reads memory it never set (or aborts) even if a syntax error follows (msgfmt may
    crash on such a string)."""
    return _parse(bytes_view(text, encoding), dialect, al)


def _parse(view, dialect, lists):
    parser = _Parser(view, dialect, lists)
    with collector_paused():
        _, arglist, escape, _ = run_nested(parser.parse_upto(0, lists.make_unconstrained_list(),
                                                             None, _Spec(), "", False))
        arglist = lists.union(arglist, escape)  # ~^ at the top
        if arglist is None:
            raise Invalid("The string refers to some argument in incompatible ways.")
        lists.normalize_list(arglist)
    return arglist


def lisp_arguments(text, encoding="utf-8"):
    return parse_arguments(text, COMMON_LISP, encoding)
