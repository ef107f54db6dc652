"""Multi-head scaled dot-product attention in the four modes the models use."""

import functools

import keras
from keras import ops

from keras_transformer import masks
from keras_transformer import validation
from keras_transformer.layers import alibi
from keras_transformer.layers import banded_attention
from keras_transformer.layers.clone_initializer import clone_initializer
from keras_transformer.layers import key_value_cache
from keras_transformer.layers import rotary_embedding
from keras_transformer.layers import scaled_dot_product
from keras_transformer.layers.normalization import NORMS
from keras_transformer.layers.normalization import make_norm
from keras_transformer.layers.sublayer_call import invoke

MODES = ("bidirectional", "causal", "banded", "cross")
POSITIONS = (None, "rotary", "alibi")


@keras.saving.register_keras_serializable(package="keras_transformer")
class MultiHeadAttention(keras.layers.Layer):
    """`softmax(Q K^T / sqrt(d_head)) V` over `num_heads` heads, one layer for all modes.

    Modes (see `keras_transformer.masks` for the conventions):
        * `"bidirectional"`: encoder self-attention, every position sees every
          real position.
        * `"causal"`: decoder self-attention, position t sees positions <= t.
        * `"banded"`: GPT-3's locally banded layers, causal and at most
          `window` positions back (the query's own position included).
        * `"cross"`: queries of length T from the decoder against keys and
          values of length S from the encoder output ("memory"); scores are
          T x S.
    A key padding mask combines with every mode. Rows whose keys are all
    masked give zeros, never NaN, in float32, float16 and bfloat16.

    Self-attention can encode positions itself (`position`): `"rotary"`
    rotates queries and keys by their absolute positions
    (`rotary_embedding`), so that scores depend on `p - s` only; `"alibi"`
    adds `-m_h |p - s|` to the scores (`alibi`). A cached step does the same
    at its absolute position. `num_kv_heads < num_heads` projects fewer key
    and value heads, each shared by a group of query heads (grouped-query
    attention); the cache holds only those. `qk_norm` normalizes each
    query and key head before the product.

    Self-attention projects Q, K and V with one fused matrix
    (`(d_model, (H + 2 H_kv) d_head)`); cross-attention fuses K and V. The product runs through
    `keras.ops.dot_product_attention` (flash/fused kernels on GPU) unless
    attention-probability dropout is active in training.

    A banded layer over more than `window` positions computes only the band
    (`banded_attention`: blocks of `window` queries reading `2 window` keys,
    or the backend's windowed kernel on GPU), so it costs `O(T window)`, not
    `O(T^2)`. Its decode cache is a ring of `window` slots (`empty_cache`).

    Args:
        num_heads: number of heads; `d_model` must be divisible by it.
        mode: one of `"bidirectional"`, `"causal"`, `"banded"`, `"cross"`.
        window: band width for `mode="banded"` (required there, else None).
        dropout: dropout rate on the attention probabilities (default 0:
            the paper's residual dropout does not need it).
        use_bias: whether the projections have biases.
        num_kv_heads: key/value heads (must divide `num_heads`; 1 is
            multi-query attention); None: `num_heads`.
        position: None, `"rotary"` or `"alibi"` (self-attention modes only).
        rotary_base: RoPE's wavelength base.
        rotary_fraction: share of each head's features that RoPE rotates.
        qk_norm: None, or the norm (`"layer"` or `"rms"`) applied to each
            query and key head before their product.
        norm_epsilon: epsilon of the `qk_norm` norms.
        kernel_initializer: initializer of the projection kernels (each
            draws its own values: `clone_initializer`).
        output_kernel_initializer: initializer of the `output` kernel, which
            writes into the residual stream (GPT-2 scales it down with
            depth); None: `kernel_initializer`.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        query: `(batch, T, d_model)`.
        memory: `(batch, S, d_model)` encoder output, for `mode="cross"` only.
        key_mask: bool `(batch, S)` key padding mask (`True` = real token),
            over `query` itself for self-attention, over `memory` for cross.
        cache: for cached decoding, a key/value cache `(batch, 2, S, heads,
            d_head)` (`empty_cache` makes one). Self-attention writes the
            keys and values of `query` into it at `cache_index` and attends to
            positions <= its own; a banded layer's cache of exactly `window`
            slots is a ring (position p in slot `p % window`). Cross-attention
            uses it instead of projecting `memory` again (`key_value_cache(memory)`
            makes it).
        cache_index: absolute position of `query`'s first row (with `cache`).
        training: whether dropout is active.
        keep_until: with a ring cache, keep only positions before this one
            (a decode loop that will feed the later positions again); default
            all. Other caches keep every position.

    Returns:
        `(batch, T, d_model)`, or `(output, updated cache)` when `cache` is
        given. `attention_probabilities(query, memory, key_mask)` returns
        the probabilities `(batch, heads, T, S)`.

    Example:
    >>> import numpy as np
    >>> attention = MultiHeadAttention(num_heads=2, mode="cross")
    >>> target, source = np.ones((1, 7, 8)), np.ones((1, 6, 8))
    >>> tuple(attention(target, memory=source).shape)
    (1, 7, 8)
    >>> tuple(attention.attention_probabilities(target, memory=source).shape)
    (1, 2, 7, 6)
    >>> gqa = MultiHeadAttention(num_heads=4, num_kv_heads=1, mode="causal",
    ...                          position="rotary")
    >>> tuple(gqa(np.ones((1, 5, 16))).shape), gqa.kv_heads
    ((1, 5, 16), 1)
    """

    def __init__(
        self,
        num_heads,
        mode="bidirectional",
        window=None,
        dropout=0.0,
        use_bias=True,
        num_kv_heads=None,
        position=None,
        rotary_base=10000.0,
        rotary_fraction=1.0,
        qk_norm=None,
        norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        output_kernel_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = validation.check_int("num_heads", num_heads)
        self.mode = validation.check_choice("mode", mode, MODES)
        self.num_kv_heads = validation.check_int("num_kv_heads", num_kv_heads, allow_none=True)
        self.kv_heads = self.num_heads if num_kv_heads is None else self.num_kv_heads
        validation.check_divisible("num_heads", self.num_heads, "num_kv_heads", self.kv_heads)
        self.position = validation.check_choice("position", position, POSITIONS)
        if mode == "cross" and position is not None:
            raise ValueError(
                f"`position` is for self-attention: a cross-attention layer's keys are "
                f"another sequence's; received position={position!r} with mode='cross'."
            )
        self.rotary_base = validation.check_positive_float("rotary_base", rotary_base)
        self.rotary_fraction = validation.check_fraction("rotary_fraction", rotary_fraction)
        self.qk_norm = validation.check_choice("qk_norm", qk_norm, (None,) + NORMS)
        self.norm_epsilon = validation.check_positive_float("norm_epsilon", norm_epsilon)
        if mode == "banded":
            self.window = validation.check_int("window", window)
        elif window is not None:
            raise ValueError(
                f"`window` is only used with mode='banded'; received window={window!r} "
                f"with mode={mode!r}."
            )
        else:
            self.window = None
        self.dropout = validation.check_rate("dropout", dropout)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.output_kernel_initializer = keras.initializers.get(
            output_kernel_initializer or self.kernel_initializer
        )

    def _dense(self, units, name, initializer=None):
        return keras.layers.Dense(
            units,
            use_bias=self.use_bias,
            kernel_initializer=clone_initializer(initializer or self.kernel_initializer, name),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, memory_shape=None, key_mask_shape=None):
        d_model = query_shape[-1]
        validation.check_divisible("d_model", d_model, "num_heads", self.num_heads)
        self.d_model, self.d_head = d_model, d_model // self.num_heads
        if self.position == "rotary":
            rotary_embedding.check_head_width(self.d_head, self.rotary_fraction)
        kv_width = self.kv_heads * self.d_head
        if self.mode == "cross":
            self.query_projection = self._dense(d_model, "query")
            self.query_projection.build(query_shape)
            self.key_value_projection = self._dense(2 * kv_width, "key_value")
            self.key_value_projection.build(memory_shape or query_shape)
        else:
            self.qkv_projection = self._dense(d_model + 2 * kv_width, "qkv")
            self.qkv_projection.build(query_shape)
        if self.qk_norm is not None:
            heads_shape = (None, None, None, self.d_head)
            self.query_norm = make_norm(
                self.qk_norm, self.norm_epsilon, self.dtype_policy, "query_norm"
            )
            self.query_norm.build(heads_shape)
            self.key_norm = make_norm(
                self.qk_norm, self.norm_epsilon, self.dtype_policy, "key_norm"
            )
            self.key_norm.build(heads_shape)
        self.output_projection = self._dense(d_model, "output", self.output_kernel_initializer)
        self.output_projection.build(query_shape)
        self.probability_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="probability_dropout"
        )
        self.built = True

    def _split_heads(self, x, *heads):
        """`(batch, L, sum(heads) d_head)` -> tensors `(batch, L, heads[i], d_head)`."""
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, length, sum(heads), self.d_head))
        ends = [sum(heads[: i + 1]) for i in range(len(heads))]
        return [x[:, :, end - n: end] for n, end in zip(heads, ends)]

    def _queries(self, q, start):
        """Per-head norm and rotation of queries `(batch, T, H, d_head)` at positions `start..`."""
        if self.qk_norm is not None:
            q = invoke(self.query_norm, q)
        return self._rotate(q, start)

    def _keys(self, k, start):
        """Per-head norm and rotation of keys `(batch, S, H_kv, d_head)` at positions `start..`."""
        if self.qk_norm is not None:
            k = invoke(self.key_norm, k)
        return self._rotate(k, start)

    def _rotate(self, x, start):
        if self.position != "rotary":
            return x
        return rotary_embedding.rotate(x, start, self.rotary_base, self.rotary_fraction)

    def _project(self, query, memory, cache=None, cache_index=None, keep_until=None, ring=False):
        """Q, K, V `(batch, L, heads, d_head)` and the updated cache (or None).

        Self-attention writes this call's keys and values into `cache` at
        `cache_index` and attends over the whole cache (with `ring`, the
        ring's slots then this call's keys); cross-attention reads its keys
        and values from `cache` (see `key_value_cache`) when given.
        """
        if self.mode == "cross":
            (q,) = self._split_heads(invoke(self.query_projection, query), self.num_heads)
            q = self._queries(q, 0)
            if cache is not None:
                return q, cache[:, 0], cache[:, 1], cache
            if memory is None:
                raise ValueError("mode='cross' needs `memory` (the encoder output).")
            k, v = self._memory_keys_values(memory)
            return q, k, v, None
        if memory is not None:
            raise ValueError(
                f"`memory` is only used with mode='cross'; this layer's mode is "
                f"{self.mode!r}."
            )
        q, k, v = self._split_heads(
            invoke(self.qkv_projection, query), self.num_heads, self.kv_heads, self.kv_heads
        )
        start = 0 if cache is None else cache_index
        q, k = self._queries(q, start), self._keys(k, start)
        if cache is None:
            return q, k, v, None
        if ring:
            updated = key_value_cache.write_ring(cache, cache_index, k, v, keep_until)
            k = ops.concatenate([ops.cast(cache[:, 0], k.dtype), k], axis=1)  # (B, w + T, H, d)
            v = ops.concatenate([ops.cast(cache[:, 1], v.dtype), v], axis=1)
            return q, k, v, updated
        k, v, cache = key_value_cache.write(cache, cache_index, k, v)  # (B, S, H, d) each
        return q, k, v, cache

    def _is_ring(self, cache):
        """Whether `cache` is a banded layer's ring of `window` slots."""
        return self.mode == "banded" and cache is not None and cache.shape[2] == self.window

    def cache_length(self, max_length):
        """Slots of this layer's self-attention decode cache for `max_length` positions.

        `max_length` for causal and bidirectional layers; a banded layer keeps
        only its last `window` positions (a ring), so `min(window, max_length)`.

        Args:
            max_length: positions to decode (prompt plus new tokens).
        """
        if self.mode == "cross":
            raise ValueError("A cross-attention cache holds the memory: see key_value_cache.")
        return min(self.window, max_length) if self.mode == "banded" else max_length

    def key_value_cache(self, memory):
        """Cross-attention keys and values of `memory`, `(batch, 2, S, heads, d_head)`.

        Computed once per source for decoding, then passed as `cache`.

        Args:
            memory: `(batch, S, d_model)` encoder output.
        """
        if self.mode != "cross":
            raise ValueError("key_value_cache is for mode='cross' layers.")
        return ops.stack(self._memory_keys_values(memory), axis=1)

    def _memory_keys_values(self, memory):
        """Cross-attention keys and values `(batch, S, H_kv, d_head)` of `memory`."""
        k, v = self._split_heads(
            invoke(self.key_value_projection, memory), self.kv_heads, self.kv_heads
        )
        return self._keys(k, 0), v

    def _mask(self, query_length, key_length, key_mask, offset=None, ring=False):
        """Attention mask `(batch or 1, T, S)` for this mode, or None."""
        if ring:
            structure = masks.ring_banded_mask(query_length, self.window, offset)
        elif self.mode == "causal":
            structure = masks.causal_mask(query_length, key_length, offset)
        elif self.mode == "banded":
            structure = masks.banded_mask(query_length, key_length, self.window, offset)
        else:
            structure = None
        return masks.merge_masks(structure, masks.key_mask_to_attention_mask(key_mask))

    def _alibi(self, query_positions, key_positions):
        """ALiBi's score bias `(1, H, T, S)` for these positions, or None without ALiBi."""
        if self.position != "alibi":
            return None
        return alibi.bias(self.num_heads, query_positions, key_positions)

    def _attend(self, q, k, v, key_mask, offset, training, ring=False):
        """Attention output `(batch, T, heads, d_head)`.

        Four paths, one result:
            * plain causal self-attention (no padding mask, no cache, T == S),
              and a banded layer over at most `window` positions (where the
              band is the causal mask), run the backend's causal kernel with
              no mask tensor at all;
            * one query of a causal layer at a Python-int cache position
              (the eager torch decode loop, or a direct call with an int)
              reads the cache's filled slots, `0 .. offset`, sliced out,
              with no mask;
            * a banded layer over more positions, without a cache, computes
              only the band (`banded_attention`);
            * everything else attends over `_mask`.
        With ALiBi, each path adds the bias of its queries' and keys'
        absolute positions.
        """
        dropout = None
        if self.dropout > 0 and training:
            dropout = functools.partial(self.probability_dropout, training=training)
        query_length, key_length = ops.shape(q)[1], ops.shape(k)[1]
        full_pass = offset is None and q.shape[1] is not None and q.shape[1] == k.shape[1]
        mode = self.mode
        if mode == "banded" and full_pass and q.shape[1] <= self.window:
            mode = "causal"
        if mode == "causal" and key_mask is None and full_pass and dropout is None:
            positions = ops.arange(query_length, dtype="int32")
            bias = self._alibi(positions, positions)
            return scaled_dot_product.fused_attention(q, k, v, is_causal=True, bias=bias)
        if (mode == "causal" and isinstance(offset, int) and offset >= 0 and q.shape[1] == 1
                and key_mask is None and dropout is None):
            filled = offset + 1  # (B, offset + 1, H, d_head) below: views of the cache
            bias = self._alibi(ops.convert_to_tensor([offset], "int32"),
                               ops.arange(filled, dtype="int32"))
            return scaled_dot_product.fused_attention(q, k[:, :filled], v[:, :filled], bias=bias)
        if mode == "banded" and offset is None:
            kernel = banded_attention.native_kernel(q)
            if kernel is not None and key_mask is None and dropout is None and self.position != "alibi":
                return kernel(q, k, v, self.window)
            blocks = banded_attention.split(q, k, v, self.window, key_mask)
            # In every window, query i sits at w + i and key j at j: one bias serves all.
            bias = self._alibi(ops.arange(self.window, 2 * self.window, dtype="int32"),
                               ops.arange(2 * self.window, dtype="int32"))
            return blocks.merge(scaled_dot_product.attend(
                blocks.queries, blocks.keys, blocks.values, blocks.mask, dropout, bias
            ))
        mask = self._mask(query_length, key_length, key_mask, offset, ring)
        bias = None
        if self.position == "alibi":
            first = key_length - query_length if offset is None else ops.cast(offset, "int32")
            queries = ops.arange(query_length, dtype="int32") + first
            if ring:  # the ring's slots, then this call's keys
                keys = ops.concatenate([masks.ring_positions(first, self.window), queries], 0)
            else:
                keys = ops.arange(key_length, dtype="int32")
            bias = self._alibi(queries, keys)
        return scaled_dot_product.attend(q, k, v, mask, dropout, bias)

    def call(
        self, query, memory=None, key_mask=None, cache=None, cache_index=None, training=None,
        keep_until=None,
    ):
        self._check_inputs(query, memory)
        ring = self._is_ring(cache)
        q, k, v, cache = self._project(query, memory, cache, cache_index, keep_until, ring)
        if key_mask is not None:
            validation.check_key_mask("key_mask", key_mask, q.shape[0], k.shape[1])
        offset = cache_index if cache is not None and self.mode != "cross" else None
        out = self._attend(q, k, v, key_mask, offset, training, ring)  # (batch, T, heads, d_head)
        batch, length = ops.shape(query)[0], ops.shape(query)[1]
        out = invoke(self.output_projection, ops.reshape(out, (batch, length, self.d_model)))
        return out if cache is None else (out, cache)

    def _check_inputs(self, query, memory):
        """Static checks that would otherwise broadcast silently."""
        if memory is None:
            return
        batch_q, batch_m = query.shape[0], memory.shape[0]
        if isinstance(batch_q, int) and isinstance(batch_m, int) and batch_q != batch_m:
            raise ValueError(
                f"`memory` must have the batch size of `query` ({batch_q}); received "
                f"memory of shape {tuple(memory.shape)}."
            )

    def attention_probabilities(self, query, memory=None, key_mask=None, cache=None):
        """Attention probabilities `(batch, heads, T, S)` (float32), no dropout.

        What the layer's softmax computes for these inputs, for inspection
        (e.g. a cross-attention heatmap) and for beam search's coverage
        penalty; masked keys get probability 0.

        Args:
            query: `(batch, T, d_model)`.
            memory: `(batch, S, d_model)` encoder output, for `mode="cross"` only.
            key_mask: bool `(batch, S)` key padding mask (`True` = real token).
            cache: for `mode="cross"`, the memory's keys and values
                (`key_value_cache(memory)`) instead of `memory`.
        """
        self._check_inputs(query, memory)
        if cache is not None and self.mode != "cross":
            raise ValueError(
                "`cache` in attention_probabilities is a cross-attention layer's memory keys "
                f"and values; this layer's mode is {self.mode!r}."
            )
        q, k, _, _ = self._project(query, memory, cache)
        if key_mask is not None:
            validation.check_key_mask("key_mask", key_mask, q.shape[0], k.shape[1])
        query_length, key_length = ops.shape(q)[1], ops.shape(k)[1]
        keys = ops.arange(key_length, dtype="int32")
        bias = self._alibi(keys[key_length - query_length:], keys)
        return scaled_dot_product.probabilities(
            q, k, self._mask(query_length, key_length, key_mask), bias
        )

    def compute_output_shape(self, query_shape, memory_shape=None, key_mask_shape=None,
                             cache_shape=None, cache_index_shape=None):
        if cache_shape is not None:
            return query_shape, cache_shape
        return query_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            mode=self.mode,
            window=self.window,
            dropout=self.dropout,
            use_bias=self.use_bias,
            num_kv_heads=self.num_kv_heads,
            position=self.position,
            rotary_base=self.rotary_base,
            rotary_fraction=self.rotary_fraction,
            qk_norm=self.qk_norm,
            norm_epsilon=self.norm_epsilon,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            output_kernel_initializer=keras.initializers.serialize(
                self.output_kernel_initializer
            ),
        )
        return config
