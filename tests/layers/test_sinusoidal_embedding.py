"""SinusoidalEmbedding against the paper's formula, computed in NumPy float64."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import SinusoidalEmbedding
from keras_transformer.testing import run_layer_test

EPS32 = np.finfo(np.float32).eps


def _reference(length, d_model, start=0, max_wavelength=10000.0):
    """PE[pos, 2i] = sin(pos / w^(2i/d)), PE[pos, 2i+1] = cos(pos / w^(2i/d)), float64."""
    pos = np.arange(start, start + length, dtype=np.float64)[:, None]
    two_i = 2.0 * np.arange(d_model // 2, dtype=np.float64)[None, :]
    angles = pos / max_wavelength ** (two_i / d_model)  # (T, d/2)
    table = np.empty((length, d_model), np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def _table(layer, length, d_model, **kwargs):
    """The layer's (T, d_model) table, taken from batch row 0."""
    out = layer(np.zeros((1, length, d_model), "float32"), **kwargs)
    return ops.convert_to_numpy(out)[0].astype(np.float64)


@pytest.mark.parametrize("d_model", [8, 16, 32])
def test_interleaved_matches_paper_formula(d_model):
    # 16 positions: float32 holds these angles to ~1e-6 (longer: see below).
    got = _table(SinusoidalEmbedding(), 16, d_model)
    np.testing.assert_allclose(got, _reference(16, d_model), rtol=0, atol=1e-6)
    # Spot checks of the formula's corners.
    assert got[0, 0] == 0.0 and got[0, 1] == 1.0  # sin(0), cos(0)
    np.testing.assert_allclose(got[1, 0], np.sin(1.0), atol=1e-7)
    np.testing.assert_allclose(got[1, 1], np.cos(1.0), atol=1e-7)


def test_max_wavelength_is_the_base():
    got = _table(SinusoidalEmbedding(max_wavelength=100.0), 16, 16)
    np.testing.assert_allclose(
        got, _reference(16, 16, max_wavelength=100.0), rtol=0, atol=1e-6
    )
    # A different base gives a different table.
    assert np.abs(got - _reference(16, 16)).max() > 1e-2


