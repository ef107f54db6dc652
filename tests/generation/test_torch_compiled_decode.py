"""torch with `model.jit_compile = True`: each decode step is one `torch.compile` graph.

The same tokens as the eager loop (the default on torch, Keras'
`jit_compile="auto"`), and one compilation per setting: new seeds and
prompt lengths in a bucket reuse the graph (Dynamo counts no recompile).
Compiling with inductor takes seconds, so these tests compile few settings.
"""

import warnings

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.generation import Sampler
from keras_transformer.generation import compilations

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="model.jit_compile's torch.compile decode step"
)

VOCAB = 40


def _twins(make):
    """An eager model and a compiled one with the same weights."""
    eager, compiled = make(), make()
    compiled.set_weights(eager.get_weights())
    assert not eager.jit_compile  # Keras' "auto" is eager on torch
    compiled.jit_compile = True
    return eager, compiled


def test_compiled_step_compiles_once_for_ten_seeds_and_three_prompt_lengths():
    eager, compiled = _twins(lambda: kt.DecoderOnly.from_preset(
        "gpt2_tiny", vocab_size=VOCAB, dropout=0.0, pad_id=None))
    rng = np.random.default_rng(0)
    for width in (3, 5, 7):  # one bucket (8)
        prompts = rng.integers(0, VOCAB, size=(2, width))
        for seed in range(10):
            sampler = Sampler(top_k=8, seed=seed)
            np.testing.assert_array_equal(
                compiled.generate(prompts, max_new_tokens=5, sampler=sampler),
                eager.generate(prompts, max_new_tokens=5, sampler=sampler),
            )
    assert compilations(compiled) == 1  # the step's graph; prefill and first test run eagerly
    assert compilations(eager) == 1  # the eager loop, built once
    compiled.jit_compile = False  # back to the eager loop of the same setting: counted once
    compiled.generate(prompts, max_new_tokens=5, sampler=Sampler(top_k=8, seed=0))
    assert compilations(compiled) == 2


def test_compiled_beam_search_matches_eager_and_compiles_once():
    eager, compiled = _twins(lambda: kt.EncoderDecoder.from_preset(
        "transformer_tiny", vocab_size=VOCAB))
    rng = np.random.default_rng(1)
    for width in (3, 5, 8):  # one bucket
        source = rng.integers(4, VOCAB, size=(2, width))
        # With the coverage penalty: the coverage travels in the beam loop's state, through
        # the graph.
        want = eager.generate(source, beam_size=2, max_length=6, num_return=2, beta=0.5)
        got = compiled.generate(source, beam_size=2, max_length=6, num_return=2, beta=0.5)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-5)
    assert compilations(compiled) == 1


@pytest.mark.parametrize("vocab,batch,sampler", [
    (32, 1, Sampler(top_k=8, seed=1)),
    (64, 3, Sampler(temperature=0.8, seed=2)),
    (128, 2, Sampler(top_p=0.9, seed=3)),
    (40, 4, Sampler(top_k=10, top_p=0.8, temperature=1.3, seed=4)),
], ids=["v32-b1-top_k", "v64-b3-temperature", "v128-b2-top_p", "v40-b4-top_k-top_p"])
def test_compiled_sampling_matches_eager_over_vocabularies_batches_and_samplers(
    vocab, batch, sampler
):
    """Inductor's vectorized CPU kernel for the fused noise hash + argmax crashed the
    process (segmentation fault) at vocabularies 32 and 64; 128 and top-p never finished
    compiling. The decode step compiles without SIMD (`compiled.INDUCTOR_OPTIONS`)."""
    eager, compiled = _twins(lambda: kt.DecoderOnly(
        vocab_size=vocab, num_layers=2, d_model=32, num_heads=4, d_ff=64, max_length=32))
    prompts = np.random.default_rng(vocab).integers(0, vocab, size=(batch, 3))
    want = eager.generate(prompts, max_new_tokens=5, sampler=sampler)
    got = compiled.generate(prompts, max_new_tokens=5, sampler=sampler)
    np.testing.assert_array_equal(got, want)
    assert compilations(compiled) == 1


def _quantized_twins(mode, config=None):
    eager, compiled = _twins(lambda: kt.EncoderDecoder.from_preset(
        "transformer_tiny", vocab_size=VOCAB, num_layers=1, d_model=16, num_heads=2, d_ff=16))
    for model in (eager, compiled):
        model.quantize(mode, config=config)
    return eager, compiled


def _int4_with_activations():
    return keras.quantizers.Int4QuantizationConfig(
        block_size=-1, activation_quantizer=keras.quantizers.AbsMaxQuantizer(axis=-1))


@pytest.mark.parametrize("mode,config,kind", [
    ("int8", None, "int8"),
    ("int8", lambda: keras.quantizers.Int8QuantizationConfig(activation_quantizer=None), "int8"),
    ("float8", None, "float8"),
    ("int4", _int4_with_activations, r"int4 \(activations quantized\)"),
])
def test_models_dynamo_cannot_trace_decode_eagerly_with_jit_compile(mode, config, kind):
    """Keras' float8 and int8 layers, and layers that quantize their activations, run code
    Dynamo cannot trace in one graph (`compiled.untraceable_layers`): `generate` failed with
    Dynamo's "Unsupported hasattr call" (a float8 file saved on JAX loaded with
    jit_compile=True). It decodes eagerly, with a warning: the same beams as the eager model."""
    eager, compiled = _quantized_twins(mode, config and config())
    source = np.random.default_rng(2).integers(4, VOCAB, size=(2, 5))
    want = eager.generate(source, beam_size=2, max_length=5, num_return=2)
    with pytest.warns(RuntimeWarning, match=f"decodes eagerly.*{kind}"):
        got = compiled.generate(source, beam_size=2, max_length=5, num_return=2)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)
    assert compilations(compiled) == 1  # the eager loop, built once: no torch.compile graph


def test_a_model_quantized_after_compiled_decoding_decodes_eagerly():
    # Read per call: a layer quantized by itself leaves the model's loops in place.
    eager, compiled = _twins(lambda: kt.EncoderDecoder.from_preset(
        "transformer_tiny", vocab_size=VOCAB, num_layers=1, d_model=16, num_heads=2, d_ff=16))
    source = np.random.default_rng(2).integers(4, VOCAB, size=(2, 5))
    compiled.generate(source, beam_size=2, max_length=5)
    assert compilations(compiled) == 1  # a torch.compile graph of the float model
    for model in (eager, compiled):
        model.decoder_blocks[0].feed_forward.inner.quantize("float8")
    want = eager.generate(source, beam_size=2, max_length=5)
    with pytest.warns(RuntimeWarning, match="decodes eagerly.*float8"):
        got = compiled.generate(source, beam_size=2, max_length=5)
    np.testing.assert_array_equal(got, want)


def test_int4_models_decode_compiled():
    """int4's default (weights only) traces: one graph, the eager beams, no warning."""
    eager, compiled = _quantized_twins("int4")
    assert not kt.generation.compiled.untraceable_layers(compiled)
    source = np.random.default_rng(2).integers(4, VOCAB, size=(2, 5))
    want = eager.generate(source, beam_size=2, max_length=5, num_return=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = compiled.generate(source, beam_size=2, max_length=5, num_return=2)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_allclose(got.scores, want.scores, atol=1e-5)
    assert compilations(compiled) == 1  # one torch.compile graph, no eager run
