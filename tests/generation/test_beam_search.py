"""Beam search against an exact oracle: exhaustive search over every possible output."""

import keras
import numpy as np
import pytest
from keras import ops
from decoding_reference import coverage_penalties
from decoding_reference import decoder_only_next
from decoding_reference import encoder_decoder_next
from decoding_reference import exhaustive_search
from decoding_reference import reference_beam_search

import keras_transformer as kt
from keras_transformer.generation import length_penalty

# Vocabulary 5 with at most 4 new tokens: few enough outputs to enumerate them all.
VOCAB, STOP = 5, 3


def _sharpen(model, factor=4.0):
    """Scales the (tied) token embedding: far from uniform, so no near-ties in the ranking."""
    table = model.token_embedding.embeddings
    table.assign(table * factor)
    return model


def _translator(seed, sharpen=4.0):
    keras.utils.set_random_seed(seed)
    model = kt.EncoderDecoder.from_preset(
        "transformer_tiny", vocab_size=VOCAB, dropout=0.0, start_id=2, end_id=STOP
    )
    return _sharpen(model, sharpen)


def _gpt(seed):
    keras.utils.set_random_seed(seed)
    return _sharpen(kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, dropout=0.0,
                                               end_id=STOP))


def _hypotheses(result, row, prompt_length=0):
    """`(score, generated tokens up to the stop)` for each returned hypothesis of `row`."""
    out = []
    for ids, score, length in zip(result.ids[row], result.scores[row], result.lengths[row]):
        out.append((float(score), ids[prompt_length: prompt_length + length].tolist()))
    return out


def _assert_matches_oracle(ours, oracle):
    """Our n best are the oracle's n best: same scores in order, each a real output."""
    scores_of = {tuple(tokens): score for score, tokens in oracle}
    np.testing.assert_allclose([s for s, _ in ours], [s for s, _ in oracle[: len(ours)]],
                               rtol=1e-4, atol=1e-4)
    for score, tokens in ours:
        assert tuple(tokens) in scores_of, tokens
        assert scores_of[tuple(tokens)] == pytest.approx(score, rel=1e-4, abs=1e-4)
    if oracle[0][0] - oracle[1][0] > 1e-3:  # a clear winner must be ours too
        assert ours[0][1] == oracle[0][1]


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_encoder_decoder_beam_equals_exhaustive_search(alpha):
    model = _translator(seed=0)
    sources = np.array([[4, 1, 4, 0], [1, 1, 4, 4], [4, 0, 0, 0]])
    max_new = 4
    # 1 + 3 + 9 + 27 * 4 = 121 outputs (pad is never generated): the beam holds them all.
    result = model.generate(sources, max_length=max_new, beam_size=121, alpha=alpha,
                            num_return=6)
    assert result.ids.shape == (3, 6, max_new)
    for row, source in enumerate(sources):
        oracle = exhaustive_search(
            encoder_decoder_next(model, source, start=2, forbidden=(0,)), max_new, (STOP,), alpha
        )
        assert len(oracle) == 121
        _assert_matches_oracle(_hypotheses(result, row), oracle)
        assert np.all(np.diff(result.scores[row]) <= 0)  # n-best lists sorted by score


def test_encoder_decoder_without_a_padding_id_equals_exhaustive_search():
    """`pad_id=None`: id 0 is an ordinary token, read in the sources and generated; a
    hypothesis that stopped is filled with its stop id."""
    keras.utils.set_random_seed(0)
    model = _sharpen(kt.EncoderDecoder.from_preset(
        "transformer_tiny", vocab_size=VOCAB, dropout=0.0, pad_id=None, start_id=2,
        end_id=STOP))
    sources = np.array([[4, 0, 4, 0], [0, 1, 4, 4], [1, 0, 0, 0]])  # 0s are real here
    max_new = 3
    # 1 + 4 + 16 * 5 = 85 outputs (nothing is forbidden): the beam holds and returns them all.
    result = model.generate(sources, max_length=max_new, beam_size=85, alpha=0.6,
                            num_return=85)
    generated_zero = False
    for row, source in enumerate(sources):
        oracle = exhaustive_search(
            encoder_decoder_next(model, source, start=2), max_new, (STOP,), 0.6
        )
        assert len(oracle) == 85
        _assert_matches_oracle(_hypotheses(result, row), oracle)
        for ids, length in zip(result.ids[row], result.lengths[row]):
            assert (ids[length:] == STOP).all()  # no padding id: the stop id fills
            generated_zero |= 0 in ids[:length]
    assert generated_zero  # id 0 was not forbidden: outputs holding it were returned
    # A source's 0s are read, not masked: were they padding, [1, 0, 0, 0] would decode
    # exactly as [1] alone.
    alone = model.generate(sources[2:, :1], max_length=max_new, beam_size=85, num_return=85)
    assert np.abs(alone.scores[0] - result.scores[2]).max() > 1e-3


