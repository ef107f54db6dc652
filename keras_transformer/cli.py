"""The `keras-transformer` command line: translate text and gettext catalogs with a saved Translator.

```
keras-transformer translate --model translator.keras "Open the file"
keras-transformer translate --model translator.keras < messages.txt
keras-transformer translate-po de.po --model translator.keras -o de.translated.po
keras-transformer adapt-po de.po --model translator.keras -o adapted.keras
```

`python -m keras_transformer` runs the same. Errors are one line on standard
error, `keras-transformer: error: ...`, with exit status 1 (2 for a wrong
command line). Output cut short by its reader (`... | head -2`) ends the
command quietly, as it ends other Unix tools.
"""

import argparse
import contextlib
import os
import shlex
import stat
import sys
import zipfile

from keras_transformer.messages.catalog_translation import catalog_bytes
from keras_transformer.messages.catalog_translation import check_catalog
from keras_transformer.messages.catalog_translation import target_language
from keras_transformer.messages.catalog_translation import translate_catalog
from keras_transformer.messages.catalog_translation import write_catalog
from keras_transformer.messages.po_file import PoSyntaxError
from keras_transformer.messages.po_file import read_po
from keras_transformer.tasks.translation import Translation
from keras_transformer.validation import lone_surrogate

PROG = "keras-transformer"
"""The command's name, in its help and error lines."""

_MODEL_HINT = "pass --model the path of a Translator saved with translator.save('name.keras')"


class CommandError(Exception):
    """A failure the command line reports in one line on standard error (exit status 1)."""


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors in one line, like the command's other errors."""

    def error(self, message):
        self.exit(2, f"{PROG}: error: {message} (see '{self.prog} --help')\n")


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def _path(text):
    if not text:
        raise argparse.ArgumentTypeError("must be a path, got an empty string")
    return text


def _one_line(error):
    """An exception's message on one line."""
    text = " ".join(str(error).split())
    return text or type(error).__name__


def load_translator(path):
    """Loads a `keras_transformer.tasks.Translator` saved as a `.keras` file.

    `safe_mode=True` refuses files that would run code.

    Args:
        path: the `.keras` file.

    Returns:
        The Translator.

    Raises:
        FileNotFoundError: there is no file at `path`.
        PermissionError: the file cannot be read.
        ValueError: the file is empty, is not a complete `.keras` archive, is
            not a Keras model, or the model is not a Translator.

    Example:
    >>> load_translator("/nonexistent/translator.keras")
    Traceback (most recent call last):
    ...
    FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/translator.keras'
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "No such file or directory", path)
    with open(path, "rb"):  # PermissionError here, not a Keras message about a missing file
        pass
    if os.path.getsize(path) == 0:
        raise ValueError(f"{path} is empty (0 bytes), not a .keras model")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path} is not a .keras model: a .keras file is a zip archive, and "
                         "this one is not (or it was cut short while being copied)")
    import keras

    from keras_transformer.tasks import Translator  # registered: load_model can build it

    try:
        model = keras.saving.load_model(path, safe_mode=True)
    except Exception as error:  # keras raises many kinds for a file that is not a model
        raise ValueError(f"{path} is not a .keras model Keras can load ({_one_line(error)})") from None
    if not isinstance(model, Translator):
        raise ValueError(f"{path} holds a {type(model).__name__}, not a keras_transformer Translator")
    return model


def _load(path):
    try:
        return load_translator(path)
    except OSError as error:
        raise CommandError(
            f"cannot read the model {path}: {error.strerror or _one_line(error)}; {_MODEL_HINT}"
        ) from None
    except ValueError as error:
        raise CommandError(f"{_one_line(error)}; {_MODEL_HINT}") from None


def _check_model_file(path):
    if not os.path.exists(path):
        raise CommandError(f"model file not found: {path}; {_MODEL_HINT}")
    if not os.path.isfile(path):
        raise CommandError(f"the model {path} is not a file; {_MODEL_HINT}")


_OPTIONS = {"beam_size": "--beam-size", "rank": "--rank", "epochs": "--epochs"}
"""Library argument names and the command's options that set them."""


