"""LearnedPositionEmbedding: table rows, offsets, and no silent overflow."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import LearnedPositionEmbedding
from keras_transformer.testing import run_layer_test


def _built(max_length=10, d_model=8):
    layer = LearnedPositionEmbedding(max_length=max_length)
    layer.build((None, None, d_model))
    # Distinct rows so that any wrong row or offset shows.
    table = np.random.default_rng(0).normal(size=(max_length, d_model)).astype("float32")
    layer.table.assign(table)
    return layer, table


def test_returns_table_rows():
    layer, table = _built()
    x = np.random.default_rng(1).normal(size=(3, 6, 8)).astype("float32")
    out = ops.convert_to_numpy(layer(x))
    assert out.shape == (3, 6, 8)
    for b in range(3):  # same rows for every batch entry, whatever the input values
        np.testing.assert_array_equal(out[b], table[:6])


def test_full_table_fits():
    layer, table = _built(max_length=10)
    out = ops.convert_to_numpy(layer(np.zeros((1, 10, 8), "float32")))
    np.testing.assert_array_equal(out[0], table)


@pytest.mark.parametrize("start", [1, 4, 7])
def test_start_index_offsets_rows(start):
    layer, table = _built(max_length=10)
    out = ops.convert_to_numpy(layer(np.zeros((2, 3, 8), "float32"), start_index=start))
    np.testing.assert_array_equal(out[0], table[start : start + 3])
    np.testing.assert_array_equal(out[1], table[start : start + 3])


def test_tensor_start_index():
    layer, table = _built(max_length=10)
    start = ops.convert_to_tensor(5, "int32")
    out = ops.convert_to_numpy(layer(np.zeros((1, 2, 8), "float32"), start_index=start))
    np.testing.assert_array_equal(out[0], table[5:7])


def test_single_cached_step_reads_its_row():
    layer, table = _built(max_length=10)
    out = ops.convert_to_numpy(layer(np.zeros((1, 1, 8), "float32"), start_index=9))
    np.testing.assert_array_equal(out[0, 0], table[9])


def test_table_shape_and_initializer():
    layer = LearnedPositionEmbedding(max_length=1024)
    layer.build((None, None, 16))
    assert tuple(layer.table.shape) == (1024, 16)
    values = ops.convert_to_numpy(layer.table)
    assert 0.005 < values.std() < 0.02  # GPT-2: normal, stddev 0.01


# --- overflow raises, never clamps -------------------------------------------------


def test_too_long_raises_eager():
    layer, _ = _built(max_length=10)
    with pytest.raises(ValueError, match="max_length"):
        layer(np.zeros((1, 11, 8), "float32"))


@pytest.mark.parametrize("start, length", [(1, 10), (8, 3), (10, 1)])
def test_start_index_past_the_end_raises_eager(start, length):
    layer, _ = _built(max_length=10)
    with pytest.raises(ValueError, match="max_length"):
        layer(np.zeros((1, length, 8), "float32"), start_index=start)


def test_too_long_static_input_raises_in_predict():
    inputs = keras.Input(shape=(12, 8))
    model = keras.Model(inputs, LearnedPositionEmbedding(max_length=10)(inputs))
    with pytest.raises(ValueError, match="max_length"):
        model.predict(np.zeros((2, 12, 8), "float32"), verbose=0)


def _dynamic_length_model(max_length=10, d_model=8, compile=False):
    inputs = keras.Input(shape=(None, d_model))
    model = keras.Model(inputs, LearnedPositionEmbedding(max_length=max_length)(inputs))
    if compile:
        model.compile(loss="mse")
    return model


@pytest.mark.parametrize("compile", [False, True])
def test_too_long_raises_in_predict(compile):
    model = _dynamic_length_model(compile=compile)
    with pytest.raises(ValueError, match="max_length"):
        model.predict(np.zeros((2, 12, 8), "float32"), verbose=0)


def _predict_after_shorter_sequences(model):
    """Predict two fitting lengths first (the traced predict function may then
    retrace with a relaxed, unknown length), then one that does not fit."""
    for length in (4, 6):
        out = model.predict(np.zeros((2, length, 8), "float32"), verbose=0)
        assert out.shape == (2, length, 8)
    model.predict(np.zeros((2, 12, 8), "float32"), verbose=0)


@pytest.mark.parametrize("compile", [False, True])
def test_too_long_raises_in_predict_after_retracing(compile):
    """Never a silent clamp, also after a retrace with an unknown length.

    TensorFlow retraces `predict` with the length relaxed to None, so the
    length is unknown when the layer is traced and the check happens at run
    time instead: a graph cannot raise ValueError, and its Slice op raises
    InvalidArgumentError stating the table's bound (10 rows).
    """
    model = _dynamic_length_model(compile=compile)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        expected = pytest.raises(tf.errors.InvalidArgumentError, match=r"in \[0, 10\]")
    else:
        expected = pytest.raises(ValueError, match="max_length")
    with expected:
        _predict_after_shorter_sequences(model)


def test_fitting_lengths_work_in_predict():
    model = _dynamic_length_model()
    table = ops.convert_to_numpy(model.layers[-1].table)
    for length in (3, 10):
        out = model.predict(np.zeros((2, length, 8), "float32"), verbose=0)
        np.testing.assert_allclose(out[1], table[:length], atol=1e-7)


# --- the standard layer test and arguments --------------------------------------------


def test_run_layer_test():
    run_layer_test(
        LearnedPositionEmbedding,
        init_kwargs={"max_length": 8},
        inputs={"inputs": np.random.default_rng(0).normal(size=(2, 5, 16)).astype("float32")},
        expected_output_shape=(2, 5, 16),
        expected_num_params=8 * 16,
        expected_num_trainable_weights=1,
    )


def test_training_moves_only_used_rows():
    layer = LearnedPositionEmbedding(max_length=8)
    inputs = keras.Input(shape=(5, 4))
    model = keras.Model(inputs, layer(inputs))
    before = ops.convert_to_numpy(layer.table).copy()
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    model.fit(np.zeros((2, 5, 4), "float32"), np.ones((2, 5, 4), "float32"), verbose=0)
    after = ops.convert_to_numpy(layer.table)
    assert np.all(after[:5] != before[:5])
    np.testing.assert_array_equal(after[5:], before[5:])


@pytest.mark.parametrize("max_length", [0, -3, 2.5, None, True])
def test_bad_max_length_raises(max_length):
    with pytest.raises(ValueError, match="max_length"):
        LearnedPositionEmbedding(max_length=max_length)
