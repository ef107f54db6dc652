"""BlockCache: what a block keeps between decoding steps, and how beams copy it."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import BlockCache
from keras_transformer.layers import TransformerBlock

D_MODEL, HEADS, SOURCE = 8, 2, 5


def _cross_block():
    block = TransformerBlock(num_heads=HEADS, d_ff=16, self_attention="causal",
                             cross_attention=True)
    block.build((None, None, D_MODEL), memory_shape=(None, None, D_MODEL))
    return block


def test_repeat_then_reorder_copy_self_attention_rows_and_share_the_source():
    rng = np.random.default_rng(0)
    parts = [rng.normal(size=(2, 2, 3, HEADS, 4)).astype("float32"),
             rng.normal(size=(2, 2, SOURCE, HEADS, 4)).astype("float32"),
             rng.normal(size=(2, SOURCE)).astype("float32")]
    cache = BlockCache(*(ops.convert_to_tensor(p) for p in parts))
    beams = cache.repeat(3)  # rows 0,0,0,1,1,1
    for part, repeated in zip(parts, beams):
        np.testing.assert_array_equal(ops.convert_to_numpy(repeated), np.repeat(part, 3, axis=0))
    rows = np.array([2, 0, 0, 5, 3, 4])
    reordered = beams.reorder(ops.convert_to_tensor(rows))
    np.testing.assert_array_equal(ops.convert_to_numpy(reordered.self_attention),
                                  np.repeat(parts[0], 3, axis=0)[rows])
    np.testing.assert_array_equal(ops.convert_to_numpy(reordered.source_attention),
                                  np.repeat(parts[2], 3, axis=0)[rows])
    assert reordered.cross_attention is beams.cross_attention  # a source's beams share it


def test_absent_parts_stay_absent_through_repeat_and_reorder():
    cache = BlockCache(ops.zeros((2, 2, 3, HEADS, 4)))
    assert not cache.records_attention
    beams = cache.repeat(2).reorder(ops.convert_to_tensor([1, 0, 3, 2]))
    assert beams.cross_attention == () and beams.source_attention == ()
    assert tuple(beams.self_attention.shape) == (4, 2, 3, HEADS, 4)


def test_a_recording_cache_gets_each_calls_cross_attention_mean_over_heads():
    """`source_attention` is the call's cross-attention (mean over heads, summed over its
    positions), what `cross_attention_probabilities` of the same input gives."""
    block = _cross_block()
    rng = np.random.default_rng(1)
    x = ops.convert_to_tensor(rng.normal(size=(2, 3, D_MODEL)).astype("float32"))
    memory = ops.convert_to_tensor(rng.normal(size=(2, SOURCE, D_MODEL)).astype("float32"))
    memory_mask = ops.convert_to_tensor(np.array([[True] * SOURCE, [True] * 3 + [False] * 2]))
    cache = block.empty_cache(2, 6, memory, record_attention=True)
    assert cache.records_attention
    np.testing.assert_array_equal(ops.convert_to_numpy(cache.source_attention), 0.0)
    _, updated = block(x, memory_mask=memory_mask, cache=cache, cache_index=0)
    probs = ops.convert_to_numpy(block.cross_attention_probabilities(
        x, memory, memory_mask=memory_mask))  # (2, heads, 3, S)
    np.testing.assert_allclose(ops.convert_to_numpy(updated.source_attention),
                               probs.mean(axis=1).sum(axis=1), atol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(updated.source_attention)[1, 3:], 0.0)
    # A cache that does not record keeps no such part, and the call computes the same output.
    out, plain = block(x, memory_mask=memory_mask, cache=block.empty_cache(2, 6, memory),
                       cache_index=0)
    assert plain.source_attention == ()
    recorded, _ = block(x, memory_mask=memory_mask, cache=cache, cache_index=0)
    np.testing.assert_allclose(ops.convert_to_numpy(out), ops.convert_to_numpy(recorded),
                               atol=1e-6)


def test_empty_cache_refuses_what_the_block_cannot_fill():
    causal = TransformerBlock(num_heads=HEADS, d_ff=16, self_attention="causal")
    causal.build((None, None, D_MODEL))
    with pytest.raises(ValueError, match="record_attention.*cross_attention=True"):
        causal.empty_cache(1, 4, record_attention=True)
    with pytest.raises(ValueError, match="needs `memory`"):
        _cross_block().empty_cache(1, 4)


def test_the_cache_travels_through_a_compiled_loop():
    """A BlockCache with absent parts is loop state on every backend (TensorFlow's while loop
    refuses None, which is why an absent part is an empty tuple)."""
    cache = BlockCache(ops.zeros((1, 2, 3, HEADS, 4)))

    def body(i, cache):
        return i + 1, cache._replace(self_attention=cache.self_attention + 1.0)

    _, cache = ops.while_loop(lambda i, c: i < 3, body, (ops.convert_to_tensor(0), cache))
    assert isinstance(cache, BlockCache) and cache.cross_attention == ()
    np.testing.assert_array_equal(ops.convert_to_numpy(cache.self_attention), 3.0)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        loop = tf.function(lambda c: ops.while_loop(lambda i, c: i < 2, body, (0, c)),
                           jit_compile=True)
        np.testing.assert_array_equal(ops.convert_to_numpy(loop(cache)[1].self_attention), 5.0)


def test_bad_arguments_are_refused_by_name():
    cache = BlockCache(ops.zeros((3, 2, 4, HEADS, 4)))
    for times in (0, 2.5, "2"):
        with pytest.raises(ValueError, match="`times`"):
            cache.repeat(times)
    for rows in ([0.7, 1.2, 2.0], np.array([True, False, True]), [[0, 1, 2]]):
        with pytest.raises(ValueError, match="`rows` must be integer row indices of rank 1"):
            cache.reorder(rows)
    block = _cross_block()
    with pytest.raises(ValueError, match="`record_attention` must be True or False"):
        block.empty_cache(1, 4, ops.ones((1, 3, D_MODEL)), record_attention="False")


def test_a_cache_that_is_not_a_block_cache_is_refused_with_what_to_use():
    block = TransformerBlock(num_heads=HEADS, d_ff=16, self_attention="causal")
    block.build((None, None, D_MODEL))
    old_style = {"self": block.empty_cache(1, 4).self_attention}  # before BlockCache
    with pytest.raises(ValueError, match="`cache` must be the block's BlockCache .* received "
                                         "dict.*cache.self_attention"):
        block(ops.ones((1, 1, D_MODEL)), cache=old_style, cache_index=0)
