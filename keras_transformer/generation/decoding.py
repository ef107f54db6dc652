"""Autoregressive decoding with the key/value cache, for both model families.

Each step feeds one token through the same forward pass the model trains with
(`call_with_cache` / `decode(..., caches=...)`), so the cached loop computes
exactly what repeated full passes compute, at one position's cost per token.
The loop is a `keras.ops.while_loop`, compiled once per input shape.
"""

import numpy as np
from keras import ops

from keras_transformer import masks
from keras_transformer.generation.compiled import compile_for_backend
from keras_transformer.generation.samplers import GREEDY

_NEG_INF = -1e30


def check_decode_length(model, total):
    """A learned position table must hold every decoded position."""
    config = model.config
    if config.position == "learned" and total > config.max_length:
        raise ValueError(
            f"Decoding needs {total} positions but the learned position table has "
            f"max_length={config.max_length} rows; ask for fewer new tokens."
        )


def right_align(prompt_ids, pad_id):
    """Moves each prompt's tokens to the start of its row (left padding -> right).

    Returns `(ids, lengths)` as int32 NumPy arrays. Prompts must be tokens
    followed or preceded by padding, with at least one token each.
    """
    prompt_ids = np.asarray(prompt_ids)
    if prompt_ids.ndim != 2 or not np.issubdtype(prompt_ids.dtype, np.integer):
        raise ValueError(
            f"Prompts must be int token ids of shape (batch, length); received "
            f"{prompt_ids.dtype} of shape {prompt_ids.shape}."
        )
    real = np.ones_like(prompt_ids, bool) if pad_id is None else prompt_ids != pad_id
    lengths = real.sum(axis=1)
    if (lengths == 0).any():
        raise ValueError("Every prompt needs at least one non-pad token.")
    aligned = np.full_like(prompt_ids, 0 if pad_id is None else pad_id)
    for row, (ids, keep) in enumerate(zip(prompt_ids, real)):
        aligned[row, : keep.sum()] = ids[keep]
    return aligned.astype("int32"), lengths.astype("int32")


def _forbid(logits, token_id):
    """Sets one token's logit to -inf (padding is never generated)."""
    if token_id is None:
        return logits
    is_token = ops.equal(ops.arange(ops.shape(logits)[-1], dtype="int32"), token_id)
    return ops.where(is_token[None, :], _NEG_INF, ops.cast(logits, "float32"))


def _is_stop(tokens, stop_ids):
    if not stop_ids:
        return ops.zeros_like(tokens, dtype="bool")
    stops = ops.convert_to_tensor(np.asarray(stop_ids, "int32"))
    return ops.any(ops.equal(tokens[:, None], stops[None, :]), axis=-1)


def sampling_loop(step, ids, is_prompt, caches, start, sampler, stop_ids, pad_id):
    """Fills `ids` `(B, L)` from position `start` on, one token per step.

    `step(token_ids (B, 1), caches, position)` returns `(logits (B, 1, V),
    caches)`. Positions where `is_prompt` is True keep their token; after a
    row emits a stop id, its later positions are `pad_id`.
    """
    batch, total = ops.shape(ids)[0], ops.shape(ids)[1]
    fill = 0 if pad_id is None else pad_id

    def cond(index, ids, caches, done):
        return ops.logical_and(index < total, ops.logical_not(ops.all(done)))

    def body(index, ids, caches, done):
        token = ops.slice(ids, (0, index - 1), (batch, 1))
        logits, caches = step(token, caches, index - 1)
        chosen = sampler(_forbid(logits[:, -1], pad_id), index)  # (B,)
        given = ops.slice(ids, (0, index), (batch, 1))[:, 0]
        in_prompt = ops.slice(is_prompt, (0, index), (batch, 1))[:, 0]
        chosen = ops.where(done, fill, chosen)
        chosen = ops.where(in_prompt, given, chosen)
        ids = ops.slice_update(ids, (0, index), ops.cast(chosen, ids.dtype)[:, None])
        done = ops.logical_or(
            done, ops.logical_and(ops.logical_not(in_prompt), _is_stop(chosen, stop_ids))
        )
        return index + 1, ids, caches, done

    done = ops.zeros((batch,), dtype="bool")
    index = ops.convert_to_tensor(start, dtype="int32")
    _, ids, _, _ = ops.while_loop(cond, body, (index, ids, caches, done))
    return ids


def _compiled(model, key, build):
    """Compiled decode functions, kept on the model: one compile per shape and setting."""
    functions = model.__dict__.setdefault("_decode_functions", {})
    if key not in functions:
        functions[key] = compile_for_backend(model, build())
    return functions[key]


