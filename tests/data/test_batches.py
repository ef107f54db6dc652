"""PyDataset batches: every example once an epoch, seeded reshuffles, bucketed shapes, and `fit`
under each backend, where training on the tf.data pipeline gives the same weights."""

import functools

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.data import END_ID
from keras_transformer.data import PAD_ID
from keras_transformer.data import START_ID


def chars(texts):
    """Characters as ids 4..63 (ids 0-3 are the special tokens); plain Python, no TensorFlow."""
    return [[ord(c) % 60 + 4 for c in text] for text in texts]


PAIRS = [(f"message {'x' * (i % 23)} {i}", f"Meldung {'y' * (i % 43)} {i}") for i in range(300)]
TEXTS = [source for source, _ in PAIRS]


def translation(**arguments):
    arguments = dict(tokens_per_batch=256, max_length=48, bucket_width=16, seed=3) | arguments
    return kt.data.TranslationBatches(PAIRS, chars, **arguments)


def language_model(**arguments):
    arguments = dict(sequence_length=16, batch_size=8, seed=3) | arguments
    return kt.data.LanguageModelBatches(TEXTS, chars, **arguments)


def flat(batch):
    """A batch as a list of arrays, whatever its nesting."""
    inputs, labels = batch
    if isinstance(inputs, dict):
        return [np.asarray(inputs["source"]), np.asarray(inputs["target"]), np.asarray(labels)]
    return [np.asarray(inputs), np.asarray(labels)]


def epoch_of(data):
    """Every batch of the data's current epoch in one pass, as `fit` reads them."""
    data.on_epoch_begin()
    batches = [flat(data[i]) for i in range(len(data))]
    data.on_epoch_end()
    return batches


def assert_same_batches(first, second):
    assert len(first) == len(second)
    for one, other in zip(first, second):
        assert len(one) == len(other)
        for a, b in zip(one, other):
            assert a.dtype == b.dtype == np.int32
            np.testing.assert_array_equal(a, b)


def test_each_epoch_holds_every_pair_once_with_special_tokens_and_buckets():
    data = translation(shuffle=True, drop_remainder=False)
    expected = sorted(
        (tuple(chars([s])[0] + [END_ID]), tuple(chars([t])[0] + [END_ID])) for s, t in PAIRS
        if len(s) < 48 and len(t) < 48
    )
    assert len(expected) < len(PAIRS)  # some pairs are too long and left out
    for _ in range(2):
        seen = []
        for source, target, labels in epoch_of(data):
            width = source.shape[1]
            assert width in (16, 32, 48) and source.shape[0] <= 256 // width
            assert source.shape == target.shape == labels.shape
            # Teacher forcing: the decoder input is the labels shifted right behind START.
            np.testing.assert_array_equal(target[:, 0], START_ID)
            np.testing.assert_array_equal(target[:, 1:][target[:, 1:] != PAD_ID],
                                          labels[:, :-1][target[:, 1:] != PAD_ID])
            np.testing.assert_array_equal((target != PAD_ID).sum(1), (labels != PAD_ID).sum(1))
            # Each batch is padded to its bucket: its longest row needs this bucket.
            longest = max((source != PAD_ID).sum(1).max(), (labels != PAD_ID).sum(1).max())
            assert width - 16 < longest <= width
            seen += [(tuple(s[s != PAD_ID]), tuple(l[l != PAD_ID])) for s, l in zip(source, labels)]
        assert sorted(seen) == expected


def test_reshuffles_each_epoch_the_same_way_for_the_same_seed():
    for make in (translation, language_model):
        first, again, other = make(), make(), make(seed=4)
        epochs = [epoch_of(first) for _ in range(2)]
        assert_same_batches(epochs[0], epoch_of(again))
        assert_same_batches(epochs[1], epoch_of(again))
        assert len(epochs[0]) == len(epochs[1])
        assert any(not np.array_equal(a[0], b[0]) for a, b in zip(*epochs))
        assert any(not np.array_equal(a[0], b[0]) for a, b in zip(epochs[0], epoch_of(other)))


