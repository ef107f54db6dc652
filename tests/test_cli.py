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

    def translations(self, texts, beam_size=4, num_return=1, progress=False, format_flags=None):
        self.calls.append((list(texts), beam_size, num_return))
        self.format_flags = format_flags
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
    ("syntax.po", b'msgid "a"\nmsgstr "b"\nnot a catalog line\n', "syntax.po:3:1: syntax error"),
    ("quote.po", b'msgid "a "quoted" word"\nmsgstr ""\n', "quote.po:1:11: syntax error"),
    ("charset.po", b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                   b'msgid "a"\nmsgstr "\xf6"\n', "charset.po:6:9: invalid multibyte sequence"),
    ("binary.po", b"\xde\x12\x04\x95\x00\x00\x00\x00", "a compiled .mo catalog, not a .po file; "
                                                   "decompile it first: msgunfmt"),
])
def test_bad_catalogs(capsys, fake, model, tmp_path, name, contents, contains):
    path = tmp_path / name
    if contents is not None:
        path.write_bytes(contents)
    assert_failed_cleanly(capsys, ["translate-po", path, "--model", model, "-o", tmp_path / "out.po"],
                          path, tmp_path, contains=contains)
    assert fake.calls == []


def test_unterminated_string_is_refused(capsys, fake, model, tmp_path):
    """polib 1.2 read `msgid "unterminated` as `unterminate`; msgfmt refuses it, and so do we."""
    path = tmp_path / "unterminated.po"
    path.write_bytes(b'msgid "unterminated\nmsgstr ""\n')
    assert_failed_cleanly(capsys, ["translate-po", path, "--model", model, "-o", tmp_path / "out.po"],
                          path, tmp_path, contains=f"{path}:1:7: end-of-line within string")


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


def test_output_is_the_model(capsys, fake, model, catalog, tmp_path):
    """-o the model's path would overwrite the trained model with a catalog."""
    before = open(model, "rb").read()
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", model],
                          catalog, tmp_path, contains="is the model")
    link = tmp_path / "model-link.keras"
    link.symlink_to(model)
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", link, "-o", model],
                          catalog, tmp_path, contains="is the model")
    assert open(model, "rb").read() == before and fake.calls == []


def test_output_that_is_a_device_is_refused(capsys, fake, model, catalog, tmp_path):
    """Replacing /dev/null (as root) with a regular file would break the machine."""
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", os.devnull],
                          catalog, tmp_path, contains="is not a regular file")
    assert not os.path.isfile(os.devnull) and fake.calls == []


def test_empty_output_is_a_usage_error(capsys, fake, model, catalog):
    code, out, err = run(capsys, "translate-po", catalog, "--model", model, "-o", "")
    assert code == 2 and out == "" and "must be a path" in err and fake.calls == []
    assert_one_error_line(err)


def test_output_dash_is_standard_output(fake, model, catalog, tmp_path, capfdbinary):
    code = cli.main(["translate-po", str(catalog), "--model", model, "-o", "-"])
    written = capfdbinary.readouterr().out
    assert code == 0 and b'msgstr[1] "DE:%d files"' in written and b'"Datei \xf6ffnen"' in written
    assert sorted(os.listdir(tmp_path)) == ["de.po", "translator.keras"]


def test_existing_output_is_replaced_as_gettext_tools_replace_theirs(capsys, fake, model, catalog, tmp_path):
    out = tmp_path / "out.po"
    out.write_bytes(b"an older translation")
    code, _, _ = run(capsys, "translate-po", catalog, "--model", model, "-o", out)
    assert code == 0 and b"DE:%d files" in out.read_bytes()
    code, help_text, _ = run(capsys, "translate-po", "--help")
    assert "replaced" in " ".join(help_text.split())


def test_compiled_catalog_input_names_msgunfmt(capsys, fake, model, tmp_path):
    source = tmp_path / "src.po"
    source.write_bytes(CATALOG.encode("iso-8859-1"))
    compiled = tmp_path / "de.mo"
    subprocess.run([MSGFMT, "-o", str(compiled), str(source)], check=True)
    assert_failed_cleanly(capsys, ["translate-po", compiled, "--model", model, "-o", tmp_path / "out.po"],
                          compiled, tmp_path, contains=f"msgunfmt {compiled} -o")


