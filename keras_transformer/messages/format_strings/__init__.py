"""Parsers of the format strings `message_checks` checks, ported from GNU gettext 0.21's
format-*.c: `common` holds what they share (reasons, the byte view, argument numbering and
the comparisons), `arglists` the argument list constraints of Lisp and Scheme, the other
modules one family of languages each. Each parser takes a string and gives a description of
its arguments or raises `common.Invalid` with gettext's reason; each comparison takes
msgid's and msgstr's descriptions."""
