"""Mask and shape conventions, written once for the whole library.

Shapes:
    batch: B, query (target) length: T, key/value (source or memory) length: S,
    heads: H, width: d_model, per-head width: d_head = d_model // H.
    Token ids are int tensors `(B, T)`; hidden states are `(B, T, d_model)`.
    Attention works on heads laid out as `(B, T, H, d_head)`.

Masks are boolean and `True` means "real" / "may attend":
    * a key padding mask is `(B, S)`: `True` for real tokens, `False` for `pad_id`;
    * an attention mask is `(B or 1, T, S)`: `True` where query t may read key s.
      Layers broadcast it over heads as `(B or 1, 1, T, S)`.

Positions: by default queries are aligned to the *end* of the keys: with T
queries and S >= T keys, query t sits at absolute position `S - T + t`. A
cached decoding step instead gives the queries' first position explicitly
(`offset`, the cache index): the cache has room for S keys, only those at
positions <= the query's are filled, and the causal mask alone hides the rest.
One causal or banded mask thus serves the full pass and the cached step.

Key/value caches (cached decoding) are `(B, 2, S, H, d_head)`: keys then
values, one slot per absolute position.

Every function here takes and returns `keras.ops` tensors and composes with
`merge_masks`, in the manner of Flax's WMT example.
"""

from keras import ops

__all__ = [
    "banded_mask",
    "ring_banded_mask",
    "ring_positions",
    "causal_mask",
    "key_mask_to_attention_mask",
    "merge_masks",
    "padding_mask",
]


def padding_mask(ids, pad_id=0):
    """Key padding mask from token ids.

    Args:
        ids: int tensor `(B, S)`.
        pad_id: the id that marks padding, or `None` for "no padding".

    Returns:
        bool tensor `(B, S)`, `True` for real tokens; `None` when `pad_id` is None.

    Example:
    >>> import numpy as np
    >>> from keras import ops
    >>> ops.convert_to_numpy(padding_mask(np.array([[5, 6, 0]]), pad_id=0))
    array([[ True,  True, False]])
    """
    if pad_id is None:
        return None
    return ops.not_equal(ids, pad_id)


def _positions(query_length, key_length, offset=None):
    """Absolute (query, key) positions as `(T, 1)` and `(1, S)` int tensors."""
    if offset is None:
        offset = key_length - query_length
    q = ops.arange(query_length, dtype="int32") + ops.cast(offset, "int32")
    k = ops.arange(key_length, dtype="int32")
    return q[:, None], k[None, :]


