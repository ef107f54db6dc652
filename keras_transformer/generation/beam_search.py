"""Beam search that keeps alive and finished hypotheses apart, on the KV cache.

At every step the `2K` best one-token extensions of the `K` alive beams are
taken (`K (S + 1)` with `S` stop ids, so that `K` of them survive). Those
ending in a stop id leave the beam: they join a finished set of `K`, scored by
summed log-probability over GNMT's length penalty at their own length (plus,
with `beta`, GNMT's coverage penalty of the source they read). The `K` best of
the others stay alive. At the last position every alive extension finishes by
length. A row stops early once no alive beam can still beat its n-th best
finished one (tensor2tensor's bound; the coverage penalty is <= 0, so the bound
holds with it). Batched over rows,
with every beam's cache in one `(B * K, ...)` batch, compiled like the rest of
the loop.
"""

from typing import NamedTuple

from keras import ops

from keras_transformer.generation.compiled import decode_loop
from keras_transformer.generation.logits import NEG_INF
from keras_transformer.generation.logits import forbid
from keras_transformer.generation.logits import is_stop
from keras_transformer.generation.settings import column
from keras_transformer.layers.decode_context import DEFAULT_CONTEXT


class Hypotheses(NamedTuple):
    """The n best hypotheses of each row, best first (NumPy arrays).

    Attributes:
        ids: int32 `(batch, n, L)` token ids; after a hypothesis ends, the
            fill id (the model's `pad_id`, else the stop id).
        scores: float32 `(batch, n)`: summed log-probability of the generated
            tokens over `length_penalty(lengths, alpha)` (plus
            `coverage_penalty(..., beta)` with beta > 0), descending. A score of
            about -1e30 marks a slot no hypothesis filled (a row with fewer than
            n possible outputs).
        lengths: int32 `(batch, n)`: generated tokens, the stop id included.

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> translator = kt.EncoderDecoder.from_preset("transformer_tiny")
    >>> best = translator.generate(np.array([[5, 6, 7]]), max_length=6, num_return=3)
    >>> best.ids.shape, best.scores.shape, bool(best.scores[0, 0] >= best.scores[0, 1])
    ((1, 3, 6), (1, 3), True)
    """

    ids: object
    scores: object
    lengths: object


def length_penalty(length, alpha):
    """GNMT's `((5 + length) / 6) ** alpha` (paper: alpha 0.6).

    Beam search divides each finished hypothesis's summed log-probability by
    this, so that longer outputs are not penalized for having more terms.

    Args:
        length: number of generated tokens (an int or an int tensor).
        alpha: the exponent; 0 turns the penalty off (the divisor is 1).

    Returns:
        float32 tensor of the shape of `length`.

    Example:
    >>> [round(float(length_penalty(n, 0.6)), 4) for n in (1, 10, 50)]
    [1.0, 1.7329, 3.7786]
    """
    return ops.power((5.0 + ops.cast(length, "float32")) / 6.0, alpha)


def coverage_penalty(coverage, beta):
    """GNMT's coverage penalty `beta * sum_s log(min(c_s, 1))` (paper: beta 0.2).

    `c_s` is how much attention source position s received over a
    hypothesis's steps. Beam search adds this (<= 0) to a finished
    hypothesis's length-normalized score, so that an output that leaves part
    of the source unread ranks below one that translates all of it: the
    search's remedy for outputs that end early.

    Args:
        coverage: float `(..., S)`; padding positions hold 1 (no penalty).
        beta: the weight; 0 turns the penalty off.

    Returns:
        float32 `(...)`.

    Example:
    >>> import numpy as np
    >>> round(float(coverage_penalty(np.array([0.5, 1.0, 2.0]), 0.2)), 4)  # 0.2 log 0.5
    -0.1386
    """
    coverage = ops.clip(ops.cast(coverage, "float32"), 1e-30, 1.0)  # log(0) would be -inf
    return beta * ops.sum(ops.log(coverage), axis=-1)


def _gather(values, index):
    """`values` `(B, N, ...)` at `index` `(B, M)` along axis 1: `(B, M, ...)`."""
    index = ops.reshape(index, tuple(ops.shape(index)) + (1,) * (len(values.shape) - 2))
    return ops.take_along_axis(values, index, axis=1)


