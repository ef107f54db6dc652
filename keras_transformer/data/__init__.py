"""Real data already on the machine, subword vocabularies, and batches for `fit`.

- `gettext_catalogs`: English -> any-language message pairs from the gettext
  catalogs every Linux system ships (`/usr/share/locale`).
- `python_sources`: the Python standard library's source code, for language modelling.
- `tokenizers`: SentencePiece vocabularies (through keras-hub) with the
  special ids our models expect (`PAD_ID` 0, `START_ID` 2, `END_ID` 3).
- `batches`: bucketed, seeded, reshuffled batches for `model.fit` as a
  `keras.utils.PyDataset` (NumPy only: no TensorFlow needed).
- `pipelines`: the same batches as a `tf.data` pipeline.

Tokenizers and pipelines use TensorFlow, imported only when they are called.
"""

from keras_transformer.data.batches import LanguageModelBatches
from keras_transformer.data.batches import TranslationBatches
from keras_transformer.data.batches import bucket_lengths
from keras_transformer.data.batches import token_ids
from keras_transformer.data.gettext_catalogs import CatalogError
from keras_transformer.data.gettext_catalogs import Message
from keras_transformer.data.gettext_catalogs import catalog_domain
from keras_transformer.data.gettext_catalogs import find_catalogs
from keras_transformer.data.gettext_catalogs import gettext_splits
from keras_transformer.data.gettext_catalogs import hold_out_catalogs
from keras_transformer.data.gettext_catalogs import load_gettext_pairs
from keras_transformer.data.gettext_catalogs import read_catalog
from keras_transformer.data.gettext_catalogs import split_by_hash
from keras_transformer.data.pipelines import as_tf_dataset
from keras_transformer.data.pipelines import language_model_dataset
from keras_transformer.data.pipelines import translation_dataset
from keras_transformer.data.python_sources import load_python_sources
from keras_transformer.data.python_sources import python_source_files
from keras_transformer.data.tokenizers import END_ID
from keras_transformer.data.tokenizers import PAD_ID
from keras_transformer.data.tokenizers import START_ID
from keras_transformer.data.tokenizers import UNK_ID
from keras_transformer.data.tokenizers import load_tokenizer
from keras_transformer.data.tokenizers import save_tokenizer
from keras_transformer.data.tokenizers import train_sentencepiece

__all__ = [
    "END_ID",
    "PAD_ID",
    "START_ID",
    "TranslationBatches",
    "UNK_ID",
    "CatalogError",
    "LanguageModelBatches",
    "Message",
    "as_tf_dataset",
    "bucket_lengths",
    "catalog_domain",
    "find_catalogs",
    "gettext_splits",
    "hold_out_catalogs",
    "language_model_dataset",
    "load_gettext_pairs",
    "load_python_sources",
    "load_tokenizer",
    "python_source_files",
    "read_catalog",
    "save_tokenizer",
    "split_by_hash",
    "token_ids",
    "train_sentencepiece",
    "translation_dataset",
]
