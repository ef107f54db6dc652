"""The `keras-transformer` command line, run in-process with a fake translator."""

import io
import os
import re
import shutil
import subprocess
import sys

import keras
import pytest

from keras_transformer import cli
from keras_transformer.tasks.translation import Translation

MSGFMT = shutil.which("msgfmt") or "/usr/bin/msgfmt"

CATALOG = r'''msgid ""
msgstr ""
"Language: de\n"
"Content-Type: text/plain; charset=ISO-8859-1\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

msgid "Open file"
msgstr "Datei öffnen"

#, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] ""
msgstr[1] ""

msgctxt "menu"
msgid "Quit\n"
msgstr ""

#~ msgid "Old"
#~ msgstr "Alt"
'''


class Fake:
    """Writes "DE:" before each text, inside its outer white space; its n-best are numbered."""

    def __init__(self, target_language="de"):
        self.target_language = target_language
        self.calls = []

    def translations(self, texts, beam_size=4, num_return=1, progress=False):
        self.calls.append((list(texts), beam_size, num_return))
        found = []
        for text in texts:
            lead, core, trail = re.fullmatch(r"(\s*)(.*?)(\s*)", text, re.S).groups()
            found.append([
                Translation(f"{lead}DE{'' if rank == 0 else rank}:{core}{trail}", -1.0 - rank)
                for rank in range(num_return)
            ])
        return found


@pytest.fixture
def fake(monkeypatch):
    translator = Fake()
    monkeypatch.setattr(cli, "load_translator", lambda path: translator)
    return translator


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "translator.keras"
    path.write_bytes(b"stands in for a saved Translator")
    return str(path)


@pytest.fixture
def catalog(tmp_path):
    path = tmp_path / "de.po"
    path.write_bytes(CATALOG.encode("iso-8859-1"))
    return path


def run(capsys, *argv):
    code = cli.main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(err):
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("keras-transformer: error: "), err
    assert "Traceback" not in err


def test_translate_arguments(capsys, fake, model):
    code, out, err = run(capsys, "translate", "--model", model, "--beam-size", "2", "Open the file", "Save\\n")
    assert (code, out, err) == (0, "DE:Open the file\nDE:Save\\n\n", "")
    assert fake.calls == [(["Open the file", "Save\\n"], 2, 1)]


def test_translate_standard_input_lines(capsys, fake, model, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("Open\nliteral \\n stays\n\n  Indented\nlast"))
    code, out, err = run(capsys, "translate", "--model", model)
    assert (code, err) == (0, "")
    assert out.split("\n") == ["DE:Open", "DE:literal \\n stays", "", "  DE:Indented", "DE:last", ""]
    assert fake.calls == [(["Open", "literal \\n stays", "  Indented", "last"], 4, 1)]  # one call


def test_translate_n_best(capsys, fake, model):
    code, out, err = run(capsys, "translate", "--model", model, "--n-best", "2", "Open", "Close")
    assert (code, err) == (0, "")
    assert out.splitlines() == ["-1.0000\tDE:Open", "-2.0000\tDE1:Open", "-1.0000\tDE:Close", "-2.0000\tDE1:Close"]
    assert fake.calls[0][2] == 2


@pytest.mark.parametrize("argv", [
    ["translate", "--model", "M", "--n-best", "5", "x"],  # more than the beam
    ["translate", "--model", "M", "--beam-size", "0", "x"],
    ["translate", "--model", "M", "--beam-size", "many", "x"],
    ["translate", "x"],  # no --model
    ["translate-po", "in.po", "--model", "M"],  # no -o
    [],
    ["unknown"],
])
def test_usage_errors_exit_2_in_one_line(capsys, fake, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert_one_error_line(err)


def test_help_explains_every_option(capsys):
    code, out, _ = run(capsys, "translate-po", "--help")
    assert code == 0
    for option in ("--model", "--beam-size", "--language", "--output", "INPUT.po", "fuzzy"):
        assert option in out
    code, out, _ = run(capsys, "translate", "--help")
    assert code == 0 and "--n-best" in out and "score<TAB>translation" in out and "standard input" in out


def test_translate_po_end_to_end(capsys, fake, model, catalog, tmp_path):
    before = catalog.read_bytes()
    out_path = tmp_path / "out.po"
    code, out, err = run(capsys, "translate-po", catalog, "--model", model, "-o", out_path, "--beam-size", "3")
    assert (code, out) == (0, "")
    lines = err.splitlines()
    assert lines[0] == f"{out_path}: 2 translated (0 with notes), 1 kept, 1 obsolete skipped"
    assert "fuzzy" in lines[1] and "msgfmt --use-fuzzy" in lines[1] and len(lines) == 2
    assert catalog.read_bytes() == before
    result = subprocess.run([MSGFMT, "--check-format", "--use-fuzzy", "-o", os.devnull, str(out_path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    written = out_path.read_bytes()
    assert b'"Datei \xf6ffnen"' in written and b'msgstr[1] "DE:%d files"' in written
    assert b'#, fuzzy\nmsgctxt "menu"\nmsgid "Quit\\n"\nmsgstr "DE:Quit\\n"' in written
    assert fake.calls == [(["%d file", "%d files", "Quit\n"], 3, 1)]


def assert_failed_cleanly(capsys, argv, catalog, tmp_path, code=1, contains=""):
    before = catalog.read_bytes() if catalog.is_file() else None
    listing = sorted(os.listdir(tmp_path))
    got, out, err = run(capsys, *argv)
    assert got == code and out == "", err
    assert_one_error_line(err)
    assert contains in err
    if before is not None:
        assert catalog.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == listing  # no output, no temporary file
    return err


def test_missing_model(capsys, fake, catalog, tmp_path):
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", tmp_path / "nope.keras",
                                   "-o", tmp_path / "out.po"], catalog, tmp_path, contains="model file not found")
    assert_failed_cleanly(capsys, ["translate", "--model", tmp_path / "nope.keras", "x"], catalog, tmp_path)


def test_model_that_is_not_a_keras_file(capsys, model, catalog, tmp_path):
    """The real load_translator: a file that is not a .keras archive."""
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", tmp_path / "out.po"],
                          catalog, tmp_path, contains="is not a .keras model")


def test_model_that_is_not_a_translator(capsys, catalog, tmp_path):
    """The real load_translator: a .keras file holding some other model."""
    path = tmp_path / "dense.keras"
    keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]).save(path)
    err = assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", path, "-o", tmp_path / "out.po"],
                                catalog, tmp_path, contains="not a keras_transformer Translator")
    assert "Sequential" in err