def test_training_drops_partial_batches_so_shapes_repeat():
    shapes = [batch[0].shape for batch in epoch_of(translation(tokens_per_batch=512))]
    # Every batch full (the 16-token bucket holds fewer than the 32 pairs of one batch).
    assert set(shapes) == {(16, 32), (10, 48)} and len(shapes) > 2


def test_without_shuffle_partial_batches_come_last_as_a_stream_flushes_them():
    sizes = [batch[0].shape[0] * batch[0].shape[1] for batch in epoch_of(
        translation(tokens_per_batch=512, shuffle=False))]
    full = [size > 512 - 48 for size in sizes]  # 512 // L rows of L tokens: at most L short
    assert full.count(False) == 3 and full == sorted(full, reverse=True)


def test_the_epoch_moves_on_after_a_whole_pass_only_and_partial_passes_add_up():
    data = language_model()
    first = flat(data[0])
    data.on_epoch_end()  # a read outside a pass does not count
    assert data.epoch == 0
    half = len(data) // 2
    for indices in (range(half), range(half, len(data))):  # fit(steps_per_epoch=...) passes
        data.on_epoch_begin()
        for index in indices:
            data[index]
        data.on_epoch_end()
        assert data.epoch == (0 if indices.start == 0 else 1)
    np.testing.assert_array_equal(first[0], flat(data.batch(0, 0))[0])
    assert not np.array_equal(first[0], flat(data[0])[0])  # epoch 1 is shuffled anew


def test_reads_a_prefetcher_makes_between_two_passes_count_toward_the_second():
    # Keras' TensorFlow carrier prefetches: with steps_per_epoch, the reader of the first
    # half-pass reads some of the second half after on_epoch_end, before on_epoch_begin.
    data = language_model(batch_size=10)  # 44 batches
    half = len(data) // 2
    data.on_epoch_begin()
    for index in range(half):
        data[index]
    data.on_epoch_end()
    for index in range(half, half + 4):  # prefetched between the passes
        data[index]
    data.on_epoch_begin()
    for index in range(half + 4, len(data)):
        data[index]
    data.on_epoch_end()
    assert data.epoch == 1


@pytest.mark.parametrize("epochs, moved_on", [(1, 0), (2, 1)])
def test_fit_with_half_epochs_moves_on_after_two_of_them(epochs, moved_on):
    data = language_model(batch_size=10)  # 44 batches
    model = kt.DecoderOnly(vocab_size=64, num_layers=1, d_model=16, num_heads=2, d_ff=32,
                           max_length=16)
    model.compile(optimizer="adam")
    model.fit(data, epochs=epochs, steps_per_epoch=22, shuffle=False, verbose=0)
    assert data.epoch == moved_on


def test_no_batch_to_make_is_an_error_naming_what_to_change():
    with pytest.raises(ValueError, match="`tokens_per_batch`"):
        kt.data.TranslationBatches(PAIRS[:5], chars, tokens_per_batch=4096, max_length=64)
    with pytest.raises(ValueError, match="`batch_size`"):
        language_model(batch_size=10_000)


def test_a_tokenizer_must_give_one_sequence_per_text():
    with pytest.raises(ValueError, match="`tokenizer`"):
        kt.data.token_ids(["a", "b"], lambda texts: [[5]])
    with pytest.raises(ValueError, match="`texts`"):
        kt.data.token_ids("a text", chars)


def test_language_model_windows_follow_the_stream_in_order_without_shuffle():
    texts = ["abcdefghij", "klmnopqrstuvwxyz"]
    data = kt.data.LanguageModelBatches(texts, chars, sequence_length=5, batch_size=2,
                                        shuffle=False)
    stream = chars(texts[:1])[0] + [END_ID] + chars(texts[1:])[0] + [END_ID]
    assert len(data) == (len(stream) - 1) // 5 // 2
    inputs, labels = data[0]
    assert inputs.shape == labels.shape == (2, 5)
    np.testing.assert_array_equal(inputs, [stream[0:5], stream[5:10]])
    np.testing.assert_array_equal(labels, [stream[1:6], stream[6:11]])
    with pytest.raises(IndexError):
        data[len(data)]