def beam_loop(step, prompts, caches, settings, context=DEFAULT_CONTEXT, coverage=None):
    """Beam search over `prompts`; returns `(ids (B, n, L), scores (B, n), lengths (B, n))`.

    Args:
        step: `step(tokens (B*K, 1), caches, position) -> (logits (B*K, 1, V), caches,
            source_attention)` (a family's `Decoding.step`); `source_attention`
            float32 `(B*K, S)` is what each source position received this step
            (read with `settings.beta > 0`).
        prompts: a `Prompts` buffer `(B, L)`: positions inside a row's prompt
            are forced, the rest generated until the row's `prompts.end`.
        caches: the model's caches (`BlockCache`s) with `B * K` rows (each row
            repeated `K` times), prefilled with the prompts.
        settings: the `DecodeSettings` (beam size, alpha, beta, n, stop and
            forbidden ids).
        context: the `DecodeContext` of the compiled loop (`decode_loop` reads it).
        coverage: with `settings.beta > 0`, float32 `(B*K, S)`: each beam's
            coverage before the first step (1 at source padding, which the
            penalty then ignores). The loop adds each step's `source_attention`
            to it and carries it with its beam.
    """
    batch, k, n = settings.batch, settings.beam_size, settings.num_return
    lengths, end = prompts.lengths, prompts.end
    alive = ops.repeat(prompts.ids[:, None, :], k, axis=1)  # (B, K, L)
    # Only the first beam is alive at first, so the K beams start distinct.
    first = ops.cast(ops.arange(k) == 0, "float32")
    alive_scores = ops.broadcast_to((1.0 - first) * NEG_INF, (batch, k))  # (B, K) log p
    finished = ops.copy(alive)  # (B, K, L), placeholders until scored (a copy: see decode_loop)
    finished_scores = ops.full((batch, k), NEG_INF, dtype="float32")  # (B, K) normalized
    finished_lengths = ops.zeros((batch, k), dtype="int32")
    # The best score an alive beam could still reach: its log p (which only
    # falls) over the largest penalty (the longest output left to it).
    longest = length_penalty(ops.maximum(end - lengths, 1), settings.alpha)  # (B,)
    beam_rows = ops.arange(batch, dtype="int32")[:, None] * k  # (B, 1)
    last = prompts.last_index()  # once, outside the loop

    penalized = settings.beta > 0
    if penalized and coverage is None:
        raise ValueError("A coverage penalty (beta > 0) needs each beam's starting `coverage`.")

    def cond(index, alive, alive_scores, finished, finished_scores, finished_lengths, caches,
             coverage, done):
        return ops.logical_and(index < last, ops.logical_not(ops.all(done)))

    def body(index, alive, alive_scores, finished, finished_scores, finished_lengths, caches,
             coverage, done):
        tokens = ops.reshape(column(alive, index - 1, axis=2), (batch * k, 1))
        logits, caches, read = step(tokens, caches, index - 1)  # (B*K, 1, V)
        if penalized:  # what each beam has read, this step included
            coverage = ops.reshape(coverage + read, (batch, k, -1))  # (B, K, S)
        log_probs = ops.log_softmax(forbid(logits[:, -1], settings.forbidden), axis=-1)
        vocab = ops.shape(log_probs)[-1]
        log_probs = ops.reshape(log_probs, (batch, k, vocab))  # (B, K, V)
        given, in_prompt = prompts.at(index)  # (B,) each
        vocab_ids = ops.arange(vocab, dtype="int32")[None, None, :]
        forced = ops.where(ops.equal(vocab_ids, given[:, None, None]), 0.0, NEG_INF)  # (B, 1, V)
        log_probs = ops.where(in_prompt[:, None, None], forced, log_probs)
        candidates = ops.reshape(alive_scores[:, :, None] + log_probs, (batch, k * vocab))
        # Enough extensions that K survive even if every stop id ends K of them.
        width = min(k * (len(settings.stop_ids) + 1), k * vocab)
        scores, flat = ops.top_k(candidates, width)  # (B, width), best first
        parent = ops.cast(flat // vocab, "int32")
        token = ops.cast(flat % vocab, "int32")
        sequences = _gather(alive, parent)  # (B, width, L)
        sequences = ops.slice_update(sequences, (0, 0, index), token[:, :, None])
        open_row = ops.logical_and(ops.logical_not(in_prompt), index < end)  # (B,)
        generated = ops.logical_and(open_row[:, None], scores > NEG_INF / 2)
        stops = ops.logical_and(generated, is_stop(token, settings.stop_ids))  # (B, width)
        ends = ops.logical_or(stops, ops.logical_and(generated, (index == end - 1)[:, None]))

        # Alive: the K best extensions that did not emit a stop id.
        alive_scores, keep = ops.top_k(ops.where(stops, NEG_INF, scores), k)  # (B, K)
        alive = _gather(sequences, keep)
        rows = ops.reshape(beam_rows + _gather(parent, keep), (-1,))  # (B*K,) their parents
        caches = [cache.reorder(rows) for cache in caches]

        # Finished: the K best of the finished set and the extensions that end now.
        new_lengths = ops.broadcast_to((index + 1 - lengths)[:, None], (batch, width))
        normalized = scores / length_penalty(new_lengths, settings.alpha)  # (B, width)
        if penalized:  # what each parent has read
            normalized += coverage_penalty(_gather(coverage, parent), settings.beta)
        normalized = ops.where(ends, normalized, NEG_INF)
        pool_scores = ops.concatenate([finished_scores, normalized], axis=1)  # (B, K + width)
        finished_scores, best = ops.top_k(pool_scores, k)
        finished = _gather(ops.concatenate([finished, sequences], axis=1), best)
        pool_lengths = ops.concatenate([finished_lengths, new_lengths], axis=1)
        finished_lengths = _gather(pool_lengths, best)

        bound = alive_scores[:, 0] / longest  # (B,)
        done = ops.logical_or(done, finished_scores[:, n - 1] >= bound)
        done = ops.logical_or(done, index + 1 >= end)  # the row's last position is filled
        if penalized:  # each alive beam carries its parent's coverage
            coverage = ops.take(ops.reshape(coverage, (batch * k, -1)), rows, axis=0)
        return (index + 1, alive, alive_scores, finished, finished_scores, finished_lengths,
                caches, coverage, done)

    done = prompts.first_index() >= end  # (B,) rows with nothing to fill
    state = (prompts.first_index(), alive, alive_scores, finished, finished_scores,
             finished_lengths, caches, coverage if penalized else (), done)
    _, _, _, finished, finished_scores, finished_lengths, _, _, _ = decode_loop(
        cond, body, state, context
    )
    return finished[:, :n], finished_scores[:, :n], finished_lengths[:, :n]
