"""Reference computations for the generation tests: full forward passes, exhaustive search,
and a beam search written as plainly as possible over full forward passes."""

import keras
import numpy as np
from keras import ops

from keras_transformer.generation.logits import forbid

START, PAD = 1, 0


def full_pass(model, inputs):
    """`model(inputs, training=False)` as a NumPy array: one full forward pass.

    Under JAX it runs compiled (`predict_on_batch`, one XLA program per input shape):
    run eagerly, every op would compile again for every new shape, and the references
    run the model at many lengths. The other backends run it eagerly.
    """
    if keras.backend.backend() == "jax":
        return np.asarray(model.predict_on_batch(inputs))
    return ops.convert_to_numpy(model(inputs, training=False))


def at_working_scale(model, seed=0):
    """Sets every weight of `model` to a scale where attention moves the logits.

    At the models' own initialization (N(0, 0.02) for GPT) a tiny model's logits barely
    depend on the context. Matrices get N(0, 1/fan_in), norm scales 1 + N(0, 0.3^2), the
    rest N(0, 0.3^2). Greedy decoding of such a random model still tends to repeat a token;
    sampled decoding (`sampled_reference`) does not.
    """
    rng = np.random.default_rng(seed)
    for w in model.weights:
        shape = tuple(w.shape)
        if len(shape) == 2:
            value = rng.normal(size=shape) / np.sqrt(shape[0])
        elif w.path.endswith(("gamma", "scale")):
            value = 1.0 + 0.3 * rng.normal(size=shape)
        else:
            value = 0.3 * rng.normal(size=shape)
        w.assign(value.astype("float32"))
    return model


def sampled_token(logits, sampler, seed, index, row, batch, forbidden=()):
    """The token `sampler` draws for `row` of a `batch` at buffer position `index`.

    `logits` `(V,)` come from a full pass; the decode loop draws a whole batch's noise
    at once (it depends on the row), so the row's logits are placed in a batch of zeros
    and the library's own sampler (whose draws tests/generation/test_samplers.py pins)
    picks from it.
    """
    batch_logits = np.zeros((batch, len(logits)), "float32")
    batch_logits[row] = logits
    chosen = sampler(forbid(batch_logits, tuple(forbidden)), index, seed)
    return int(ops.convert_to_numpy(chosen)[row])


def assert_outputs_vary(rows):
    """The reference decoded something a position or cache bug would change.

    Each row of generated tokens holds at least 3 distinct ids, and the rows differ.
    """
    rows = [list(map(int, row)) for row in rows]
    assert all(len(set(row)) >= 3 for row in rows), rows
    assert len({tuple(row) for row in rows}) == len(rows), rows


def full_pass_sampled_decoder_only(model, prompts, length, sampler):
    """Reference of sampled `generate` to `length` tokens a row: full passes, each row
    drawn with its batch noise.

    `prompts` are the rows' real tokens (lists); a new token at buffer position `i` (the
    row's real tokens first, as the decode loop aligns them) is drawn at step `i`.
    No stop ids.
    """
    pad_id = model.config.pad_id
    forbidden = () if pad_id is None else (pad_id,)
    rows = []
    for row, prompt in enumerate(prompts):
        sequence = list(prompt)
        while len(sequence) < length:
            logits = full_pass(model, np.array([sequence]))[0, -1]
            sequence.append(sampled_token(logits, sampler, sampler.seed, len(sequence), row,
                                          len(prompts), forbidden))
        rows.append(sequence)
    return rows


def full_pass_greedy_decoder_only(model, prompt, new_tokens, stop_ids=(), fill=PAD):
    """Reference: re-run the whole sequence for every token, argmax; `pad_id` never chosen."""
    sequence, stopped = list(prompt), False
    pad_id = model.config.pad_id
    for _ in range(new_tokens):
        if stopped:
            sequence.append(fill)
            continue
        logits = full_pass(model, np.array([sequence]))[0, -1]
        if pad_id is not None and pad_id not in stop_ids:
            logits[pad_id] = -np.inf
        sequence.append(int(np.argmax(logits)))
        stopped = sequence[-1] in stop_ids
    return sequence


def _log_softmax(logits, forbidden):
    logits = np.asarray(logits, "float64").copy()
    logits[..., list(forbidden)] = -np.inf
    top = logits.max(axis=-1, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=-1, keepdims=True))


def decoder_only_next(model, prompt, forbidden=()):
    """`next(prefixes) -> (N, V)` next-token log-probs after `prompt + prefix`, full passes."""

    def next_log_probs(prefixes):
        ids = np.array([list(prompt) + list(p) for p in prefixes], "int32")
        return _log_softmax(full_pass(model, ids)[:, -1], forbidden)

    return next_log_probs


