"""Each model family's side of `generate`: its inputs as a request, its prefill and step.

The driver (`generation.decoding.generate`) decodes a token buffer that starts
with each row's prompt. The families differ in what the prompt is and what
comes before the loop:

* `DecoderOnlyAdapter`: the prompts are the user's (moved to the start of
  their rows); the prefill runs them through the model at once, and the
  buffer is returned whole, prompts included.
* `EncoderDecoderAdapter`: the prompt is the start token alone; the prefill
  encodes the sources and computes each decoder block's cross-attention keys
  and values once; the start token is not returned. With no `max_length` a row
  may fill its source's real length + 50 targets (the paper's limit).

Both decode from the shortest prompt's last token on: step `i` feeds the
token at buffer position `i - 1` and picks position `i`'s.
"""

import numpy as np
from keras import ops

from keras_transformer import masks
from keras_transformer import validation
from keras_transformer.generation.decoding import DecodeRequest
from keras_transformer.generation.decoding import Decoding
from keras_transformer.generation.decoding import token_array
from keras_transformer.generation.settings import bucket

PAPER_EXTRA_LENGTH = 50
"""The paper's output limit: a translation may be its source's length + 50 tokens."""


class DecoderOnlyAdapter:
    """`DecoderOnly.generate`: continuing prompts.

    Args:
        model: a `DecoderOnly`.
    """

    length_argument = "max_new_tokens"

    def __init__(self, model):
        self.model = model

    def request(self, prompt_ids, max_new_tokens, padding_mask=None):
        """The `DecodeRequest` of `prompt_ids` `(B, P)` continued by `max_new_tokens`.

        Each row's real tokens (`padding_mask`, else the ids other than
        `pad_id`) move to its start; every row is filled to `P +
        max_new_tokens`. The prompts are padded to a bucket of widths, which
        the prefill reads.
        """
        config = self.model.config
        validation.check_int("max_new_tokens", max_new_tokens)
        prompt = token_array("prompt_ids", prompt_ids, config.vocab_size)
        prompt, lengths = _prompt_lengths(prompt, padding_mask, config.pad_id)
        batch, width = prompt.shape
        end = width + max_new_tokens
        # A learned position table bounds the bucket: the padded prompts still fit.
        limit = config.max_length - max_new_tokens if config.position == "learned" else None
        padded = bucket(width, limit)
        return DecodeRequest(
            prompts=prompt, lengths=lengths, ends=np.full((batch,), end, "int32"),
            input_length=padded, length=padded + max_new_tokens, inputs=(),
            returned=slice(0, end),
        )

    def prefill(self, prompts, settings, context):
        """The prompts' keys and values in fresh caches; the step is `call_with_cache`."""
        model = self.model
        caches = model.empty_cache(settings.batch, settings.length)
        # The loop feeds positions from the shortest prompt's last one again: a banded
        # block's ring must not keep what it will be fed.
        _, caches = model.call_with_cache(
            prompts.ids[:, : settings.input_length], caches, 0,
            keep_until=prompts.first_index() - 1, context=context,
        )

        def step(tokens, caches, position):
            logits, caches = model.call_with_cache(tokens, caches, position, context=context)
            return logits, caches, None

        return Decoding(caches, step)


class EncoderDecoderAdapter:
    """`EncoderDecoder.generate`: translating sources.

    Args:
        model: an `EncoderDecoder`.
    """

    length_argument = "max_length"

    def __init__(self, model):
        self.model = model

    def request(self, source_ids, start_id=None, max_length=None):
        """The `DecodeRequest` of translating `source_ids` `(B, S)`.

        The buffer is the start token, then up to `max_length` targets (default
        each source's real length + 50); the sources are padded to a bucket of
        widths (when the model has a `pad_id`) and are the loop's one further
        input.
        """
        config = self.model.config
        source = token_array("source_ids", source_ids, config.vocab_size)
        start_id = self._start_id(start_id)
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
        if max_length is None:  # the paper: each source's real length + 50
            real = (np.full((batch,), width) if config.pad_id is None
                    else (source != config.pad_id).sum(axis=1))
            targets = real + PAPER_EXTRA_LENGTH
            max_length = width + PAPER_EXTRA_LENGTH
            buffer_targets = padded_width + PAPER_EXTRA_LENGTH
        else:
            buffer_targets = validation.check_int("max_length", max_length)
            targets = np.full((batch,), max_length)
        return DecodeRequest(
            prompts=np.full((batch, 1), start_id, "int32"), lengths=np.ones((batch,), "int32"),
            ends=(1 + targets).astype("int32"),  # the start token, then the targets
            input_length=padded_width, length=1 + buffer_targets, inputs=(source,),
            returned=slice(1, 1 + max_length),  # without the start token
        )

    def _start_id(self, start_id):
        config = self.model.config
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
        return start_id

    def prefill(self, prompts, settings, context, source):
        """Encodes `source`; each decoder block's cache gets its keys and values. The
        start token is the prompt, which the loop feeds first: nothing else to prefill."""
        model = self.model
        memory = model.encode(source, context=context)
        memory_mask = masks.padding_mask(source, model.config.pad_id)  # None: no padding id
        coverage = settings.beta > 0
        caches = model.empty_cache(memory, settings.length, record_attention=coverage,
                                   context=context)
        coverage_start = None
        if coverage:  # what the penalty counts: the real source tokens
            real = (ops.ones(ops.shape(source), "bool") if memory_mask is None
                    else memory_mask)
            coverage_start = ops.cast(ops.where(real, 0.0, 1.0), "float32")  # (B, S)
        if settings.beam_size is not None and memory_mask is not None:  # a row per beam
            memory_mask = ops.repeat(memory_mask, settings.beam_size, axis=0)

        def step(tokens, caches, position):
            logits, caches = model.decode(tokens, None, memory_mask, caches=caches,
                                          cache_index=position, context=context)
            return logits, caches, caches[-1].source_attention if coverage else None

        return Decoding(caches, step, coverage_start)


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


