"""Parsers of the format strings `message_checks` checks, ported from GNU gettext 0.21's
format-*.c: `common` holds what they share (reasons, the byte view, argument numbering and
the comparisons), `arglists` the argument list constraints of Lisp and Scheme (kept in
`arglist_segments`), `explicit_stack` the recursion of the parsers that nest (Lisp, Scheme,
Java) on a stack of their own, the other modules one family of languages each. Each parser
takes a string and gives a description of its arguments or raises `common.Invalid` with
gettext's reason; each comparison takes msgid's and msgstr's descriptions."""
