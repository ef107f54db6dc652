"""Catalogs in charsets Python has no codec for (gettext's portable GEORGIAN-PS, VISCII and
EUC-TW), read and written with glibc's iconv as msgfmt converts them; each compared with
msgfmt's verdict, msgunfmt's output and iconv's."""

import shutil
import subprocess

import pytest

from keras_transformer.messages import charsets
from keras_transformer.messages.catalog_translation import catalog_bytes
from keras_transformer.messages.catalog_translation import translate_catalog
from keras_transformer.messages.catalog_translation import write_catalog
from keras_transformer.messages.po_file import PoSyntaxError
from keras_transformer.messages.po_file import read_po
from keras_transformer.tasks.translation import Translation

MSGFMT = shutil.which("msgfmt")
MSGUNFMT = shutil.which("msgunfmt")
ICONV = shutil.which("iconv")
HAS_ICONV = charsets._iconv() is not None and charsets.lookup("EUC-TW") is not None
needs_iconv = pytest.mark.skipif(not HAS_ICONV, reason="the C library has no iconv with EUC-TW "
                                                       "(charsets.py converts with glibc's)")
needs_gettext = pytest.mark.skipif(not (MSGFMT and MSGUNFMT and ICONV and HAS_ICONV),
                                   reason="GNU msgfmt, msgunfmt and iconv (the program and the "
                                          "C library's) are not installed")

HEADER = ('msgid ""\nmsgstr ""\n"Language: {language}\\n"\n'
          '"Content-Type: text/plain; charset={charset}\\n"\n\n')
# charset: (language, the bytes of an existing translation, its text, a new text the charset
# holds, a character it cannot hold)
SAMPLES = {
    "GEORGIAN-PS": ("ka", b"\xc4\xe0", "\u10d4\u10ed", "\u10d4\u10d0", "\u4e00"),
    "VISCII": ("vi", b"\xc4\xe0", "\u1ea2\u00e0", "\u1ea2\u1ea0", "\u10d4"),
    "EUC-TW": ("zh_TW", b"\xc4\xa1\xc4\xa2", "\u4e00\u4e59", "\u4e00\u4e00", "\u10d4"),
}


def catalog(charset, *entries):
    """A catalog's bytes: the header, an entry translated with the sample's bytes, then
    `entries` (bytes)."""
    language, raw = SAMPLES[charset][:2]
    return (HEADER.format(language=language, charset=charset).encode()
            + b'msgid "Kept"\nmsgstr "' + raw + b'"\n' + b"".join(entries))


def msgfmt(path, *options):
    return subprocess.run([MSGFMT, "--check", *options, "-o", str(path) + ".mo", str(path)],
                          capture_output=True, text=True)


def msgunfmt(path, charset):
    """The compiled catalog's entries, as msgunfmt writes them (in the catalog's charset),
    converted to UTF-8 by iconv."""
    raw = subprocess.run([MSGUNFMT, str(path) + ".mo"], capture_output=True, check=True).stdout
    return subprocess.run([ICONV, "-f", charset, "-t", "UTF-8"], input=raw, capture_output=True,
                          check=True).stdout.decode()


class Translator:
    def __init__(self, text):
        self.text, self.target_language = text, None

    def translations(self, texts, beam_size=4, num_return=1, progress=False, format_flags=None):
        return [[Translation(self.text, -1.0, ())] for _ in texts]


@pytest.fixture(autouse=True)
def fresh_lookups():
    charsets.lookup.cache_clear()
    yield
    charsets.lookup.cache_clear()


@needs_gettext
@pytest.mark.parametrize("charset", SAMPLES)
def test_a_catalog_in_a_charset_python_lacks_is_read_as_iconv_reads_it(charset, tmp_path):
    raw, text = SAMPLES[charset][1:3]
    path = tmp_path / "t.po"
    path.write_bytes(catalog(charset, b'\nmsgid "' + raw + b'"\nmsgstr ""\n'))
    assert msgfmt(path).returncode == 0
    converted = subprocess.run([ICONV, "-f", charset, "-t", "UTF-8"], input=raw,
                               capture_output=True, check=True).stdout.decode()
    po = read_po(path)
    assert converted == text
    assert po.entries[1].msgstr == [text] and po.entries[2].msgid == text
    assert po.encoding == charset


