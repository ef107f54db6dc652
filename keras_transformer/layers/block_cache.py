"""What one block keeps between decoding steps, typed."""

from typing import Any
from typing import NamedTuple

from keras import ops

from keras_transformer import validation

ABSENT = ()
"""A part a `BlockCache` does not hold: an empty structure, which every backend's loop
state carries (TensorFlow's while loop refuses None)."""


def _held(part):
    return not isinstance(part, tuple)


class BlockCache(NamedTuple):
    """One block's decoding state: its key/value caches, and what it read of the source.

    Made by `TransformerBlock.empty_cache` (a model's `empty_cache` makes one per
    block) and returned updated by each cached call.

    Attributes:
        self_attention: `(B, 2, slots, H_kv, d_head)`: the keys, then the values,
            of the positions decoded so far (a slot per position, or a ring of
            `window` slots for a banded block). Each row (each beam) its own.
        cross_attention: `(B, 2, S, H_kv, d_head)`: the keys and values of the
            encoder output, computed once per source: the same for every beam of a
            source. `ABSENT` in a block without cross-attention.
        source_attention: float32 `(B, S)`: how much cross-attention (mean over
            heads, summed over the call's positions) each source position received
            in the last call, in a cache made to record it (beam search's coverage
            penalty accumulates it); else `ABSENT`.

    Example:
    >>> from keras_transformer.layers import TransformerBlock
    >>> block = TransformerBlock(num_heads=2, d_ff=16, self_attention="causal")
    >>> block.build((None, None, 8))
    >>> cache = block.empty_cache(batch_size=3, max_length=5)
    >>> tuple(cache.self_attention.shape), cache.cross_attention
    ((3, 2, 5, 2, 4), ())
    >>> tuple(cache.reorder([2, 2, 0]).self_attention.shape)
    (3, 2, 5, 2, 4)
    """

    self_attention: Any
    cross_attention: Any = ABSENT
    source_attention: Any = ABSENT

    @property
    def holds_memory(self):
        """Whether `cross_attention` holds the source's keys and values."""
        return _held(self.cross_attention)

    @property
    def records_attention(self):
        """Whether cached calls record `source_attention`."""
        return _held(self.source_attention)

    def repeat(self, times):
        """Every row repeated `times` times, `(B, ...) -> (B * times, ...)`: one per beam.

        Args:
            times: copies of each row (the beam width), a whole number >= 1.
        """
        times = validation.check_int("times", times)
        return BlockCache(*(ops.repeat(part, times, axis=0) if _held(part) else part
                            for part in self))

    def reorder(self, rows):
        """The per-beam rows gathered by `rows` (beam search keeping its best beams).

        The source's keys and values are the same for every beam of a source and
        stay as they are; `source_attention` is the last call's and is gathered too.

        Args:
            rows: int `(B,)`: the row of this cache each new row copies, each in
                `[0, B)` (not checked: inside a compiled loop the values are not known;
                JAX fills rows out of range with NaN).
        """
        if not hasattr(rows, "dtype"):  # a list
            rows = ops.convert_to_tensor(rows)
        if "int" not in str(rows.dtype) or len(rows.shape) != 1:
            raise ValueError(
                f"`rows` must be integer row indices of rank 1; received dtype {rows.dtype} "
                f"of shape {tuple(rows.shape)}."
            )

        def take(part):
            return ops.take(part, rows, axis=0) if _held(part) else part

        return self._replace(self_attention=take(self.self_attention),
                             source_attention=take(self.source_attention))
