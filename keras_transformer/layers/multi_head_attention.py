"""Multi-head self-attention: bidirectional, causal or banded (cross-attention: `CrossAttention`)."""

import keras
from keras import ops

from keras_transformer import validation
from keras_transformer.layers import attention_plan
from keras_transformer.layers import key_value_cache
from keras_transformer.layers import rotary_embedding
from keras_transformer.layers.attention_layer import AttentionLayer
from keras_transformer.layers.attention_layer import upgrade_config
from keras_transformer.layers.block_config import ATTENTION_POSITIONS as POSITIONS  # noqa: F401
from keras_transformer.layers.decode_context import DEFAULT_CONTEXT
from keras_transformer.layers.decode_context import context_or_default

MODES = ("bidirectional", "causal", "banded")


@keras.saving.register_keras_serializable(package="keras_transformer")
class MultiHeadAttention(AttentionLayer):
    """`softmax(Q K^T / sqrt(d_head)) V` of a sequence over itself, `num_heads` heads.

    Modes (see `keras_transformer.masks` for the conventions):
        * `"bidirectional"`: encoder self-attention, every position sees every
          real position.
        * `"causal"`: decoder self-attention, position t sees positions <= t.
        * `"banded"`: GPT-3's locally banded layers, causal and at most
          `window` positions back (the query's own position included).
    A key padding mask combines with every mode. Rows whose keys are all
    masked give zeros, never NaN, in float32, float16 and bfloat16. Attention
    from one sequence to another (a decoder reading the encoder output) is
    `CrossAttention`.

    The toggles are the block's, under the block's names: an `AttentionConfig`
    or `BlockConfig` as `config`, or its fields by keyword. `position="rotary"`
    rotates queries and keys by their absolute positions (`rotary_embedding`),
    so that scores depend on `p - s` only; `"alibi"` adds `-m_h |p - s|` to the
    scores (`alibi`). A cached step does the same at its absolute position.
    `num_kv_heads < num_heads` projects fewer key and value heads, each shared
    by a group of query heads (grouped-query attention); the cache holds only
    those. `qk_norm=True` normalizes each query and key head (with `norm`)
    before the product; `attention_dropout` drops attention probabilities in
    training.

    The layer projects Q, K and V with one fused matrix `qkv`
    (`(d_model, (H + 2 H_kv) d_head)`), makes the call's `AttentionPlan`
    (positions, mask, ALiBi bias) and runs the kernel `attention_plan.attend`
    chooses: the backend's causal kernel with no mask tensor for plain causal
    training, the cache's filled prefix for an eager decode step at a
    Python-int position, only the band for a banded layer over more than
    `window` positions (`banded_attention`: `O(T window)`, not `O(T^2)`),
    else the fused kernel over an explicit mask, or explicit probabilities
    with dropout in training. A banded layer's decode cache is a ring of
    `window` slots (`cache_length`).

    Args:
        config: an `AttentionConfig` or `BlockConfig` (or its dict); keyword
            fields below replace its values.
        mode: one of `"bidirectional"`, `"causal"`, `"banded"`.
        window: band width for `mode="banded"` (required there, else None).
        kernel_initializer: initializer of the projection kernels (each
            draws its own values: `clone_initializer`).
        output_kernel_initializer: initializer of the `output` kernel, which
            writes into the residual stream (GPT-2 scales it down with
            depth); None: `kernel_initializer`.
        **kwargs: `AttentionConfig` fields (`num_heads`, `num_kv_heads`,
            `position`, `rotary_base`, `rotary_fraction`, `qk_norm`, `norm`,
            `layer_norm_epsilon`, `use_bias`, `attention_dropout`) and base
            `keras.layers.Layer` arguments.

    Call arguments:
        query: `(batch, T, d_model)`.
        key_mask: bool `(batch, S)` key padding mask (`True` = real token).
        cache: for cached decoding, a key/value cache `(batch, 2, S, heads,
            d_head)` (`TransformerBlock.empty_cache` makes one). The layer
            writes the keys and values of `query` into it at `cache_index` and
            attends to positions <= its own; a banded layer's cache of exactly
            `window` slots is a ring (position p in slot `p % window`).
        cache_index: absolute position of `query`'s first row (with `cache`).
        training: whether dropout is active.
        keep_until: with a ring cache, keep only positions before this one
            (a decode loop that will feed the later positions again); default
            all. Other caches keep every position.
        context: a `DecodeContext` (how sublayers are called and the cache
            written); None: `DEFAULT_CONTEXT`.

    Returns:
        `(batch, T, d_model)`, or `(output, updated cache)` when `cache` is
        given. `attention_probabilities(query, key_mask)` returns the
        probabilities `(batch, heads, T, T)`.

    Example:
    >>> import numpy as np
    >>> gqa = MultiHeadAttention(num_heads=4, num_kv_heads=1, mode="causal",
    ...                          position="rotary", qk_norm=True, norm="rms")
    >>> tuple(gqa(np.ones((1, 5, 16))).shape), gqa.kv_heads
    ((1, 5, 16), 1)
    >>> tuple(gqa.attention_probabilities(np.ones((1, 5, 16))).shape)
    (1, 4, 5, 5)
    """

    def __init__(
        self,
        config=None,
        mode="bidirectional",
        window=None,
        kernel_initializer="glorot_uniform",
        output_kernel_initializer=None,
        **kwargs,
    ):
        if mode == "cross":
            raise ValueError(
                f"`mode` must be one of {MODES}: MultiHeadAttention is self-attention; for "
                "queries reading another sequence (mode='cross' before), use "
                "keras_transformer.layers.CrossAttention. Received mode='cross'."
            )
        super().__init__(config, kernel_initializer, output_kernel_initializer, **kwargs)
        self.mode = validation.check_choice("mode", mode, MODES)
        if mode == "banded":
            self.window = validation.check_int("window", window)
        elif window is not None:
            raise ValueError(
                f"`window` is only used with mode='banded'; received window={window!r} "
                f"with mode={mode!r}."
            )
        else:
            self.window = None

    @classmethod
    def from_config(cls, config):
        if config.get("mode") == "cross":  # saved before CrossAttention was its own layer
            from keras_transformer.layers.cross_attention import CrossAttention

            config = {k: v for k, v in config.items() if k not in ("mode", "window")}
            return CrossAttention.from_config(config)
        return cls(**upgrade_config(config))

    def build(self, query_shape, key_mask_shape=None):
        self._check_width(query_shape)
        kv_width = self.kv_heads * self.d_head
        self.qkv_projection = self._dense(self.d_model + 2 * kv_width, "qkv")
        self.qkv_projection.build(query_shape)
        self._build_common(query_shape)
        self.built = True

    def _rotate(self, x, start):
        if self.config.position != "rotary":
            return x
        return rotary_embedding.rotate(x, start, self.config.rotary_base,
                                       self.config.rotary_fraction)

    def _project(self, query, cache=None, cache_index=None, keep_until=None, ring=False,
                 context=DEFAULT_CONTEXT):
        """Q, K, V `(batch, L, heads, d_head)` and the updated cache (or None).

        Writes this call's keys and values into `cache` at `cache_index` and
        attends over the whole cache (with `ring`, the ring's slots then this
        call's keys).
        """
        q, k, v = self._split_heads(
            context.call(self.qkv_projection, query), self.num_heads, self.kv_heads,
            self.kv_heads,
        )
        start = 0 if cache is None else cache_index
        q = self._rotate(self._queries(q, context), start)
        k = self._rotate(self._keys(k, context), start)
        if cache is None:
            return q, k, v, None
        if ring:
            updated = key_value_cache.write_ring(cache, cache_index, k, v, keep_until)
            k = ops.concatenate([ops.cast(cache[:, 0], k.dtype), k], axis=1)  # (B, w + T, H, d)
            v = ops.concatenate([ops.cast(cache[:, 1], v.dtype), v], axis=1)
            return q, k, v, updated
        k, v, cache = key_value_cache.write(  # (B, S, H, d) each
            cache, cache_index, k, v, in_place=context.in_place_writes)
        return q, k, v, cache

    def _is_ring(self, cache):
        """Whether `cache` is a banded layer's ring of `window` slots."""
        return self.mode == "banded" and cache is not None and cache.shape[2] == self.window

    def cache_length(self, max_length):
        """Slots of this layer's decode cache for `max_length` positions.

        `max_length` for causal and bidirectional layers; a banded layer keeps
        only its last `window` positions (a ring), so `min(window, max_length)`.

        Args:
            max_length: positions to decode (prompt plus new tokens).
        """
        return min(self.window, max_length) if self.mode == "banded" else max_length

    def _plan(self, q, k, key_mask, offset=None, ring=False, dropout=None):
        return attention_plan.self_attention_plan(
            self.config, self.mode, self.window, q, k, key_mask, offset, ring, dropout
        )

    def call(
        self, query, key_mask=None, cache=None, cache_index=None, training=None,
        keep_until=None, memory=None, context=None,
    ):
        if memory is not None:
            raise ValueError(
                "`memory` is for cross-attention (keras_transformer.layers.CrossAttention); "
                f"this MultiHeadAttention is self-attention (mode={self.mode!r})."
            )
        context = context_or_default(context)
        ring = self._is_ring(cache)
        q, k, v, cache = self._project(query, cache, cache_index, keep_until, ring, context)
        self._check_key_mask(key_mask, q, k)
        offset = None if cache is None else cache_index
        plan = self._plan(q, k, key_mask, offset, ring, self._dropout(training))
        out = attention_plan.attend(q, k, v, plan)  # (batch, T, heads, d_head)
        out = self._output(out, query, context)
        return out if cache is None else (out, cache)

    def attention_probabilities(self, query, key_mask=None):
        """Attention probabilities `(batch, heads, T, T)` (float32), no dropout.

        What the layer's softmax computes for these inputs, for inspection;
        masked keys get probability 0.

        Args:
            query: `(batch, T, d_model)`.
            key_mask: bool `(batch, T)` key padding mask (`True` = real token).
        """
        q, k, _, _ = self._project(query)
        self._check_key_mask(key_mask, q, k)
        return attention_plan.probabilities(q, k, self._plan(q, k, key_mask))

    def compute_output_shape(self, query_shape, key_mask_shape=None, cache_shape=None,
                             cache_index_shape=None, **kwargs):
        if cache_shape is not None:
            return query_shape, cache_shape
        return query_shape

    def get_config(self):
        config = super().get_config()
        config.update(mode=self.mode, window=self.window)
        return config
