"""Reading `.po` files as msgfmt does, and writing back every line we did not change."""

import re
import shutil
import subprocess

import polib
import pytest

from keras_transformer.messages import charsets
from keras_transformer.messages.po_file import PoSyntaxError
from keras_transformer.messages.po_file import parse_po
from keras_transformer.messages.po_file import read_po

MSGFMT = shutil.which("msgfmt") or "/usr/bin/msgfmt"
MSGUNFMT = shutil.which("msgunfmt") or "/usr/bin/msgunfmt"
HEADER = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'


def msgfmt_accepts(path):
    result = subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)],
                            capture_output=True, text=True)
    return result.returncode == 0


def write(tmp_path, text, name="t.po"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


# Catalogs msgfmt --check accepts, each kept byte for byte (what polib loses is named).
KEPT = {
    "c-escapes": HEADER + 'msgid "Bell\\a esc\\033[1m hex\\x1b[0m \\b\\f\\v\\r\\t\\\\ \\""\nmsgstr "x\\033"\n',
    "obsolete-previous": HEADER + '#~| msgid "Older"\n#~ msgid "Old"\n#~ msgstr "Alt"\n',
    "lone-hash": HEADER + "#\n# \n# translator\nmsgid \"A\"\nmsgstr \"B\"\n",
    "no-space-after-hash": HEADER + "#TRANSLATORS: short\n#:src/a.c:1\nmsgid \"A\"\nmsgstr \"B\"\n",
    "no-wrap": HEADER + "#, no-wrap\nmsgid \"\"\n\"a long line of text that msgcat would wrap at "
               "seventy-nine columns if it were allowed to wrap it at all\"\nmsgstr \"B\"\n",
    "crlf": HEADER.replace("\n", "\r\n") + 'msgid "A"\r\nmsgstr "B"\r\n',
    "no-final-newline": HEADER + 'msgid "A"\nmsgstr "B"',
    "indented-and-same-line": HEADER + '  msgid   "A" "x"\nmsgstr\n"B" # trailing comment\n',
    "fuzzy-with-previous": HEADER + '#, fuzzy\n#| msgid "Olde"\nmsgid "Old"\nmsgstr "Alt"\n',
    "plural": HEADER.replace('\\n"\n\n', '\\n"\n"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n\n')
              + 'msgid "a"\nmsgid_plural "as"\nmsgstr[0] "b"\nmsgstr[1] "bs"\n',
    "context": HEADER + 'msgctxt "menu"\nmsgid "File"\nmsgstr "Datei"\n\nmsgid "File"\nmsgstr "D"\n',
    # A backslash before a line feed is no character, anywhere (see CONTINUED).
    "continued-lines": HEADER + 'msgid "a\\\nb"\nmsgstr "x\\\ny"\n\nmsg\\\nid "e" \\\n "f"\nmsgstr "g"\n',
    # `#|` lines are tokens: a full previous msgctxt/msgid/msgid_plural with continuations,
    # escapes, a `#|` in mid-line, an empty `#|` or `#~|` line (no tokens), no space after `#|`.
    "previous-tokens": HEADER + '#, fuzzy\n#| msgctxt "c"\n#|msgid ""\n#| "x\\033" #| "y"\n'
                       '#| msgid_plural "xs"\nmsgid "a"\nmsgstr "b"\n\n#|\n#~|\nmsgid "d"\nmsgstr "e"\n'
                       '\n#~| msgid "f"\n#~| "g"\n#~ msgid "h"\n#~ msgstr "i"\n',
    # A comment after the last string of an entry ends it; `#~` alone is no comment.
    "comment-after-msgstr": HEADER + 'msgid "a"\nmsgstr "b" # x\nmsgid "c"\nmsgstr "d" #~\n"e"\n',
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_accepted_catalogs_come_back_byte_for_byte(name, tmp_path):
    text = KEPT[name]
    path = write(tmp_path, text)
    assert msgfmt_accepts(path)
    assert read_po(path).text() == text


@pytest.mark.parametrize("name,lost", [
    ("obsolete-previous", "#~| msgid"), ("lone-hash", "#\n# \n"), ("crlf", "\r\n"),
])
def test_polib_loses_what_we_keep(name, lost, tmp_path):
    """Why po_file exists: polib 1.2 writes these catalogs back without what they had."""
    text = KEPT[name]
    assert lost in text and lost not in str(polib.pofile(text)) + "\n"
    assert lost in parse_po(text).text()


def test_polib_changes_what_an_escaped_msgid_means():
    """polib writes `\\033` back as `\\\\033`: the program's lookup no longer matches."""
    text = KEPT["c-escapes"]
    assert parse_po(str(polib.pofile(text))).entries[1].msgid != parse_po(text).entries[1].msgid


def test_polib_refuses_comments_without_a_space_that_msgfmt_accepts():
    with pytest.raises(OSError, match="Syntax error"):
        polib.pofile(KEPT["no-space-after-hash"])
    entry = parse_po(KEPT["no-space-after-hash"]).entries[1]
    assert entry.msgid == "A"


def test_polib_rewraps_no_wrap_entries():
    text = KEPT["no-wrap"]
    assert text not in str(polib.pofile(text)) + "\n" and parse_po(text).text() == text


def test_escapes_decode_as_msgunfmt_reads_them(tmp_path):
    """The values (what the program looks up) agree with msgfmt's compiled catalog."""
    text = KEPT["c-escapes"]
    entry = parse_po(text).entries[1]
    assert entry.msgid == 'Bell\a esc\x1b[1m hex\x1b[0m \b\f\v\r\t\\ "'
    assert entry.msgstr == ["x\x1b"]
    subprocess.run([MSGFMT, "-o", str(tmp_path / "t.mo"), str(write(tmp_path, text))], check=True)
    compiled = polib.mofile(str(tmp_path / "t.mo"))
    assert [e.msgid for e in compiled if e.msgid] == [entry.msgid]


def test_a_hex_escape_takes_every_hex_digit_and_an_octal_one_three(tmp_path):
    """`\\x41B` is one escape (0x41B, of which a byte keeps 0x1B) and `\\1014` is `\\101` then 4,
    as msgfmt compiles them."""
    text = HEADER + 'msgid "\\x41B \\1014"\nmsgstr "x"\n'
    assert parse_po(text).entries[1].msgid == "\x1b A4"
    subprocess.run([MSGFMT, "-o", str(tmp_path / "t.mo"), str(write(tmp_path, text))], check=True)
    assert [e.msgid for e in polib.mofile(str(tmp_path / "t.mo")) if e.msgid] == ["\x1b A4"]


# Lines a backslash continues, and the entries msgfmt compiles from them.
CONTINUED = (HEADER + 'msgid "a\\\nb"\nmsgstr "x\\\ny"\n\nmsg\\\nid "e" \\\n "f"\nmsgstr "g"\n\n'
             '#, c-\\\nformat\nmsgid "%d \\\\\\\n"\nmsgstr ""\n\nmsgid "h"\nmsgstr \\\n""\n')


def test_a_backslash_before_a_line_feed_continues_the_line_as_msgfmt_reads_it(tmp_path):
    """`"a\\` then `b"` is "ab" (also in a keyword, between strings, in a flags comment);
    `\\\\` then a line feed is one backslash then the continuation."""
    po = read_po(write(tmp_path, CONTINUED))
    entries = [(e.msgid, e.msgstr, e.flags, e.line) for e in po.entries[1:]]
    assert entries == [("ab", ["xy"], (), 5), ("ef", ["g"], (), 10), ("%d \\", [""], ("c-format",), 17),
                       ("h", [""], (), 21)]
    subprocess.run([MSGFMT, "--check", "-o", str(tmp_path / "t.mo"), str(tmp_path / "t.po")],
                   check=True)
    assert {(e.msgid, e.msgstr) for e in polib.mofile(str(tmp_path / "t.mo")) if e.msgid} == {
        ("ab", "xy"), ("ef", "g")}
    assert po.text() == CONTINUED


def test_filling_an_entry_across_continued_lines_changes_only_its_lines(tmp_path):
    po = parse_po(CONTINUED)
    po.fill(po.entries[3], ["%d Zeichen"])
    po.fill(po.entries[4], ["H"])
    head = CONTINUED.split("#, c-")[0]
    assert po.text() == head + ('#, fuzzy, c-format\nmsgid "%d \\\\\\\n"\nmsgstr "%d Zeichen"\n\n'
                                '#, fuzzy\nmsgid "h"\nmsgstr "H"\n')
    path = write(tmp_path, po.text())
    assert msgfmt_accepts(path)
    assert [e.msgstr for e in read_po(path).entries[3:]] == [["%d Zeichen"], ["H"]]


def test_filling_keeps_every_other_line(tmp_path):
    text = (HEADER + "# translator\n#. extracted\n#: src/a.c:1\n#, c-format\n#| msgid \"Olde %s\"\n"
            'msgid "Old %s"\nmsgstr ""\n\n#~| msgid "Older"\n#~ msgid "Old"\n#~ msgstr "Alt"\n')
    po = parse_po(text)
    po.fill(po.entries[1], ["Alt %s"], comment="machine translation: checked")
    assert po.text() == (HEADER + "# translator\n# machine translation: checked\n#. extracted\n"
                         "#: src/a.c:1\n#, fuzzy, c-format\n#| msgid \"Olde %s\"\n"
                         'msgid "Old %s"\nmsgstr "Alt %s"\n\n#~| msgid "Older"\n#~ msgid "Old"\n'
                         '#~ msgstr "Alt"\n')
    assert msgfmt_accepts(write(tmp_path, po.text()))


def test_filling_writes_escapes_and_keeps_crlf(tmp_path):
    text = HEADER.replace("\n", "\r\n") + 'msgid "Bell\\a\\033"\r\nmsgstr ""\r\n'
    po = parse_po(text)
    po.fill(po.entries[1], ["Glocke\a\x1b \"q\" \\ \udce9"])
    assert po.text() == (HEADER.replace("\n", "\r\n") + "#, fuzzy\r\nmsgid \"Bell\\a\\033\"\r\n"
                         'msgstr "Glocke\\a\\033 \\"q\\" \\\\ \\351"\r\n')


def test_filling_an_entry_that_shares_its_lines(tmp_path):
    text = HEADER + 'msgid "A" msgstr "" msgid "B" msgstr ""\n'
    po = parse_po(text)
    po.fill(po.entries[1], ["a"])
    po.fill(po.entries[2], ["b"])
    path = write(tmp_path, po.text())
    assert msgfmt_accepts(path)
    assert [e.msgstr for e in read_po(path).entries[1:]] == [["a"], ["b"]]


def test_long_and_multiline_translations_wrap_like_msgcat(tmp_path):
    po = parse_po(HEADER + 'msgid "A"\nmsgstr ""\n')
    long = "word " * 30 + "end\nsecond line\n"
    po.fill(po.entries[1], [long])
    path = write(tmp_path, po.text())
    cat = subprocess.run(["msgcat", str(path)], capture_output=True, text=True, check=True).stdout
    assert po.text().split('msgid "A"')[1] == cat.split('msgid "A"')[1]


def test_metadata_edit_rewrites_only_the_header():
    po = parse_po(HEADER + 'msgid "A"\nmsgstr "B"\n')
    po.set_header_fields({"Language": "de"})
    assert po.text() == ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
                         '"Language: de\\n"\n\nmsgid "A"\nmsgstr "B"\n')


# What msgfmt --check refuses: (catalog, the start of the message after "t.po:").
REFUSED = {
    "unterminated": ('msgid "Quit\nmsgstr ""\n', "1:7: end-of-line within string"),
    "duplicate": (HEADER + 'msgid "A"\nmsgstr ""\n\nmsgid "A"\nmsgstr "B"\n',
                  "8: duplicate message definition (first defined on line 6)"),
    "duplicate-obsolete": (HEADER + 'msgid "A"\nmsgstr ""\n\n#~ msgid "A"\n#~ msgstr "B"\n',
                           "8: duplicate message definition"),
    "bad-escape": (HEADER + 'msgid "\\e"\nmsgstr ""\n', "5:9: invalid control sequence \\e"),
    "mixed-obsolete": (HEADER + 'msgid "A"\n#~ msgstr "B"\n', "6: inconsistent use of #~"),
    "no-msgstr": (HEADER + 'msgid "A"\n\nmsgid "B"\nmsgstr ""\n', "5: missing 'msgstr' section"),
    "garbage": (HEADER + 'msgid "A"\nmsgstr "B"\ngarbage\n', "7:1: syntax error: unexpected 'garbage'"),
    "msgstr-first": ('msgstr "A"\n', "1:1: syntax error: msgstr before msgid"),
    "plural-index": (HEADER + 'msgid "a"\nmsgid_plural "b"\nmsgstr[1] ""\n',
                     "7: first plural form has nonzero index"),
    "plural-without-plural": (HEADER + 'msgid "a"\nmsgstr[0] ""\n', "6:1: syntax error: unexpected msgstr[N]"),
    "msgstr-after-plural": (HEADER + 'msgid "a"\nmsgid_plural "b"\nmsgstr ""\n',
                            "7:1: syntax error: unexpected msgstr"),
    "two-msgstr": (HEADER + 'msgid "a"\nmsgstr ""\nmsgstr "b"\n', "7:1: syntax error: unexpected msgstr"),
    "byte-order-mark": ("\ufeff" + HEADER + 'msgid "A"\nmsgstr ""\n', "1:1: syntax error: a byte-order mark"),
    "not-utf8": (HEADER.encode() + b'msgid "\xff"\nmsgstr ""\n', "5:8: invalid multibyte sequence"),
    "domain": (HEADER + 'domain "x"\nmsgid "A"\nmsgstr ""\n', "5:1: 'domain' directives"),
    "comment-inside": (HEADER + 'msgid "A"\n# c\nmsgstr "B"\n', "5: missing 'msgstr' section"),
    "comment-after-msgid": (HEADER + 'msgid "A" # c\nmsgstr "B"\n', "5: missing 'msgstr' section"),
    "obsolete-previous-before-live": (HEADER + '#~| msgid "x"\nmsgid "A"\nmsgstr "B"\n',
                                      "6: inconsistent use of #~"),
    "ideographic-space": (HEADER + 'msgid "a"\nmsgstr "" \u3000\n', "6:11: syntax error"),  # characters, not bytes
    "no-break-space": (HEADER + 'msgid "a"\u00a0\nmsgstr ""\n', "5:10: syntax error"),
    "msgstr-without-string": (HEADER + 'msgid "a"\nmsgstr\n', "6: syntax error: msgstr without a string"),
    "msgid-without-string": (HEADER + 'msgid\nmsgstr "x"\n', "6:1: syntax error: a keyword without"),
    # Lines are named as the file numbers them, after a continued line too.
    "after-a-continued-line": (HEADER + 'msgid "a\\\nb"\nmsgstr "x\\q"\n', "7:11: invalid control sequence \\q"),
    "continued-comment": (HEADER + '# c\\\nmsgid "c"\nmsgstr "d"\n', "7:1: syntax error"),  # the msgid is comment
    "crlf-backslash": (HEADER.replace("\n", "\r\n") + 'msgid "a\\\r\nb"\r\nmsgstr ""\r\n', "5:7: end-of-line"),
    # `#|` lines, read as msgfmt reads them (po-gram-gen.y's `prev`).
    "previous-out-of-order": (HEADER + '#| msgid "x"\n#| msgctxt "c"\nmsgid "a"\nmsgstr "b"\n',
                              "6:4: syntax error: unexpected #| msgctxt"),
    "previous-twice": (HEADER + '#| msgid "x"\n#| msgid "y"\nmsgid "a"\nmsgstr "b"\n',
                       "6:4: syntax error: unexpected #| msgid"),
    "previous-plural-twice": (HEADER + '#| msgid "x"\n#| msgid_plural "y"\n#| msgid_plural "z"\n'
                              'msgid "a"\nmsgstr "b"\n', "7:4: syntax error: unexpected #| msgid_plural"),
    "previous-msgstr": (HEADER + '#| msgid "x"\n#| msgstr "y"\nmsgid "a"\nmsgstr "b"\n',
                        '6:4: keyword "msgstr" unknown'),
    "previous-bad-escape": (HEADER + '#| msgid "x\\q"\nmsgid "a"\nmsgstr "b"\n',
                            "5:13: invalid control sequence \\q"),
    "previous-unterminated": (HEADER + '#| msgid "x\nmsgid "a"\nmsgstr "b"\n', "5:10: end-of-line within string"),
    "previous-free-text": (HEADER + '#| some text\nmsgid "a"\nmsgstr "b"\n', "5:4: syntax error: unexpected 'some'"),
    "previous-string-first": (HEADER + '#| "x"\nmsgid "a"\nmsgstr "b"\n', "5:4: syntax error: a #| string"),
    "previous-without-msgid": (HEADER + '#| msgctxt "c"\nmsgid "a"\nmsgstr "b"\n', "6:1: syntax error: the #| lines"),
    "previous-then-comment": (HEADER + '#| msgid "x"\n#, fuzzy\nmsgid "a"\nmsgstr "b"\n',
                              "6:1: syntax error: a comment between the #| lines"),
    "previous-at-the-end": (HEADER + 'msgid "a"\nmsgstr "b"\n#| msgid "x"\n', "8: syntax error: #| lines without"),
    "previous-then-msgstr": (HEADER + '#| msgid "x"\nmsgstr "y"\nmsgid "a"\nmsgstr "b"\n',
                             "6:1: syntax error: msgstr after #| lines"),
    "previous-not-utf8": (HEADER.encode() + b'#| msgid "\xff"\nmsgid "a"\nmsgstr "b"\n', "5:11: invalid multibyte"),
    "previous-obsolete-twice": (HEADER + '#~| msgid "x"\n#~| msgid "y"\n#~ msgid "a"\n#~ msgstr "b"\n',
                                "6:5: syntax error: unexpected #| msgid"),
    "previous-live-then-obsolete": (HEADER + '#| msgid "x"\n#~| "y"\nmsgid "a"\nmsgstr "b"\n',
                                    "6: inconsistent use of #~"),
    # A comment after a string ends the entry: what follows is outside it.
    "string-after-comment": (HEADER + 'msgid "a"\nmsgstr "b" # x\n"c"\n', "7:1: syntax error: a string outside"),
    "obsolete-in-mid-line": (HEADER + 'msgid "a"\nmsgstr "b" #~ "c"\n', "6: inconsistent use of #~"),
    # Strings cannot hold msgctxt's separator (a .mo file could not tell them apart).
    "context-separator": (HEADER + 'msgid "a\\004b"\nmsgstr ""\n', "5: context separator <EOT> within string"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_msgfmt_refuses_is_refused_with_file_and_line(name, tmp_path):
    text, message = REFUSED[name]
    path = write(tmp_path, text.encode("utf-8") if isinstance(text, str) else text)
    assert not msgfmt_accepts(path)
    with pytest.raises(PoSyntaxError) as info:
        read_po(path)
    assert str(info.value).startswith(f"{path}:{message}"), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("charset,line,column", [
    ("UTF-8", 'msgid "\u4e00\\q"', 11),  # a wide character takes two columns
    ("UTF-8", 'msgid "\U0001f600\\q"', 11),
    ("UTF-8", 'msgid "e\u0301\u0301\\q"', 10),  # combining marks none
    ("UTF-8", 'msgid "\u200b\\q"', 9),  # a format character none
    ("UTF-8", 'msgid "\u4e00\t\\q"', 18),  # a tab to the next multiple of 8
    ("UTF-8", 'msgid "\u03b1\\q"', 10),
    ("BIG5", 'msgid "\u03b1\\q"', 11),  # in a CJK charset most characters are wide
    ("SHIFT_JIS", 'msgid "\u03b1\\q"', 10),  # not one of them to gnulib
    ("EUC-KR", 'msgid "\u03b1\u4e00\\q"', 13),
])
def test_an_errors_column_is_counted_in_display_columns_as_msgfmt_counts_it(tmp_path, charset, line,
                                                                           column):
    """msgfmt counts a column by the display width of the characters before it (gnulib's
    uc_width), not by characters or bytes."""
    path = write(tmp_path, (HEADER.replace("UTF-8", charset) + line + '\nmsgstr ""\n').encode(charset))
    theirs = subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], capture_output=True,
                            text=True, errors="replace").stderr
    assert f"{path}:5:{column}: invalid control sequence" in theirs
    with pytest.raises(PoSyntaxError, match=f"^{re.escape(str(path))}:5:{column}: invalid control"):
        read_po(path)


@pytest.mark.parametrize("text,location", [
    ('msgid "\u4e00\\q"\nmsgstr ""\n', "1:12"),  # no charset named: msgfmt counts the 3 bytes
    ('# \u4e00\u4e00\nmsgid "a"\nmsgstr "\\q"\n', "3:10"),
    (HEADER.replace('"Content', '"X: \u4e00\\n"\n"Content') + 'msgid "\u4e00\\q"\nmsgstr ""\n', "6:11"),  # after it: width
])
def test_before_the_header_names_a_charset_msgfmt_counts_bytes(tmp_path, text, location):
    path = write(tmp_path, text.encode("utf-8"))
    theirs = subprocess.run([MSGFMT, "--check", "-o", "/dev/null", str(path)], capture_output=True,
                            text=True, errors="replace").stderr
    assert f"{path}:{location}: invalid control sequence" in theirs
    with pytest.raises(PoSyntaxError, match=f"^{re.escape(str(path))}:{location}: invalid control"):
        read_po(path)


def test_error_messages_escape_control_characters(tmp_path):
    """A NUL or another control byte in what an error quotes is written as an escape."""
    path = write(tmp_path, HEADER.encode() + b'msgid "a\\\x00\x01"\nmsgstr ""\n')
    assert not msgfmt_accepts(path)
    with pytest.raises(PoSyntaxError) as info:
        read_po(path)
    assert str(info.value) == f"{path}:5:10: invalid control sequence \\\\x00"
    assert str(info.value).isprintable()


def test_filling_an_entry_with_previous_lines_keeps_them_after_its_flags(tmp_path):
    text = HEADER + '#| msgctxt "c"\n#| msgid "x"\nmsgid "a"\nmsgstr ""\n\nmsgid "b"\nmsgstr "c" #, c-format\nmsgid "d"\nmsgstr ""\n'
    po = parse_po(text)
    assert [e.flags for e in po.entries[1:]] == [(), (), ("c-format",)]
    po.fill(po.entries[1], ["A"], comment="note")
    po.fill(po.entries[3], ["D"])
    assert po.text() == HEADER + ('# note\n#, fuzzy\n#| msgctxt "c"\n#| msgid "x"\nmsgid "a"\nmsgstr "A"\n\n'
                                  'msgid "b"\nmsgstr "c" #, fuzzy, c-format\nmsgid "d"\nmsgstr "D"\n')
    assert msgfmt_accepts(write(tmp_path, po.text()))


def test_polib_accepts_an_unterminated_string_and_loses_a_character():
    assert polib.pofile('msgid "Quit\nmsgstr ""\n')[0].msgid == "Qui"


def test_a_compiled_catalog_is_named_with_the_command_that_decompiles_it(tmp_path):
    source = write(tmp_path, HEADER + 'msgid "A"\nmsgstr "B"\n')
    subprocess.run([MSGFMT, "-o", str(tmp_path / "de.mo"), str(source)], check=True)
    with pytest.raises(PoSyntaxError, match=r"compiled \.mo catalog.*msgunfmt .*de\.mo -o .*de\.po"):
        read_po(tmp_path / "de.mo")


def test_charset_of_the_header_decodes_the_file(tmp_path):
    text = HEADER.replace("UTF-8", "ISO-8859-1") + 'msgid "Open"\nmsgstr "Öffnen"\n'
    po = read_po(write(tmp_path, text.encode("iso-8859-1")))
    assert po.encoding == "iso8859-1" and po.entries[1].msgstr == ["Öffnen"]
    assert po.text().encode(po.encoding) == text.encode("iso-8859-1")


def test_source_must_be_text_or_bytes():
    with pytest.raises(TypeError, match="source must be"):
        parse_po(3)


def test_fill_refuses_translated_obsolete_and_wrong_counts():
    po = parse_po(HEADER + 'msgid "A"\nmsgstr "B"\n\nmsgid "C"\nmsgstr ""\n\n#~ msgid "D"\n#~ msgstr ""\n')
    for entry in (po.entries[0], po.entries[1], po.entries[3]):
        with pytest.raises(ValueError, match="untranslated, live entry"):
            po.fill(entry, ["x"])
    with pytest.raises(ValueError, match="takes one form"):
        po.fill(po.entries[2], ["x", "y"])


def test_a_charset_gettext_does_not_know_reads_the_bytes_as_msgfmt_does(tmp_path):
    """msgfmt decodes only gettext's portable charsets; with another name it reads bytes (and
    warns): an ASCII file declared UTF-16, CP037 or rot13 is read, an ISO-2022-JP string whose
    JIS bytes hold a backslash or a quote is refused, 8-bit text without a charset is read."""
    for charset in ("rot13", "hex", "UTF-16", "CP037", "undefined"):
        path = write(tmp_path, HEADER.replace("UTF-8", charset) + 'msgid "A"\nmsgstr "B"\n')
        assert msgfmt_accepts(path)
        assert read_po(path).entries[1].msgstr == ["B"]
    jis = HEADER.replace("UTF-8", "ISO-2022-JP").encode() + b'msgid "a"\nmsgstr "%s"\n'
    for japanese, message in (("日本".encode("iso2022_jp"), r"t\.po:6:\d+: invalid control sequence"),
                              (b"\x1b$B0\"\x1b(B", r"t\.po:6:\d+: syntax error")):
        path = write(tmp_path, jis % japanese)
        assert not msgfmt_accepts(path)
        with pytest.raises(PoSyntaxError, match=message):
            read_po(path)
    for raw in (b"\xc3\xa9", b"\xe9"):
        path = write(tmp_path, b'msgid ""\nmsgstr "Language: de\\n"\n\nmsgid "a"\nmsgstr "' + raw + b'"\n')
        assert msgfmt_accepts(path)
        po = read_po(path)
        assert po.entries[1].msgstr == [raw.decode("utf-8", "surrogateescape")]
        from keras_transformer.messages.catalog_translation import catalog_bytes
        assert catalog_bytes(po) == path.read_bytes()


@pytest.mark.parametrize("content_type", [
    '"Content-Type: text/plain; char" "set=ISO-8859-1\\n"',  # split across strings
    '"Content-Type: text/plain; charset=ISO-\\\n8859-1\\n"',  # a backslash-newline
    '"Content-Type: text/plain; charset=ISO\\0558859-1\\n"',  # an escape (\055 is -)
    '"X-Note: charset=iso-8859-1\\n"',  # anywhere in the header, any case of the name
    '"Content-Type: text/plain; charset=latin1\\n"',  # not portable: msgfmt reads bytes
    '"Content-Type: text/plain; charset=\\"ISO-8859-1\\"\\n"',  # quoted: not portable either
])
def test_the_charset_is_found_in_the_headers_value_as_msgfmt_finds_it(tmp_path, content_type):
    data = f'msgid ""\nmsgstr ""\n{content_type}\n\nmsgid "a"\nmsgstr "é"\n'.encode("iso-8859-1")
    path = write(tmp_path, data)
    assert msgfmt_accepts(path)
    po = read_po(path)
    assert po.entries[-1].msgstr == ["é"]


def test_the_charset_comes_from_the_header_alone(tmp_path):
    text = "# converted from charset=ISO-8859-1 last year\n" + HEADER + 'msgid "Ö"\nmsgstr ""\n'
    po = read_po(write(tmp_path, text))
    assert po.encoding == "utf-8" and po.entries[1].msgid == "Ö"


def test_escaped_bytes_decode_in_the_files_charset(tmp_path):
    text = HEADER.replace("UTF-8", "ISO-8859-1") + 'msgid "caf\\351"\nmsgstr "caf\\351 \xe9"\n'
    po = read_po(write(tmp_path, text.encode("iso-8859-1")))
    assert po.entries[1].msgid == "café" and po.entries[1].msgstr == ["café é"]


def test_bytes_the_charset_cannot_decode_are_read_in_comments_only(tmp_path):
    """msgfmt reads comments as bytes: it accepts a bad byte there, and so do we, keeping it."""
    data = HEADER.encode() + b"# bad \xff comment\nmsgid \"A\"\nmsgstr \"\"\n"
    path = write(tmp_path, data)
    assert msgfmt_accepts(path)
    po = read_po(path)
    po.fill(po.entries[1], ["B"])
    out = tmp_path / "out.po"
    from keras_transformer.messages.catalog_translation import write_catalog
    write_catalog(po, out)
    assert b"# bad \xff comment\n" in out.read_bytes() and msgfmt_accepts(out)


_HEAD = HEADER.encode()[:-2]  # the header entry, up to its last string's closing quote


@pytest.mark.parametrize("data,refused_at", [
    (b'msgid "a"\nmsgstr "\xff"\n\n' + HEADER.encode(), None),  # an entry before the header
    (_HEAD.replace(b'msgstr ""', b'msgstr "\xff"') + b'\n\nmsgid "a"\nmsgstr ""\n', None),
    (_HEAD + b'\n"X: \xff\\n"\n\nmsgid "a"\nmsgstr ""\n', None),  # the header's last string
    (_HEAD + b'\n"X: \xff\\n"\nmsgid "\xff"\nmsgstr ""\n', "5:8"),  # after the header: UTF-8
    (_HEAD + b' msgid "\xff"\nmsgstr ""\n', "3:52"),  # on the header's last line, after it
])
def test_the_charset_applies_after_the_header_entry_as_msgfmt_reads_it(tmp_path, data, refused_at):
    """msgfmt learns the charset from the header entry: it reads the file up to that entry's
    end as bytes, and decodes what follows."""
    path = write(tmp_path, data)
    assert msgfmt_accepts(path) == (refused_at is None)
    if refused_at is None:
        read_po(path)
    else:
        with pytest.raises(PoSyntaxError, match=rf"t\.po:{refused_at}: invalid multibyte sequence"):
            read_po(path)


@pytest.mark.skipif(charsets.lookup("VISCII") is None,
                    reason="the C library has no iconv with VISCII (charsets.py converts with glibc's)")
def test_a_charset_python_lacks_is_read_with_glibcs_iconv(tmp_path):
    """msgfmt converts with iconv: a VISCII file is read whether or not it is ASCII (without
    iconv, tests/messages/test_charsets.py shows the refusal)."""
    path = write(tmp_path, HEADER.replace("UTF-8", "VISCII") + 'msgid "A"\nmsgstr ""\n')
    assert read_po(path).encoding == "VISCII"
    path = write(tmp_path, HEADER.replace("UTF-8", "VISCII").encode() + b'msgid "\xe9"\nmsgstr ""\n')
    assert msgfmt_accepts(path)
    assert read_po(path).entries[1].msgid == "\u00e9"  # VISCII's 0xE9 is é, as in Latin-1


def test_an_entry_after_another_on_its_line_gets_its_own_fuzzy_flag(tmp_path):
    po = parse_po(HEADER + 'msgid "a" msgstr "A" msgid "b" msgstr ""\n')
    po.fill(po.entries[2], ["B"], comment="machine translation: noted")
    path = write(tmp_path, po.text())
    assert msgfmt_accepts(path)
    fuzzy = subprocess.run(["msgattrib", "--only-fuzzy", "--no-wrap", str(path)],
                           capture_output=True, text=True, check=True).stdout
    assert 'msgid "b"' in fuzzy and 'msgid "a"' not in fuzzy and "# machine translation: noted" in fuzzy


def test_header_fields_change_in_place_and_nothing_else_does():
    header = ('msgid ""\nmsgstr ""\n"X-Note: first\\n"\n"X-Note: second\\n"\n'
              '"free text line without colon\\n"\n"X-Poedit-Keywords:   _;gettext  \\n"\n'
              '"Content-Type: text/plain; charset=UTF-8\\n"\n"X-Last"\n\nmsgid "A"\nmsgstr ""\n')
    po = parse_po(header)
    assert po.metadata["X-Note"] == "first"  # the first of two, as gettext reads it
    po.set_header_fields({"Language": "de", "X-Note": "changed"})
    value = po.header.msgstr[0]
    assert value == ("X-Note: changed\nX-Note: second\nfree text line without colon\n"
                     "X-Poedit-Keywords:   _;gettext  \nContent-Type: text/plain; charset=UTF-8\n"
                     "X-Last\nLanguage: de\n")
    assert parse_po(po.text()).header.msgstr == [value]
    with pytest.raises(ValueError, match="one line"):
        po.set_header_fields({"Language": "de\nPlural-Forms: nplurals=9; plural=n;"})


def test_a_long_line_is_read_without_per_character_state():
    text = HEADER + 'msgid "' + "word " * 400_000 + '"\nmsgstr ""\n'
    assert len(parse_po(text).entries[1].msgid) == 2_000_000


def test_header_changes_made_twice_give_one_header(tmp_path):
    for text in (HEADER + 'msgid "A"\nmsgstr ""\n', 'msgid "A"\nmsgstr ""\n'):
        po = parse_po(text)
        po.set_header_fields({"Language": "de"})
        po.set_header_fields({"Content-Type": "text/plain; charset=UTF-8"})
        again = parse_po(po.text())
        assert [e.msgid for e in again.entries] == ["", "A"]
        assert again.metadata == {"Content-Type": "text/plain; charset=UTF-8", "Language": "de"}


def test_wrapping_splits_at_real_newlines_only_and_never_strands_a_space(tmp_path):
    po = parse_po(HEADER + 'msgid "A"\nmsgstr ""\n\nmsgid "B"\nmsgstr ""\n')
    po.fill(po.entries[1], ["a literal \\n is not a line break " * 4])
    po.fill(po.entries[2], [" " + "x" * 120])
    text = po.text()
    assert 'msgstr ""\n"a literal \\\\n is not a line break a literal \\\\n is not a line break a "\n' in text
    assert '\n" "\n' not in text and 'msgstr ""\n" xxxx' in text
    path = write(tmp_path, text)
    assert msgfmt_accepts(path)
    assert [e.msgstr for e in read_po(path).entries[1:]] == [["a literal \\n is not a line break " * 4],
                                                             [" " + "x" * 120]]


def test_of_several_flag_lines_the_last_counts_and_a_fill_flags_it_fuzzy(tmp_path):
    """gettext reads each `#,` line afresh: `#, fuzzy` then `#, c-format` is a c-format entry
    that msgfmt compiles (and checks), and a fill adds `fuzzy` to the last line."""
    text = (HEADER + '#, fuzzy\n#, c-format\nmsgid "%d x"\nmsgstr "%d y"\n\n'
            '#, c-format\n#, no-wrap\nmsgid "%d z"\nmsgstr ""\n')
    po = parse_po(text)
    assert [(e.flags, e.fuzzy) for e in po.entries[1:]] == [(("c-format",), False), (("no-wrap",), False)]
    po.fill(po.entries[2], ["%d Z"])
    assert po.text() == text.replace('#, no-wrap\nmsgid "%d z"\nmsgstr ""',
                                     '#, fuzzy, no-wrap\nmsgid "%d z"\nmsgstr "%d Z"')
    path = write(tmp_path, po.text())
    assert msgfmt_accepts(path)
    compiled = tmp_path / "t.mo"
    subprocess.run([MSGFMT, "-o", str(compiled), str(path)], check=True)  # fuzzy left out
    assert {e.msgid for e in polib.mofile(str(compiled)) if e.msgid} == {"%d x"}
