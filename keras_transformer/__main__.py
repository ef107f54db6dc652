"""`python -m keras_transformer`: the `keras-transformer` command line (`keras_transformer.cli`)."""

import sys

from keras_transformer.cli import main

if __name__ == "__main__":
    sys.exit(main())
