"""The `keras-transformer` command, with a Keras backend chosen before Keras is imported.

A module of its own, outside the `keras_transformer` package, because importing
the package imports Keras, which loads its backend at once. When neither
`KERAS_BACKEND` is set and the backend Keras would load (`keras.json`'s, which
Keras itself writes as TensorFlow on its first import, or its TensorFlow
default) is not installed, the command uses the first installed of JAX,
PyTorch and TensorFlow and says so on standard error. A `KERAS_BACKEND` the
user set is never replaced: if it is not installed, the command says so in
one line.
"""

import importlib.util
import os
import sys


def _settings_module():
    """`keras_transformer/keras_backend.py`, loaded without importing the package."""
    package = importlib.util.find_spec("keras_transformer")  # finds, does not import
    path = os.path.join(package.submodule_search_locations[0], "keras_backend.py")
    spec = importlib.util.spec_from_file_location("_keras_transformer_backend", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    """Chooses the backend if none is usable as set, then runs `keras_transformer.cli.main`."""
    settings = _settings_module()
    ok, line = settings.choose_for_command()
    if line:
        print(line, file=sys.stderr)
    if not ok:
        return 1
    settings.hold_start_up_output()  # TensorFlow's start-up logs are not the command's output
    from keras_transformer.cli import main as run

    settings.release_start_up_output()
    return run(argv)


if __name__ == "__main__":
    sys.exit(main())