def _option_names(error, **more):
    """A library error's message with its argument names as the command's options (and
    `more` names as the given words)."""
    text = _one_line(error)
    for name, words in {**_OPTIONS, **more}.items():
        text = text.replace(f"`{name}`", words)
    return text.replace("beam_size", "--beam-size")


def _read_lines(stream):
    """One message per line; only the line ends are removed."""
    text = stream.read()
    if not text:
        return []
    lines = text.split("\n")
    return lines[:-1] if text.endswith("\n") else lines


def _translations(translator, texts, beam_size, n_best, progress):
    """One list of Translations per text; empty texts are not sent to the model."""
    to_model = list(dict.fromkeys(text for text in texts if text))
    found = {}
    if to_model:
        try:
            with contextlib.redirect_stdout(sys.stderr):  # a progress bar is not output
                results = translator.translations(
                    to_model, beam_size=beam_size, num_return=n_best, progress=progress
                )
        except ValueError as error:
            raise CommandError(_option_names(error)) from None
        found = dict(zip(to_model, results))
    # An empty line stays empty: n of them keep the n-best lines aligned.
    return [found[text] if text else [Translation("", 0.0)] * n_best for text in texts]


def _check_decoded(texts, where):
    """Refuses text with bytes the locale's encoding could not decode (kept as surrogates)."""
    for number, text in enumerate(texts, 1):
        found = lone_surrogate(text)
        if found is not None:
            index, what = found
            raise CommandError(
                f"{where} {number} is not {sys.getfilesystemencoding().upper()} text ({what} at "
                f"character {index}); pass UTF-8 text, or run under a locale of its encoding")


def _run_translate(args):
    _check_decoded(args.texts, "TEXT argument")
    _check_model_file(args.model)
    try:
        texts = args.texts if args.texts else _read_lines(sys.stdin)
    except UnicodeDecodeError as error:
        raise CommandError(
            f"cannot decode standard input ({_one_line(error)}); pass UTF-8 text "
            "or set PYTHONIOENCODING to its encoding"
        ) from None
    translator = _load(args.model)
    results = _translations(translator, texts, args.beam_size, args.n_best or 1, args.progress)
    for number, found in enumerate(results, 1):
        for note in dict.fromkeys(note for translation in found for note in translation.notes):
            print(f"{PROG}: note: text {number}: {note}", file=sys.stderr)
        if args.n_best is None:
            print(found[0].text)
            continue
        for translation in found:
            print(f"{translation.score:.4f}\t{translation.text}")
    return 0


def _same_file(first, second):
    if os.path.exists(first) and os.path.exists(second):
        return os.path.samefile(first, second)
    return os.path.realpath(first) == os.path.realpath(second)


def _check_source(source):
    if not os.path.isfile(source):
        raise CommandError(f"catalog not found: {source}; pass the path of an existing .po file")
    if not os.access(source, os.R_OK):
        raise CommandError(f"cannot read the catalog {source}: permission denied")


def _check_output(path, kind, option, expected, protected):
    """Refuses, before any work, an output path whose writing would destroy something or fail.

    Args:
        path: the path to write.
        kind: what it is called in messages ("output").
        option: the option that names it ("-o").
        expected: what to pass instead, in words ("the path of a .po file").
        protected: `(path, "the input")` pairs of files it must not be.
    """
    for other, what in protected:
        if other is not None and _same_file(other, path):
            raise CommandError(f"the {kind} {path} is {what} {other}; pass {option} another file "
                               f"({what} is never overwritten)")
    if os.path.isdir(path) or path.endswith(os.sep):
        raise CommandError(f"the {kind} {path} is a folder; pass {option} {expected}")
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        raise CommandError(f"the {kind} {path} is not a regular file (a device, a pipe or a "
                           f"socket, which writing would replace); pass {option} {expected}")
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
        raise CommandError(f"cannot write the {kind} {path}: its folder {folder} does not exist "
                           "or is not writable")


