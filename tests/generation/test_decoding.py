"""Cached decoding computes exactly what repeated full forward passes compute."""

import numpy as np
import pytest
from decoding_reference import PAD
from decoding_reference import START
from decoding_reference import full_pass_greedy_decoder_only
from keras import ops

import keras_transformer as kt

VOCAB = 40


@pytest.mark.parametrize(
    "overrides",
    [
        dict(),  # GPT-2: pre-LN, learned positions
        dict(ln_position="post", position="sinusoidal", activation="relu"),
        dict(ln_position="post", position="learned"),
        dict(ln_position="pre", position="sinusoidal"),
        dict(attention_window=3),  # GPT-3: dense and banded layers alternate
        dict(attention_window=2, banded_layers="all"),
    ],
)
def test_decoder_only_cached_greedy_equals_full_passes(overrides):
    model = kt.DecoderOnly.from_preset(
        "gpt2_tiny", vocab_size=VOCAB, dropout=0.0, num_layers=3, **overrides
    )
    rng = np.random.default_rng(0)
    prompts = rng.integers(3, VOCAB, size=(3, 5))
    prompts[1, 3:] = PAD  # right padding
    prompts[2, :2] = PAD  # left padding
    out = model.generate(prompts, max_new_tokens=7)
    assert out.shape == (3, 12)
    for row, prompt in enumerate(prompts):
        real = [int(t) for t in prompt if t != PAD]
        expected = full_pass_greedy_decoder_only(model, real, 12 - len(real))
        assert out[row].tolist() == expected


def test_decoder_only_stop_ids_end_rows_with_padding():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0)
    prompts = np.random.default_rng(1).integers(3, VOCAB, size=(4, 3))
    free = model.generate(prompts, max_new_tokens=6)
    stop = int(free[0, 4])  # a token row 0 emits at its second new position
    out = model.generate(prompts, max_new_tokens=6, stop_ids=(stop,))
    for row in range(4):
        expected = full_pass_greedy_decoder_only(model, prompts[row].tolist(), 6, (stop,))
        assert out[row].tolist() == expected
    first = 3 + free[0, 3:].tolist().index(stop)  # where row 0 first emits it
    assert out[0, first] == stop and (out[0, first + 1 :] == PAD).all()


@pytest.mark.parametrize("ln_position", ["post", "pre"])
def test_encoder_decoder_cached_greedy_equals_full_passes(ln_position):
    model = kt.EncoderDecoder.from_preset(
        "transformer_tiny", vocab_size=VOCAB, dropout=0.0, ln_position=ln_position
    )
    rng = np.random.default_rng(2)
    source = rng.integers(3, VOCAB, size=(3, 6))
    source[1, 4:] = PAD
    out = model.generate(source, start_id=START, max_length=7, beam_size=None)
    assert out.shape == (3, 7)
    for row in range(3):
        target = [START]
        for _ in range(7):
            logits = ops.convert_to_numpy(
                model({"source": source[row : row + 1], "target": np.array([target])})
            )[0, -1]
            logits[PAD] = -np.inf
            target.append(int(np.argmax(logits)))
        assert out[row].tolist() == target[1:]


def test_encoder_decoder_default_length_is_source_plus_50():
    model = kt.EncoderDecoder.from_preset("transformer_tiny", vocab_size=VOCAB, dropout=0.0)
    source = np.full((1, 4), 5)
    assert model.generate(source, start_id=START, beam_size=None).shape == (1, 54)


def test_generation_is_compiled_once_per_shape():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0)
    prompts = np.full((2, 3), 5)
    first = model.generate(prompts, max_new_tokens=4)
    second = model.generate(prompts + 1, max_new_tokens=4)
    assert len(model._decode_functions) == 1
    model.generate(np.full((2, 4), 5), max_new_tokens=4)
    assert len(model._decode_functions) == 2
    assert first.shape == second.shape == (2, 7)


def test_decode_length_beyond_learned_table_raises():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, max_length=8)
    with pytest.raises(ValueError, match="max_length=8"):
        model.generate(np.full((1, 4), 5), max_new_tokens=5)


def test_bad_generation_arguments():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB)
    with pytest.raises(ValueError, match="at least one non-pad token"):
        model.generate(np.array([[5, 6], [0, 0]]), max_new_tokens=2)
    with pytest.raises(ValueError, match="beam_size"):
        model.generate(np.array([[5, 6]]), max_new_tokens=2, beam_size=0)
    with pytest.raises(ValueError, match="sampler"):
        model.generate(
            np.array([[5, 6]]), max_new_tokens=2, beam_size=2,
            sampler=kt.generation.Sampler(top_k=3),
        )
    with pytest.raises(ValueError, match="shape"):
        model.generate(np.array([5, 6]), max_new_tokens=2)