def encoder_decoder_next(model, source, start, forbidden=()):
    """`next(prefixes) -> (N, V)` next-token log-probs after `[start] + prefix`, full passes."""

    def next_log_probs(prefixes):
        target = np.array([[start] + list(p) for p in prefixes], "int32")
        sources = np.repeat(np.asarray(source, "int32")[None], len(prefixes), axis=0)
        logits = full_pass(model, {"source": sources, "target": target})
        return _log_softmax(logits[:, -1], forbidden)

    return next_log_probs


def exhaustive_search(next_log_probs, max_new, stop_ids, alpha, penalty=None):
    """Every possible output, best first: `[(score, tokens), ...]`.

    An output ends at its first stop id or after `max_new` tokens; its score
    is its summed log-probability over GNMT's `((5 + length) / 6) ** alpha`,
    plus `penalty(outputs)[i]` for output i when given (all outputs at once).
    """
    outputs, frontier = [], [((), 0.0)]
    for depth in range(max_new):
        log_probs = next_log_probs([prefix for prefix, _ in frontier])
        grown = []
        for (prefix, total), row in zip(frontier, log_probs):
            for token in np.flatnonzero(np.isfinite(row)):
                item = (prefix + (int(token),), total + row[token])
                if token in stop_ids or depth == max_new - 1:
                    outputs.append(item)
                else:
                    grown.append(item)
        frontier = grown
    extra = np.zeros(len(outputs)) if penalty is None else penalty([t for t, _ in outputs])
    scored = [(total / ((5 + len(tokens)) / 6) ** alpha + bonus, list(tokens))
              for (tokens, total), bonus in zip(outputs, extra)]
    return sorted(scored, key=lambda item: -item[0])


def coverage_penalties(model, source, start, beta):
    """`penalty(outputs)` for `exhaustive_search`: GNMT's coverage penalty of each output.

    From full passes: the last decoder layer's cross-attention, averaged over
    heads, summed over the rows that predict the output's tokens (decoder
    inputs `[start] + tokens[:-1]`), `beta * sum log(min(coverage, 1))` over the
    source's real (non-padding) positions, in float64.
    """
    source = np.asarray(source, "int32")
    real = source != model.config.pad_id

    def penalty(outputs):
        width = max(len(tokens) for tokens in outputs)
        target = np.full((len(outputs), width), model.config.pad_id, "int32")
        for row, tokens in enumerate(outputs):
            target[row, : len(tokens)] = [start] + list(tokens[:-1])
        sources = np.repeat(source[None], len(outputs), axis=0)
        probs = ops.convert_to_numpy(model.cross_attention_probabilities(sources, target)[-1])
        probs = probs.astype("float64").mean(axis=1)  # (N, T, S), mean over heads
        return np.array([
            beta * np.log(np.minimum(probs[row, : len(tokens)].sum(axis=0)[real], 1.0)).sum()
            for row, tokens in enumerate(outputs)
        ])

    return penalty


def reference_beam_search(next_log_probs, max_new, stop_ids, alpha, beam_size, n, bonus=None):
    """The two-set beam search in plain Python over full passes: its `n` best `(score, tokens)`.

    Each step keeps the `beam_size * (len(stop_ids) + 1)` best extensions of the
    alive hypotheses; those ending in a stop id (or at `max_new` tokens) join
    the finished list, the `beam_size` best of the rest stay alive. It stops
    once the n-th best finished score beats the best alive log-probability
    over the largest length penalty. `bonus(outputs)` (e.g. `coverage_penalties`), <= 0,
    is added to each finished output's score when given.
    """
    penalty = lambda length: ((5 + length) / 6) ** alpha  # noqa: E731
    alive, finished = [((), 0.0)], []
    for depth in range(max_new):
        log_probs = next_log_probs([prefix for prefix, _ in alive])
        grown = [(prefix + (int(t),), total + row[t])
                 for (prefix, total), row in zip(alive, log_probs)
                 for t in np.flatnonzero(np.isfinite(row))]
        grown = sorted(grown, key=lambda item: -item[1])[: beam_size * (len(stop_ids) + 1)]
        last = depth == max_new - 1
        ended = [(p, total) for p, total in grown if p[-1] in stop_ids or last]
        extra = np.zeros(len(ended)) if bonus is None or not ended else bonus([p for p, _ in ended])
        finished += [(total / penalty(len(p)) + b, list(p)) for (p, total), b in zip(ended, extra)]
        finished = sorted(finished, key=lambda item: -item[0])[:beam_size]
        alive = [(p, total) for p, total in grown if p[-1] not in stop_ids][:beam_size]
        if len(finished) >= n and finished[n - 1][0] >= alive[0][1] / penalty(max_new):
            break
    return finished[:n]
