"""Which Keras backend an import will load, found before Keras itself is imported.

Keras takes its backend from `KERAS_BACKEND`, else from the `"backend"` of
`keras.json` in `KERAS_HOME` (default `~/.keras`), else TensorFlow. In a lean
install (`pip install "keras-transformer[jax]"`) with nothing set, that default
is a framework the machine does not have, and `import keras` fails deep inside
Keras with `No module named 'tensorflow'`. This module reads the same settings
without importing Keras: the package's import turns that case into one
message that says what to set, and the command line picks an installed
backend instead (`keras_transformer_launch`, which loads this file by its path). It
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