@needs_iconv
@pytest.mark.parametrize("charset, data, text", [
    ("GEORGIAN-PS", b"\xc4", "\u10d4"), ("VISCII", b"\xc4", "\u1ea2"), ("EUC-TW", b"\xc4\xa1", "\u4e00")])
def test_known_code_points(charset, data, text):
    assert charsets.decode(data, charset) == text
    assert charsets.encode(text, charset) == data


@needs_gettext
@pytest.mark.parametrize("charset", SAMPLES)
def test_a_filled_catalog_is_written_in_its_charset(charset, tmp_path):
    new = SAMPLES[charset][3]
    source, out = tmp_path / "in.po", tmp_path / "out.po"
    source.write_bytes(catalog(charset, b'\nmsgid "New"\nmsgstr ""\n'))
    po = read_po(source)
    report = translate_catalog(po, Translator(new))
    write_catalog(po, out)
    assert report.translated == 1 and report.charset_changed_to is None
    checked = msgfmt(out, "--check-format")
    assert checked.returncode == 0, checked.stderr
    assert msgfmt(source).returncode == 0
    assert msgunfmt(out, charset) == msgunfmt(source, charset)  # the fuzzy entry is left out
    assert b'msgstr "' + charsets.encode(new, charset) + b'"' in out.read_bytes()
    assert msgfmt(out, "--use-fuzzy").returncode == 0
    assert f'msgid "New"\nmsgstr "{new}"\n' in msgunfmt(out, charset)
    assert read_po(out).entries[2].msgstr == [new]


@needs_gettext
def test_euc_tw_four_byte_spellings_are_written_back_as_they_were(tmp_path):
    """EUC-TW spells a CNS plane 1 character in 2 bytes or in 4 after SS2 (0x8E 0xA1), and
    iconv writes 2: the 4 bytes read (in a kept translation, a comment, the entry filled
    next to them) are written back as they were; msgfmt compiles both files alike."""
    four, two = b"\x8e\xa1\xc4\xa1", b"\xc4\xa1"  # U+4E00 both
    plane2 = b"\x8e\xa2\xa1\xa1"  # SS2 for plane 2: its one spelling
    source, out = tmp_path / "in.po", tmp_path / "out.po"
    source.write_bytes(catalog("EUC-TW", b"\n# " + four + b"\nmsgid \"b\"\nmsgstr \"" + four + two
                               + plane2 + b'"\n\nmsgid "' + four + b'"\nmsgstr ""\n'))
    po = read_po(source)
    assert po.entries[3].msgid == "\u4e00" and po.entries[2].msgstr == ["\u4e00\u4e00\u4e42"]
    translate_catalog(po, Translator("\u4e00"))
    write_catalog(po, out)
    written = out.read_bytes()
    assert written.replace(b'msgstr "' + two + b'"', b'msgstr ""').replace(
        b"#, fuzzy\n", b"") == source.read_bytes()
    assert catalog_bytes(read_po(source)) == source.read_bytes()
    assert msgfmt(source).returncode == msgfmt(out).returncode == 0
    assert msgunfmt(out, "EUC-TW") == msgunfmt(source, "EUC-TW")


@needs_gettext
@pytest.mark.parametrize("charset", SAMPLES)
def test_text_the_charset_cannot_hold_switches_the_catalog_to_utf8(charset, tmp_path):
    """As for a charset Python has: the header's charset becomes UTF-8, the text is kept."""
    text, foreign = SAMPLES[charset][2], SAMPLES[charset][4]
    source, out = tmp_path / "in.po", tmp_path / "out.po"
    source.write_bytes(catalog(charset, b'\nmsgid "New"\nmsgstr ""\n'))
    po = read_po(source)
    assert translate_catalog(po, Translator(foreign)).charset_changed_to == "UTF-8"
    write_catalog(po, out)
    assert msgfmt(out, "--check-format", "--use-fuzzy").returncode == 0
    written = read_po(out)
    assert written.encoding == "utf-8" and [e.msgstr for e in written.entries[1:]] == [[text], [foreign]]


