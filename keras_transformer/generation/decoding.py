"""`generate` for both model families: one driver over a per-family adapter.

Each step feeds one token through the same forward pass the model trains with
(`call_with_cache` / `decode(..., caches=...)`), so the cached loop computes
exactly what repeated full passes compute, at one position's cost per token.

A family's adapter (`generation.families`) turns its inputs into a
`DecodeRequest` (host arrays: each row's prompt, where it ends, the family's
own inputs) and, inside the compiled loop, prefills the caches and makes the
step function (`Decoding`). Everything else is this driver's: the search
arguments and special ids are checked on the host before anything is
compiled, the token buffer is laid out, the loop for the call's
`DecodeSettings` is taken from the model's compile cache
(`model.compiled_loops`, compiled on first use), sampling or beam search runs,
and the result is cut out of the buffer. Prompt and source widths are padded
up to a bucket (`settings.bucket`), and the seed, the prompt lengths and the
end positions are inputs of the compiled loop: one compilation serves every
seed and every length in a bucket.
"""

from typing import Callable
from typing import NamedTuple
from typing import Optional

import numpy as np
from keras import ops

from keras_transformer import validation
from keras_transformer.generation.beam_search import Hypotheses
from keras_transformer.generation.beam_search import beam_loop
from keras_transformer.generation.sampling import sampling_loop
from keras_transformer.generation.samplers import GREEDY
from keras_transformer.generation.settings import DecodeSettings
from keras_transformer.generation.settings import Prompts
from keras_transformer.generation.settings import check_search
from keras_transformer.generation.settings import check_stop_ids


class DecodeRequest(NamedTuple):
    """What a family's adapter hands the driver: one `generate` call's host inputs.

    Attributes:
        prompts: int32 `(B, W)`: each row's prompt tokens at its start (a
            decoder-only model's prompts; an encoder-decoder's start token).
        lengths: int32 `(B,)`: prompt tokens per row (>= 1).
        ends: int32 `(B,)`: each row is filled at buffer positions `< end`.
        input_length: the padded width the family reads besides the buffer
            (the prompts' bucket, or the sources'): part of the compile key.
        length: the token buffer's positions (>= every end).
        inputs: the family's further inputs of the compiled loop (host int32
            arrays: the padded sources), in the order its `prefill` takes them.
        returned: the buffer columns `generate` returns.
    """

    prompts: object
    lengths: object
    ends: object
    input_length: int
    length: int
    inputs: tuple
    returned: slice


class Decoding(NamedTuple):
    """What a family's `prefill` returns inside the compiled loop.

    Attributes:
        caches: the model's caches (one `BlockCache` per block), a row per
            prompt, holding the prompts' keys and values.
        step: `step(tokens (R, 1), caches, position) -> (logits (R, 1, V), caches,
            source_attention)`, for R rows (a row per prompt, or per beam with
            beam search); `source_attention` float32 `(R, S)` is the
            cross-attention each source position received in this step (mean
            over heads) when the coverage penalty asks for it, else None.
        coverage_start: float32 `(B, S)`, the coverage before the first step (0
            at real source positions, 1 at padding: no penalty there), or None
            without a coverage penalty.
    """

    caches: list
    step: Callable
    coverage_start: Optional[object] = None


def compilations(model):
    """How many times `model`'s decode loops were compiled (traced) so far.

    Each `generate` setting (batch, bucketed width, search) compiles once on
    JAX and TensorFlow; new seeds and widths in the same bucket do not. On
    torch the loop runs eagerly by default: each setting counts once; with
    `model.jit_compile = True` each setting counts the `torch.compile` graph
    of its decode step (once), plus one if it also ran eagerly. The same as
    `model.compiled_loops.compilations()`.

    Args:
        model: a `DecoderOnly` or `EncoderDecoder`.

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> gpt = kt.DecoderOnly.from_preset("gpt2_tiny")
    >>> for seed in range(3):
    ...     _ = gpt.generate(np.array([[5, 6, 7]]), max_new_tokens=4,
    ...                      sampler=kt.generation.Sampler(seed=seed))
    >>> compilations(gpt)
    1
    """
    return model.compiled_loops.compilations()


def check_decode_length(model, total, argument):
    """A learned position table must hold every position of the token buffer that is filled.

    Args:
        model: the model.
        total: the buffer positions a row fills at most.
        argument: the `generate` argument that sets it, named in the error.
    """
    config = model.config
    if config.position == "learned" and total > config.max_length:
        raise ValueError(
            f"Decoding needs {total} positions but the learned position table has "
            f"max_length={config.max_length} rows; pass a smaller `{argument}`."
        )


_TEXT_HINT = {
    "prompt_ids": "kt.TextGenerator(model, tokenizer).generate(texts) takes text",
    "source_ids": "kt.Translator(model, tokenizer).translate(texts) takes text",
}
_MASK_HINT = {
    "prompt_ids": "generate(x['token_ids'], padding_mask=x['padding_mask'])",
    "source_ids": "generate(x['token_ids']), with padding written as the model's pad_id",
}


