"""Starting weights: every weight its own draw, at the scale the documented rule states.

The rules (docs/toggles.md, `keras_transformer/models/initialization.py`),
written out here again rather than read from the code:
* `DecoderOnly` (GPT-2): kernels N(0, 0.02); attention `output` and
  feed-forward `outer` N(0, 0.02 / sqrt(2 num_layers)); token embedding and an
  untied output projection N(0, 0.02); position table N(0, 0.01).
* `EncoderDecoder` (2017, fairseq): every block kernel Glorot-uniform over its
  stored shape (std sqrt(2 / (fan_in + fan_out)), bounded by sqrt(6 / (fan_in +
  fan_out))); token embedding and an untied output projection N(0, d^-0.5);
  position table N(0, 0.01).
"""

import itertools
import math

import keras
import numpy as np
import pytest

import keras_transformer as kt
from model_zoo import preset_model
from model_zoo import preset_names
from model_zoo import toggle_draws

RESIDUAL = ("self_attention/output/kernel", "feed_forward/outer/kernel")
DRAWS = toggle_draws(6)


def _weights(model):
    return {v.path: keras.ops.convert_to_numpy(v).astype("float64") for v in model.weights}


def _expected(model, path, shape):
    """(std, uniform bound or None) of weight `path` under the documented rule."""
    c = model.config
    gpt = isinstance(model, kt.DecoderOnly)
    if path.endswith("position_embedding/table"):
        return 0.01, None
    if path.endswith(("token_embedding/embeddings", "output_projection/kernel")):
        return (0.02 if gpt else c.d_model**-0.5), None
    assert path.endswith("/kernel"), path
    if gpt:
        if path.endswith(RESIDUAL):
            return 0.02 / math.sqrt(2 * c.num_decoder_layers), None
        return 0.02, None
    fan_in, fan_out = shape
    return math.sqrt(2 / (fan_in + fan_out)), math.sqrt(6 / (fan_in + fan_out))


def _check(model):
    weights = {p: w for p, w in _weights(model).items() if w.ndim >= 2}
    assert len(weights) >= 5
    for path, w in weights.items():
        std, bound = _expected(model, path, w.shape)
        assert abs(w.std() / std - 1) < 0.10, (path, w.std(), std)
        assert abs(w.mean()) < 5 * std / math.sqrt(w.size), (path, w.mean())
        if bound is not None:
            assert np.abs(w).max() <= bound * (1 + 1e-6), (path, np.abs(w).max(), bound)
    # No two weights share their draw: not equal, not scaled copies, not a common prefix
    # (torch fills same-seeded tensors of different shapes with the same leading values).
    for (a, wa), (b, wb) in itertools.combinations(weights.items(), 2):
        n = min(wa.size, wb.size)
        x, y = wa.ravel()[:n], wb.ravel()[:n]
        correlation = np.corrcoef(x, y)[0, 1]
        assert abs(correlation) < 0.5, (a, b, correlation)


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_starts_with_independent_weights_at_the_rules_scale(name):
    _check(preset_model(name))


@pytest.mark.parametrize("family,arguments", DRAWS, ids=[str(i) for i in range(len(DRAWS))])
def test_drawn_toggles_start_with_independent_weights_at_the_rules_scale(family, arguments):
    _check(family(**arguments))


def _by_suffix(weights, suffix):
    (match,) = [w for path, w in weights.items() if path.endswith(suffix)]
    return match


def test_the_documented_bug_cases_are_gone():
    # The two cases the issue reported: llama_tiny's gate == inner == qkv, and a
    # transformer_tiny decoder block's output == cross query == cross output.
    llama = _weights(kt.DecoderOnly.from_preset("llama_tiny"))
    kernels = [_by_suffix(llama, "block_0/" + p) for p in (
        "feed_forward/gate/kernel", "feed_forward/inner/kernel", "self_attention/qkv/kernel")]
    for a, b in itertools.combinations(kernels, 2):
        assert not np.allclose(a, b)
    transformer = _weights(kt.EncoderDecoder.from_preset("transformer_tiny"))
    kernels = [_by_suffix(transformer, "decoder_block_0/" + p) for p in (
        "self_attention/output/kernel", "cross_attention/query/kernel",
        "cross_attention/output/kernel")]
    for a, b in itertools.combinations(kernels, 2):
        assert not np.allclose(a, b)


@pytest.mark.parametrize("name", ["transformer_tiny", "llama_tiny"])
def test_a_model_built_twice_under_one_seed_is_identical(name):
    family = getattr(kt, kt.models.PRESETS[name][0])
    keras.utils.set_random_seed(7)
    first = _weights(family.from_preset(name))
    keras.utils.set_random_seed(7)
    second = _weights(family.from_preset(name))
    keras.utils.set_random_seed(8)
    other = _weights(family.from_preset(name))
    # Paths differ in the model's name only (encoder_decoder, encoder_decoder_1, ...).
    first, second, other = (list(w.values()) for w in (first, second, other))
    assert len(first) == len(second) == len(other)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not any(np.array_equal(a, b) for a, b in zip(first, other) if a.ndim >= 2)


def test_a_seeded_block_initializer_is_reproducible_and_still_draws_per_sublayer():
    def block_weights():
        block = kt.layers.TransformerBlock(
            num_heads=4, d_ff=64, cross_attention=True, self_attention="causal",
            kernel_initializer=keras.initializers.GlorotUniform(seed=3),
        )
        block.build((None, None, 64), memory_shape=(None, None, 64))
        return {v.path: keras.ops.convert_to_numpy(v) for v in block.weights if v.ndim >= 2}

    first, second = block_weights(), block_weights()
    assert [first[p].tolist() for p in first] == [second[p].tolist() for p in second]
    for a, b in itertools.combinations(first.values(), 2):
        n = min(a.size, b.size)
        assert abs(np.corrcoef(a.ravel()[:n], b.ravel()[:n])[0, 1]) < 0.5