def _check_paths(source, output, model):
    """Everything about translate-po's paths that can be refused before any work."""
    _check_source(source)
    if output != "-":
        _check_output(output, "output", "-o", "the path of a .po file, or - for standard output",
                      ((source, "the input"), (model, "the model")))


def _read_catalog(path):
    try:
        catalog = read_po(path)
    except PoSyntaxError as error:  # already "file:line: what"
        raise CommandError(_one_line(error)) from None
    except OSError as error:
        raise CommandError(f"cannot read the catalog {path}: "
                           f"{error.strerror or _one_line(error)}") from None
    if catalog.header is None:  # msgfmt --check refuses a catalog without one
        raise CommandError(f"{path}:1: the catalog has no header entry (msgid \"\" with its "
                           "Content-Type); msgfmt --check refuses it; create the catalog with "
                           "xgettext or msginit")
    try:  # before the model loads: a catalog msgfmt refuses is refused at once
        check_catalog(catalog)
    except ValueError as error:
        raise CommandError(_one_line(error)) from None
    return catalog


def _write(catalog, output):
    if output != "-":
        write_catalog(catalog, output)
        return
    data = catalog_bytes(catalog)
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.flush()


def _run_translate_po(args):
    _check_paths(args.input, args.output, args.model)
    _check_model_file(args.model)
    catalog = _read_catalog(args.input)
    translator = _load(args.model)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # a progress bar is not output
            report = translate_catalog(
                catalog, translator, language=args.language, beam_size=args.beam_size,
                progress=args.progress,
            )
    except ValueError as error:
        raise CommandError(_option_names(error)) from None
    try:
        _write(catalog, args.output)
    except BrokenPipeError:
        raise  # the reader of standard output left: main ends quietly
    except (OSError, ValueError) as error:
        raise CommandError(f"cannot write {args.output}: {_one_line(error)}") from None
    print(f"{args.output}: {report.summary()}", file=sys.stderr)
    if report.translated:
        print(
            f"The {report.translated} new translations are marked fuzzy: review them, "
            "or compile them as they are with 'msgfmt --use-fuzzy'.",
            file=sys.stderr,
        )
    return 0


def _catalog_pairs(catalog):
    """The (message, translation) pairs of a catalog's translated entries; fuzzy ones,
    which a translator has not confirmed, are left out."""
    from keras_transformer.data.gettext_catalogs import po_messages

    return [pair for message in po_messages(catalog.entries) if not message.fuzzy
            for pair in message.pairs()]


def _save_adapted(translator, output, lora_weights):
    """Saves the adapted translator (adapters merged) and, if asked, the adapters alone.

    Each file is written into a new folder beside its target, and only once all are
    written are they renamed over the targets: a failure or a signal leaves the existing
    files as they were, and no folder behind.
    """
    import shutil
    import tempfile

    from keras_transformer.tasks.adaptation import merged_translator
    from keras_transformer.termination import terminate_by_exception

    steps = [(output, "translator.keras", lambda path: merged_translator(translator).save(path))]
    if lora_weights is not None:
        steps.append((lora_weights, "adapters.lora.h5", translator.model.save_lora_weights))
    folders = []
    with terminate_by_exception("adapt-po's save"):
        try:
            written = []
            for target, name, save in steps:
                try:
                    folders.append(tempfile.mkdtemp(
                        prefix=".adapt-po-", dir=os.path.dirname(os.path.realpath(target))))
                    save(os.path.join(folders[-1], name))
                except (OSError, ValueError) as error:
                    raise CommandError(f"cannot write {target}: {_one_line(error)}") from None
                written.append((os.path.join(folders[-1], name), target))
            for temporary, target in written:
                try:
                    os.replace(temporary, os.path.realpath(target))
                except OSError as error:
                    raise CommandError(f"cannot write {target}: {_one_line(error)}") from None
        finally:
            for folder in folders:
                shutil.rmtree(folder, ignore_errors=True)


