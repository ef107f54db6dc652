"""Writing one step's keys and values into a key/value cache `(B, 2, S, H, d_head)`.

A dense layer's cache has a slot per absolute position (`write`). A banded layer
only reads its last `window` positions, so its cache is a ring of `window` slots,
position p in slot `p % window` (`write_ring`; `masks.ring_positions` says which
position each slot holds).

The one layers module that may import a backend (torch, lazily). Everywhere the
write is `keras.ops.slice_update` of the stacked keys and values: XLA updates the
buffer in place inside the compiled decode loop. PyTorch's eager
`slice_update` copies the whole cache instead, per layer and step. With
`in_place=True` (what `generate`'s torch loop asks for, through its
`DecodeContext`, under `torch.inference_mode()`, where no autograd graph can see
a buffer change) a torch cache is written in place, so greedy and sampled
decoding hold one cache, not a stream of copies; beam search still copies the
caches once a step when it reorders the beams. Otherwise a cache passed to a
cached call is never modified.
"""

import sys

import keras
from keras import ops

from keras_transformer import masks


def write(cache, index, keys, values, in_place=False):
    """`cache` with `keys`, `values` `(B, T, H, d_head)` at positions `index .. index + T - 1`.

    Args:
        cache: `(B, 2, S, H, d_head)`: keys, then values, a slot per position.
        index: the absolute position of the first new row (int or scalar tensor).
        keys: `(B, T, H, d_head)`.
        values: `(B, T, H, d_head)`.
        in_place: on torch, write into `cache` itself (`DecodeContext.in_place_writes`:
            inside `torch.inference_mode()` only); ignored on JAX and TensorFlow.

    Returns:
        `(all keys (B, S, H, d_head), all values (B, S, H, d_head), updated cache)`.
    """
    update = ops.cast(ops.stack([keys, values], axis=1), cache.dtype)  # (B, 2, T, H, d)
    if in_place and keras.backend.backend() == "torch":
        torch = sys.modules["torch"]
        if not isinstance(index, int):  # a host int (the eager loop) needs no device scalar
            index = torch.as_tensor(index, device=cache.device)
        positions = torch.arange(update.shape[2], device=cache.device) + index
        cache = cache.contiguous()  # rows that share memory (a repeated row) get their own
        cache.index_copy_(2, positions, update)
    else:
        cache = ops.slice_update(cache, (0, 0, index, 0, 0), update)
    return cache[:, 0], cache[:, 1], cache


def write_ring(ring, index, keys, values, keep_until=None):
    """`ring` with `keys`, `values` `(B, T, H, d_head)` of positions `index ..` in slots `p % w`.

    Only the last w positions are kept: with T > w, the first `T - w` new
    rows are never stored (a banded layer will not read them again).

    Args:
        ring: `(B, 2, w, H, d_head)`, the ring cache before position `index`.
        index: the absolute position of the first new row (int or scalar tensor).
        keys: `(B, T, H, d_head)`.
        values: `(B, T, H, d_head)`.
        keep_until: keep only new positions before this one (int or scalar
            tensor), for a caller that will feed the later ones again; default
            `index + T` (all).

    Returns:
        The updated ring `(B, 2, w, H, d_head)`: the slots then hold the
        positions before `keep_until`, as `masks.ring_positions(keep_until, w)`
        says.
    """
    window, length = ring.shape[2], keys.shape[1]
    index = ops.cast(index, "int32")
    end = index + length
    if keep_until is not None:
        end = ops.minimum(ops.cast(keep_until, "int32"), end)
    update = ops.cast(ops.stack([keys, values], axis=1), ring.dtype)  # (B, 2, T, H, d)
    # Slot s then holds position p = ring_positions(end, w)[s]: a new row when p >= index.
    held = masks.ring_positions(end, window)  # (w,)
    source = ops.where(held >= index, window + held - index, ops.arange(window, dtype="int32"))
    return ops.take(ops.concatenate([ring, update], axis=2), source, axis=2)
