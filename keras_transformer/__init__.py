"""keras-transformer: the 2017 Transformer and GPT-2/GPT-3 as one set of Keras 3 layers.

Example:
>>> import keras_transformer as kt
>>> model = kt.DecoderOnly.from_preset("gpt2_tiny")
>>> model.count_params() == kt.models.preset_config("gpt2_tiny").count_params()
True
"""

from keras_transformer import keras_backend

keras_backend.check_on_import()  # one clear message instead of Keras' ImportError

from keras_transformer import convert  # noqa: E402
from keras_transformer import distribution
from keras_transformer import data
from keras_transformer import generation
from keras_transformer import layers
from keras_transformer import masks
from keras_transformer import messages
from keras_transformer import models
from keras_transformer import tasks
from keras_transformer import training
from keras_transformer.models import DecoderOnly
from keras_transformer.models import EncoderDecoder
from keras_transformer.tasks import TextGenerator
from keras_transformer.tasks import Translator

__version__ = "0.1.0"

__all__ = [
    "DecoderOnly",
    "EncoderDecoder",
    "TextGenerator",
    "Translator",
    "convert",
    "distribution",
    "data",
    "generation",
    "layers",
    "masks",
    "messages",
    "models",
    "tasks",
    "training",
]