def test_alpha_changes_the_ranking_as_the_oracle_does():
    """Sources whose best output under alpha 0 is not their best under alpha 2."""
    alphas = (0.0, 2.0)
    for seed in range(8):  # random weights: find a model where alpha matters
        model = _translator(seed=seed, sharpen=1.0)
        sources = np.random.default_rng(seed).integers(1, VOCAB, size=(6, 4))
        oracles = {alpha: [exhaustive_search(encoder_decoder_next(model, s, 2, (0,)), 4,
                                             (STOP,), alpha) for s in sources]
                   for alpha in alphas}
        changed = [row for row in range(len(sources))
                   if oracles[0.0][row][0][1] != oracles[2.0][row][0][1]]
        if changed:
            break
    assert changed, "no model of 8 where alpha changes a best output"
    for alpha in alphas:
        result = model.generate(sources, max_length=4, beam_size=121, alpha=alpha,
                                num_return=2)
        for row in range(len(sources)):
            _assert_matches_oracle(_hypotheses(result, row), oracles[alpha][row])
    for row in changed:  # a larger alpha favours the longer output
        assert len(oracles[2.0][row][0][1]) > len(oracles[0.0][row][0][1])


def test_coverage_penalty_ranks_as_the_exhaustive_search_does():
    """beta > 0: the beam's n best are the oracle's under length and coverage penalties,
    on a model and sources where the coverage penalty changes a best output."""
    beta = 2.0
    for seed in range(8):
        model = _translator(seed=seed, sharpen=1.0)
        sources = np.random.default_rng(seed).integers(1, VOCAB, size=(4, 5))
        sources[1, 3:] = 0  # a padded source: padding is never penalized
        oracles = {b: [exhaustive_search(
            encoder_decoder_next(model, s, 2, (0,)), 4, (STOP,), 0.6,
            penalty=coverage_penalties(model, s, 2, b) if b else None) for s in sources]
            for b in (0.0, beta)}
        changed = [row for row in range(len(sources))
                   if oracles[0.0][row][0][1] != oracles[beta][row][0][1]]
        if changed:
            break
    assert changed, "no model of 8 where the coverage penalty changes a best output"
    for b in (0.0, beta):
        result = model.generate(sources, max_length=4, beam_size=121, alpha=0.6, beta=b,
                                num_return=4)
        for row in range(len(sources)):
            _assert_matches_oracle(_hypotheses(result, row), oracles[b][row])
            assert np.all(np.diff(result.scores[row]) <= 0)
    for row in changed:  # the penalized best reads more of its source
        covered = coverage_penalties(model, sources[row], 2, 1.0)
        best_plain, best_covered = oracles[0.0][row][0][1], oracles[beta][row][0][1]
        assert covered([best_covered])[0] > covered([best_plain])[0]


def test_coverage_penalty_formula():
    coverage = np.array([[0.5, 1.0, 3.0], [1.0, 1.0, 1.0]])
    np.testing.assert_allclose(
        ops.convert_to_numpy(kt.generation.coverage_penalty(coverage, 0.2)),
        [0.2 * np.log(0.5), 0.0], rtol=1e-6)


def test_decoder_only_beam_equals_exhaustive_search_with_prompts_of_two_lengths():
    model = _gpt(seed=1)
    prompts = np.array([[4, 1, 0], [2, 4, 4]])  # the first is 2 tokens long
    mask = np.array([[True, True, False], [True, True, True]])
    # Row 0 gets 4 new tokens (1 + 4 + 16 + 64 * 5 = 341 outputs), row 1 gets 3 (85).
    result = model.generate(prompts, max_new_tokens=3, beam_size=341, num_return=5,
                            padding_mask=mask)
    for row, length in enumerate((2, 3)):
        prompt = prompts[row, :length]
        oracle = exhaustive_search(decoder_only_next(model, prompt), 6 - length, (STOP,), 0.6)
        assert len(oracle) == (341 if length == 2 else 85)
        ours = _hypotheses(result, row, prompt_length=length)
        _assert_matches_oracle(ours, oracle)
        assert (result.ids[row, :, :length] == prompt).all()  # the prompt is kept


@pytest.mark.parametrize("beam_size,stop_ids,beta",
                         [(2, (STOP,), 0.0), (3, (STOP, 1), 0.0), (2, (STOP,), 1.0)])