def test_existing_escapes_and_crlf_come_back_unchanged(capsys, fake, model, tmp_path):
    """msgunfmt of the input and the output agree on every existing entry."""
    text = CATALOG.replace('msgid "Open file"\nmsgstr "Datei öffnen"',
                           'msgid "Bell\\a \\033[1m\\x1b"\nmsgstr "Glocke\\a \\033[1m\\x1b"')
    source = tmp_path / "crlf.po"
    source.write_bytes(text.replace("\n", "\r\n").encode("iso-8859-1"))
    out = tmp_path / "out.po"
    code, _, err = run(capsys, "translate-po", source, "--model", model, "-o", out)
    assert code == 0, err
    written = out.read_bytes()
    assert b'msgid "Bell\\a \\033[1m\\x1b"\r\nmsgstr "Glocke\\a \\033[1m\\x1b"\r\n' in written
    assert b"\n" not in written.replace(b"\r\n", b"")


@pytest.mark.parametrize("contents,contains", [
    (b"", "is empty (0 bytes)"),
    (b"PK\x03\x04 cut short", "is not a .keras model: a .keras file is a zip archive"),
])
def test_model_files_that_exist_but_are_broken(capsys, catalog, tmp_path, contents, contains):
    """The real load_translator: 'not found' only for files that are not there."""
    path = tmp_path / "broken.keras"
    path.write_bytes(contents)
    err = assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", path, "-o", tmp_path / "o.po"],
                                catalog, tmp_path, contains=contains)
    assert "not found" not in err


def test_unreadable_model_says_permission_denied(capsys, catalog, tmp_path, monkeypatch):
    path = tmp_path / "locked.keras"
    path.write_bytes(b"PK")
    real_open = open

    def deny(file, *args, **kwargs):
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", deny)
    err = assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", path, "-o", tmp_path / "o.po"],
                                catalog, tmp_path, contains="Permission denied")
    assert "not found" not in err


def test_non_utf8_arguments_and_input_are_one_line_errors(capsys, fake, model, monkeypatch):
    code, out, err = run(capsys, "translate", "--model", model, "Caf\udce9")
    assert code == 1 and out == "" and "TEXT argument 1" in err and "0xE9" in err
    assert_one_error_line(err)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Caf\xe9\n"), encoding="utf-8"))
    code, out, err = run(capsys, "translate", "--model", model)
    assert code == 1 and out == "" and "cannot decode standard input" in err
    assert_one_error_line(err)
    assert fake.calls == []


def test_a_reader_that_leaves_ends_the_command_quietly(capsys, fake, model, monkeypatch):
    """`keras-transformer translate ... | head -1`: no BrokenPipeError traceback."""
    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def fileno(self):
            return os.open(os.devnull, os.O_WRONLY)

    monkeypatch.setattr(sys, "stdout", Closed())
    assert cli.main(["translate", "--model", model, "a", "b"]) == 141
    assert capsys.readouterr().err == ""


def test_notes_go_to_standard_error(capsys, model, monkeypatch):
    class Noted(Fake):
        def translations(self, texts, **kwargs):
            return [[Translation(text, -1.0, ("too long for the model: source kept",))]
                    for text in texts]

    monkeypatch.setattr(cli, "load_translator", lambda path: Noted())
    code, out, err = run(capsys, "translate", "--model", model, "x" * 50)
    assert (code, out) == (0, "x" * 50 + "\n")
    assert err == "keras-transformer: note: text 1: too long for the model: source kept\n"


def test_library_errors_name_the_command_options(capsys, model, monkeypatch):
    class Wide(Fake):
        def translations(self, texts, **kwargs):
            raise ValueError("`beam_size` must be at most the vocabulary size, 40; received 99.")

    monkeypatch.setattr(cli, "load_translator", lambda path: Wide())
    code, out, err = run(capsys, "translate", "--model", model, "--beam-size", "99", "x")
    assert code == 1 and "--beam-size must be at most the vocabulary size" in err
    assert_one_error_line(err)


