import numpy as np
import pytest
from decoding_reference import at_working_scale
from keras import ops

import keras_transformer as kt
from keras_transformer.generation import Sampler
from keras_transformer.generation.samplers import MAX_SEED
from keras_transformer.generation.samplers import uniform

# Literal draws, the same under every backend (this file runs under all three): the noise
# of seed 7 at step 3 for a (2, 4) batch, the tokens two samplers pick over 6 steps, and
# what a seeded `generate` returns from a model whose weights NumPy sets.
PINNED_NOISE = [0.38171682, 0.619174, 0.92644227, 0.01675865,
                0.55820763, 0.507792, 0.44232932, 0.2160838]
PINNED_TOKENS = {
    "top_k": [[12, 19, 6, 2], [8, 19, 23, 15], [9, 29, 43, 34], [9, 0, 32, 27],
              [16, 19, 43, 9], [40, 19, 6, 23]],
    "top_p": [[12, 19, 12, 2], [47, 19, 23, 48], [38, 29, 45, 34], [9, 35, 32, 48],
              [16, 46, 43, 6], [43, 19, 6, 45]],
}
PINNED_GENERATE = [[5, 9, 2, 39, 3, 10, 7, 39, 23, 7, 23], [7, 7, 7, 26, 12, 12, 16, 23, 10, 26, 22]]


def _lowbias32(x):
    """The samplers' hash, in NumPy's unsigned 32-bit arithmetic: an independent oracle."""
    x = np.asarray(x, np.uint32)
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint32(16))
        x = x * np.uint32(0x7FEB352D)
        x = x ^ (x >> np.uint32(15))
        x = x * np.uint32(0x846CA68B)
        return x ^ (x >> np.uint32(16))


def _uniform_oracle(seed, step, shape):
    batch, vocab = shape
    counter = np.arange(batch * vocab, dtype=np.uint32)
    with np.errstate(over="ignore"):
        key = _lowbias32(_lowbias32(np.uint32(step) + np.uint32(0x3C6EF372)) ^ np.uint32(seed))
        bits = _lowbias32((counter * np.uint32(0x9E3779B1)) ^ key)
    mantissa = ((bits >> np.uint32(8)) & np.uint32(0xFFFFFF)).astype(np.float32)
    return ((mantissa + np.float32(0.5)) / np.float32(2**24)).reshape(batch, vocab)


def test_noise_is_the_documented_hash_bit_for_bit_on_every_backend():
    np.testing.assert_array_equal(ops.convert_to_numpy(uniform(7, 3, (2, 4))),
                                  np.array(PINNED_NOISE, "float32").reshape(2, 4))
    for seed, step in ((0, 0), (7, 3), (MAX_SEED, 1000), (123456789, 2**20)):
        expected = _uniform_oracle(seed, step, (3, 500))
        np.testing.assert_array_equal(ops.convert_to_numpy(uniform(seed, step, (3, 500))),
                                      expected)
        # As the compiled decode loop passes them: int32 tensors.
        tensors = (ops.convert_to_tensor(seed, "int32"), ops.convert_to_tensor(step, "int32"))
        np.testing.assert_array_equal(ops.convert_to_numpy(uniform(*tensors, (3, 500))),
                                      expected)


def test_sampled_tokens_are_pinned_on_every_backend():
    logits = np.log(np.random.default_rng(0).dirichlet(np.ones(50), size=4)).astype("float32")
    for name, sampler in (("top_k", Sampler(top_k=8, temperature=1.3, seed=11)),
                          ("top_p", Sampler(top_p=0.9, seed=11))):
        tokens = [ops.convert_to_numpy(sampler(logits, step)).tolist() for step in range(6)]
        assert tokens == PINNED_TOKENS[name], (name, tokens)


def test_seeded_generate_is_pinned_on_every_backend():
    """The compiled sampling loop draws the pinned tokens from weights NumPy set."""
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=40, num_layers=2, dropout=0.0)
    at_working_scale(model)
    prompts = np.array([[5, 9, 2], [7, 7, 7]])
    out = model.generate(prompts, max_new_tokens=8, sampler=Sampler(top_k=10, seed=5))
    assert out.tolist() == PINNED_GENERATE


