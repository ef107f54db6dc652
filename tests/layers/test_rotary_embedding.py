"""Rotary positions: a NumPy reference of the rotation, and what it is for (relative positions)."""

import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import MultiHeadAttention
from keras_transformer.layers import rotary_embedding


def np_rotate(x, start, base=10000.0, fraction=1.0):
    """Feature i paired with i + r/2 and turned by `position * base^(-2i / r)`, in float64."""
    x = np.asarray(x, np.float64)
    d_head = x.shape[-1]
    r = int(d_head * fraction) // 2 * 2
    out = x.copy()
    for t in range(x.shape[1]):
        for i in range(r // 2):
            angle = (start + t) * base ** (-2.0 * i / r)
            a, b = x[:, t, :, i], x[:, t, :, i + r // 2]
            out[:, t, :, i] = a * np.cos(angle) - b * np.sin(angle)
            out[:, t, :, i + r // 2] = b * np.cos(angle) + a * np.sin(angle)
    return out


@pytest.mark.parametrize("start,base,fraction", [(0, 10000.0, 1.0), (13, 500.0, 1.0),
                                                 (3, 10000.0, 0.5)])
def test_rotate_matches_the_pairwise_rotation(rng, start, base, fraction):
    x = rng.normal(size=(2, 5, 3, 8)).astype("float32")
    got = ops.convert_to_numpy(rotary_embedding.rotate(x, start, base, fraction))
    np.testing.assert_allclose(got, np_rotate(x, start, base, fraction), atol=1e-5)
    if fraction < 1:  # the features past the rotated ones pass through
        np.testing.assert_array_equal(got[..., 4:], x[..., 4:])


def _scores(q, k):
    return np.einsum("bthd,bshd->bhts", ops.convert_to_numpy(q), ops.convert_to_numpy(k))


def test_shifting_every_position_leaves_the_scores_unchanged(rng):
    q = rng.normal(size=(1, 6, 2, 8)).astype("float32")
    k = rng.normal(size=(1, 6, 2, 8)).astype("float32")
    at_zero = _scores(rotary_embedding.rotate(q, 0), rotary_embedding.rotate(k, 0))
    for shift in (1, 37, 1000):
        shifted = _scores(rotary_embedding.rotate(q, shift), rotary_embedding.rotate(k, shift))
        np.testing.assert_allclose(shifted, at_zero, atol=2e-3, rtol=1e-4)
    # Shifting the queries alone changes every relative distance, and the scores.
    moved = _scores(rotary_embedding.rotate(q, 5), rotary_embedding.rotate(k, 0))
    assert np.abs(moved - at_zero).max() > 0.1


@pytest.mark.parametrize("mode", ["causal", "bidirectional"])
def test_a_rotary_layer_gives_the_same_output_wherever_the_sequence_starts(rng, mode):
    """A whole block of T tokens written to an empty cache at position 11 attends as at 0."""
    layer = MultiHeadAttention(num_heads=2, mode=mode, position="rotary")
    x = rng.normal(size=(2, 5, 16)).astype("float32")
    full = ops.convert_to_numpy(layer(x))
    cache = ops.zeros((2, 2, 16, 2, 8))
    key_mask = np.zeros((2, 16), bool)  # the slots before 11 are empty: not keys
    key_mask[:, 11:] = True
    shifted, _ = layer(x, cache=cache, cache_index=11, key_mask=key_mask)
    np.testing.assert_allclose(ops.convert_to_numpy(shifted), full, atol=1e-4)


def test_rotary_needs_an_even_head_width():
    layer = MultiHeadAttention(num_heads=2, mode="causal", position="rotary")
    with pytest.raises(ValueError, match="head width"):
        layer.build((None, None, 14))  # d_head 7
