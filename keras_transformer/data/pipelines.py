"""`tf.data` input pipelines that feed `model.fit` under every backend.

Keras 3 accepts a `tf.data.Dataset` as `fit` input under TensorFlow, JAX and
PyTorch alike. These pipelines carry the batches of `batches.py`
(`TranslationBatches`, `LanguageModelBatches`; their shapes are described
there): the same arrays, epoch for epoch, as those `PyDataset`s give, with the
batch count recorded (a progress bar with a total). An iteration serves epoch
`k` of the plan after `k` iterations have asked for their last batch. There is
no prefetching: a reader that takes one batch and stops (as `fit` does to build
a model) must not run the epoch to its end in the background.

This module needs TensorFlow and imports it only when called; without it, use
the `PyDataset`s directly.
"""

from keras_transformer.data.batches import LanguageModelBatches
from keras_transformer.data.batches import TranslationBatches
from keras_transformer.data.batches import _EpochBatches
from keras_transformer.data.tokenizers import END_ID
from keras_transformer.optional_dependencies import require


def as_tf_dataset(batches):
    """A `tf.data.Dataset` of a `TranslationBatches` or `LanguageModelBatches`.

    An iteration yields `batches.batch(k, i)` for every `i`, where `k` counts
    the iterations that asked for their last batch before it: epoch `k` of the
    same seeded plan. The `PyDataset`'s own epoch is left as it is.

    Args:
        batches: a `TranslationBatches` or `LanguageModelBatches`.

    Returns:
        A `tf.data.Dataset` of known cardinality, with the batches'
        `token_id_range`, which `fit` checks against the model's vocabulary.
        A dataset made from it (`.map`, `.prefetch`) no longer carries it.

    Example:
    >>> from keras_transformer.data import LanguageModelBatches
    >>> chars = lambda texts: [[ord(c) % 50 + 4 for c in t] for t in texts]
    >>> batches = LanguageModelBatches(["hello world"] * 4, chars, sequence_length=8,
    ...                                batch_size=2)
    >>> data = as_tf_dataset(batches)
    >>> int(data.cardinality()) == len(batches)
    True
    """
    tf = require("tensorflow", "as_tf_dataset")
    if not isinstance(batches, _EpochBatches):
        raise ValueError("`batches` must be a TranslationBatches or LanguageModelBatches; "
                         f"received {type(batches).__name__}.")
    completed = [0]  # iterations that asked for their last batch
    count = len(batches)

    def one_epoch():
        epoch = completed[0]
        for index in range(count):
            if index == count - 1:
                completed[0] = epoch + 1
            yield batches.batch(epoch, index)

    signature = tf.nest.map_structure(
        lambda array: tf.TensorSpec((None,) * array.ndim, array.dtype), batches.batch(0, 0))
    data = tf.data.Dataset.from_generator(one_epoch, output_signature=signature)
    data = data.apply(tf.data.experimental.assert_cardinality(count))
    data.token_id_range = batches.token_id_range  # read by `fit` (models.host_checks)
    return data


def translation_dataset(
    pairs, tokenizer, tokens_per_batch=4096, max_length=64, bucket_width=8, shuffle=True,
    seed=0, drop_remainder=None,
):
    """A `model.fit`-ready `tf.data.Dataset` of translation pairs for an `EncoderDecoder`.

    The batches of `TranslationBatches` with the same arguments (what each
    holds is described there): sources and labels ending in `END_ID`, decoder
    inputs behind `START_ID`, bucketed by length, reshuffled each epoch.

    Args:
        pairs: a sequence of `(source text, target text)`.
        tokenizer: a callable mapping a list of strings to id sequences.
        tokens_per_batch: padded source tokens per batch.
        max_length: longest source or target kept, special token included.
        bucket_width: granularity of the padded lengths (see `bucket_lengths`).
        shuffle: shuffle examples and batches, differently each epoch.
        seed: shuffling seed.
        drop_remainder: drop each bucket's last partial batch; default `shuffle`.

    Returns:
        A `tf.data.Dataset` of `({"source": (B, L), "target": (B, L)},
        labels (B, L))` int32 batches.

    Example:
    >>> chars = lambda texts: [[ord(c) % 50 + 4 for c in t] for t in texts]
    >>> data = translation_dataset([("hi", "hallo"), ("yes", "ja")], chars,
    ...                            tokens_per_batch=16, max_length=8, shuffle=False)
    >>> inputs, labels = next(iter(data))
    >>> inputs["source"].shape, inputs["target"].shape, labels.shape
    (TensorShape([2, 8]), TensorShape([2, 8]), TensorShape([2, 8]))
    """
    require("tensorflow", "translation_dataset")
    return as_tf_dataset(TranslationBatches(
        pairs, tokenizer, tokens_per_batch=tokens_per_batch, max_length=max_length,
        bucket_width=bucket_width, shuffle=shuffle, seed=seed, drop_remainder=drop_remainder))


def language_model_dataset(
    texts, tokenizer, sequence_length, batch_size, shuffle=True, seed=0, separator_id=END_ID,
):
    """A `model.fit`-ready `tf.data.Dataset` of next-token windows for a `DecoderOnly`.

    The batches of `LanguageModelBatches` with the same arguments (described
    there): windows of one token stream, labels one token on.

    Args:
        texts: a sequence of strings (e.g. source files).
        tokenizer: a callable mapping a list of strings to id sequences.
        sequence_length: tokens per window (the model's context).
        batch_size: windows per batch (the last partial batch is dropped).
        shuffle: shuffle the windows, differently each epoch.
        seed: shuffling seed.
        separator_id: token put after each text (None for none).

    Returns:
        A `tf.data.Dataset` of `(inputs (B, T), labels (B, T))` int32.

    Example:
    >>> chars = lambda texts: [[ord(c) % 50 + 4 for c in t] for t in texts]
    >>> data = language_model_dataset(["hello world"] * 4, chars,
    ...                               sequence_length=8, batch_size=2)
    >>> [tuple(t.shape) for t in next(iter(data))]
    [(2, 8), (2, 8)]
    """
    require("tensorflow", "language_model_dataset")
    return as_tf_dataset(LanguageModelBatches(
        texts, tokenizer, sequence_length, batch_size, shuffle=shuffle, seed=seed,
        separator_id=separator_id))