@pytest.mark.parametrize("name,contents,contains", [
    ("missing.po", None, "catalog not found"),
    ("syntax.po", b'msgid "a"\nmsgstr "b"\nnot a catalog line\n', "Syntax error in po file"),
    ("quote.po", b'msgid "a "quoted" word"\nmsgstr ""\n', "unescaped double quote"),
    ("charset.po", b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                   b'msgid "a"\nmsgstr "\xf6"\n', "cannot read the catalog"),
    ("binary.po", b"\xde\x12\x04\x95\x00\x00\x00\x00", "cannot read the catalog"),
])
def test_bad_catalogs(capsys, fake, model, tmp_path, name, contents, contains):
    path = tmp_path / name
    if contents is not None:
        path.write_bytes(contents)
    assert_failed_cleanly(capsys, ["translate-po", path, "--model", model, "-o", tmp_path / "out.po"],
                          path, tmp_path, contains=contains)
    assert fake.calls == []


@pytest.mark.xfail(strict=True, reason="polib 1.2 reads 'msgid \"abc' (no closing quote) as msgid 'ab'")
def test_unterminated_string_is_refused(capsys, fake, model, tmp_path):
    path = tmp_path / "unterminated.po"
    path.write_bytes(b'msgid "unterminated\nmsgstr ""\n')
    assert_failed_cleanly(capsys, ["translate-po", path, "--model", model, "-o", tmp_path / "out.po"],
                          path, tmp_path, contains="cannot read the catalog")


def test_catalog_that_is_a_folder(capsys, fake, model, tmp_path):
    folder = tmp_path / "folder.po"
    folder.mkdir()
    assert_failed_cleanly(capsys, ["translate-po", folder, "--model", model, "-o", tmp_path / "out.po"],
                          folder, tmp_path, contains="catalog not found")


def test_unknown_language(capsys, fake, model, tmp_path):
    path = tmp_path / "xx.po"
    path.write_bytes(CATALOG.replace("Language: de", "Language: xx").replace(
        '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n', "").encode("iso-8859-1"))
    fake.target_language = None
    assert_failed_cleanly(capsys, ["translate-po", path, "--model", model, "-o", tmp_path / "out.po"],
                          path, tmp_path, contains="pass a catalog whose header has Plural-Forms")


def test_language_mismatch(capsys, fake, model, catalog, tmp_path):
    fake.target_language = "fr"
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", tmp_path / "out.po"],
                          catalog, tmp_path, contains="'fr'")
    fake.target_language = "de"
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", tmp_path / "out.po",
                                   "--language", "it"], catalog, tmp_path, contains="'it'")
    assert fake.calls == []


def test_output_is_the_input(capsys, fake, model, catalog, tmp_path, monkeypatch):
    link = tmp_path / "link.po"
    link.symlink_to(catalog)
    hard = tmp_path / "hard.po"
    os.link(catalog, hard)
    monkeypatch.chdir(tmp_path)
    for output in (catalog, link, hard, "./de.po", "../" + tmp_path.name + "/de.po"):
        assert_failed_cleanly(capsys, ["translate-po", "de.po", "--model", model, "-o", output],
                              catalog, tmp_path, contains="is the input")
    assert_failed_cleanly(capsys, ["translate-po", "./link.po", "--model", model, "-o", "de.po"],
                          catalog, tmp_path, contains="is the input")
    assert fake.calls == []


def test_output_folder_missing_or_a_folder(capsys, fake, model, catalog, tmp_path):
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", tmp_path / "no" / "out.po"],
                          catalog, tmp_path, contains="does not exist")
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", tmp_path],
                          catalog, tmp_path, contains="is a folder")


def test_write_failure(capsys, fake, model, catalog, tmp_path, monkeypatch):
    def failing_replace(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", tmp_path / "out.po"],
                          catalog, tmp_path, contains="No space left on device")


def test_python_m_help():
    env = dict(os.environ, KERAS_BACKEND=keras.backend.backend(), TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-m", "keras_transformer", "--help"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "translate-po" in result.stdout and result.stdout.startswith("usage: keras-transformer")
