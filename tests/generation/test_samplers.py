import numpy as np
import pytest
from keras import ops

from keras_transformer.generation import Sampler
from keras_transformer.generation.samplers import uniform


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