def test_concatenated_layout_is_sin_then_cos():
    d_model = 16
    reference = _reference(16, d_model)
    got = _table(SinusoidalEmbedding(layout="concatenated"), 16, d_model)
    np.testing.assert_allclose(got[:, : d_model // 2], reference[:, 0::2], atol=1e-6)
    np.testing.assert_allclose(got[:, d_model // 2 :], reference[:, 1::2], atol=1e-6)
    # Same numbers as the interleaved layout, permuted.
    interleaved = _table(SinusoidalEmbedding(), 16, d_model)
    np.testing.assert_array_equal(
        got, np.concatenate([interleaved[:, 0::2], interleaved[:, 1::2]], axis=-1)
    )
    assert not np.allclose(got, interleaved)


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
def test_start_index_gives_rows_of_a_longer_table(layout):
    layer = SinusoidalEmbedding(layout=layout)
    longer = _table(layer, 20, 16)
    for k in (0, 1, 7, 13):
        np.testing.assert_allclose(
            _table(layer, 5, 16, start_index=k), longer[k : k + 5], atol=1e-6
        )
    # A scalar tensor start index (as in a cached decoding step) works too.
    np.testing.assert_allclose(
        _table(layer, 3, 16, start_index=ops.convert_to_tensor(9, "int32")),
        longer[9:12],
        atol=1e-6,
    )


def test_start_index_matches_formula():
    got = _table(SinusoidalEmbedding(), 4, 16, start_index=12)
    np.testing.assert_allclose(got, _reference(4, 16, start=12), atol=1e-6)


def test_any_length_works():
    # No table to run out of: 5,000 positions (far past any training length).
    length, d_model = 5000, 16
    got = _table(SinusoidalEmbedding(), length, d_model)
    assert got.shape == (length, d_model)
    assert np.all(np.isfinite(got))
    # float32 angles are exact to ~half an ulp of `pos`, so the error may grow
    # with pos: allow one float32 ulp of the angle per row (plus 1e-6).
    tolerance = 1e-6 + EPS32 * np.arange(length)[:, None]
    error = np.abs(got - _reference(length, d_model))
    assert np.all(error <= tolerance), error.max()
    # Rows stay on the unit circle pairwise: sin^2 + cos^2 = 1.
    np.testing.assert_allclose(got[:, 0::2] ** 2 + got[:, 1::2] ** 2, 1.0, atol=1e-5)


def _rotation(k, d_model, max_wavelength=10000.0):
    """Block-diagonal R_k (depends on k only) with PE[pos + k] = R_k PE[pos]."""
    frequencies = 1.0 / max_wavelength ** (2.0 * np.arange(d_model // 2) / d_model)
    rotation = np.zeros((d_model, d_model))
    for i, w in enumerate(frequencies):
        c, s = np.cos(k * w), np.sin(k * w)
        # sin(a + b) = sin a cos b + cos a sin b; cos(a + b) = cos a cos b - sin a sin b
        rotation[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return rotation


@pytest.mark.parametrize("k", [1, 3, 10])
def test_shift_by_k_is_a_fixed_rotation(k):
    d_model, count = 16, 64
    table = _table(SinusoidalEmbedding(), count + 10, d_model)[: count + k]
    rotation = _rotation(k, d_model)
    # R_k is a rotation: orthogonal with determinant 1, block-diagonal 2x2.
    np.testing.assert_allclose(rotation @ rotation.T, np.eye(d_model), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(rotation), 1.0, atol=1e-12)
    # The same matrix maps every row pos to row pos + k.
    np.testing.assert_allclose(table[k:], table[:count] @ rotation.T, rtol=0, atol=1e-5)
    # It is not the identity: the shift really moves the rows.
    assert np.abs(table[k:] - table[:count]).max() > 0.1
    # And the rotation for a different shift does not fit.
    assert np.abs(table[k:] - table[:count] @ _rotation(k + 1, d_model).T).max() > 1e-2


def test_output_broadcast_over_batch_and_independent_of_values():
    layer = SinusoidalEmbedding()
    x = np.random.default_rng(0).normal(size=(3, 6, 8)).astype("float32")
    out = ops.convert_to_numpy(layer(x))
    assert out.shape == (3, 6, 8)
    for b in range(3):
        np.testing.assert_array_equal(out[b], _table(layer, 6, 8))


def test_no_weights():
    layer = SinusoidalEmbedding()
    layer(np.zeros((1, 4, 8), "float32"))
    assert layer.weights == []
    assert layer.count_params() == 0


def test_traced_model_matches_eager():
    layer = SinusoidalEmbedding()
    inputs = keras.Input(shape=(None, 8))
    model = keras.Model(inputs, layer(inputs))
    x = np.zeros((2, 11, 8), "float32")
    np.testing.assert_allclose(
        model.predict(x, verbose=0), ops.convert_to_numpy(layer(x)), atol=1e-6
    )
    np.testing.assert_allclose(model.predict(x, verbose=0)[0], _reference(11, 8), atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_compute_dtype(dtype):
    out = SinusoidalEmbedding(dtype=dtype)(np.zeros((1, 5, 8), "float32"))
    assert keras.backend.standardize_dtype(out.dtype) == dtype


def test_run_layer_test():
    run_layer_test(
        SinusoidalEmbedding,
        init_kwargs={"max_wavelength": 10000.0, "layout": "interleaved"},
        inputs={"inputs": np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")},
        expected_output_shape=(2, 5, 8),
        expected_num_params=0,
        expected_num_trainable_weights=0,
        run_training=False,
    )


def test_run_layer_test_concatenated():
    run_layer_test(
        SinusoidalEmbedding,
        init_kwargs={"layout": "concatenated"},
        inputs={"inputs": np.zeros((2, 5, 8), "float32")},
        expected_output_shape=(2, 5, 8),
        expected_num_params=0,
        run_training=False,
    )


def test_bad_layout_raises():
    with pytest.raises(ValueError, match="layout") as info:
        SinusoidalEmbedding(layout="stacked")
    assert "interleaved" in str(info.value) and "concatenated" in str(info.value)


@pytest.mark.parametrize("d_model", [7, 9])
def test_odd_d_model_raises(d_model):
    with pytest.raises(ValueError, match="d_model"):
        SinusoidalEmbedding()(np.zeros((1, 4, d_model), "float32"))


@pytest.mark.parametrize("value", [0, -1.0])
def test_bad_max_wavelength_raises(value):
    with pytest.raises(ValueError, match="max_wavelength"):
        SinusoidalEmbedding(max_wavelength=value)
