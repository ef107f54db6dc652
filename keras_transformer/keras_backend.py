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

import importlib.util
import json
import os
import sys

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
    `KERAS_BACKEND` the user set is never replaced. Also sets
    `TF_CPP_MIN_LOG_LEVEL=3` unless it is set.

    Returns:
        `(ok, line)`: whether the command can go on, and the line it prints on
        standard error (None when there is nothing to say).
    """
    # The command's errors are one line: TensorFlow's C++ start-up logs (CUDA probing,
    # oneDNN notes) stay off standard error unless the user asks for them.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
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


def run_as_module():
    """Whether this process is `python -m keras_transformer` (the command, by another name)."""
    argv = getattr(sys, "orig_argv", [])
    return any(flag == "-m" and module == "keras_transformer"
               for flag, module in zip(argv, argv[1:]))


def check_on_import():
    """What the package's import does before Keras loads.

    Run as `python -m keras_transformer`, it chooses for the command
    (`choose_for_command`: the line goes to standard error, and an unusable
    setting exits with status 1); imported, it raises `require_installed`'s
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