def _expand(tree, beam_size):
    """Repeats every row of every tensor `beam_size` times: `(B, ...) -> (B*K, ...)`."""
    if isinstance(tree, dict):
        return {key: _expand(value, beam_size) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_expand(value, beam_size) for value in tree]
    return None if tree is None else ops.repeat(tree, beam_size, axis=0)


def _search(step, ids, is_prompt, caches, start, sampler, beam_size, alpha, stop_ids, pad_id):
    """Sampling (`beam_size=None`) or beam search over the same step function."""
    if beam_size is None:
        return sampling_loop(step, ids, is_prompt, caches, start, sampler, stop_ids, pad_id)
    from keras_transformer.generation.beam_search import beam_loop

    caches = _expand(caches, beam_size)
    ids, _ = beam_loop(step, ids, is_prompt, caches, start, beam_size, alpha, stop_ids, pad_id)
    return ids


def _check_search(sampler, beam_size, alpha):
    if beam_size is None:
        return
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(
            f"`beam_size` must be None (sampling) or an integer >= 1; received {beam_size!r}."
        )
    if sampler != GREEDY:
        raise ValueError("Beam search is deterministic: pass a `sampler` only with beam_size=None.")
    if alpha < 0:
        raise ValueError(f"`alpha` must be >= 0; received {alpha!r}.")


def generate_decoder_only(
    model, prompt_ids, max_new_tokens, sampler=GREEDY, stop_ids=(), beam_size=None,
    alpha=0.6,
):
    """Continues each prompt by `max_new_tokens` tokens; see `DecoderOnly.generate`."""
    _check_search(sampler, beam_size, alpha)
    pad_id = model.config.pad_id
    prompt, lengths = right_align(prompt_ids, pad_id)
    batch, width = prompt.shape
    total = width + max_new_tokens
    check_decode_length(model, total)
    stop_ids = tuple(int(s) for s in stop_ids)

    def build():
        def run(prompt, lengths):
            fill = 0 if pad_id is None else pad_id
            ids = ops.pad(prompt, ((0, 0), (0, max_new_tokens)), constant_values=fill)
            is_prompt = ops.arange(total, dtype="int32")[None, :] < lengths[:, None]
            caches = model.empty_cache(batch, total)
            _, caches = model.call_with_cache(prompt, caches, 0)  # prefill
            start = ops.maximum(ops.min(lengths), 1)
            return _search(
                model.call_with_cache, ids, is_prompt, caches, start, sampler, beam_size,
                alpha, stop_ids, pad_id,
            )

        return run

    key = ("decoder_only", batch, width, max_new_tokens, sampler, stop_ids, beam_size, alpha)
    run = _compiled(model, key, build)
    return ops.convert_to_numpy(run(ops.convert_to_tensor(prompt), ops.convert_to_tensor(lengths)))


def generate_encoder_decoder(
    model, source_ids, max_length, start_id, sampler=GREEDY, stop_ids=(), beam_size=None,
    alpha=0.6,
):
    """Translation of each source, `(B, max_length)`; see `EncoderDecoder.generate`."""
    _check_search(sampler, beam_size, alpha)
    source = np.asarray(source_ids).astype("int32")
    batch = source.shape[0]
    check_decode_length(model, max_length + 1)
    stop_ids = tuple(int(s) for s in stop_ids)
    pad_id = model.config.pad_id

    def build():
        def run(source):
            memory = model.encode(source)
            memory_mask = masks.padding_mask(source, pad_id)
            if beam_size is not None:  # one row per beam
                memory_mask = _expand(memory_mask, beam_size)
            caches = model.empty_cache(memory, max_length + 1)

            def step(token, caches, position):
                return model.decode(token, None, memory_mask, caches=caches, cache_index=position)

            fill = 0 if pad_id is None else pad_id
            ids = ops.full((batch, max_length + 1), fill, dtype="int32")
            ids = ops.slice_update(ids, (0, 0), ops.full((batch, 1), start_id, dtype="int32"))
            is_prompt = ops.arange(max_length + 1, dtype="int32")[None, :] < 1
            is_prompt = ops.broadcast_to(is_prompt, (batch, max_length + 1))
            ids = _search(
                step, ids, is_prompt, caches, 1, sampler, beam_size, alpha, stop_ids, pad_id
            )
            return ids[:, 1:]

        return run

    key = ("encoder_decoder", source.shape, max_length, start_id, sampler, stop_ids, beam_size, alpha)
    run = _compiled(model, key, build)
    return ops.convert_to_numpy(run(ops.convert_to_tensor(source)))