def _check_adapt_paths(args):
    """Everything about adapt-po's paths that can be refused before any work."""
    if args.output == "-" or not args.output.endswith(".keras"):
        raise CommandError(f"the output {args.output} must be a path ending in .keras (the "
                           "adapted translator is a Keras model file)")
    _check_source(args.input)
    _check_output(args.output, "output", "-o", "the path of a .keras file",
                  ((args.input, "the input"), (args.model, "the model")))
    if args.lora_weights is None:
        return
    if not args.lora_weights.endswith(".lora.h5"):
        raise CommandError(f"--lora-weights {args.lora_weights} must end in .lora.h5")
    _check_output(args.lora_weights, "--lora-weights file", "--lora-weights",
                  "the path of a .lora.h5 file",
                  ((args.input, "the input"), (args.model, "the model"),
                   (args.output, "the output")))


def _run_adapt_po(args):
    _check_adapt_paths(args)
    _check_model_file(args.model)
    catalog = _read_catalog(args.input)
    from keras_transformer.messages.training_pairs import translation_pairs
    from keras_transformer.tasks.adaptation import adapt_translator

    pairs = _catalog_pairs(catalog)
    if not translation_pairs(pairs):
        raise CommandError(f"{args.input} has no translated entries to adapt to (fuzzy ones "
                           "are left out, and so is white space alone); translate some, or "
                           "use the translator as it is")
    translator = _load(args.model)
    try:
        target_language(catalog, translator, args.language)
        with contextlib.redirect_stdout(sys.stderr):  # a progress bar is not output
            result = adapt_translator(
                translator, pairs, rank=args.rank, epochs=args.epochs,
                seconds=None if args.minutes is None else 60 * args.minutes,
                verbose=1 if args.progress else 0)
    except ValueError as error:
        raise CommandError(_option_names(
            error, pairs=f"the translated entries of {args.input}")) from None
    _save_adapted(translator, args.output, args.lora_weights)
    print(f"{args.output}: {result.summary()}", file=sys.stderr)
    print(f"Fill the catalog's untranslated entries with: {PROG} translate-po "
          f"{shlex.quote(args.input)} --model {shlex.quote(args.output)} -o OUTPUT.po",
          file=sys.stderr)
    return 0


def _positive_minutes(text):
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of minutes > 0, got {text!r}")
    return value


def _add_model_options(parser):
    parser.add_argument(
        "--model", required=True, metavar="PATH",
        help="the translator: a keras_transformer Translator saved as a .keras file",
    )
    parser.add_argument(
        "--beam-size", type=_positive_int, default=4, metavar="N",
        help="beam width of the search: wider is slower and usually better (default: 4)",
    )
    parser.add_argument(
        "--progress", action="store_true",
        help="show the translator's progress on standard error",
    )