def test_narrow_beams_prune_as_the_plain_reference_does(beam_size, stop_ids, beta):
    """Beams too narrow to hold every output: pruning, the early stop, several stop ids,
    the coverage penalty."""
    model = _translator(seed=4, sharpen=2.0)
    sources = np.array([[4, 1, 4, 0], [1, 1, 4, 4], [4, 0, 0, 0], [1, 4, 1, 1]])
    result = model.generate(sources, stop_ids=stop_ids, max_length=5, beam_size=beam_size,
                            num_return=2, beta=beta)
    for row, source in enumerate(sources):
        expected = reference_beam_search(
            encoder_decoder_next(model, source, 2, (0,)), 5, stop_ids, 0.6, beam_size, 2,
            bonus=coverage_penalties(model, source, 2, beta) if beta else None,
        )
        ours = _hypotheses(result, row)
        np.testing.assert_allclose([s for s, _ in ours], [s for s, _ in expected],
                                   rtol=1e-4, atol=1e-4)
        assert [t for _, t in ours] == [t for _, t in expected]


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_each_row_decodes_as_it_would_alone(beta):
    """A batch of sources padded to width 10 (bucket 16) vs each source alone (bucket 8)."""
    model = _translator(seed=2)
    sources = np.zeros((3, 10), "int32")
    for row, length in enumerate((4, 2, 7)):
        sources[row, :length] = np.random.default_rng(row).integers(1, VOCAB, size=length)
    together = model.generate(sources, max_length=6, beam_size=4, num_return=3, beta=beta)
    for row, length in enumerate((4, 2, 7)):
        alone = model.generate(sources[row: row + 1, :length], max_length=6, beam_size=4,
                               num_return=3, beta=beta)
        np.testing.assert_array_equal(alone.ids[0], together.ids[row])
        np.testing.assert_allclose(alone.scores[0], together.scores[row], rtol=1e-5, atol=1e-5)


def test_finished_hypotheses_are_filled_after_their_stop():
    model = _translator(seed=6)  # a model on which 4-5 of the 8 beams stop early, every backend
    result = model.generate(np.array([[4, 1, 4, 0]]), max_length=6, beam_size=8, num_return=8)
    early = 0
    for ids, length in zip(result.ids[0], result.lengths[0]):
        if length < 6:
            early += 1
            assert ids[length - 1] == STOP and STOP not in ids[: length - 1]
            assert (ids[length:] == model.config.pad_id).all()
    assert early >= 1  # some hypotheses did stop before the last position
    best = model.generate(np.array([[4, 1, 4, 0]]), max_length=6, beam_size=8)
    np.testing.assert_array_equal(best[0], result.ids[0, 0])  # num_return=None: the best ids


def test_beam_of_one_without_stops_or_penalty_is_greedy():
    model = _translator(seed=1)
    sources = np.random.default_rng(1).integers(1, VOCAB, size=(4, 5))
    greedy = model.generate(sources, stop_ids=(), max_length=6, beam_size=None)
    beam = model.generate(sources, stop_ids=(), max_length=6, beam_size=1, alpha=0.0)
    np.testing.assert_array_equal(beam, greedy)


def test_length_penalty_formula():
    assert float(length_penalty(1, 0.6)) == pytest.approx(1.0)
    assert float(length_penalty(10, 0.6)) == pytest.approx((15 / 6) ** 0.6)
    assert float(length_penalty(10, 0.0)) == pytest.approx(1.0)


@pytest.mark.parametrize("beam_size", [None, 2])
def test_default_length_limit_is_each_sources_own_length_plus_50(beam_size):
    """Without `max_length`, a row stops at its own source length + 50 in any batch."""
    keras.utils.set_random_seed(7)
    model = kt.EncoderDecoder.from_preset(  # never stops by itself: no end id
        "transformer_tiny", vocab_size=40, dropout=0.0, start_id=2, end_id=None)
    sources = np.zeros((2, 9), "int32")
    sources[0, :2] = [5, 6]
    sources[1, :9] = np.arange(10, 19)
    together = model.generate(sources, beam_size=beam_size, stop_ids=())
    assert together.shape == (2, 59)
    for row, length in enumerate((2, 9)):
        assert (together[row, :length + 50] != 0).all()  # every position up to its limit
        assert (together[row, length + 50:] == 0).all()  # then padding
        alone = model.generate(sources[row:row + 1, :length], beam_size=beam_size, stop_ids=())
        np.testing.assert_array_equal(alone[0], together[row, :length + 50])
