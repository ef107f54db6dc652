"""What one attention call computes, worked out once, and the one function that runs it.

The attention layers (`MultiHeadAttention`, `CrossAttention`) project queries,
keys and values, make an `AttentionPlan` for the call (`self_attention_plan`,
`cross_attention_plan`) and hand both to `attend` (or `probabilities`):

    layer.call -> project Q, K, V (and write the cache)
               -> plan = self_attention_plan(config, mode, window, q, k, ...)
               -> attend(q, k, v, plan) -> choose_kernel(plan, q) -> one kernel

The plan holds what the call means: the absolute positions of its queries and
keys, which keys each query may read (none, causal or a band of `window`, a
ring cache's slots, the key padding mask), whether the backend's causal kernel
can run with no mask tensor (`is_causal`), ALiBi's score bias (computed in one
place, `_alibi`, from those positions) and the probability dropout.
`choose_kernel` picks the kernel from the plan alone (and the device of `q`):

    * `"fused_causal"`: plain causal self-attention (a full pass, no padding
      mask, no dropout; a banded layer over at most `window` positions is
      causal) runs the backend's causal kernel with no mask tensor;
    * `"cache_prefix"`: one query of a causal layer at a Python-int cache
      position (the eager torch decode loop) reads the cache's filled slots
      `0 .. offset`, sliced out, with no mask;
    * `"native_windowed"`: a banded full pass on a device with a windowed
      kernel (no padding mask, dropout or ALiBi): `banded_attention.native_kernel`;
    * `"blocked_banded"`: any other banded full pass computes only the band
      (`banded_attention.split`), `O(T window)`;
    * `"masked"`: the backend's fused kernel over the plan's mask (or none);
    * `"explicit"`: probabilities formed explicitly, then dropout (the
      dropout path) or a score transform (`AttentionPlan.score_transform`).
Every kernel computes the softmax in float32 and gives zeros for a query with
no key to read, never NaN (`scaled_dot_product`).
"""

import dataclasses
from typing import Any, Callable, Optional

from keras import ops

from keras_transformer.layers import alibi
from keras_transformer.layers import banded_attention
from keras_transformer.layers import scaled_dot_product
from keras_transformer import masks

STRUCTURES = (None, "causal", "banded")
KERNELS = (
    "fused_causal", "cache_prefix", "native_windowed", "blocked_banded", "masked", "explicit",
)