@needs_gettext
@pytest.mark.parametrize("tail, refused_at", [
    (b'msgid "a"\nmsgstr "\xc4"\n', "10:9"),  # a lead byte without its trail byte
    (b'msgid "a"\nmsgstr "x\xc4\xa1\xa1\xc4"\n', None),  # two two-byte characters
    (b'msgid "\xc4"\nmsgstr ""\n', "9:8"),
    (b'# \xc4 in a comment is bytes\nmsgid "a"\nmsgstr ""\n', None),
])
def test_an_invalid_euc_tw_byte_is_refused_where_msgfmt_refuses_it(tail, refused_at, tmp_path):
    path = tmp_path / "t.po"
    path.write_bytes(catalog("EUC-TW", b"\n" + tail))
    result = msgfmt(path)
    if refused_at is None:
        assert result.returncode == 0, result.stderr
        read_po(path)
        return
    assert f"t.po:{refused_at}: invalid multibyte sequence" in result.stderr
    with pytest.raises(PoSyntaxError, match=rf"t\.po:{refused_at}: invalid multibyte sequence "
                                            r"\(the file is not EUC-TW"):
        read_po(path)


def test_without_iconv_a_charset_python_lacks_is_refused_as_before(tmp_path, monkeypatch):
    monkeypatch.setattr(charsets, "_iconv", lambda: None)
    assert charsets.lookup("VISCII") is None and charsets.lookup("ISO-8859-1").name == "iso8859-1"
    path = tmp_path / "t.po"
    path.write_bytes(catalog("VISCII"))
    with pytest.raises(PoSyntaxError, match=r"t\.po:4: charset=VISCII is one Python cannot decode"
                                            r".*convert it with msgconv -t UTF-8"):
        read_po(path)
    path.write_bytes(HEADER.format(language="vi", charset="VISCII").encode() + b'msgid "A"\nmsgstr ""\n')
    assert read_po(path).encoding == "ascii"


@needs_iconv
def test_decoding_errors_give_where_the_bad_sequence_starts():
    with pytest.raises(UnicodeDecodeError, match="invalid multibyte sequence") as invalid:
        charsets.decode(b'ab"\xc4"', "EUC-TW")
    with pytest.raises(UnicodeDecodeError, match="incomplete multibyte sequence") as incomplete:
        charsets.decode(b"ab\xc4", "EUC-TW")
    assert (invalid.value.start, invalid.value.end) == (3, 4)
    assert (incomplete.value.start, incomplete.value.end) == (2, 3)
    assert charsets.decode(b'a\xc4"\xc4', "EUC-TW", "surrogateescape") == 'a\udcc4"\udcc4'


@needs_iconv
def test_encoding_keeps_escaped_bytes_and_refuses_what_the_charset_lacks():
    assert charsets.encode("\u4e00\udcff\u4e00", "EUC-TW", "surrogateescape") == b"\xc4\xa1\xff\xc4\xa1"
    with pytest.raises(UnicodeEncodeError) as lacking:
        charsets.encode("ab\u10d4", "EUC-TW")
    assert lacking.value.start == 2
    with pytest.raises(UnicodeEncodeError):
        charsets.encode("a\udcff", "EUC-TW")  # strict: an escaped byte is an error
    with pytest.raises(ValueError, match="errors must be"):
        charsets.encode("a", "EUC-TW", "replace")


@needs_iconv
def test_output_larger_than_a_buffer_is_converted_in_pieces(monkeypatch):
    monkeypatch.setattr(charsets, "_CHUNK", 3)  # smaller than one character's output
    text = "\u4e00a\u4e59" * 50
    data = charsets.encode(text, "EUC-TW")
    assert data == b"\xc4\xa1a\xc4\xa2" * 50 and charsets.decode(data, "EUC-TW") == text


def test_a_charset_neither_knows_is_refused():
    assert charsets.lookup("NO-SUCH-CHARSET") is None
    with pytest.raises(LookupError, match="unknown charset"):
        charsets.decode(b"a", "NO-SUCH-CHARSET")


def test_python_codecs_come_first_and_behave_as_str_encode():
    found = charsets.lookup("latin1")
    assert found.codec == found.name == "iso8859-1"
    assert charsets.encode("caf\u00e9\udcff", "latin1", "surrogateescape") == b"caf\xe9\xff"
    assert charsets.decode(b"\xff", "utf-8", "replace") == "\ufffd"  # any handler Python has


