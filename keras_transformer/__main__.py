"""`python -m keras_transformer`: the `keras-transformer` command line (`keras_transformer.cli`)."""

import sys

from keras_transformer import keras_backend
from keras_transformer.cli import main

if __name__ == "__main__":
    keras_backend.release_start_up_output()  # held since the package's import began
    sys.exit(main())
