"""The blocked banded path against dense attention over the `(T, T)` banded mask."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer import masks
from keras_transformer.layers import MultiHeadAttention
from keras_transformer.layers import banded_attention
from keras_transformer.layers import scaled_dot_product
from keras_transformer.testing import gradients

HEADS, D_HEAD = 2, 4


def _qkv(length, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(2, length, HEADS, D_HEAD)).astype("float32") for _ in range(3)]


def _key_mask(length):
    """Row 0: its last two keys are padding; row 1: its first four (left padding)."""
    mask = np.ones((2, length), bool)
    mask[0, -2:] = False
    mask[1, :4] = False
    return mask


def _blocked(window, key_mask):
    def attend(q, k, v):
        blocks = banded_attention.split(q, k, v, window, key_mask)
        out = scaled_dot_product.attend(blocks.queries, blocks.keys, blocks.values, blocks.mask)
        return blocks.merge(out)

    return attend


def _dense(window, key_mask):
    def attend(q, k, v):
        length = ops.shape(q)[1]
        mask = masks.merge_masks(
            masks.banded_mask(length, length, window), masks.key_mask_to_attention_mask(key_mask)
        )
        return scaled_dot_product.attend(q, k, v, mask)

    return attend


CASES = [  # (T, window): a window of one, a small one, w = T, T not a multiple of w
    (12, 1), (12, 3), (12, 12), (10, 4), (11, 3),
]


@pytest.mark.parametrize("padded", [False, True], ids=["no-padding", "padding"])
@pytest.mark.parametrize("length,window", CASES)
def test_blocked_path_equals_dense_masked_path_in_outputs_and_gradients(length, window, padded):
    q, k, v = _qkv(length)
    key_mask = _key_mask(length) if padded else None
    blocked, dense = _blocked(window, key_mask), _dense(window, key_mask)
    out = ops.convert_to_numpy(blocked(q, k, v))
    expected = ops.convert_to_numpy(dense(q, k, v))
    assert out.shape == expected.shape == (2, length, HEADS, D_HEAD)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    if padded and window <= 4:  # row 1's first query reads only padding: zeros, not NaN
        np.testing.assert_array_equal(out[1, 0], 0.0)

    cotangent = np.random.default_rng(1).normal(size=out.shape).astype("float32")

    def loss(path):
        return lambda q, k, v: ops.sum(ops.multiply(path(q, k, v), cotangent))

    for got, want in zip(gradients(loss(blocked), q, k, v), gradients(loss(dense), q, k, v)):
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_blocks_hold_only_the_band():
    """Scores are (B * n, w, 2w): linear in T, and no block reads past its own end."""
    q, k, v = _qkv(4096, seed=2)
    blocks = banded_attention.split(q, k, v, window=64)
    assert tuple(blocks.mask.shape) == (2 * 64, 64, 128)
    mask = ops.convert_to_numpy(blocks.mask)
    assert mask.sum() == 2 * 4096 * 64 - 2 * (64 * 63) // 2  # w keys a query, fewer at the start


def test_banded_layer_takes_the_blocked_path_and_matches_a_dense_layer_with_its_weights(
    attention_kernel_calls,
):
    """The layer on T > w runs windows of (w, 2w), and gives dense attention's answer."""
    length, window = 20, 4
    layer = MultiHeadAttention(num_heads=HEADS, mode="banded", window=window)
    x = np.random.default_rng(3).normal(size=(2, length, HEADS * D_HEAD)).astype("float32")
    key_mask = _key_mask(length)
    out = ops.convert_to_numpy(layer(x, key_mask=key_mask))
    assert attention_kernel_calls == [(False, False)]  # one masked kernel call, over windows
    q, k, v, _ = layer._project(x, None)
    dense = _dense(window, key_mask)(q, k, v)
    expected = layer.output_projection(ops.reshape(dense, (2, length, HEADS * D_HEAD)))
    np.testing.assert_allclose(out, ops.convert_to_numpy(expected), rtol=1e-5, atol=1e-5)


def test_probability_dropout_runs_over_the_windows():
    """Training with attention dropout keeps the band: a rate that drops nothing changes nothing."""
    layer = MultiHeadAttention(num_heads=HEADS, mode="banded", window=3, attention_dropout=1e-7)
    x = np.random.default_rng(4).normal(size=(2, 9, HEADS * D_HEAD)).astype("float32")
    trained = ops.convert_to_numpy(layer(x, training=True))
    np.testing.assert_allclose(trained, ops.convert_to_numpy(layer(x)), rtol=1e-5, atol=1e-6)
    dropped = MultiHeadAttention(num_heads=HEADS, mode="banded", window=3, attention_dropout=0.5)
    dropped.build(x.shape)
    dropped.set_weights(layer.get_weights())
    assert not np.allclose(ops.convert_to_numpy(dropped(x, training=True)), trained)


def _grouped(q, k, v, kv_heads):
    """`q` and the first `kv_heads` heads of `k` and `v` (grouped-query attention)."""
    return (q, k, v) if kv_heads is None else (q, k[:, :, :kv_heads], v[:, :, :kv_heads])


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="JAX's own windowed kernel")
@pytest.mark.parametrize("kv_heads", [None, 1])
def test_jax_windowed_kernel_uses_the_same_window_convention(kv_heads):
    """`local_window_size=(w - 1, 0)` is our band (XLA's implementation runs on CPU)."""
    q, k, v = _grouped(*_qkv(11), kv_heads)
    native = banded_attention.jax_windowed_attention(q, k, v, 3, implementation="xla")
    np.testing.assert_allclose(
        np.asarray(native), ops.convert_to_numpy(_blocked(3, None)(q, k, v)), rtol=1e-5, atol=1e-5
    )


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="PyTorch's FlexAttention")
@pytest.mark.parametrize("kv_heads", [None, 1])
def test_torch_flex_attention_uses_the_same_window_convention(kv_heads):
    """FlexAttention's band mask is ours (eager and forward only: its CPU limits)."""
    import torch

    q, k, v = _grouped(*_qkv(11), kv_heads)
    with torch.no_grad():
        native = banded_attention.torch_windowed_attention(
            *[torch.tensor(x) for x in (q, k, v)], 3, compiled=False
        )
    np.testing.assert_allclose(
        native.numpy(), ops.convert_to_numpy(_blocked(3, None)(q, k, v)), rtol=1e-5, atol=1e-5
    )


def test_no_native_kernel_on_cpu():
    q = ops.convert_to_tensor(_qkv(4)[0])
    assert banded_attention.native_kernel(q) is None
