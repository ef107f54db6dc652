"""Decode caches: a banded layer's ring of `window` slots against full recomputation."""

import numpy as np
import pytest
from keras import ops

from keras_transformer import masks
from keras_transformer.layers import MultiHeadAttention
from keras_transformer.layers import TransformerBlock
from keras_transformer.layers import key_value_cache

D_MODEL, HEADS = 8, 2


def _rows(length, seed=0):
    return np.random.default_rng(seed).normal(size=(2, length, HEADS, D_MODEL // HEADS)).astype(
        "float32"
    )


def test_ring_slots_hold_the_last_window_positions():
    window = 3
    ring = np.zeros((2, 2, window, HEADS, D_MODEL // HEADS), "float32")
    keys, values = _rows(8), _rows(8, seed=1)
    index = 0
    for chunk in (2, 1, 4, 1):  # T < w, T = 1, T > w
        ring = key_value_cache.write_ring(
            ring, index, keys[:, index : index + chunk], values[:, index : index + chunk]
        )
        index += chunk
        held = ops.convert_to_numpy(masks.ring_positions(index, window))
        for slot, position in enumerate(held):
            assert position % window == slot and index - window <= position < index
            if position >= 0:
                np.testing.assert_array_equal(ops.convert_to_numpy(ring)[:, 0, slot], keys[:, position])
                np.testing.assert_array_equal(ops.convert_to_numpy(ring)[:, 1, slot], values[:, position])


def test_keep_until_leaves_positions_that_will_be_fed_again():
    window = 3
    ring = np.zeros((2, 2, window, HEADS, D_MODEL // HEADS), "float32")
    keys = _rows(6)
    ring = ops.convert_to_numpy(key_value_cache.write_ring(ring, 0, keys, keys, keep_until=4))
    for slot, position in enumerate(ops.convert_to_numpy(masks.ring_positions(4, window))):
        np.testing.assert_array_equal(ring[:, 0, slot], keys[:, position])  # positions 1..3


@pytest.mark.parametrize("chunks", [(1,) * 9, (5, 1, 1, 1, 1), (2, 3, 4)], ids=["steps", "prompt", "chunks"])
def test_ring_cached_banded_attention_equals_full_recomputation(chunks):
    window, length = 3, sum(chunks)
    layer = MultiHeadAttention(num_heads=HEADS, mode="banded", window=window)
    x = np.random.default_rng(2).normal(size=(2, length, D_MODEL)).astype("float32")
    full = ops.convert_to_numpy(layer(x))
    cache = np.zeros((2, 2, window, HEADS, D_MODEL // HEADS), "float32")
    index, outputs = 0, []
    for chunk in chunks:
        out, cache = layer(x[:, index : index + chunk], cache=cache, cache_index=index)
        assert tuple(cache.shape) == (2, 2, window, HEADS, D_MODEL // HEADS)
        outputs.append(ops.convert_to_numpy(out))
        index += chunk
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), full, rtol=1e-5, atol=1e-5)


def test_a_rewinding_decoder_gets_the_right_answer_with_keep_until():
    """Prefill past the shortest prompt, then feed again from there (the decode loop)."""
    window = 3
    layer = MultiHeadAttention(num_heads=HEADS, mode="banded", window=window)
    x = np.random.default_rng(3).normal(size=(2, 9, D_MODEL)).astype("float32")
    full = ops.convert_to_numpy(layer(x))
    cache = np.zeros((2, 2, window, HEADS, D_MODEL // HEADS), "float32")
    _, cache = layer(x[:, :7], cache=cache, cache_index=0, keep_until=2)
    for index in range(2, 9):
        out, cache = layer(x[:, index : index + 1], cache=cache, cache_index=index)
        np.testing.assert_allclose(ops.convert_to_numpy(out)[:, 0], full[:, index], rtol=1e-5, atol=1e-5)


def test_banded_block_cache_is_a_ring_and_dense_blocks_hold_every_position():
    banded = TransformerBlock(num_heads=HEADS, d_ff=16, self_attention="banded", window=4)
    causal = TransformerBlock(num_heads=HEADS, d_ff=16, self_attention="causal")
    for block in (banded, causal):
        block.build((2, 10, D_MODEL))
    assert tuple(banded.empty_cache(2, 100).self_attention.shape) == (2, 2, 4, HEADS, D_MODEL // HEADS)
    assert tuple(banded.empty_cache(2, 3).self_attention.shape) == (2, 2, 3, HEADS, D_MODEL // HEADS)
    assert tuple(causal.empty_cache(2, 100).self_attention.shape) == (2, 2, 100, HEADS, D_MODEL // HEADS)


@pytest.mark.parametrize("host_index", [True, False], ids=["int-position", "tensor-position"])
def test_causal_cached_steps_read_only_the_filled_slots(attention_kernel_calls, host_index):
    """One query at a Python-int position reads the filled slots, sliced, with no mask (the
    eager torch loop); at a tensor position it goes through the mask. Both equal the full
    pass, and neither reads the slots not written yet (filled with junk here)."""
    layer = MultiHeadAttention(num_heads=HEADS, mode="causal")
    x = np.random.default_rng(4).normal(size=(2, 9, D_MODEL)).astype("float32")
    full = ops.convert_to_numpy(layer(x))
    cache = np.full((2, 2, 12, HEADS, D_MODEL // HEADS), 1e3, "float32")
    _, cache = layer(x[:, :3], cache=cache, cache_index=0)
    del attention_kernel_calls[:]
    for index in range(3, 9):
        position = index if host_index else ops.convert_to_tensor(index, dtype="int32")
        out, cache = layer(x[:, index : index + 1], cache=cache, cache_index=position)
        np.testing.assert_allclose(ops.convert_to_numpy(out)[:, 0], full[:, index], rtol=1e-5,
                                   atol=1e-5)
    # (no mask tensor, causal kernel) per step
    assert attention_kernel_calls == [(host_index, False)] * 6
