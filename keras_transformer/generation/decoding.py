"""`generate` for both model families: checks, padding to buckets, the compiled loop.

Each step feeds one token through the same forward pass the model trains with
(`call_with_cache` / `decode(..., caches=...)`), so the cached loop computes
exactly what repeated full passes compute, at one position's cost per token.

Everything is checked on the host before anything is compiled. Prompt and
source widths are padded up to a bucket (`settings.bucket`), and the seed,
the prompt lengths and the end position are inputs of the compiled loop: one
compilation serves every seed and every length in a bucket. The compiled loops
are kept on the model, keyed by their `DecodeSettings`.
"""

import numpy as np
from keras import ops

from keras_transformer import masks
from keras_transformer import validation
from keras_transformer.generation.beam_search import Hypotheses
from keras_transformer.generation.beam_search import beam_loop
from keras_transformer.generation.compiled import CompiledLoop
from keras_transformer.generation.sampling import sampling_loop
from keras_transformer.generation.samplers import GREEDY
from keras_transformer.generation.settings import DecodeSettings
from keras_transformer.generation.settings import Prompts
from keras_transformer.generation.settings import bucket
from keras_transformer.generation.settings import check_search
from keras_transformer.generation.settings import check_stop_ids


def compilations(model):
    """How many times `model`'s decode loops were compiled (traced) so far.

    Each `generate` setting (batch, bucketed width, search) compiles once on
    JAX and TensorFlow; new seeds and widths in the same bucket do not. On
    torch the loop runs eagerly by default: each setting counts once; with
    `model.jit_compile = True` each setting counts the `torch.compile` graph
    of its decode step (once), plus one if it also ran eagerly.

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
    return sum(loop.traces for loop in model.__dict__.get("_decode_functions", {}).values())


def clear_compiled(model):
    """Forgets the model's compiled decode loops, which captured its variables: after
    `quantize` or `enable_lora` (new variables), the next `generate` compiles afresh.

    Args:
        model: a `DecoderOnly` or `EncoderDecoder`.

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> gpt = kt.DecoderOnly.from_preset("gpt2_tiny")
    >>> _ = gpt.generate(np.array([[5, 6, 7]]), max_new_tokens=2)
    >>> clear_compiled(gpt)
    >>> compilations(gpt)
    0
    """
    model.__dict__.pop("_decode_functions", None)


def _compiled(model, settings, build):
    """The compiled loop for `settings`, built (and kept on the model) on first use."""
    functions = model.__dict__.setdefault("_decode_functions", {})
    if settings not in functions:
        functions[settings] = CompiledLoop(model, build(settings))
    return functions[settings]


def check_decode_length(model, total, argument):
    """A learned position table must hold every decoded position."""
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


def _token_array(name, ids, vocab_size):
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


def _prompt_lengths(prompt, padding_mask, pad_id):
    """Each row's real tokens moved to its start: `(ids, lengths)`.

    The real tokens are `padding_mask`'s True positions when it is given,
    else every position that is not `pad_id` (every position when `pad_id`
    is None). They must be one contiguous run per row, padding only before or
    after: no token is ever dropped from inside a prompt.
    """
    if padding_mask is not None:
        padding_mask = np.asarray(padding_mask)
        if padding_mask.dtype != bool or padding_mask.shape != prompt.shape:
            raise ValueError(
                f"`padding_mask` must be a bool array of the prompts' shape {prompt.shape} "
                f"(True = real token); received {padding_mask.dtype} of shape "
                f"{padding_mask.shape}."
            )
        real = padding_mask
    elif pad_id is None:
        real = np.ones(prompt.shape, bool)
    else:
        real = prompt != pad_id
    lengths = real.sum(axis=1).astype("int32")
    if (lengths == 0).any():
        raise ValueError(
            f"Every prompt needs at least one real token; rows {np.flatnonzero(lengths == 0)} "
            "have none."
        )
    first = real.argmax(axis=1)
    contiguous = lengths == np.array(
        [real[row, first[row]: first[row] + lengths[row]].sum() for row in range(len(real))]
    )
    if not contiguous.all():
        what = "`padding_mask`" if padding_mask is not None else f"pad_id={pad_id}"
        raise ValueError(
            f"Each prompt must be one run of tokens with padding only before or after it; "
            f"rows {np.flatnonzero(~contiguous)} have padding ({what}) between tokens. "
            "Pass `padding_mask` to say which positions are real."
        )
    aligned = np.zeros_like(prompt)
    for row in range(len(prompt)):
        aligned[row, : lengths[row]] = prompt[row, first[row]: first[row] + lengths[row]]
    return aligned, lengths


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


def _settings(model, sampler, alpha, stop_ids, beta=0.0, **shapes_and_search):
    """The `DecodeSettings` of one call: the sampler without its seed, the special ids."""
    stop_ids, forbidden, fill = _special_ids(model, stop_ids)
    return DecodeSettings(
        sampler=sampler.without_seed(), alpha=float(alpha), beta=float(beta),
        stop_ids=stop_ids, forbidden=forbidden, fill_id=fill, **shapes_and_search,
    )


def _expand(tree, beam_size):
    """Repeats every row of every tensor `beam_size` times: `(B, ...) -> (B*K, ...)`."""
    if isinstance(tree, dict):
        return {key: _expand(value, beam_size) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_expand(value, beam_size) for value in tree]
    return None if tree is None else ops.repeat(tree, beam_size, axis=0)


def _search(step, prompts, caches, settings, seed):
    """Sampling (`beam_size=None`) or beam search over the same step function.

    Returns `(ids (B, n, L), scores (B, n), lengths (B, n))`; sampling has
    n = 1 and no scores (zeros).
    """
    if settings.beam_size is None:
        ids = sampling_loop(step, prompts, caches, settings, seed)
        zeros = ops.zeros((settings.batch, 1), dtype="float32")
        return ids[:, None], zeros, ops.cast(zeros, "int32")
    return beam_loop(step, prompts, _expand(caches, settings.beam_size), settings)


def _result(outputs, end, num_return, skip=0):
    """What `generate` returns: ids `(B, L)` of the best, or the n best as `Hypotheses`."""
    ids, scores, lengths = (ops.convert_to_numpy(x) for x in outputs)
    ids = ids[:, :, skip:end]
    if num_return is None:
        return ids[:, 0]
    return Hypotheses(ids=ids, scores=scores, lengths=lengths)


def generate_decoder_only(
    model, prompt_ids, max_new_tokens, *, sampler=None, stop_ids=None, beam_size=None,
    alpha=0.6, num_return=None, padding_mask=None,
):
    """Continues each prompt by `max_new_tokens` tokens; see `DecoderOnly.generate`."""
    config = model.config
    sampler = GREEDY if sampler is None else sampler
    returned = check_search(sampler, beam_size, alpha, num_return)
    validation.check_int("max_new_tokens", max_new_tokens)
    prompt = _token_array("prompt_ids", prompt_ids, config.vocab_size)
    prompt, lengths = _prompt_lengths(prompt, padding_mask, config.pad_id)
    batch, width = prompt.shape
    end = width + max_new_tokens
    check_decode_length(model, end, "max_new_tokens")
    limit = config.max_length - max_new_tokens if config.position == "learned" else None
    padded = bucket(width, limit)
    settings = _settings(model, sampler, alpha, stop_ids, batch=batch, input_length=padded,
                         length=padded + max_new_tokens, beam_size=beam_size, num_return=returned)
    buffer = np.full((batch, settings.length), settings.fill_id, dtype="int32")
    buffer[:, :width] = np.where(np.arange(width) < lengths[:, None], prompt, settings.fill_id)

    def build(settings):
        def run(ids, lengths, end, seed):
            prompts = Prompts(ids, lengths, end)
            caches = model.empty_cache(settings.batch, settings.length)
            # The loop feeds positions from the shortest prompt's last one again.
            _, caches = model.call_with_cache(
                ids[:, : settings.input_length], caches, 0, keep_until=prompts.first_index() - 1
            )
            return _search(model.call_with_cache, prompts, caches, settings, seed)

        return run

    run = _compiled(model, settings, build)
    outputs = run(*(ops.convert_to_tensor(np.asarray(x, "int32"))
                    for x in (buffer, lengths, np.full((batch,), end), _seed(sampler))))
    return _result(outputs, end, num_return)


def generate_encoder_decoder(
    model, source_ids, *, start_id=None, stop_ids=None, max_length=None, beam_size=4,
    alpha=0.6, sampler=None, num_return=None, beta=0.0,
):
    """Translation of each source, `(B, max_length)`; see `EncoderDecoder.generate`."""
    config = model.config
    sampler = GREEDY if sampler is None else sampler
    returned = check_search(sampler, beam_size, alpha, num_return, beta)
    source = _token_array("source_ids", source_ids, config.vocab_size)
    if start_id is None:
        start_id = config.start_id
        if start_id is None:
            raise ValueError(
                "`start_id` is needed: pass it, or build the model with `start_id` (the "
                "token every target starts with)."
            )
    start_id = validation.check_token_id("start_id", start_id, config.vocab_size)
    if start_id == config.pad_id:
        raise ValueError(
            f"`start_id` must differ from `pad_id` (a start token equal to the padding id "
            f"would be masked out); received both {start_id}."
        )
    batch, width = source.shape
    learned = config.position == "learned"
    if learned and width > config.max_length:
        raise ValueError(
            f"`source_ids` has {width} positions but the learned position table has "
            f"max_length={config.max_length} rows."
        )
    padded_width = width
    if config.pad_id is not None:  # padding to a bucket needs a padding id
        padded_width = bucket(width, config.max_length if learned else None)
        source = np.pad(source, ((0, 0), (0, padded_width - width)),
                        constant_values=config.pad_id)
    if max_length is None:  # the paper: each source's length + 50
        max_length, buffer_length = width + 50, padded_width + 50
        real = width if config.pad_id is None else (source != config.pad_id).sum(axis=1)
        ends = np.broadcast_to(np.asarray(real) + 51, (batch,))
    else:
        buffer_length = validation.check_int("max_length", max_length)
        ends = np.full((batch,), max_length + 1)
    check_decode_length(model, max_length + 1, "max_length")
    settings = _settings(model, sampler, alpha, stop_ids, beta, batch=batch,
                         length=buffer_length + 1, beam_size=beam_size, num_return=returned,
                         input_length=padded_width)

    def build(settings):
        def run(source, start, end, seed):
            memory = model.encode(source)
            memory_mask = masks.padding_mask(source, config.pad_id)
            coverage = None  # what the coverage penalty counts: the real source tokens
            if settings.beta > 0:
                coverage = memory_mask
                if coverage is None:  # no padding id: every position is real
                    coverage = ops.ones(ops.shape(source), "bool")
            caches = model.empty_cache(memory, settings.length, coverage_mask=coverage)
            if settings.beam_size is not None:  # one row per beam
                memory_mask = _expand(memory_mask, settings.beam_size)

            def step(token, caches, position):
                return model.decode(token, None, memory_mask, caches=caches, cache_index=position)

            ids = ops.full((settings.batch, settings.length), settings.fill_id, dtype="int32")
            ids = ops.slice_update(ids, (0, 0), ops.broadcast_to(start, (settings.batch, 1)))
            lengths = ops.ones((settings.batch,), dtype="int32")
            return _search(step, Prompts(ids, lengths, end), caches, settings, seed)

        return run

    run = _compiled(model, settings, build)
    outputs = run(*(ops.convert_to_tensor(np.asarray(x, "int32"))
                    for x in (source, start_id, ends, _seed(sampler))))
    return _result(outputs, max_length + 1, num_return, skip=1)