@dataclasses.dataclass(frozen=True)
class AttentionPlan:
    """One attention call: which keys each query reads, and at which positions.

    Attributes:
        structure: None (every key), `"causal"` (keys at positions <= the
            query's) or `"banded"` (the `window` positions up to the query's).
        query_length: T (an int, or a scalar tensor when not static).
        key_length: S, keys as the kernel receives them (a ring cache's
            `window` slots plus the T new keys).
        static_query_length: T as a Python int, or None when not static.
        full_pass: no cache, and T == S statically: queries and keys are the
            same positions `0 .. T - 1`.
        offset: absolute position of the first query (a cached step's
            `cache_index`: int or scalar tensor), or None: aligned to the end
            of the keys (`S - T`, `keras_transformer.masks`).
        window: the band width (`"banded"`), else None.
        ring: the keys are a ring cache's `window` slots, then the T new keys.
        key_mask: bool `(B, S)` key padding mask (`True` = real key), or None.
        alibi_heads: H when ALiBi biases the scores, else None.
        dropout: a callable on the probabilities `(B, H, T, S)` (dropout in
            training), or None.
        score_transform: a function of the float32 scores `(B, H, T, S)`
            (after the `1/sqrt(d_head)` scale, before bias and mask), or None:
            `attention_softcap`'s cap. A plan with one forms its scores
            explicitly (`"explicit"`, or `"blocked_banded"` for a band).

    The positions, the mask and the biases are properties, computed when a
    kernel reads them (the eager decode step reads none without ALiBi); not
    `functools.cached_property`, whose lock `torch.compile` cannot trace.
    """

    structure: Optional[str]
    query_length: Any
    key_length: Any
    static_query_length: Optional[int] = None
    full_pass: bool = False
    offset: Any = None
    window: Optional[int] = None
    ring: bool = False
    key_mask: Any = None
    alibi_heads: Optional[int] = None
    dropout: Optional[Callable] = None
    score_transform: Optional[Callable] = None

    @property
    def is_causal(self):
        """Whether the backend's causal kernel alone (no mask tensor) is this plan's mask."""
        return self.structure == "causal" and self.full_pass and self.key_mask is None

    @property
    def query_positions(self):
        """Absolute positions of the queries, int32 `(T,)`."""
        if self.offset is None:
            first = self.key_length - self.query_length
        elif isinstance(self.offset, int):
            first = self.offset
        else:
            first = ops.cast(self.offset, "int32")
        return ops.arange(self.query_length, dtype="int32") + first

    @property
    def key_positions(self):
        """Absolute positions of the keys, int32 `(S,)` (a ring's empty slots are negative)."""
        if self.ring:  # the ring's slots, then this call's keys
            first = self.query_positions[0]
            return ops.concatenate(
                [masks.ring_positions(first, self.window), self.query_positions], axis=0
            )
        return ops.arange(self.key_length, dtype="int32")

    @property
    def mask(self):
        """Bool `(B or 1, T, S)`, `True` where query t may read key s; None: every key."""
        structure = None
        if self.structure is not None:
            query = self.query_positions[:, None]  # (T, 1)
            key = self.key_positions[None, :]  # (1, S)
            structure = ops.less_equal(key, query)
            if self.structure == "banded":
                inside = ops.logical_and(ops.greater(key, query - self.window),
                                         ops.greater_equal(key, 0))  # s >= 0: a filled slot
                structure = ops.logical_and(structure, inside)
            structure = structure[None]  # (1, T, S)
        return masks.merge_masks(structure, masks.key_mask_to_attention_mask(self.key_mask))

    @property
    def bias(self):
        """ALiBi's score bias `(1, H, T, S)` for the queries and keys, or None."""
        return self._alibi(self.query_positions, self.key_positions)

    @property
    def window_bias(self):
        """ALiBi's bias `(1, H, w, 2w)` inside one window of the blocked band, or None.

        In every window, query i sits at `w + i` and key j at j: the bias depends
        on `p - s` only, so one serves all windows.
        """
        window = self.window
        return self._alibi(ops.arange(window, 2 * window, dtype="int32"),
                           ops.arange(2 * window, dtype="int32"))

    def _alibi(self, query_positions, key_positions):
        """The one place ALiBi's bias is made: `-m_h |p - s|` `(1, H, T, S)`, or None."""
        if self.alibi_heads is None:
            return None
        return alibi.bias(self.alibi_heads, query_positions, key_positions)


def score_transform(config):
    """The transform of the scores that `config`'s toggles ask for, or None.

    The one place a toggle that changes the scores is read (today
    `attention_softcap`); the plans and `AttentionConfig.forms_scores` ask
    here.

    Args:
        config: an `AttentionConfig` (a `BlockConfig` is one).
    """
    return soft_cap(config.attention_softcap)


def soft_cap(cap):
    """The score transform of `AttentionConfig.attention_softcap`: `cap * tanh(s / cap)`, or None.

    Args:
        cap: the cap (a float > 0), or None.

    Example:
    >>> import numpy as np
    >>> capped = soft_cap(5.0)(np.array([0.0, 1.0, 100.0], "float32"))
    >>> [round(float(score), 3) for score in np.asarray(capped)]
    [0.0, 0.987, 5.0]
    """
    if cap is None:
        return None
    return lambda scores: cap * ops.tanh(scores / cap)


def _static_length(x):
    length = x.shape[1]
    return length if isinstance(length, int) else None


def self_attention_plan(config, mode, window, q, k, key_mask=None, offset=None, ring=False,
                        dropout=None):
    """The plan of a self-attention call (`MultiHeadAttention`).

    Args:
        config: the layer's `AttentionConfig` (`position="alibi"` adds ALiBi).
        mode: `"bidirectional"`, `"causal"` or `"banded"`.
        window: the band width of a `"banded"` layer, else None.
        q: queries `(B, T, H, d_head)`.
        k: keys `(B, S, H_kv, d_head)`: this call's, or the whole cache's.
        key_mask: bool `(B, S)` key padding mask, or None.
        offset: a cached call's `cache_index` (absolute position of the first
            query), or None without a cache.
        ring: `k` is a ring cache's `window` slots followed by the T new keys.
        dropout: a callable on the probabilities, or None.
    """
    static_query_length = _static_length(q)
    full_pass = (offset is None and static_query_length is not None
                 and static_query_length == k.shape[1])
    structure = {"bidirectional": None, "causal": "causal", "banded": "banded"}[mode]
    if structure == "banded" and full_pass and static_query_length <= window:
        structure = "causal"  # the band holds every earlier position
    return AttentionPlan(
        structure=structure,
        query_length=ops.shape(q)[1],
        key_length=ops.shape(k)[1],
        static_query_length=static_query_length,
        full_pass=full_pass,
        offset=offset,
        window=window if structure == "banded" else None,
        ring=ring,
        key_mask=key_mask,
        alibi_heads=config.num_heads if config.position == "alibi" else None,
        dropout=dropout,
        score_transform=score_transform(config),
    )