def causal_mask(query_length, key_length=None, offset=None):
    """Causal mask `(1, T, S)`: query at position p sees keys at positions <= p.

    Args:
        query_length: T, the number of queries.
        key_length: S, the number of keys (default T).
        offset: the first query's absolute position (default `S - T`: queries
            aligned to the end of the keys; a cached step passes its index).

    Returns:
        bool tensor `(1, T, S)`, `True` where query t may read key s.

    Example:
    >>> from keras import ops
    >>> ops.convert_to_numpy(causal_mask(3)).astype(int)[0]
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    key_length = query_length if key_length is None else key_length
    q, k = _positions(query_length, key_length, offset)
    return ops.expand_dims(ops.less_equal(k, q), 0)


def banded_mask(query_length, key_length=None, window=1, offset=None):
    """Locally banded causal mask `(1, T, S)` (GPT-3's sparse layers).

    Query at position p sees keys at positions p - window < s <= p: itself and
    the `window - 1` positions before it.

    Args:
        query_length: T, the number of queries.
        key_length: S, the number of keys (default T).
        window: how many positions each query sees, its own included.
        offset: the first query's absolute position (default `S - T`).

    Returns:
        bool tensor `(1, T, S)`, `True` where query t may read key s.

    Example:
    >>> from keras import ops
    >>> ops.convert_to_numpy(banded_mask(4, window=2)).astype(int)[0]
    array([[1, 0, 0, 0],
           [1, 1, 0, 0],
           [0, 1, 1, 0],
           [0, 0, 1, 1]])
    """
    key_length = query_length if key_length is None else key_length
    q, k = _positions(query_length, key_length, offset)
    return ops.expand_dims(_band(q, k, window), 0)


def _band(q, k, window):
    """`p - window < s <= p` for query positions q and key positions k (`s >= 0`: filled)."""
    seen = ops.logical_and(ops.less_equal(k, q), ops.greater(k, q - window))
    return ops.logical_and(seen, ops.greater_equal(k, 0))


def ring_positions(index, window):
    """Absolute positions in the `window` slots of a banded layer's ring cache.

    A banded layer only ever reads the last `window` positions, so its decode
    cache is a ring: position p lives in slot `p % window`. Before position
    `index` is written, slot s holds the latest position p < index with
    `p % window == s`; a negative p means the slot is still empty.

    Args:
        index: the next position to be written (int or scalar tensor).
        window: the ring's number of slots (the layer's band width).

    Returns:
        int32 tensor `(window,)`.

    Example:
    >>> from keras import ops
    >>> ops.convert_to_numpy(ring_positions(5, 3))  # slot 0 holds 3, slot 1 holds 4
    array([3, 4, 2], dtype=int32)
    """
    index = ops.cast(index, "int32")
    slots = ops.arange(window, dtype="int32")
    return index - window + ops.mod(slots - index, window)


def ring_banded_mask(query_length, window, index):
    """Banded mask `(1, T, window + T)` of a cached step that reads a ring cache.

    The keys are the ring's `window` slots (`ring_positions(index, window)`)
    followed by the T new keys at positions `index .. index + T - 1`, which
    are also the queries' positions. Empty slots are never read.

    Args:
        query_length: T, the number of new positions.
        window: the band width (the ring's number of slots).
        index: the first new position (int or scalar tensor).

    Returns:
        bool tensor `(1, T, window + T)`.

    Example:
    >>> from keras import ops
    >>> ops.convert_to_numpy(ring_banded_mask(1, 3, 1)).astype(int)[0]  # slot 0 holds 0
    array([[1, 0, 0, 1]])
    """
    new = ops.arange(query_length, dtype="int32") + ops.cast(index, "int32")
    keys = ops.concatenate([ring_positions(index, window), new])
    return ops.expand_dims(_band(new[:, None], keys[None, :], window), 0)


def key_mask_to_attention_mask(key_mask):
    """Key padding mask `(B, S)` -> attention mask `(B, 1, S)` (any query).

    Args:
        key_mask: bool `(B, S)`, `True` for real keys, or None.

    Returns:
        bool `(B, 1, S)`, which broadcasts over the T queries; None for None.

    Example:
    >>> import numpy as np
    >>> from keras import ops
    >>> ops.convert_to_numpy(key_mask_to_attention_mask(np.array([[True, False]]))).shape
    (1, 1, 2)
    """
    if key_mask is None:
        return None
    return ops.expand_dims(ops.cast(key_mask, "bool"), 1)


def merge_masks(*masks):
    """Logical AND of the given masks with broadcasting; `None`s are skipped.

    Args:
        *masks: bool masks of broadcastable shapes (e.g. `(1, T, S)` and
            `(B, 1, S)`), or None.

    Returns:
        Their logical AND, or `None` when every mask is `None` (nothing is
        masked).

    Example:
    >>> import numpy as np
    >>> from keras import ops
    >>> pad = key_mask_to_attention_mask(np.array([[True, True, False]]))
    >>> ops.convert_to_numpy(merge_masks(causal_mask(3), pad, None)).astype(int)[0]
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 0]])
    """
    merged = None
    for mask in masks:
        if mask is None:
            continue
        merged = mask if merged is None else ops.logical_and(merged, mask)
    return merged