def token_array(name, ids, vocab_size):
    """Host int32 `(B, L)` ids, checked: integer dtype, rank 2, a row or more, values in range.

    What people try first gets a message that says what works instead: text
    (a tokenizer's task takes it), a keras-hub style dict of `token_ids` and
    `padding_mask`, and rows of different lengths.
    """
    rows = ids if isinstance(ids, (list, tuple)) else [ids]
    if isinstance(ids, str) or any(isinstance(row, (str, bytes)) for row in rows):
        raise ValueError(
            f"`{name}` must be token ids (integers), not text; {_TEXT_HINT[name]}."
        )
    if isinstance(ids, dict):
        raise ValueError(
            f"`{name}` must be an array of token ids (batch, length); received a dict with "
            f"keys {sorted(map(str, ids))}. For keras-hub style inputs: {_MASK_HINT[name]}."
        )
    try:
        ids = np.asarray(ids)
    except ValueError:  # NumPy refuses rows of different lengths
        ids = np.asarray(ids, dtype=object)
    if ids.dtype == object:
        lengths = sorted({len(row) for row in rows if hasattr(row, "__len__")})
        raise ValueError(
            f"`{name}` rows must all have one length; received rows of lengths {lengths}. "
            "Pad them to one length with the model's pad_id"
            + (" or pass `padding_mask`" if name == "prompt_ids" else "") + "."
        )
    # Before the dtype check: NumPy makes `[]` and `[[]]` float64, which says nothing.
    if ids.ndim >= 1 and ids.shape[0] == 0:
        raise ValueError(
            f"`{name}` must hold at least one row (batch >= 1); received shape {ids.shape}."
        )
    if ids.size == 0:
        raise ValueError(f"`{name}` rows must hold at least one token id (length >= 1); "
                         f"received shape {ids.shape}.")
    validation.check_token_ids(name, ids, vocab_size)
    return ids.astype("int32")


def _seed(sampler):
    """The seed input of the loop: the sampler's, a fresh one, or 0 for greedy (unused)."""
    return 0 if sampler.greedy else sampler.next_seed()


def _special_ids(model, stop_ids):
    """`(stop_ids, forbidden ids, fill id)`: the end id stops by default, padding is
    never generated unless it is also a stop id, and stopped rows get `pad_id`
    (or, without one, the first stop id)."""
    config = model.config
    if stop_ids is None:
        stop_ids = () if config.end_id is None else (config.end_id,)
    stop_ids = check_stop_ids(stop_ids, config.vocab_size)
    pad_id = config.pad_id
    forbidden = () if pad_id is None or pad_id in stop_ids else (pad_id,)
    fill = pad_id if pad_id is not None else (stop_ids[0] if stop_ids else 0)
    return stop_ids, forbidden, fill


def _search(decoding, prompts, settings, seed, context):
    """Sampling (`beam_size=None`) or beam search over the family's step function.

    Returns `(ids (B, n, L), scores (B, n), lengths (B, n))`; sampling has
    n = 1 and no scores (zeros).
    """
    if settings.beam_size is None:
        ids = sampling_loop(decoding.step, prompts, decoding.caches, settings, seed, context)
        zeros = ops.zeros((settings.batch, 1), dtype="float32")
        return ids[:, None], zeros, ops.cast(zeros, "int32")
    beams = settings.beam_size
    caches = [cache.repeat(beams) for cache in decoding.caches]  # a row per beam
    coverage = None
    if decoding.coverage_start is not None:
        coverage = ops.repeat(decoding.coverage_start, beams, axis=0)  # (B*K, S)
    return beam_loop(decoding.step, prompts, caches, settings, context, coverage)


def generate(adapter, inputs, *, sampler=None, stop_ids=None, beam_size=None, alpha=0.6,
             num_return=None, beta=0.0):
    """Decodes `inputs` with `adapter`'s model: what both families' `generate` run.

    Args:
        adapter: the family's adapter (`generation.families`), holding the model.
        inputs: the family's inputs, the keyword arguments of `adapter.request`
            (checked after the search arguments).
        sampler: a `Sampler`, or None for greedy (sampling only).
        stop_ids: ids that end a row; None: `(end_id,)`.
        beam_size: None for sampling/greedy, else the beam width.
        alpha: GNMT length penalty exponent (beam search).
        num_return: with beam search, the n best hypotheses to return.
        beta: GNMT coverage penalty weight (beam search, encoder-decoder).

    Returns:
        NumPy int32 `(B, len(request.returned))` of the best output per row, or
        with `num_return` a `Hypotheses`.
    """
    model = adapter.model
    sampler = GREEDY if sampler is None else sampler
    returned = check_search(sampler, beam_size, alpha, num_return, beta)
    request = adapter.request(**inputs)
    check_decode_length(model, int(np.max(request.ends)), adapter.length_argument)
    stop_ids, forbidden, fill = _special_ids(model, stop_ids)
    batch, width = request.prompts.shape
    settings = DecodeSettings(
        batch=batch, length=request.length, input_length=request.input_length,
        sampler=sampler.without_seed(), beam_size=beam_size, alpha=float(alpha),
        beta=float(beta), num_return=returned, stop_ids=stop_ids, forbidden=forbidden,
        fill_id=fill,
    )
    buffer = np.full((batch, settings.length), fill, dtype="int32")
    buffer[:, :width] = np.where(np.arange(width) < request.lengths[:, None], request.prompts,
                                 fill)

    def build(settings):
        def run(context, ids, lengths, ends, seed, *inputs):
            prompts = Prompts(ids, lengths, ends)
            decoding = adapter.prefill(prompts, settings, context, *inputs)
            return _search(decoding, prompts, settings, seed, context)

        return run

    run = model.compiled_loops.get(settings, build)
    outputs = run(*(ops.convert_to_tensor(np.asarray(x, "int32")) for x in
                    (buffer, request.lengths, request.ends, _seed(sampler), *request.inputs)))
    ids, scores, lengths = (ops.convert_to_numpy(x) for x in outputs)
    ids = ids[:, :, request.returned]
    if num_return is None:
        return ids[:, 0]
    return Hypotheses(ids=ids, scores=scores, lengths=lengths)
