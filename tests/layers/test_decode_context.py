"""DecodeContext: how sublayers are called and caches written, passed down explicitly."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import DecodeContext
from keras_transformer.layers import TransformerBlock
from keras_transformer.layers import key_value_cache
from keras_transformer.layers.decode_context import DEFAULT_CONTEXT


class CountingDense(keras.layers.Dense):
    """A Dense that counts the calls that went through `Layer.__call__`."""

    calls = 0

    def __call__(self, *args, **kwargs):
        CountingDense.calls += 1
        return super().__call__(*args, **kwargs)


def test_direct_calls_skip_layer_call_and_compute_the_same():
    dense = CountingDense(3)
    x = ops.convert_to_tensor(np.random.default_rng(0).normal(size=(2, 4)).astype("float32"))
    before = CountingDense.calls
    through_keras = DEFAULT_CONTEXT.call(dense, x)  # builds it
    assert CountingDense.calls == before + 1
    direct = DecodeContext(direct_calls=True).call(dense, x)
    assert CountingDense.calls == before + 1  # `call`, not `__call__`
    np.testing.assert_allclose(ops.convert_to_numpy(direct), ops.convert_to_numpy(through_keras),
                               atol=1e-6)


def test_a_quantized_layer_keeps_layer_call_under_direct_calls():
    dense = CountingDense(4)
    dense.build((None, 8))
    dense.quantize("int8", type_check=False)  # Keras refuses subclasses unless told
    x = ops.ones((2, 8))
    before = CountingDense.calls
    DecodeContext(direct_calls=True).call(dense, x)
    assert CountingDense.calls == before + 1  # routed to its quantized_call by __call__


def test_the_context_reaches_every_sublayer_of_a_block():
    """With direct calls a block's cached step calls none of its sublayers through
    `Layer.__call__`: the context is handed down, not read from a switch."""
    block = TransformerBlock(num_heads=2, d_ff=16, self_attention="causal", cross_attention=True,
                             norm="rms", qk_norm=True, feed_forward="swiglu", ln_position="pre")
    block.build((None, None, 8), memory_shape=(None, None, 8))
    called = []
    for layer in block._flatten_layers(include_self=False):
        layer_call = type(layer).__call__

        def counting(self, *args, _call=layer_call, **kwargs):
            called.append(self.name)
            return _call(self, *args, **kwargs)

        layer.__class__ = type(type(layer).__name__, (type(layer),), {"__call__": counting})
    memory = ops.ones((1, 3, 8))
    cache = block.empty_cache(1, 4, memory)
    x = ops.ones((1, 1, 8))
    expected, _ = block.call(x, cache=cache, cache_index=0)
    assert len(set(called)) >= 8  # the default context goes through every sublayer's __call__
    called.clear()
    out, _ = block.call(x, cache=cache, cache_index=0, context=DecodeContext(direct_calls=True))
    assert called == []
    np.testing.assert_allclose(ops.convert_to_numpy(out), ops.convert_to_numpy(expected),
                               atol=1e-6)


@pytest.mark.parametrize("in_place", [False, True])
def test_cache_writes_are_in_place_only_when_the_context_says(in_place):
    cache = ops.zeros((1, 2, 4, 1, 2))
    keys = values = ops.ones((1, 1, 1, 2))
    _, _, updated = key_value_cache.write(cache, 1, keys, values, in_place=in_place)
    np.testing.assert_array_equal(ops.convert_to_numpy(updated)[:, :, 1], 1.0)
    written = in_place and keras.backend.backend() == "torch"  # XLA updates in place itself
    assert float(ops.convert_to_numpy(ops.sum(cache))) == (4.0 if written else 0.0)


@pytest.mark.parametrize("context", ["fast", True, {}, DecodeContext])
def test_a_context_that_is_not_one_is_refused(context):
    block = TransformerBlock(num_heads=2, d_ff=16, self_attention="causal")
    block.build((None, None, 8))
    with pytest.raises(ValueError, match="`context` must be a keras_transformer.layers."
                                         "DecodeContext"):
        block(ops.ones((1, 1, 8)), cache=block.empty_cache(1, 4), cache_index=0,
              context=context)
