r"""The white-space layout of a message: what to translate and what to keep.

Program messages carry layout that the program relies on: a trailing `\n`,
leading indentation, the columns of `--help` text. SentencePiece (NFKC, with
white space folded) cannot reproduce it, so `split_message` cuts a message at
its layout white space into translatable pieces, and `Layout.rebuild` puts the
translated pieces back between the original separators, byte for byte.

White space is what `str.isspace` says it is (so also `\r`, `\v`, `\f`,
`\x1c`-`\x1f`, `\x85`, U+2028/U+2029 and the Unicode spaces such as the
no-break space). A separator is the leading and the trailing white space of
the whole text, and inside it every run of white space that is two or more
characters long or holds a character other than a single space-like one
(Unicode category Zs: ` `, U+00A0, U+2009, ...). So a single space or no-break
space stays inside a piece, while a newline, a tab or a `\r` alone separates.
"""

import dataclasses
import re
import unicodedata

__all__ = ["Layout", "outer_whitespace", "split_message"]

_RUN = re.compile(r"\s+")  # for str patterns `\s` is exactly `str.isspace`


@dataclasses.dataclass(frozen=True)
class Layout:
    r"""A message cut into translatable pieces and the white space between them.

    Args:
        pieces: the non-empty text between separators, in order.
        separators: the white space around the pieces, `len(pieces) + 1` of
            them: before the first piece, between pieces, after the last. A
            text without pieces is its one separator.

    Raises:
        ValueError: `separators` does not have `len(pieces) + 1` entries.

    Example:
    >>> layout = split_message("  -a, --all       do not ignore entries\n")
    >>> layout.pieces
    ('-a, --all', 'do not ignore entries')
    >>> layout.rebuild(["-a, --all", " alles anzeigen "])
    '  -a, --all       alles anzeigen\n'
    """

    pieces: tuple
    separators: tuple

    def __post_init__(self):
        if len(self.separators) != len(self.pieces) + 1:
            raise ValueError(
                f"separators has {len(self.separators)} entries, "
                f"pieces needs {len(self.pieces) + 1} ({len(self.pieces)} pieces)"
            )

    def rebuild(self, translated_pieces):
        r"""The message with its pieces replaced, its separators kept.

        Each translated piece is stripped of its outer white space first, so
        a stray space from a model cannot change the layout. The outer white
        space of the result is the original's whenever at least one
        translated piece has some text; an empty piece drops the separators
        on its outer side (`"a\nb"` with `("x", "")` gives `"x"`).

        Args:
            translated_pieces: one string per piece, in order.

        Returns:
            The rebuilt message.

        Raises:
            ValueError: `translated_pieces` has a different number of items than `pieces`.

        Example:
        >>> split_message("Usage:\n\tls [FILE]\n").rebuild(["Aufruf:", "ls [DATEI]"])
        'Aufruf:\n\tls [DATEI]\n'
        """
        translated = [piece.strip() for piece in translated_pieces]
        if len(translated) != len(self.pieces):
            raise ValueError(
                f"translated_pieces has {len(translated)} items, the layout has {len(self.pieces)} pieces"
            )
        if not translated:
            return self.separators[0]
        inner = "".join(p + s for p, s in zip(translated, self.separators[1:-1])) + translated[-1]
        return self.separators[0] + inner.strip() + self.separators[-1]


def outer_whitespace(text):
    r"""The leading and trailing white space of a text.

    Args:
        text: any string.

    Returns:
        `(leading, trailing)`; a text that is all white space is all leading
        (`(text, "")`), so `leading + core + trailing == text` always holds.

    Example:
    >>> outer_whitespace("  Copy?\n")
    ('  ', '\n')
    >>> outer_whitespace(" \n")
    (' \n', '')
    """
    stripped = text.lstrip()
    leading = text[: len(text) - len(stripped)]
    core = stripped.rstrip()
    return leading, stripped[len(core) :]


def _separates(run):
    """Whether an inner run of white space is layout rather than a word gap."""
    return len(run) > 1 or unicodedata.category(run) != "Zs"


def split_message(text):
    r"""Cuts a message at its layout white space.

    Args:
        text: a message (any string, also empty or all white space).

    Returns:
        A `Layout`; `split_message(text).rebuild(split_message(text).pieces) == text`.

    Example:
    >>> split_message("%s: cannot open '%s'\n  try again\n").pieces
    ("%s: cannot open '%s'", 'try again')
    >>> split_message(" \n").pieces
    ()
    """
    leading, trailing = outer_whitespace(text)
    core = text[len(leading) : len(text) - len(trailing)]
    if not core:
        return Layout((), (text,))
    pieces, separators, start = [], [leading], 0
    for run in _RUN.finditer(core):
        if _separates(run.group()):
            pieces.append(core[start : run.start()])
            separators.append(run.group())
            start = run.end()
    pieces.append(core[start:])
    separators.append(trailing)
    return Layout(tuple(pieces), tuple(separators))
