"""Writing one step's keys and values into a key/value cache `(B, 2, S, H, d_head)`.

A dense layer's cache has a slot per absolute position (`write`). A banded layer
only reads its last `window` positions, so its cache is a ring of `window` slots,
position p in slot `p % window` (`write_ring`; `masks.ring_positions` says which
position each slot holds).

The one layers module that may import a backend (torch, lazily). Everywhere the
write is `keras.ops.slice_update` of the stacked keys and values: XLA updates the
buffer in place inside the compiled decode loop. PyTorch's eager
`slice_update` copies the whole cache instead, per layer and step. Under
`torch.inference_mode()` (which `generate` turns on, and in which no autograd
graph can see a buffer change) the cache is written in place, so greedy and
sampled decoding hold one cache, not a stream of copies; beam search still
copies the caches once a step when it reorders the beams. Outside inference
mode, a cache passed to `call_with_cache` is never modified.
"""

import contextlib
import sys
import threading

import keras
from keras import ops

from keras_transformer import masks

_state = threading.local()


@contextlib.contextmanager
def in_place_writes():
    """Within this context (in this thread), torch caches are written in place."""
    previous = getattr(_state, "in_place", False)
    _state.in_place = True
    try:
        yield
    finally:
        _state.in_place = previous


def _write_in_place():
    """Whether a torch decode loop (inference mode) is running, so in place is safe."""
    if keras.backend.backend() != "torch":
        return False
    if getattr(_state, "in_place", False):
        return True
    torch = sys.modules["torch"]
    return not torch.compiler.is_compiling() and torch.is_inference_mode_enabled()


def write(cache, index, keys, values):
    """`cache` with `keys`, `values` `(B, T, H, d_head)` at positions `index .. index + T - 1`.

    Args:
        cache: `(B, 2, S, H, d_head)`: keys, then values, a slot per position.
        index: the absolute position of the first new row (int or scalar tensor).
        keys: `(B, T, H, d_head)`.
        values: `(B, T, H, d_head)`.

    Returns:
        `(all keys (B, S, H, d_head), all values (B, S, H, d_head), updated cache)`.
    """
    update = ops.cast(ops.stack([keys, values], axis=1), cache.dtype)  # (B, 2, T, H, d)
    if _write_in_place():
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
