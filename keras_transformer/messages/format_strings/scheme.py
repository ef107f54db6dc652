"""Scheme format strings, read as gettext 0.21's format-scheme.c reads them: the Lisp parser
(`lisp`) with GNU Guile's simple directives (`~i` takes a complex number, `~c` a character
only without parameters) and without `~/name/`, `~< ~>` and `~!`."""

from keras_transformer.messages.format_strings import arglists as al
from keras_transformer.messages.format_strings.lisp import cases
from keras_transformer.messages.format_strings.lisp import Dialect
from keras_transformer.messages.format_strings.lisp import I
from keras_transformer.messages.format_strings.lisp import ICCI
from keras_transformer.messages.format_strings.lisp import IICCI
from keras_transformer.messages.format_strings.lisp import IIIC
from keras_transformer.messages.format_strings.lisp import IIICC
from keras_transformer.messages.format_strings.lisp import IIIICCC
from keras_transformer.messages.format_strings.lisp import parse_arguments

IIC = (al.INTEGER_NULL, al.INTEGER_NULL, al.CHARACTER_NULL)
SCHEME = {
    **cases("AS", (IIIC, al.OBJECT)), **cases("DBOX", (ICCI, al.INTEGER)),
    **cases("R", (IICCI, al.INTEGER)), **cases("F", (IIICC, al.REAL)),
    **cases("EG", (IIIICCC, al.REAL)), "$": (IIIC, al.REAL), **cases("I", (IIICC, al.COMPLEX)),
    **cases("Y", ((), al.OBJECT)), **cases("%&_/|~", (I, None)), **cases("!\nQ", ((), None)),
    **cases("T", (IIC, None)),
}
GUILE_SCHEME = Dialect(SCHEME, "?Kk", True, False)


def scheme_arguments(text, encoding="utf-8"):
    return parse_arguments(text, GUILE_SCHEME, encoding)
