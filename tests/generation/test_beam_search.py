import numpy as np
import pytest
from decoding_reference import PAD
from decoding_reference import START
from decoding_reference import STOP
from decoding_reference import gnmt_score
from decoding_reference import hypothesis
from decoding_reference import log_probs_of

import keras_transformer as kt
from keras_transformer.generation import length_penalty

VOCAB = 12


def _model(seed=0):
    import keras

    keras.utils.set_random_seed(seed)
    return kt.EncoderDecoder.from_preset("transformer_tiny", vocab_size=VOCAB, dropout=0.0)


def _sources(seed):
    source = np.random.default_rng(seed).integers(3, VOCAB, size=(4, 6))
    source[1, 4:] = PAD
    return source


@pytest.mark.parametrize("seed", [0, 1])
def test_beam_one_equals_greedy(seed):
    model, source = _model(seed), _sources(seed)
    greedy = model.generate(source, start_id=START, stop_ids=(STOP,), max_length=8, beam_size=None)
    beam = model.generate(source, start_id=START, stop_ids=(STOP,), max_length=8, beam_size=1)
    np.testing.assert_array_equal(beam, greedy)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_four_scores_at_least_as_well_as_greedy(seed):
    model, source = _model(seed), _sources(seed)
    greedy = model.generate(source, start_id=START, stop_ids=(STOP,), max_length=8, beam_size=None)
    beam = model.generate(source, start_id=START, stop_ids=(STOP,), max_length=8, beam_size=4)
    for row in range(len(source)):
        greedy_score = gnmt_score(log_probs_of(model, source[row], hypothesis(greedy[row])))
        beam_score = gnmt_score(log_probs_of(model, source[row], hypothesis(beam[row])))
        assert beam_score >= greedy_score - 1e-4
        tail = beam[row, len(hypothesis(beam[row])) :]
        assert (tail == PAD).all()


def test_beam_search_on_decoder_only_beats_or_ties_greedy():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0)
    prompts = np.array([[3, 4, 5], [6, 7, 0]])
    greedy = model.generate(prompts, max_new_tokens=5, stop_ids=(STOP,))
    beam = model.generate(prompts, max_new_tokens=5, stop_ids=(STOP,), beam_size=3)
    np.testing.assert_array_equal(beam[:, :2], greedy[:, :2])  # prompts kept
    assert beam.shape == greedy.shape == (2, 8)


def test_length_penalty_formula():
    assert float(length_penalty(1, 0.6)) == pytest.approx(1.0)
    assert float(length_penalty(10, 0.6)) == pytest.approx((15 / 6) ** 0.6)
    assert float(length_penalty(10, 0.0)) == pytest.approx(1.0)
