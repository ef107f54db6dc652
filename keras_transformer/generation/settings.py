"""One frozen object saying how a `generate` call decodes: also its compile key."""

import dataclasses
from typing import NamedTuple
from typing import Optional

from keras import ops

from keras_transformer import validation
from keras_transformer.generation.samplers import Sampler

BUCKET_MINIMUM = 8
"""Prompt and source widths round up to a power of two, at least this."""


def bucket(width, limit=None):
    """`width` rounded up to a power of two >= `BUCKET_MINIMUM`, at most `limit`.

    A new prompt or source length inside the same bucket reuses the compiled
    loop; the extra positions are padding the loop never reads.

    Example:
    >>> [bucket(w) for w in (1, 8, 9, 33)], bucket(33, limit=40)
    ([8, 8, 16, 64], 40)
    """
    rounded = max(BUCKET_MINIMUM, 1 << (int(width) - 1).bit_length())
    return rounded if limit is None else max(int(width), min(rounded, int(limit)))


@dataclasses.dataclass(frozen=True)
class DecodeSettings:
    """Everything a decode loop is compiled for; hashable, so it keys the compiled loops.

    Shapes are the padded (bucketed) ones. The seed, the prompt lengths and
    the position where the output ends are inputs of the compiled loop, not
    settings: a new seed or a new prompt length in the same bucket reuses it.

    Args:
        batch: rows decoded together.
        length: positions of the output buffer (prompt bucket + new tokens).
        sampler: how a token is picked (its seed removed), for sampling.
        beam_size: None for sampling/greedy, else the beam width.
        alpha: GNMT length penalty exponent (beam search).
        num_return: hypotheses returned per row (beam search: the n best).
        stop_ids: ids that end a row; never forbidden.
        forbidden: ids never generated (the padding id, unless it stops).
        fill_id: written after a row has stopped.
        input_length: the padded width of the prompts (decoder-only: what the
            prefill runs over) or of the sources (encoder-decoder).
        beta: GNMT coverage penalty weight (beam search, encoder-decoder; 0: off).

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> gpt = kt.DecoderOnly.from_preset("gpt2_tiny")
    >>> _ = gpt.generate(np.array([[5, 6, 7]]), max_new_tokens=4)
    >>> [(s.batch, s.input_length, s.length) for s in gpt.compiled_loops.settings()]
    [(1, 8, 12)]
    """

    batch: int
    length: int
    sampler: Sampler
    beam_size: Optional[int]
    alpha: float
    num_return: int
    stop_ids: tuple
    forbidden: tuple
    fill_id: int
    input_length: int
    beta: float = 0.0


def check_search(sampler, beam_size, alpha, num_return, beta=0.0):
    """Validates the search arguments of `generate`; returns `num_return` (default 1)."""
    if not isinstance(sampler, Sampler):
        raise ValueError(
            f"`sampler` must be a keras_transformer.generation.Sampler or None; "
            f"received {sampler!r}."
        )
    validation.check_int("beam_size", beam_size, allow_none=True)
    validation.check_non_negative_float("alpha", alpha)
    if validation.check_non_negative_float("beta", beta) > 0 and beam_size is None:
        raise ValueError(
            f"`beta` (the coverage penalty) ranks beam search's hypotheses: it needs a "
            f"beam_size; received beta={beta} with beam_size=None."
        )
    validation.check_int("num_return", num_return, allow_none=True)
    if beam_size is None:
        if num_return is not None:
            raise ValueError(
                f"`num_return` needs beam search (the n best of `beam_size` beams); "
                f"received num_return={num_return} with beam_size=None."
            )
        return 1
    if not sampler.greedy:
        raise ValueError("Beam search is deterministic: pass a `sampler` only with beam_size=None.")
    if num_return is not None and num_return > beam_size:
        raise ValueError(
            f"`num_return` must be <= beam_size={beam_size} (the n best of the beams); "
            f"received {num_return}."
        )
    return 1 if num_return is None else num_return


def check_stop_ids(stop_ids, vocab_size):
    """`stop_ids` must be a list or tuple of ids in `[0, vocab_size)`; returns a tuple."""
    if not isinstance(stop_ids, (list, tuple)):
        raise ValueError(
            f"`stop_ids` must be a list or tuple of token ids (e.g. (end_id,)); "
            f"received {stop_ids!r}."
        )
    for token in stop_ids:
        validation.check_token_id("stop_ids", token, vocab_size)
    return tuple(int(t) for t in stop_ids)


class Prompts(NamedTuple):
    """The token buffer a decode loop fills, and where each row's prompt ends.

    Attributes:
        ids: int32 `(B, L)`: each row's prompt at its start, then `fill_id`.
        lengths: int32 `(B,)`: prompt tokens per row (>= 1); positions before
            it keep their token, the rest are generated.
        end: int32 `(B,)`: each row is filled at positions `< end` (<= L), then
            holds `fill_id` (the rest of the buffer is bucket padding).
    """

    ids: object
    lengths: object
    end: object

    def first_index(self):
        """The first position a loop fills: the shortest prompt's end (a prompt has a token)."""
        return ops.maximum(ops.min(self.lengths), 1)

    def last_index(self):
        """One past the last position any row fills."""
        return ops.max(self.end)

    def at(self, index):
        """`(token (B,), inside the prompt (B,))` of every row at position `index`."""
        return column(self.ids, index, axis=1)[:, 0], index < self.lengths


def column(x, index, axis):
    """`x`'s entries at position `index` along `axis`, which stays (of size 1).

    At a Python int this slices (a view on torch); at a tensor it gathers
    (`ops.take`), which `torch.compile` traces into the graph, where
    `ops.slice` at a tensor start would read the start back to the host.

    Example:
    >>> from keras import ops
    >>> x = ops.reshape(ops.arange(6), (2, 3))
    >>> ops.convert_to_numpy(column(x, ops.convert_to_tensor(2), axis=1)).tolist()
    [[2], [5]]
    """
    if isinstance(index, int):
        starts = [0] * len(x.shape)
        starts[axis] = index
        shape = list(ops.shape(x))
        shape[axis] = 1
        return ops.slice(x, starts, shape)
    return ops.take(x, ops.reshape(ops.cast(index, "int32"), (1,)), axis=axis)