def build_parser():
    """The argument parser of the command line (subcommands `translate`, `translate-po` and
    `adapt-po`).

    Returns:
        An `argparse.ArgumentParser`.

    Example:
    >>> args = build_parser().parse_args(["translate", "--model", "m.keras", "Open the file"])
    >>> args.command, args.texts, args.beam_size
    ('translate', ['Open the file'], 4)
    """
    from keras_transformer import __version__

    parser = _Parser(
        prog=PROG,
        description="Translate text and gettext catalogs with a saved keras_transformer Translator.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    translate = commands.add_parser(
        "translate", help="translate texts given as arguments or as lines of standard input",
        description="Translate each TEXT, or, with none, each line of standard input (one "
        "message per line; a literal \\n is not interpreted). Prints one translation per "
        "line, in the input's order.",
    )
    translate.add_argument("texts", nargs="*", metavar="TEXT", help="a text to translate")
    _add_model_options(translate)
    translate.add_argument(
        "--n-best", type=_positive_int, metavar="N",
        help="print the N best translations of each text, best first, as lines "
        "'score<TAB>translation' (N at most --beam-size)",
    )
    translate.set_defaults(run=_run_translate, parser=translate)
    catalog = commands.add_parser(
        "translate-po", help="fill the untranslated entries of a gettext .po catalog",
        description="Fill the untranslated entries of INPUT (entries already translated, "
        "fuzzy ones included, are kept) and write the result to OUTPUT. New translations "
        "are flagged fuzzy for review; compile them as they are with 'msgfmt --use-fuzzy'.",
    )
    catalog.add_argument("input", metavar="INPUT.po", help="the catalog to translate (left unchanged)")
    catalog.add_argument(
        "-o", "--output", required=True, metavar="OUTPUT.po", type=_path,
        help="where to write the translated catalog, - for standard output: a new file, or "
        "an existing one, which is replaced (as msgcat and msgmerge replace theirs); never "
        "INPUT or the model; written atomically",
    )
    catalog.add_argument(
        "--language", metavar="CODE",
        help="the catalog's language (e.g. de, pt_BR) when its header has no Language; "
        "must agree with the header and the translator",
    )
    _add_model_options(catalog)
    catalog.set_defaults(run=_run_translate_po, parser=catalog)
    adapt = commands.add_parser(
        "adapt-po", help="adapt a translator to a .po catalog's existing translations (LoRA)",
        description="Fine-tune the translator on the translated entries of INPUT (fuzzy "
        "ones are left out) with low-rank adapters on its attention projections (LoRA: "
        "the translator's own weights are frozen), and save the adapted translator to OUTPUT. "
        "Then fill the catalog's untranslated entries with 'translate-po --model OUTPUT'.",
    )
    adapt.add_argument("input", metavar="INPUT.po",
                       help="the catalog whose translations to learn from (left unchanged)")
    adapt.add_argument(
        "-o", "--output", required=True, metavar="OUTPUT.keras", type=_path,
        help="where to save the adapted translator (the adapters merged into its weights): "
        "a new file, or an existing one, which is replaced; never the model or INPUT",
    )
    adapt.add_argument("--model", required=True, metavar="PATH",
                       help="the translator to adapt: a Translator saved as a .keras file "
                       "(left unchanged)")
    adapt.add_argument("--language", metavar="CODE",
                       help="the catalog's language when its header has no Language")
    adapt.add_argument("--rank", type=_positive_int, default=8, metavar="R",
                       help="rank of the adapters (default: 8)")
    adapt.add_argument("--epochs", type=_positive_int, default=12, metavar="N",
                       help="passes over the translations (default: 12)")
    adapt.add_argument("--minutes", type=_positive_minutes, metavar="M",
                       help="stop training after M minutes, compilation included")
    adapt.add_argument("--lora-weights", metavar="PATH.lora.h5",
                       help="also save the adapters alone (kilobytes), for "
                       "model.load_lora_weights on the same base translator")
    adapt.add_argument("--progress", action="store_true",
                       help="show training progress on standard error")
    adapt.set_defaults(run=_run_adapt_po, parser=adapt)
    return parser


def _parse(argv):
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "n_best", None) and args.n_best > args.beam_size:
        args.parser.error(
            f"argument --n-best: {args.n_best} is more than --beam-size {args.beam_size}; "
            "widen the beam or ask for fewer"
        )
    return args


def main(argv=None):
    """Runs the command line.

    Args:
        argv: the arguments without the program name; None reads `sys.argv`.

    Returns:
        The exit status: 0 on success, 1 on an error (reported in one line
        on standard error), 2 on a wrong command line.

    Example:
    >>> main(["--version"])
    keras-transformer 0.1.0
    0
    """
    try:
        args = _parse(argv)
    except SystemExit as exit:
        return exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 2)
    try:
        return args.run(args)
    except (CommandError, ImportError) as error:  # ImportError: a missing extra, named
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader left (`| head`): nothing more can be written, and Python would report
        # the failed flush of standard output at exit; send that flush nowhere.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a tool that SIGPIPE ended
