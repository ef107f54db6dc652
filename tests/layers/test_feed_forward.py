"""FeedForward against NumPy: act(x W1 + b1) W2 + b2."""

import math

import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import FeedForward
from keras_transformer.testing import run_layer_test


def _relu(x):
    return np.maximum(x, 0.0)


def _gelu_tanh(x):
    # GPT-2's approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _gelu_erf(x):
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))


def _silu(x):
    return x / (1.0 + np.exp(-x))


REFERENCE = {"relu": _relu, "gelu": _gelu_tanh, "gelu_exact": _gelu_erf, "silu": _silu}


def _layer_and_weights(activation, d_model=16, d_ff=32, use_bias=True):
    layer = FeedForward(d_ff=d_ff, activation=activation, use_bias=use_bias)
    layer.build((None, None, d_model))
    rng = np.random.default_rng(0)
    # Random biases too (they start at zero); unit-variance pre-activations so
    # that the activation's nonlinear region is well used.
    weights = [
        (rng.normal(size=w.shape) / (np.sqrt(w.shape[0]) if w.ndim == 2 else 1.0)).astype("float32")
        for w in layer.get_weights()
    ]
    layer.set_weights(weights)
    return layer, [w.astype(np.float64) for w in weights]


def _reference(x, weights, activation, use_bias=True):
    x = x.astype(np.float64)
    if use_bias:
        w1, b1, w2, b2 = weights
        return REFERENCE[activation](x @ w1 + b1) @ w2 + b2
    w1, w2 = weights
    return REFERENCE[activation](x @ w1) @ w2


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_exact", "silu"])
def test_matches_numpy(activation):
    layer, weights = _layer_and_weights(activation)
    x = np.random.default_rng(1).normal(size=(2, 7, 16)).astype("float32")
    got = ops.convert_to_numpy(layer(x))
    assert got.shape == (2, 7, 16)
    np.testing.assert_allclose(got, _reference(x, weights, activation), rtol=1e-5, atol=1e-5)


def test_gelu_is_the_tanh_approximation():
    # The two GELUs differ by up to ~5e-4: the comparison above must tell them apart.
    layer, weights = _layer_and_weights("gelu")
    x = np.random.default_rng(1).normal(size=(2, 7, 16)).astype("float32")
    got = ops.convert_to_numpy(layer(x))
    erf_version = _reference(x, weights, "gelu_exact")
    assert np.abs(got - erf_version).max() > 1e-4  # 10x the tolerance below
    np.testing.assert_allclose(got, _reference(x, weights, "gelu"), rtol=1e-5, atol=1e-5)


def test_no_bias():
    layer, weights = _layer_and_weights("relu", use_bias=False)
    assert len(weights) == 2
    x = np.random.default_rng(1).normal(size=(2, 7, 16)).astype("float32")
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer(x)),
        _reference(x, weights, "relu", use_bias=False),
        rtol=1e-5,
        atol=1e-5,
    )


def test_position_wise():
    # Each position is transformed alone: permuting positions permutes outputs.
    layer, _ = _layer_and_weights("gelu")
    x = np.random.default_rng(1).normal(size=(1, 6, 16)).astype("float32")
    perm = np.array([3, 0, 5, 1, 4, 2])
    np.testing.assert_allclose(
        ops.convert_to_numpy(layer(x[:, perm])),
        ops.convert_to_numpy(layer(x))[:, perm],
        rtol=1e-6,
        atol=1e-6,
    )


def test_weight_shapes():
    layer = FeedForward(d_ff=32)
    layer.build((None, None, 16))
    shapes = {w.path.split("/", 1)[1]: tuple(w.shape) for w in layer.weights}
    assert shapes == {
        "inner/kernel": (16, 32),
        "inner/bias": (32,),
        "outer/kernel": (32, 16),
        "outer/bias": (16,),
    }


def test_run_layer_test():
    d_model, d_ff = 16, 32
    run_layer_test(
        FeedForward,
        init_kwargs={"d_ff": d_ff, "activation": "gelu"},
        inputs={"inputs": np.random.default_rng(0).normal(size=(2, 7, d_model)).astype("float32")},
        expected_output_shape=(2, 7, d_model),
        expected_num_params=d_model * d_ff + d_ff + d_ff * d_model + d_model,
        expected_num_trainable_weights=4,
    )


@pytest.mark.parametrize("activation", ["tanh", "Relu", "gelu_tanh", None])
def test_bad_activation_raises(activation):
    with pytest.raises(ValueError, match="activation") as info:
        FeedForward(d_ff=16, activation=activation)
    assert "'relu'" in str(info.value) and "'gelu'" in str(info.value)


@pytest.mark.parametrize("d_ff", [0, -4, 3.0, None])
def test_bad_d_ff_raises(d_ff):
    with pytest.raises(ValueError, match="d_ff"):
        FeedForward(d_ff=d_ff)


@pytest.mark.parametrize("kind,gate", [("swiglu", _silu), ("geglu", _gelu_erf)])
@pytest.mark.parametrize("use_bias", [True, False])
def test_gated_kinds_match_numpy(kind, gate, use_bias):
    """`(g(x W_gate + b_g) * (x W_in + b_in)) W_out + b_out`, Shazeer (2020)."""
    layer = FeedForward(d_ff=32, kind=kind, use_bias=use_bias)
    layer.build((None, None, 16))
    rng = np.random.default_rng(0)
    named = {}
    for w in layer.weights:
        value = rng.normal(size=w.shape) / (np.sqrt(w.shape[0]) if len(w.shape) == 2 else 1.0)
        w.assign(value.astype("float32"))
        named[w.path.split("/", 1)[1]] = value
    x = rng.normal(size=(2, 7, 16))

    def dense(name, h):
        return h @ named[f"{name}/kernel"] + named.get(f"{name}/bias", 0.0)

    expected = dense("outer", gate(dense("gate", x)) * dense("inner", x))
    got = ops.convert_to_numpy(layer(x.astype("float32")))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # The gate is a third matrix: 1.5x the weights of the plain MLP at the same d_ff.
    assert layer.count_params() == 3 * 16 * 32 + use_bias * (2 * 32 + 16)


def test_gated_run_layer_test():
    run_layer_test(
        FeedForward,
        init_kwargs={"d_ff": 24, "kind": "swiglu", "use_bias": False},
        inputs={"inputs": np.random.default_rng(0).normal(size=(2, 5, 8)).astype("float32")},
        expected_output_shape=(2, 5, 8),
        expected_num_params=3 * 8 * 24,
        expected_num_trainable_weights=3,
    )


@pytest.mark.parametrize("kind", ["glu", "SwiGLU", None])
def test_bad_kind_raises(kind):
    with pytest.raises(ValueError, match="kind"):
        FeedForward(d_ff=16, kind=kind)
