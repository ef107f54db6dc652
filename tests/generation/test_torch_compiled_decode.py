"""torch with `model.jit_compile = True`: each decode step is one `torch.compile` graph.

The same tokens as the eager loop (the default on torch, Keras'
`jit_compile="auto"`), and one compilation per setting: new seeds and
prompt lengths in a bucket reuse the graph (Dynamo counts no recompile).
Compiling with inductor takes seconds, so these tests compile few settings.
"""

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
        # With the coverage penalty: the coverage travels in the caches through the graph.
        want = eager.generate(source, beam_size=2, max_length=6, num_return=2, beta=0.5)
        got = compiled.generate(source, beam_size=2, max_length=6, num_return=2, beta=0.5)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_allclose(got.scores, want.scores, rtol=1e-5, atol=1e-5)
    assert compilations(compiled) == 1