def cross_attention_plan(config, q, k, key_mask=None, dropout=None):
    """The plan of a cross-attention call (`CrossAttention`): every real key, no positions.

    Args:
        config: the layer's `AttentionConfig`.
        q: queries `(B, T, H, d_head)`.
        k: the memory's keys `(B, S, H_kv, d_head)`.
        key_mask: bool `(B, S)` memory padding mask, or None.
        dropout: a callable on the probabilities, or None.
    """
    return AttentionPlan(  # no positions: cross-attention encodes none
        structure=None,
        query_length=ops.shape(q)[1],
        key_length=ops.shape(k)[1],
        static_query_length=_static_length(q),
        key_mask=key_mask,
        dropout=dropout,
        score_transform=score_transform(config),
    )


def choose_kernel(plan, q):
    """The kernel (one of `KERNELS`) that `attend` runs for `plan` and queries `q`.

    Args:
        plan: an `AttentionPlan`.
        q: the queries `(B, T, H, d_head)` (their device and dtype pick a
            native windowed kernel).
    """
    plain = plan.key_mask is None and plan.dropout is None and plan.score_transform is None
    if plan.is_causal and plain:
        return "fused_causal"
    if (plan.structure == "causal" and plain and plan.static_query_length == 1
            and isinstance(plan.offset, int) and not isinstance(plan.offset, bool)
            and plan.offset >= 0 and not plan.ring):
        return "cache_prefix"
    if plan.structure == "banded" and plan.offset is None:
        if plain and plan.alibi_heads is None and banded_attention.native_kernel(q) is not None:
            return "native_windowed"
        return "blocked_banded"
    if plan.dropout is not None or plan.score_transform is not None:
        return "explicit"
    return "masked"


def attend(q, k, v, plan):
    """Attention output `(B, T, H, d_head)` of `plan`, by the kernel `choose_kernel` picks.

    Args:
        q: `(B, T, H, d_head)`.
        k: `(B, S, H_kv, d_head)`.
        v: `(B, S, H_kv, d_head)`.
        plan: the call's `AttentionPlan`.

    Example:
    >>> import numpy as np
    >>> from keras_transformer.layers.block_config import AttentionConfig
    >>> x = np.random.default_rng(0).normal(size=(1, 5, 2, 4)).astype("float32")
    >>> plan = self_attention_plan(AttentionConfig(num_heads=2), "causal", None, x, x)
    >>> choose_kernel(plan, x), tuple(attend(x, x, x, plan).shape)
    ('fused_causal', (1, 5, 2, 4))
    """
    kernel = choose_kernel(plan, q)
    if kernel == "fused_causal":
        return scaled_dot_product.fused_attention(q, k, v, is_causal=True, bias=plan.bias)
    if kernel == "cache_prefix":
        filled = plan.offset + 1  # (B, offset + 1, H, d_head) below: views of the cache
        bias = None if plan.alibi_heads is None else plan.bias[..., :filled]
        return scaled_dot_product.fused_attention(q, k[:, :filled], v[:, :filled], bias=bias)
    if kernel == "native_windowed":
        return banded_attention.native_kernel(q)(q, k, v, plan.window)
    if kernel == "blocked_banded":
        blocks = banded_attention.split(q, k, v, plan.window, plan.key_mask)
        return blocks.merge(scaled_dot_product.attend(
            blocks.queries, blocks.keys, blocks.values, blocks.mask, plan.dropout,
            plan.window_bias, plan.score_transform,
        ))
    return scaled_dot_product.attend(
        q, k, v, plan.mask, plan.dropout, plan.bias, plan.score_transform
    )


def probabilities(q, k, plan):
    """The plan's attention probabilities `(B, H, T, S)`, float32, no dropout.

    Args:
        q: `(B, T, H, d_head)`.
        k: `(B, S, H_kv, d_head)`.
        plan: the call's `AttentionPlan`.
    """
    return scaled_dot_product.probabilities(q, k, plan.mask, plan.bias, plan.score_transform)
