"""Greedy and sampled decoding: one token per row and step, on the KV cache."""

from keras import ops

from keras_transformer.generation.compiled import decode_loop
from keras_transformer.layers.decode_context import DEFAULT_CONTEXT
from keras_transformer.generation.logits import forbid
from keras_transformer.generation.logits import is_stop
from keras_transformer.generation.settings import column


def sampling_loop(step, prompts, caches, settings, seed, context=DEFAULT_CONTEXT):
    """Fills `prompts.ids` from the shortest prompt's end to each row's `prompts.end`.

    Args:
        step: `step(tokens (B, 1), caches, position) -> (logits (B, 1, V), caches, _)`
            (a family's `Decoding.step`).
        prompts: a `Prompts` buffer `(B, L)`; positions inside a row's prompt
            keep their token.
        caches: the model's caches, prefilled with the prompts.
        settings: the `DecodeSettings` (sampler, stop ids, forbidden ids, fill).
        seed: int32 scalar tensor, the sampler's noise seed.
        context: the `DecodeContext` of the compiled loop (`decode_loop` reads it).

    Returns:
        int32 `(B, L)`: prompts and continuations; after a row emits a stop id
        its later positions hold `settings.fill_id`.
    """
    last = prompts.last_index()  # once, outside the loop

    def cond(index, ids, caches, done):
        return ops.logical_and(index < last, ops.logical_not(ops.all(done)))

    def body(index, ids, caches, done):
        token = column(ids, index - 1, axis=1)  # (B, 1)
        logits, caches, _ = step(token, caches, index - 1)  # (B, 1, V)
        chosen = settings.sampler(forbid(logits[:, -1], settings.forbidden), index, seed)
        given, in_prompt = prompts.at(index)  # (B,) each
        chosen = ops.where(done, settings.fill_id, chosen)
        chosen = ops.where(in_prompt, given, chosen)
        ids = ops.slice_update(ids, (0, index), ops.cast(chosen, ids.dtype)[:, None])
        stopped = ops.logical_and(ops.logical_not(in_prompt), is_stop(chosen, settings.stop_ids))
        stopped = ops.logical_or(stopped, index + 1 >= prompts.end)  # its last position
        return index + 1, ids, caches, ops.logical_or(done, stopped)

    done = prompts.first_index() >= prompts.end  # (B,) rows with nothing to fill
    # A copy: the state shares no tensor with `prompts` (see `decode_loop`).
    state = (prompts.first_index(), ops.copy(prompts.ids), caches, done)
    _, ids, _, _ = decode_loop(cond, body, state, context)
    return ids
