"""TokenEmbedding: lookup, sqrt(d_model) scaling, tied projection, id checks."""

import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import TokenEmbedding
from keras_transformer.testing import run_layer_test

IDS = np.array([[1, 2, 3, 0], [4, 4, 9, 5]], "int32")


def _built(vocab_size=10, d_model=16, scale=False):
    layer = TokenEmbedding(vocab_size=vocab_size, d_model=d_model, scale=scale)
    layer.build()
    table = np.random.default_rng(0).normal(size=(vocab_size, d_model)).astype("float32")
    layer.embeddings.assign(table)
    return layer, table


def test_lookup_returns_table_rows():
    layer, table = _built()
    out = ops.convert_to_numpy(layer(IDS))
    assert out.shape == (2, 4, 16)
    np.testing.assert_array_equal(out, table[IDS])


@pytest.mark.parametrize("d_model", [8, 16, 32])
def test_scale_multiplies_by_sqrt_d_model(d_model):
    unscaled, table = _built(d_model=d_model, scale=False)
    scaled, _ = _built(d_model=d_model, scale=True)
    plain = ops.convert_to_numpy(unscaled(IDS))
    big = ops.convert_to_numpy(scaled(IDS))
    expected = table[IDS] * np.float32(math.sqrt(d_model))
    np.testing.assert_array_equal(big, expected)
    np.testing.assert_allclose(big / plain, math.sqrt(d_model), rtol=1e-6)


def test_project_is_hidden_times_table_transpose():
    layer, table = _built(vocab_size=10, d_model=16)
    hidden = np.random.default_rng(1).normal(size=(2, 3, 16)).astype("float32")
    logits = ops.convert_to_numpy(layer.project(hidden))
    assert logits.shape == (2, 3, 10)
    expected = hidden.astype(np.float64) @ table.T.astype(np.float64)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)


def test_project_is_tied_to_the_embedding():
    layer, _ = _built(vocab_size=10, d_model=16)
    new_table = np.random.default_rng(2).normal(size=(10, 16)).astype("float32")
    layer.embeddings.assign(new_table)
    hidden = np.ones((1, 1, 16), "float32")
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer.project(hidden))[0, 0], new_table.sum(-1), rtol=1e-5
    )
    assert layer.count_params() == 10 * 16  # one matrix serves both directions


def test_project_does_not_scale():
    # The tied projection uses the raw table even when the lookup is scaled.
    layer, table = _built(vocab_size=10, d_model=16, scale=True)
    hidden = np.random.default_rng(3).normal(size=(1, 2, 16)).astype("float32")
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer.project(hidden)), hidden @ table.T, rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    "ids",
    [
        np.array([[1, 10]], "int32"),  # == vocab_size
        np.array([[1, 99]], "int32"),
        np.array([[-1, 2]], "int32"),
        np.array([[3, -5]], "int64"),
    ],
)
def test_out_of_range_ids_raise_eager(ids):
    layer, _ = _built(vocab_size=10)
    with pytest.raises(ValueError, match="vocab_size"):
        layer(ids)


def test_out_of_range_tensor_ids_raise_eager():
    layer, _ = _built(vocab_size=10)
    with pytest.raises(ValueError, match="vocab_size"):
        layer(ops.convert_to_tensor(np.array([[0, 10]], "int32")))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_float_ids_raise(dtype):
    layer, _ = _built(vocab_size=10)
    with pytest.raises(ValueError, match="integer"):
        layer(np.array([[1.0, 2.0]], dtype))


def test_boundary_ids_are_fine():
    layer, table = _built(vocab_size=10)
    out = ops.convert_to_numpy(layer(np.array([[0, 9]], "int32")))
    np.testing.assert_array_equal(out[0], table[[0, 9]])


def test_run_layer_test():
    run_layer_test(
        TokenEmbedding,
        init_kwargs={"vocab_size": 12, "d_model": 8, "scale": True},
        inputs={"ids": np.array([[1, 2, 3], [4, 11, 0]], "int32")},
        expected_output_shape=(2, 3, 8),
        expected_num_params=12 * 8,
        expected_num_trainable_weights=1,
    )


def test_run_layer_test_unscaled():
    run_layer_test(
        TokenEmbedding,
        init_kwargs={"vocab_size": 12, "d_model": 8, "scale": False},
        inputs={"ids": np.array([[1, 2, 3], [4, 11, 0]], "int32")},
        expected_output_shape=(2, 3, 8),
        expected_num_params=12 * 8,
    )


def test_mixed_precision_output_dtype():
    layer = TokenEmbedding(vocab_size=10, d_model=8, scale=True, dtype="mixed_bfloat16")
    out = layer(IDS)
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert keras.backend.standardize_dtype(layer.embeddings.dtype) == "float32"
    logits = layer.project(out)
    assert keras.backend.standardize_dtype(logits.dtype) == "bfloat16"


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"vocab_size": 0, "d_model": 8}, "vocab_size"),
        ({"vocab_size": 10, "d_model": 0}, "d_model"),
        ({"vocab_size": 10.5, "d_model": 8}, "vocab_size"),
    ],
)
def test_bad_arguments_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TokenEmbedding(**kwargs)