@needs_gettext
@pytest.mark.parametrize("charset, data, text", [
    ("ARMSCII-8", b"\xb2", "\u0531"),  # Armenian: iconv reads it, and gives the byte back
    ("TCVN", b"A\xb0", "A\udcb0"),  # iconv composes A + grave into one character: bytes
])
def test_a_charset_gettext_does_not_know_is_read_with_iconv_when_the_bytes_come_back(
        charset, data, text, tmp_path):
    """msgfmt reads a catalog in a charset that is not portable as bytes (and warns); its text
    is iconv's when that gives the same bytes back, else its UTF-8 as for other bytes."""
    path = tmp_path / "t.po"
    path.write_bytes(HEADER.format(language="hy", charset=charset).encode()
                     + b'msgid "a"\nmsgstr "' + data + b'"\n')
    assert msgfmt(path).returncode == 0
    po = read_po(path)
    assert po.entries[1].msgstr == [text]
    assert catalog_bytes(po) == path.read_bytes()


@needs_gettext
def test_a_long_run_of_bytes_iconv_refuses_is_escaped_in_a_few_calls(tmp_path, monkeypatch):
    """An EUC-TW catalog with a 200,000-byte comment of 0xFF (bytes to msgfmt, which accepts
    it) is read in a few iconv calls, not one call (and one output buffer) per byte."""
    iconv, calls = charsets._iconv(), []
    convert = iconv.convert
    monkeypatch.setattr(iconv, "convert", lambda *args: calls.append(1) or convert(*args))
    path = tmp_path / "t.po"
    path.write_bytes(catalog("EUC-TW", b"\n# " + b"\xff" * 200_000 + b'\nmsgid "a"\nmsgstr ""\n'))
    assert msgfmt(path).returncode == 0
    catalog_read = read_po(path)
    assert len(calls) < 100
    assert catalog_read.entries[-1].msgid == "a"
    assert charsets.decode(b"\xc4\xa1" + b"\xff" * 30 + b"\xc4\xa1\xff\xc4", "EUC-TW",
                           "surrogateescape") == "\u4e00" + "\udcff" * 30 + "\u4e00\udcff\udcc4"


@needs_iconv
def test_iconv_reuses_its_output_buffer(monkeypatch):
    """Escaping refused bytes one at a time (no run repeats) makes no buffer per byte."""
    buffers, make = [], charsets.ctypes.create_string_buffer
    monkeypatch.setattr(charsets.ctypes, "create_string_buffer",
                        lambda *args: buffers.append(1) or make(*args))
    data = b"a\xff\xfe" * 1000
    assert charsets.decode(data, "EUC-TW", "surrogateescape") == "a\udcff\udcfe" * 1000
    assert len(buffers) <= 2  # the input's and one for the output


@needs_gettext
@pytest.mark.parametrize("name", ["WCHAR_T", "UNICODE", "UCS-4", "ucs-2", "INTERNAL", ","])
def test_glibcs_internal_and_machine_dependent_names_are_unknown_charsets(name, tmp_path):
    """msgfmt warns that such a charset is not portable and reads the file's bytes; here they
    are unknown charsets, read as bytes like any other (iconv would read UTF-8 text in UCS-4
    or the machine's wchar_t)."""
    assert charsets.lookup(name) is None
    path = tmp_path / "t.po"
    path.write_bytes(HEADER.format(language="fr", charset=name).encode()
                     + 'msgid "a"\nmsgstr "\u00e9"\n'.encode())
    assert msgfmt(path).returncode == 0 and "\u00e9" in msgunfmt(path, "UTF-8")
    assert read_po(path).entries[-1].msgstr == ["\u00e9"]


@needs_iconv
@pytest.mark.parametrize("name", [" ", "", "a b", "-EUC-TW", "EUC-TW//TRANSLIT", "EUC-TW,", "\u00e9"])
def test_only_plain_names_are_asked_of_iconv(name):
    assert charsets.lookup(name) is None
    assert charsets.lookup("euc-tw").name == "EUC-TW"
