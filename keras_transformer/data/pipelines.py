"""`tf.data` input pipelines that feed `model.fit` under every backend.

Keras 3 accepts a `tf.data.Dataset` as `fit` input under TensorFlow, JAX and
PyTorch alike; these pipelines tokenize once (cached), add the special tokens,
group examples of similar length into batches of about the same number of
tokens, pad each batch to its bucket's length (so a compiled step sees a few
shapes, not one per batch), shuffle and prefetch.

Shapes produced (the conventions of `keras_transformer.masks`):

- `translation_dataset`: `({"source": (B, L), "target": (B, L)}, labels (B, L))`,
  int32, padded with `PAD_ID`; `target` is `labels` shifted right behind `START_ID`.
- `language_model_dataset`: `(inputs (B, T), labels (B, T))`, labels the inputs
  moved one token on.

This module needs TensorFlow and imports it only when called.
"""

import numpy as np

from keras_transformer import validation
from keras_transformer.optional_dependencies import require
from keras_transformer.data.tokenizers import END_ID
from keras_transformer.data.tokenizers import PAD_ID
from keras_transformer.data.tokenizers import START_ID


def tokenize_pairs(pairs, tokenizer, batch_size=1024):
    """Token ids of each `(source, target)` pair, tokenized once and cached.

    Args:
        pairs: a sequence of `(source text, target text)`.
        tokenizer: a tokenizer layer mapping a batch of strings to ids.
        batch_size: strings tokenized per call.

    Returns:
        A `tf.data.Dataset` of `{"source": (S,), "target": (T,)}` int
        ids, without special tokens.
    """
    tf = require("tensorflow", "tokenize_pairs")
    sources = [source for source, _ in pairs]
    targets = [target for _, target in pairs]
    data = tf.data.Dataset.from_tensor_slices({"source": sources, "target": targets})
    data = data.batch(batch_size).map(
        lambda batch: {key: tokenizer(value) for key, value in batch.items()},
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return data.unbatch().cache()


def bucket_lengths(max_length, bucket_width):
    """Padded lengths of the buckets: `bucket_width, 2 * bucket_width, ...,
    max_length`. Each batch is padded to the smallest one its longest example fits.

    Args:
        max_length: the longest sequence kept (the last bucket's length).
        bucket_width: the step between bucket lengths.

    Returns:
        A list of ints.

    Example:
    >>> bucket_lengths(40, 16)
    [16, 32, 40]
    """
    lengths = list(range(bucket_width, max_length, bucket_width))
    return lengths + [max_length]


def translation_dataset(
    pairs, tokenizer, tokens_per_batch=4096, max_length=64, bucket_width=8, shuffle=True,
    seed=0, drop_remainder=None,
):
    """A `model.fit`-ready `tf.data.Dataset` of translation pairs for an `EncoderDecoder`.

    Each source becomes `ids + [END_ID]`; each target becomes the labels
    `ids + [END_ID]` and the decoder input `[START_ID] + ids` (teacher
    forcing). Pairs whose source or labels exceed `max_length` tokens are
    dropped. Examples are bucketed by their longer side; a bucket of padded
    length `L` is batched `tokens_per_batch // L` examples at a time.

    Args:
        pairs: a sequence of `(source text, target text)`.
        tokenizer: a tokenizer layer mapping strings to int ids (e.g. from
            `train_sentencepiece`), with the special ids of
            `keras_transformer.data.tokenizers`.
        tokens_per_batch: padded source tokens per batch (the paper batched
            about 25,000 source and 25,000 target tokens).
        max_length: longest source or target kept, special token included.
        bucket_width: granularity of the padded lengths (see `bucket_lengths`).
        shuffle: shuffle examples (reshuffled each epoch) and batches.
        seed: shuffling seed.
        drop_remainder: drop each bucket's last partial batch (fewer compiled
            shapes); default: the value of `shuffle` (training).

    Returns:
        A `tf.data.Dataset` of `({"source": (B, L), "target": (B, L)},
        labels (B, L))` int32 batches.

    Example:
    >>> import tensorflow as tf
    >>> tokenizer = lambda text: tf.strings.unicode_decode(text, "UTF-8") % 50 + 4
    >>> data = translation_dataset([("hi", "hallo"), ("yes", "ja")], tokenizer,
    ...                            tokens_per_batch=16, max_length=8, shuffle=False)
    >>> inputs, labels = next(iter(data))
    >>> inputs["source"].shape, inputs["target"].shape, labels.shape
    (TensorShape([2, 8]), TensorShape([2, 8]), TensorShape([2, 8]))
    """
    tf = require("tensorflow", "translation_dataset")
    _check_batching(tokens_per_batch, max_length, bucket_width)
    validation.check_bool("shuffle", shuffle)
    drop_remainder = shuffle if drop_remainder is None else drop_remainder
    validation.check_bool("drop_remainder", drop_remainder)

    def add_special_tokens(example):
        end = tf.constant([END_ID], dtype="int32")
        source = tf.concat([tf.cast(example["source"], "int32"), end], axis=0)
        labels = tf.concat([tf.cast(example["target"], "int32"), end], axis=0)
        target = tf.concat([tf.constant([START_ID], dtype="int32"), labels[:-1]], axis=0)
        return {"source": source, "target": target, "labels": labels}

    def fits(example):
        return tf.logical_and(
            tf.size(example["source"]) <= max_length, tf.size(example["labels"]) <= max_length
        )

    data = tokenize_pairs(pairs, tokenizer).map(add_special_tokens).filter(fits)
    if shuffle:
        data = data.shuffle(len(pairs), seed=seed, reshuffle_each_iteration=True)
    data = _bucket(
        data, lambda e: tf.maximum(tf.size(e["source"]), tf.size(e["labels"])),
        tokens_per_batch, max_length, bucket_width, drop_remainder,
    )
    data = data.map(lambda e: ({"source": e["source"], "target": e["target"]}, e["labels"]))
    if shuffle:
        data = data.shuffle(64, seed=seed + 1, reshuffle_each_iteration=True)
    return _with_cardinality(data).prefetch(tf.data.AUTOTUNE)


def _with_cardinality(data):
    """Counts the batches once (filling the tokenization cache) and records the
    count, so `fit` shows a progress bar with a total from the first epoch.
    The count is the same every epoch: bucket membership depends on lengths only."""
    tf = require("tensorflow", "translation_dataset")  # its caller has imported it
    count = int(data.reduce(np.int64(0), lambda count, _: count + 1))
    return data.apply(tf.data.experimental.assert_cardinality(count))


def language_model_dataset(
    texts, tokenizer, sequence_length, batch_size, shuffle=True, seed=0, separator_id=END_ID,
):
    """A `model.fit`-ready dataset of next-token windows for a `DecoderOnly`.

    The texts are tokenized once and joined into one stream, each followed
    by `separator_id`; the stream is cut into windows of `sequence_length`
    tokens whose labels are the same window moved one token on
    (`keras_transformer.training.next_token_windows`).

    Args:
        texts: a sequence of strings (e.g. source files).
        tokenizer: a tokenizer layer mapping strings to int ids.
        sequence_length: tokens per window (the model's context).
        batch_size: windows per batch (the last partial batch is dropped).
        shuffle: shuffle the windows each epoch.
        seed: shuffling seed.
        separator_id: token put after each text (None for none).

    Returns:
        A `tf.data.Dataset` of `(inputs (B, T), labels (B, T))` int32.

    Example:
    >>> import tensorflow as tf
    >>> tokenizer = lambda text: tf.strings.unicode_decode(text, "UTF-8") % 50 + 4
    >>> data = language_model_dataset(["hello world"] * 4, tokenizer,
    ...                               sequence_length=8, batch_size=2)
    >>> [tuple(t.shape) for t in next(iter(data))]
    [(2, 8), (2, 8)]
    """
    from keras_transformer.training.teacher_forcing import next_token_windows

    tf = require("tensorflow", "language_model_dataset")
    validation.check_int("sequence_length", sequence_length)
    validation.check_int("batch_size", batch_size)
    validation.check_bool("shuffle", shuffle)
    stream = []
    for ids in tf.data.Dataset.from_tensor_slices(list(texts)).batch(256).map(tokenizer):
        for row in ids:
            stream.append(np.asarray(row, dtype="int32"))
            if separator_id is not None:
                stream.append(np.array([separator_id], dtype="int32"))
    inputs, labels = next_token_windows(np.concatenate(stream), sequence_length)
    data = tf.data.Dataset.from_tensor_slices((inputs, labels))
    if shuffle:
        data = data.shuffle(len(inputs), seed=seed, reshuffle_each_iteration=True)
    return data.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def _check_batching(tokens_per_batch, max_length, bucket_width):
    validation.check_int("tokens_per_batch", tokens_per_batch)
    validation.check_int("max_length", max_length, minimum=2)
    validation.check_int("bucket_width", bucket_width)
    if tokens_per_batch < max_length:
        raise ValueError(
            f"`tokens_per_batch` ({tokens_per_batch}) must be >= `max_length` "
            f"({max_length}) so the longest bucket holds one example."
        )


def _bucket(data, length_of, tokens_per_batch, max_length, bucket_width, drop_remainder):
    """Batches examples of similar length, padded to their bucket's length."""
    lengths = bucket_lengths(max_length, bucket_width)
    return data.bucket_by_sequence_length(
        element_length_func=length_of,
        bucket_boundaries=[length + 1 for length in lengths],
        bucket_batch_sizes=[tokens_per_batch // length for length in lengths] + [1],
        pad_to_bucket_boundary=True,
        padding_values=PAD_ID,
        drop_remainder=drop_remainder,
    )
