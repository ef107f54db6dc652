"""The white-space layout of messages: pieces, separators, rebuilding."""

import re

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from keras_transformer.messages import Layout
from keras_transformer.messages import outer_whitespace
from keras_transformer.messages import split_message


@pytest.mark.parametrize(
    "text, pieces, separators",
    [
        ("  -a, --all       do not ignore entries\n", ("-a, --all", "do not ignore entries"), ("  ", "       ", "\n")),
        ("%s: cannot open '%s': %s\n", ("%s: cannot open '%s': %s",), ("", "\n")),
        ("Usage: %s [OPTION]... [FILE]...\n", ("Usage: %s [OPTION]... [FILE]...",), ("", "\n")),
        ("\nReport bugs to: %s\n\n", ("Report bugs to: %s",), ("\n", "\n\n")),
        ("Name:\t%s\r\nSize:\t%d", ("Name:", "%s", "Size:", "%d"), ("", "\t", "\r\n", "\t", "")),
        ("a\rb", ("a", "b"), ("", "\r", "")),  # a lone carriage return separates
        ("100\u00a0%", ("100\u00a0%",), ("", "")),  # a single no-break space is a word gap
        ("a \u00a0b", ("a", "b"), ("", " \u00a0", "")),
        ("a\u2028b", ("a", "b"), ("", "\u2028", "")),
        ("word", ("word",), ("", "")),
        ("", (), ("",)),
        (" \n\t", (), (" \n\t",)),
        ("\r\n", (), ("\r\n",)),
    ],
)
def test_split_message(text, pieces, separators):
    layout = split_message(text)
    assert layout.pieces == pieces
    assert layout.separators == separators
    assert layout.rebuild(pieces) == text


def test_rebuild_puts_translations_between_the_original_separators():
    layout = split_message("  -a, --all       do not ignore entries\n")
    assert layout.rebuild(["-a, --all", "alles anzeigen"]) == "  -a, --all       alles anzeigen\n"


def test_rebuild_strips_the_outer_white_space_of_translated_pieces():
    layout = split_message("\tCopy?\n")
    assert layout.rebuild([" \n Kopieren?  "]) == "\tKopieren?\n"


def test_rebuild_drops_the_outer_separators_of_empty_pieces():
    assert split_message("a\nb\n").rebuild(["x", " "]) == "x\n"
    assert split_message("a\nb\nc").rebuild(["x", "", "z"]) == "x\n\nz"


@pytest.mark.parametrize("count", [0, 1, 3])
def test_rebuild_rejects_a_wrong_number_of_pieces(count):
    layout = split_message("a\nb")
    with pytest.raises(ValueError, match=f"translated_pieces has {count} items, the layout has 2 pieces"):
        layout.rebuild(["x"] * count)


def test_layout_checks_its_separators():
    with pytest.raises(ValueError, match="separators has 1 entries"):
        Layout(("a",), ("",))


@pytest.mark.parametrize(
    "text, expected",
    [("  Copy?\n", ("  ", "\n")), ("Copy", ("", "")), ("", ("", "")), (" \n", (" \n", "")), ("\xa0a\u3000", ("\xa0", "\u3000"))],
)
def test_outer_whitespace(text, expected):
    assert outer_whitespace(text) == expected


def test_regex_white_space_is_str_isspace():
    """The module's `\\s` runs and `str.strip` must agree on what white space is."""
    disagree = [c for c in map(chr, range(0x110000)) if bool(re.fullmatch(r"\s", c)) != c.isspace()]
    assert disagree == []


LAYOUT_TEXT = st.one_of(
    st.text(),
    st.text(alphabet=" \n\t\r\x0b\x0c\x1c\x85\xa0\u2000\u2028\u3000ab%-"),
)


@settings(deadline=None)
@given(LAYOUT_TEXT)
def test_rebuild_of_the_pieces_is_the_text(text):
    layout = split_message(text)
    assert layout.rebuild(layout.pieces) == text
    assert len(layout.separators) == len(layout.pieces) + 1


@settings(deadline=None)
@given(LAYOUT_TEXT)
def test_pieces_hold_no_layout_white_space(text):
    layout = split_message(text)
    for piece in layout.pieces:
        assert piece and piece == piece.strip()
        assert "\n" not in piece and "\t" not in piece and "\r" not in piece
        assert not re.search(r"\s\s", piece)
    assert all(s == "" or s.isspace() for s in layout.separators)


@settings(deadline=None)
@given(LAYOUT_TEXT, st.data())
def test_rebuild_keeps_the_outer_white_space_for_any_translation(text, data):
    layout = split_message(text)
    translated = data.draw(
        st.lists(st.text().filter(str.strip), min_size=len(layout.pieces), max_size=len(layout.pieces))
    )
    rebuilt = layout.rebuild(translated)
    if layout.pieces:
        assert outer_whitespace(rebuilt) == outer_whitespace(text)
    else:
        assert rebuilt == text