def _logits(rng, batch=64, vocab=30):
    return (rng.normal(size=(batch, vocab)) * 2).astype("float32")


def test_uniform_noise_is_in_range_reproducible_and_spread():
    a = ops.convert_to_numpy(uniform(3, 7, (16, 1000)))
    assert a.min() > 0 and a.max() < 1
    np.testing.assert_array_equal(a, ops.convert_to_numpy(uniform(3, 7, (16, 1000))))
    assert not np.array_equal(a, ops.convert_to_numpy(uniform(3, 8, (16, 1000))))
    assert not np.array_equal(a, ops.convert_to_numpy(uniform(4, 7, (16, 1000))))
    counts = np.histogram(a, bins=10, range=(0, 1))[0]
    assert counts.min() > 0.9 * a.size / 10 and counts.max() < 1.1 * a.size / 10


def test_greedy_is_argmax(rng):
    logits = _logits(rng)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(Sampler(greedy=True)(logits, 0)), logits.argmax(-1)
    )


@pytest.mark.parametrize("k", [1, 3, 10])
def test_top_k_never_leaves_the_k_most_likely(rng, k):
    logits = _logits(rng)
    allowed = np.argsort(-logits, axis=-1)[:, :k]
    for seed in range(10):
        tokens = ops.convert_to_numpy(Sampler(top_k=k, seed=seed)(logits, step=seed))
        assert all(t in row for t, row in zip(tokens, allowed))


@pytest.mark.parametrize("p", [0.3, 0.7, 0.95])
def test_top_p_never_leaves_the_nucleus(rng, p):
    logits = _logits(rng)
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    order = np.argsort(-probs, axis=-1)
    seen = set()
    for seed in range(10):
        tokens = ops.convert_to_numpy(Sampler(top_p=p, seed=seed)(logits, step=0))
        for row, token in enumerate(tokens):
            sorted_probs = probs[row, order[row]]
            before = np.cumsum(sorted_probs) - sorted_probs
            nucleus = set(order[row][before < p + 1e-6].tolist())
            assert token in nucleus
            seen.add((row, int(token)))
    assert len(seen) > 64  # it does sample, not only the argmax


def test_same_seed_same_tokens_other_seed_other_tokens(rng):
    logits = _logits(rng, batch=128)
    sampler = Sampler(temperature=1.5, top_k=20, seed=11)
    first = ops.convert_to_numpy(sampler(logits, step=5))
    np.testing.assert_array_equal(first, ops.convert_to_numpy(sampler(logits, step=5)))
    assert not np.array_equal(first, ops.convert_to_numpy(Sampler(temperature=1.5, top_k=20, seed=12)(logits, 5)))
    assert not np.array_equal(first, ops.convert_to_numpy(sampler(logits, step=6)))


def test_sampling_follows_the_distribution():
    probs = np.array([0.5, 0.3, 0.15, 0.05], "float32")
    logits = np.log(np.tile(probs, (4000, 1)))
    tokens = ops.convert_to_numpy(Sampler(seed=0)(logits, step=0))
    frequencies = np.bincount(tokens, minlength=4) / len(tokens)
    np.testing.assert_allclose(frequencies, probs, atol=0.03)
    cold = ops.convert_to_numpy(Sampler(temperature=0.05, seed=0)(logits, step=0))
    assert (cold == 0).mean() > 0.99


def test_generate_with_a_sampler_is_reproducible():
    import keras_transformer as kt

    model = kt.DecoderOnly.from_preset("gpt2_tiny", dropout=0.0)
    prompts = np.full((4, 2), 7)
    sampler = Sampler(top_k=10, seed=5)
    first = model.generate(prompts, max_new_tokens=8, sampler=sampler)
    np.testing.assert_array_equal(first, model.generate(prompts, max_new_tokens=8, sampler=sampler))
    other = model.generate(prompts, max_new_tokens=8, sampler=Sampler(top_k=10, seed=6))
    assert not np.array_equal(first, other)


def test_bad_sampler_arguments():
    with pytest.raises(ValueError, match="temperature"):
        Sampler(temperature=0)
    with pytest.raises(ValueError, match="top_k"):
        Sampler(top_k=0)
    with pytest.raises(ValueError, match="top_p"):
        Sampler(top_p=1.5)
