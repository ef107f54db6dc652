"""Which Keras backend an import will load, found before Keras itself is imported.

Keras takes its backend from `KERAS_BACKEND`, else from the `"backend"` of
`keras.json` in `KERAS_HOME` (default `~/.keras`), else TensorFlow. In a lean
install (`pip install "keras-transformer[jax]"`) with nothing set, that default
is a framework the machine does not have, and `import keras` fails deep inside
Keras with `No module named 'tensorflow'`. This module reads the same settings
without importing Keras: the package's import turns that case into one
message that says what to set, and the command line picks an installed
backend instead (`keras_transformer_launch`, which loads this file by its path, and
`python -m keras_transformer`). It
imports no backend, no Keras and nothing of the package.
"""

import atexit
import importlib.util
import json
import os
import sys
import tempfile

BACKENDS = ("jax", "torch", "tensorflow")
"""The backends the library supports, in the order the command line prefers them."""


def configured():
    """The backend `import keras` will load: `(name, where the setting comes from)`.

    Example:
    >>> import os
    >>> configured()[0] == os.environ.get("KERAS_BACKEND", configured()[0])
    True
    """
    name = os.environ.get("KERAS_BACKEND")
    if name:
        return name, "KERAS_BACKEND"
    path = os.path.join(_keras_home(), "keras.json")
    try:
        with open(path) as f:
            name = json.load(f).get("backend")
    except (OSError, ValueError, AttributeError):
        name = None
    if name:
        return name, path
    return "tensorflow", "Keras' default"


def _keras_home():
    """Keras' folder: `KERAS_HOME`, else `~/.keras` (`/tmp/.keras` if home is read-only)."""
    if "KERAS_HOME" in os.environ:
        return os.environ["KERAS_HOME"]
    base = os.path.expanduser("~")
    return os.path.join(base if os.access(base, os.W_OK) else "/tmp", ".keras")


def installed():
    """The supported backends this Python can import, in `BACKENDS` order."""
    return [name for name in BACKENDS if importlib.util.find_spec(name) is not None]


def missing_backend_message():
    """A one-line message if the backend Keras will load is not installed, else None.

    None too when Keras is already imported (its backend is loaded) or the
    configured name is not one of `BACKENDS` (Keras' own error names it).
    """
    if "keras" in sys.modules:
        return None
    name, source = configured()
    if name not in BACKENDS or importlib.util.find_spec(name) is not None:
        return None
    found = installed()
    if source == "Keras' default":
        what = f"no Keras backend is set and Keras' default, {name}, is not installed"
    else:
        what = f"the Keras backend {name} (from {source}) is not installed"
    choices = " or ".join(f"KERAS_BACKEND={b}" for b in found) or "KERAS_BACKEND=jax"
    install = "" if found else (
        "; install one: pip install 'keras-transformer[jax]' (or [torch], [tensorflow])")
    return f"{what}: set {choices}{install}"


def require_installed():
    """Raises an ImportError with `missing_backend_message()` if there is one."""
    message = missing_backend_message()
    if message:
        raise ImportError(f"keras_transformer: {message}")


def choose_for_command():
    """For the command line: an installed backend when the one Keras would load is missing.

    Sets `KERAS_BACKEND` to the first installed of `BACKENDS` when nothing
    the user set is usable and Keras' own choice is not installed; a
    `KERAS_BACKEND` the user set is never replaced.

    Returns:
        `(ok, line)`: whether the command can go on, and the line it prints on
        standard error (None when there is nothing to say).
    """
    message = missing_backend_message()
    if not message:
        return True, None
    name, source = configured()
    found = installed()
    if source == "KERAS_BACKEND" or not found:
        return False, f"keras-transformer: error: {message}"
    os.environ["KERAS_BACKEND"] = found[0]
    return True, (f"keras-transformer: KERAS_BACKEND is not set and the backend Keras would "
                  f"load ({name}, {source}) is not installed; using {found[0]}")


_held = None  # (the saved standard error descriptor, the file holding what was written)


def hold_start_up_output():
    """For the command line: what is written to standard error goes to a temporary file until
    `release_start_up_output`, so that an error is one line.

    TensorFlow 2.2x logs its start-up (CUDA probing, oneDNN notes) from C++ before its
    logging reads `TF_CPP_MIN_LOG_LEVEL`, so only the file descriptor can keep it off the
    terminal. If the process ends while output is held (an import failed), the held text is
    written out then.
    """
    global _held
    if _held is not None:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    holder = tempfile.TemporaryFile()
    os.dup2(holder.fileno(), 2)
    _held = (saved, holder)
    atexit.register(release_start_up_output, replay=True)


def release_start_up_output(replay=False):
    """Gives standard error back; with `replay`, writes out what was held."""
    global _held
    if _held is None:
        return
    saved, holder = _held
    _held = None
    sys.stderr.flush()
    os.dup2(saved, 2)
    os.close(saved)
    if replay:
        holder.seek(0)
        sys.stderr.write(holder.read().decode("utf-8", "replace"))
        sys.stderr.flush()
    holder.close()


def run_as_module():
    """Whether this process is `python -m keras_transformer` (the command, by another name)."""
    # While `-m` imports the package, Python keeps sys.argv[0] as "-m"; a script that merely
    # has "-m keras_transformer" among its own arguments does not.
    if sys.argv[:1] != ["-m"]:
        return False
    argv = getattr(sys, "orig_argv", [])
    return any(flag == "-mkeras_transformer" or flag == "-m" and module == "keras_transformer"
               for flag, module in zip(argv, argv[1:] + [""]))


def check_on_import():
    """What the package's import does before Keras loads.

    Run as `python -m keras_transformer`, it chooses for the command
    (`choose_for_command`: the line goes to standard error, and an unusable
    setting exits with status 1) and holds the backends' start-up output
    (`hold_start_up_output`); imported, it raises `require_installed`'s
    ImportError.
    """
    if not run_as_module():
        require_installed()
        return
    ok, line = choose_for_command()
    if line:
        sys.stderr.write(line + "\n")
    if not ok:
        raise SystemExit(1)
    hold_start_up_output()  # released by keras_transformer/__main__.py once the imports are done
