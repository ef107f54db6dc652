"""tf.data pipelines: special tokens, teacher forcing, bucketing, and `fit` under each backend."""

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.data import END_ID
from keras_transformer.data import PAD_ID
from keras_transformer.data import START_ID

tf = pytest.importorskip("tensorflow")


def char_tokenizer(text):
    """Characters as ids 4..63 (ids 0-3 are the special tokens)."""
    return tf.strings.unicode_decode(text, "UTF-8") % 60 + 4


def char_ids(text):
    return [ord(c) % 60 + 4 for c in text]


PAIRS = [(f"message {'x' * (i % 23)} {i}", f"Meldung {'y' * (i % 43)} {i}") for i in range(300)]


def batches(dataset):
    return [(inputs["source"].numpy(), inputs["target"].numpy(), labels.numpy())
            for inputs, labels in dataset]


def test_translation_batches_hold_every_pair_with_special_tokens():
    data = kt.data.translation_dataset(PAIRS, char_tokenizer, tokens_per_batch=256,
                                       max_length=48, bucket_width=16, shuffle=False)
    expected = {
        (tuple(char_ids(s) + [END_ID]), tuple(char_ids(t) + [END_ID])) for s, t in PAIRS
        if len(s) < 48 and len(t) < 48
    }
    seen = set()
    for source, target, labels in batches(data):
        width = source.shape[1]
        assert width in (16, 32, 48)
        assert source.shape == target.shape == labels.shape
        assert source.shape[0] <= 256 // width
        # Teacher forcing: the decoder input is the labels shifted right behind START.
        np.testing.assert_array_equal(target[:, 0], START_ID)
        shifted = target[:, 1:] != PAD_ID
        np.testing.assert_array_equal(target[:, 1:][shifted], labels[:, :-1][shifted])
        np.testing.assert_array_equal((target != PAD_ID).sum(1), (labels != PAD_ID).sum(1))
        for s, l in zip(source, labels):
            seen.add((tuple(s[s != PAD_ID]), tuple(l[l != PAD_ID])))
        # Each batch is padded to its bucket: the longest row needs this bucket.
        longest = max((source != PAD_ID).sum(1).max(), (labels != PAD_ID).sum(1).max())
        assert width - 16 < longest <= width
    assert seen == expected
    assert len(expected) < len(PAIRS)  # some pairs were too long and left out


def test_shuffling_is_seeded_and_reshuffles_each_epoch():
    def first_sources(seed):
        data = kt.data.translation_dataset(PAIRS, char_tokenizer, tokens_per_batch=128,
                                           max_length=48, seed=seed)
        return [[b[0][:, :4].tolist() for b in batches(data)] for _ in range(2)]

    epochs = first_sources(seed=3)
    assert epochs == first_sources(seed=3)
    assert epochs[0] != epochs[1]
    assert epochs != first_sources(seed=4)


def test_training_drops_partial_batches_so_shapes_repeat():
    data = kt.data.translation_dataset(PAIRS, char_tokenizer, tokens_per_batch=512,
                                       max_length=48, bucket_width=16)
    shapes = {b[0].shape for b in batches(data)}
    assert shapes <= {(32, 16), (16, 32), (10, 48)}
    # The batch count is known up front (a progress bar with a total) and holds each epoch.
    assert int(data.cardinality()) == len(batches(data)) == len(batches(data))


@pytest.mark.parametrize("arguments, name", [
    (dict(tokens_per_batch=0), "tokens_per_batch"),
    (dict(tokens_per_batch=16, max_length=32), "tokens_per_batch"),
    (dict(max_length=1), "max_length"),
    (dict(bucket_width=0), "bucket_width"),
    (dict(shuffle="yes"), "shuffle"),
])
def test_translation_arguments_are_validated(arguments, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        kt.data.translation_dataset(PAIRS, char_tokenizer, **arguments)


def test_language_model_windows_follow_the_stream():
    texts = ["abcdefghij", "klmnopqrstuvwxyz"]
    data = kt.data.language_model_dataset(texts, char_tokenizer, sequence_length=5,
                                          batch_size=2, shuffle=False)
    stream = char_ids(texts[0]) + [END_ID] + char_ids(texts[1]) + [END_ID]
    windows = [(x.numpy(), y.numpy()) for x, y in data]
    assert len(windows) == (len(stream) - 1) // 5 // 2
    for inputs, labels in windows:
        assert inputs.shape == labels.shape == (2, 5)
    np.testing.assert_array_equal(windows[0][0][0], stream[0:5])
    np.testing.assert_array_equal(windows[0][1][0], stream[1:6])
    np.testing.assert_array_equal(windows[0][0][1], stream[5:10])


def test_translation_pipeline_feeds_fit_under_this_backend():
    model = kt.EncoderDecoder(vocab_size=64, num_layers=1, d_model=16, num_heads=2, d_ff=32)
    model.compile()
    data = kt.data.translation_dataset(PAIRS, char_tokenizer, tokens_per_batch=512,
                                       max_length=48, bucket_width=16)
    steps = len(batches(data))
    history = model.fit(data, epochs=2, shuffle=False, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2 * steps
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[1] < losses[0]


def test_language_model_pipeline_feeds_fit_under_this_backend():
    model = kt.DecoderOnly(vocab_size=64, num_layers=1, d_model=16, num_heads=2, d_ff=32,
                           max_length=16)
    model.compile()
    data = kt.data.language_model_dataset([s for s, _ in PAIRS], char_tokenizer,
                                          sequence_length=16, batch_size=8)
    steps = len(list(data))
    history = model.fit(data, epochs=2, shuffle=False, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2 * steps
    assert np.all(np.isfinite(history.history["loss"]))