def test_sigterm_while_writing_leaves_no_temporary_file(tmp_path):
    """The temporary file is removed, the old output kept, and the process still ends by SIGTERM."""
    out = tmp_path / "out.po"
    out.write_bytes(b"old")
    script = (
        "import os, signal, sys\n"
        "from keras_transformer.messages import catalog_translation as ct\n"
        "from keras_transformer.messages.po_file import parse_po\n"
        "real = os.fsync\n"
        "def fsync(fd):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    real(fd)\n"
        "ct.os.fsync = fsync\n"
        f"ct.write_catalog(parse_po('msgid \"a\"\\nmsgstr \"b\"\\n'), {str(out)!r})\n"
        "print('not reached')\n"
    )
    env = dict(os.environ, KERAS_BACKEND=keras.backend.backend())
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == -15, result.stderr[-2000:]
    assert "not reached" not in result.stdout
    assert os.listdir(tmp_path) == ["out.po"] and out.read_bytes() == b"old"


def test_error_is_one_line_without_backend_start_up_noise(tmp_path):
    """Run as users run it, with nothing set to quiet TensorFlow."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["KERAS_BACKEND"] = keras.backend.backend()
    result = subprocess.run(
        [sys.executable, "-m", "keras_transformer", "translate", "--model",
         str(tmp_path / "missing.keras"), "x"], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"keras-transformer: error: model file not found: {tmp_path / 'missing.keras'}; "
        "pass --model the path of a Translator saved with translator.save('name.keras')"]


def test_a_catalog_without_header_is_refused_as_msgfmt_check_refuses_it(capsys, fake, model, tmp_path):
    path = tmp_path / "bare.po"
    path.write_bytes(b'msgid "Open"\nmsgstr ""\n')
    assert subprocess.run([MSGFMT, "--check", "-o", os.devnull, str(path)], capture_output=True).returncode
    assert_failed_cleanly(capsys, ["translate-po", path, "--model", model, "-o", tmp_path / "out.po"],
                          path, tmp_path, contains=f"{path}:1: the catalog has no header entry")


@pytest.mark.parametrize("language", ["\udcff", "de\nPlural-Forms: nplurals=9; plural=n;", "d"])
def test_a_language_that_is_not_a_code_is_refused(capsys, fake, model, catalog, tmp_path, language):
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", tmp_path / "out.po",
                                   "--language", language], catalog, tmp_path, contains="language must be")


def test_a_broken_pipe_on_standard_output_is_quiet(capsys, fake, model, catalog, monkeypatch):
    class Closed(io.BytesIO):
        def write(self, data):
            raise BrokenPipeError(32, "Broken pipe")

    class Stdout(io.StringIO):
        buffer = Closed()

        def fileno(self):
            return os.open(os.devnull, os.O_WRONLY)

    monkeypatch.setattr(sys, "stdout", Stdout())
    assert cli.main(["translate-po", str(catalog), "--model", model, "-o", "-"]) == 141
    assert capsys.readouterr().err == ""


def test_output_in_a_folder_that_does_not_exist_is_refused(capsys, fake, model, catalog, tmp_path):
    assert_failed_cleanly(capsys, ["translate-po", catalog, "--model", model, "-o", f"{tmp_path}/newdir/"],
                          catalog, tmp_path, contains="is a folder")


def test_an_output_name_near_the_length_limit_is_written(capsys, fake, model, catalog, tmp_path):
    out = tmp_path / ("x" * 250 + ".po")
    code, _, err = run(capsys, "translate-po", catalog, "--model", model, "-o", out)
    assert code == 0, err
    assert out.is_file() and sorted(os.listdir(tmp_path)) == sorted(["de.po", "translator.keras", out.name])


@pytest.mark.parametrize("argv0,orig_argv,expected", [
    ("-m", ["python", "-m", "keras_transformer", "translate"], True),
    ("-m", ["python", "-mkeras_transformer"], True),
    ("-m", ["python", "-m", "pytest", "tests"], False),  # another module being located
    ("script.py", ["python", "script.py", "-m", "keras_transformer"], False),  # its own arguments
])
def test_run_as_module_is_python_dash_m_keras_transformer_only(monkeypatch, argv0, orig_argv, expected):
    from keras_transformer import keras_backend

    monkeypatch.setattr(sys, "argv", [argv0] + orig_argv[2:])
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    assert keras_backend.run_as_module() is expected


def test_a_catalog_whose_translations_msgfmt_refuses_is_refused_before_the_model_loads(
        capsys, model, tmp_path, monkeypatch):
    """A c-format translation that lost a directive: msgfmt --check refuses the input, so the
    command does, in one line naming the msgstr line as msgfmt does, without loading the model."""
    monkeypatch.setattr(cli, "load_translator", lambda path: pytest.fail("the model was loaded"))
    path = tmp_path / "lost.po"
    path.write_bytes(CATALOG.replace('msgstr "Datei öffnen"', 'msgstr "Datei öffnen"\n\n#, c-format\n'
                                     'msgid "%d of %s"\nmsgstr "%d von"').encode("iso-8859-1"))
    msgfmt = subprocess.run([MSGFMT, "--check", "-o", os.devnull, str(path)], capture_output=True, text=True)
    assert f"{path}:12: number of format specifications" in msgfmt.stderr
    assert_failed_cleanly(capsys, ["translate-po", path, "--model", model, "-o", tmp_path / "out.po"],
                          path, tmp_path, contains=f"{path}:12: number of format specifications in "
                                                   "'msgid' and 'msgstr' does not match")


@pytest.fixture
def real_model(tmp_path):
    """A tiny untrained Translator saved as a .keras file."""
    import keras_transformer as kt

    texts = ["Open file", "Datei öffnen", "Quit", "Beenden", "%d file", "%d files"] * 10
    tokenizer = kt.data.train_sentencepiece(texts, vocab_size=80, placeholder_slots=True)
    model = kt.EncoderDecoder(vocab_size=tokenizer.vocabulary_size(), num_layers=1, d_model=16,
                              num_heads=2, d_ff=32)
    path = tmp_path / "base.keras"
    kt.Translator(model, tokenizer, target_language="de").save(str(path))
    return str(path)


def test_adapt_po_end_to_end(capsys, real_model, catalog, tmp_path):
    import numpy as np

    model_bytes, catalog_bytes = open(real_model, "rb").read(), catalog.read_bytes()
    output, adapters = tmp_path / "adapted.keras", tmp_path / "adapters.lora.h5"
    code, out, err = run(capsys, "adapt-po", catalog, "--model", real_model, "-o", output,
                         "--rank", "2", "--epochs", "3", "--lora-weights", adapters)
    assert (code, out) == (0, ""), err
    lines = err.splitlines()
    assert lines[0].startswith(f"{output}: adapted on 1 translations (1 pieces): "
                               "3 steps in 3 epochs") and len(lines) == 2
    assert lines[1] == (f"Fill the catalog's untranslated entries with: keras-transformer "
                        f"translate-po {catalog} --model {output} -o OUTPUT.po")
    assert open(real_model, "rb").read() == model_bytes and catalog.read_bytes() == catalog_bytes
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["adapted.keras", "adapters.lora.h5", "base.keras", "de.po"])  # no temporary left

    # The adapted translator is a plain one: the adapted projections moved, nothing else.
    base = keras.saving.load_model(real_model, safe_mode=True)
    adapted = keras.saving.load_model(str(output), safe_mode=True)
    targets = set(base.model.default_lora_layer_names())
    for old, new in zip(base.model.weights, adapted.model.weights):
        assert old.path == new.path
        moved = not np.array_equal(keras.ops.convert_to_numpy(old), keras.ops.convert_to_numpy(new))
        assert moved == (old.path.split("/")[-2] in targets and old.path.endswith("kernel"))
    # ... and the adapters alone, loaded onto the base, compute the same.
    base.model.load_lora_weights(str(adapters))
    ids = np.array([[5, 6, 7, 3]], "int32")
    inputs = {"source": ids, "target": ids}
    np.testing.assert_allclose(keras.ops.convert_to_numpy(base.model(inputs)),
                               keras.ops.convert_to_numpy(adapted.model(inputs)), atol=1e-5)


def test_adapt_po_refusals(capsys, fake, model, catalog, tmp_path):
    before = open(model, "rb").read()
    for argv, contains in (
            (["-o", "-"], "must be a path ending in .keras"),
            (["-o", tmp_path / "out.po"], "must be a path ending in .keras"),
            (["-o", tmp_path / "a.keras", "--lora-weights", tmp_path / "a.h5"],
             "must end in .lora.h5"),
    ):
        assert_failed_cleanly(capsys, ["adapt-po", catalog, "--model", model, *argv], catalog,
                              tmp_path, contains=contains)
    keras_model = model
    assert_failed_cleanly(capsys, ["adapt-po", catalog, "--model", keras_model, "-o", keras_model],
                          catalog, tmp_path, contains="is the model")
    assert open(keras_model, "rb").read() == before and fake.calls == []

    untranslated = tmp_path / "empty.po"
    untranslated.write_text(CATALOG.replace('msgstr "Datei öffnen"', 'msgstr ""'),
                            encoding="iso-8859-1")
    assert_failed_cleanly(capsys, ["adapt-po", untranslated, "--model", keras_model, "-o",
                                   tmp_path / "a.keras"], untranslated, tmp_path,
                          contains="has no translated entries")
    fake.target_language = "fr"
    assert_failed_cleanly(capsys, ["adapt-po", catalog, "--model", keras_model, "-o",
                                   tmp_path / "a.keras"], catalog, tmp_path,
                          contains="the translator translates into 'fr'")
    code, _, err = run(capsys, "adapt-po", catalog, "--model", keras_model, "-o",
                       tmp_path / "a.keras", "--rank", "0")
    assert code == 2 and "--rank" in err


def test_adapt_po_refuses_lora_weights_that_would_destroy_a_file(capsys, fake, model, catalog,
                                                                tmp_path):
    """--lora-weights is written over its path: never the model, the input or the output
    (a symbolic link to the model, or the catalog named .lora.h5, were overwritten)."""
    keras_model = tmp_path / "model.keras"
    os.replace(model, keras_model)
    link = tmp_path / "link.lora.h5"
    link.symlink_to(keras_model)
    named_catalog = tmp_path / "de.lora.h5"
    shutil.copy(catalog, named_catalog)
    (tmp_path / "folder.lora.h5").mkdir()
    before = {path: path.read_bytes() for path in (keras_model, catalog, named_catalog)}
    out = tmp_path / "out.keras"
    for source, lora_weights, contains in (
            (catalog, link, "is the model"),
            (named_catalog, named_catalog, "is the input"),
            (catalog, tmp_path / "folder.lora.h5", "is a folder"),
            (catalog, tmp_path / "missing" / "a.lora.h5", "does not exist or is not writable"),
    ):
        err = assert_failed_cleanly(capsys, ["adapt-po", source, "--model", keras_model, "-o", out,
                                             "--lora-weights", lora_weights], catalog, tmp_path,
                                    contains=contains)
        assert "--lora-weights" in err
    assert {path: path.read_bytes() for path in before} == before and fake.calls == []
    out.write_bytes(b"an older adapted translator")
    os.symlink(out, tmp_path / "out-link.lora.h5")
    assert_failed_cleanly(capsys, ["adapt-po", catalog, "--model", keras_model, "-o", out,
                                   "--lora-weights", tmp_path / "out-link.lora.h5"], catalog,
                          tmp_path, contains="is the output")
    assert out.read_bytes() == b"an older adapted translator"


def test_adapt_po_refuses_a_catalog_of_white_space_before_loading_the_model(
        capsys, fake, model, tmp_path):
    blank = tmp_path / "blank.po"
    blank.write_text(CATALOG.replace('msgid "Open file"\nmsgstr "Datei öffnen"',
                                     'msgid "  "\nmsgstr "  "'), encoding="iso-8859-1")
    assert_failed_cleanly(capsys, ["adapt-po", blank, "--model", model, "-o",
                                   tmp_path / "a.keras"], blank, tmp_path,
                          contains="has no translated entries to adapt to")
    assert fake.calls == []


def test_sigterm_while_adapt_po_saves_leaves_the_old_files_and_no_folder(tmp_path, monkeypatch):
    import signal

    from keras_transformer.tasks import adaptation

    class Saving:
        def save(self, path):
            with open(path, "wb") as file:
                file.write(b"half a model")
            os.kill(os.getpid(), signal.SIGTERM)  # as `kill` would, while the file is written

    monkeypatch.setattr(adaptation, "merged_translator", lambda translator: Saving())
    out = tmp_path / "adapted.keras"
    out.write_bytes(b"the adapted translator of before")
    received = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        with pytest.raises(InterruptedError, match="adapt-po's save was interrupted by SIGTERM"):
            cli._save_adapted(object(), str(out), None)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert received == [signal.SIGTERM]  # acted on, once the folder was removed
    assert os.listdir(tmp_path) == ["adapted.keras"]
    assert out.read_bytes() == b"the adapted translator of before"