@pytest.mark.parametrize("make, arguments, name", [
    (translation, dict(tokens_per_batch=0), "tokens_per_batch"),
    (translation, dict(tokens_per_batch=16, max_length=32), "tokens_per_batch"),
    (translation, dict(max_length=1), "max_length"),
    (translation, dict(bucket_width=0), "bucket_width"),
    (translation, dict(shuffle="yes"), "shuffle"),
    (translation, dict(drop_remainder=1), "drop_remainder"),
    (language_model, dict(seed=-1), "seed"),
    (language_model, dict(sequence_length=0), "sequence_length"),
    (language_model, dict(batch_size=1.5), "batch_size"),
    (language_model, dict(separator_id=-1), "separator_id"),
])
def test_arguments_are_validated(make, arguments, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        make(**arguments)


def _trained_weights(model_cls, data, **arguments):
    keras.utils.set_random_seed(1)
    model = model_cls(vocab_size=64, num_layers=1, d_model=16, num_heads=2, d_ff=32,
                      dropout=0.0, **arguments)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    # fit's own shuffle would reorder a PyDataset's batches with Python's `random`.
    history = model.fit(data, epochs=2, shuffle=False, verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2 * len(data)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[1] < losses[0]
    return [keras.ops.convert_to_numpy(w) for w in model.weights]


FAMILIES = {
    "EncoderDecoder": (
        "EncoderDecoder", dict(), lambda: translation(tokens_per_batch=512),
        lambda: kt.data.translation_dataset(PAIRS, chars, tokens_per_batch=512, max_length=48,
                                            bucket_width=16, seed=3)),
    "DecoderOnly": (
        "DecoderOnly", dict(max_length=16), language_model,
        lambda: kt.data.language_model_dataset(TEXTS, chars, sequence_length=16, batch_size=8,
                                               seed=3)),
    # Three batches: a reader that runs ahead would finish an epoch while fit builds the model.
    "DecoderOnly-3-batches": (
        "DecoderOnly", dict(max_length=16), lambda: language_model(batch_size=120),
        lambda: kt.data.language_model_dataset(TEXTS, chars, sequence_length=16,
                                               batch_size=120, seed=3)),
}


@functools.cache
def _fit_on_py_dataset(case):
    """(trained weights, the PyDataset's epoch after fit) of `FAMILIES[case]`, trained once
    for both tests below: `_trained_weights` seeds itself, so the order they run in is
    immaterial."""
    family, arguments, batches, _ = FAMILIES[case]
    data = batches()
    return _trained_weights(getattr(kt, family), data, **arguments), data.epoch


@pytest.mark.parametrize("case", FAMILIES)
def test_fit_trains_on_the_py_dataset_and_moves_it_on_each_epoch(case):
    """The PyDataset alone feeds `fit` under this backend, TensorFlow installed or not."""
    _, epoch = _fit_on_py_dataset(case)
    assert epoch == 2  # fit moved it on after each epoch


@pytest.mark.parametrize("case", FAMILIES)
def test_fit_on_the_py_dataset_equals_fit_on_the_tf_data_pipeline(case):
    """Training on either carrier gives the same weights: the same batches, reshuffled the
    same way at the second epoch."""
    pytest.importorskip("tensorflow", reason="the tf.data pipeline needs TensorFlow (a JAX- "
                        "or PyTorch-only install runs the PyDataset test above only)")
    family, arguments, _, pipeline = FAMILIES[case]
    on_py_dataset, _ = _fit_on_py_dataset(case)
    on_tf_data = _trained_weights(getattr(kt, family), pipeline(), **arguments)
    assert len(on_py_dataset) == len(on_tf_data)
    for ours, theirs in zip(on_py_dataset, on_tf_data):
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)


@pytest.mark.parametrize("ids,message", [
    ([2**32 + 5], r"token ids from 4294967301 to 4294967301; ids must lie in \[0, 2\*\*31 - 1\]"),
    ([-1, 3], r"token ids from -1 to 3"),
    ([4.7], r"must give integer token ids; it gave dtype float64"),
])
def test_a_tokenizer_giving_ids_a_cast_would_change_is_refused(ids, message):
    """int32 would wrap 2**32 + 5 to 5 and truncate 4.7 to 4: the id range would be wrong."""
    with pytest.raises(ValueError, match=message):
        kt.data.token_ids(["a"], lambda texts: [np.array(ids)] * len(texts))
