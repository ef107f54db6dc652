"""Beam search with the GNMT length penalty, batched over inputs, on the KV cache."""

from keras import ops

from keras_transformer.generation.decoding import _forbid
from keras_transformer.generation.decoding import _is_stop

_NEG_INF = -1e30


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


def _reorder(tree, flat_index):
    """Gathers rows `(batch * beams, ...)` of every cache tensor by `flat_index`."""
    if isinstance(tree, dict):
        return {key: _reorder(value, flat_index) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_reorder(value, flat_index) for value in tree]
    return ops.take(tree, flat_index, axis=0)


def beam_loop(step, ids, is_prompt, caches, start, beam_size, alpha, stop_ids, pad_id):
    """Beam search filling `ids` `(B, L)` from `start`; returns best ids and scores.

    `caches` are already expanded to `B * beam_size` rows (each row repeated
    `beam_size` times); `step(tokens (B*K, 1), caches, position)` returns
    `(logits (B*K, 1, V), caches)`. Every beam extends by one token per step:
    the `beam_size` best continuations by summed log-probability survive.
    A beam that emitted a stop id is finished: it extends with `pad_id` at
    no cost, keeping its score. Prompt positions force their token. At the
    end each hypothesis is scored `log p / length_penalty(length, alpha)`,
    length counting generated tokens up to and including the stop id, and the
    best is returned with its score: `(ids (B, L), scores (B,))`.

    With `beam_size=1` this is exactly greedy decoding.
    """
    batch, total = ops.shape(ids)[0], ops.shape(ids)[1]
    k = beam_size
    fill = 0 if pad_id is None else pad_id
    beams = ops.repeat(ids[:, None, :], k, axis=1)  # (B, K, L)
    # Only the first beam is alive at first, so the K beams start distinct.
    first = ops.cast(ops.arange(k) == 0, "float32")
    scores = ops.broadcast_to((1.0 - first) * _NEG_INF, (batch, k))  # (B, K)
    finished = ops.zeros((batch, k), dtype="bool")
    lengths = ops.zeros((batch, k), dtype="int32")

    def cond(index, beams, scores, finished, lengths, caches):
        return ops.logical_and(index < total, ops.logical_not(ops.all(finished)))

    def body(index, beams, scores, finished, lengths, caches):
        tokens = ops.reshape(ops.slice(beams, (0, 0, index - 1), (batch, k, 1)), (batch * k, 1))
        logits, caches = step(tokens, caches, index - 1)
        log_probs = ops.log_softmax(_forbid(logits[:, -1], pad_id), axis=-1)  # (B*K, V)
        vocab = ops.shape(log_probs)[-1]
        log_probs = ops.reshape(log_probs, (batch, k, vocab))
        vocab_ids = ops.arange(vocab, dtype="int32")[None, None, :]
        given = ops.slice(beams, (0, 0, index), (batch, k, 1))  # (B, K, 1)
        in_prompt = ops.slice(is_prompt, (0, index), (batch, 1))[:, :, None]  # (B, 1, 1)
        forced = ops.where(in_prompt, given, fill)  # prompt token, or pad after a stop
        must_force = ops.logical_or(in_prompt, finished[:, :, None])
        forced_log_probs = ops.where(ops.equal(vocab_ids, forced), 0.0, _NEG_INF)
        log_probs = ops.where(must_force, forced_log_probs, log_probs)
        candidates = ops.reshape(scores[:, :, None] + log_probs, (batch, k * vocab))
        scores, flat = ops.top_k(candidates, k)  # (B, K)
        parent = flat // vocab
        token = ops.cast(flat % vocab, "int32")
        flat_parent = ops.reshape(ops.arange(batch)[:, None] * k + parent, (-1,))
        beams = ops.take_along_axis(beams, ops.repeat(parent[:, :, None], total, axis=2), axis=1)
        finished = ops.take_along_axis(finished, parent, axis=1)
        lengths = ops.take_along_axis(lengths, parent, axis=1)
        caches = _reorder(caches, flat_parent)
        beams = ops.slice_update(beams, (0, 0, index), ops.cast(token, beams.dtype)[:, :, None])
        generated = ops.logical_and(ops.logical_not(finished), ops.logical_not(in_prompt[:, :, 0]))
        lengths = lengths + ops.cast(generated, "int32")
        stop = ops.reshape(_is_stop(ops.reshape(token, (-1,)), stop_ids), (batch, k))
        finished = ops.logical_or(finished, ops.logical_and(generated, stop))
        return index + 1, beams, scores, finished, lengths, caches

    index = ops.convert_to_tensor(start, dtype="int32")
    state = (index, beams, scores, finished, lengths, caches)
    _, beams, scores, _, lengths, _ = ops.while_loop(cond, body, state)
    normalized = scores / length_penalty(ops.maximum(lengths, 1), alpha)  # (B, K)
    best = ops.argmax(normalized, axis=-1)  # (B,)
    best_ids = ops.take_along_axis(beams, ops.repeat(best[:, None, None], total, axis=2), axis=1)
    return best_ids[:, 0], ops.take_along_axis(normalized, best[:, None], axis=1)[:, 0]
