"""Cross-attention: queries of one sequence reading the keys and values of another."""

import dataclasses

import keras
from keras import ops

from keras_transformer.layers import attention_plan
from keras_transformer.layers.attention_layer import AttentionLayer
from keras_transformer.layers.decode_context import DEFAULT_CONTEXT
from keras_transformer.layers.decode_context import context_or_default


@keras.saving.register_keras_serializable(package="keras_transformer")
class CrossAttention(AttentionLayer):
    """`softmax(Q K^T / sqrt(d_head)) V`, queries from `query`, keys and values from `memory`.

    The encoder-decoder's second sub-layer: T target positions read S source
    positions (the encoder output, "memory"); scores are T x S and every
    target position may read every real source position (`key_mask`). Rows
    whose keys are all masked give zeros, never NaN.

    The toggles are the block's, under the block's names (`config`, or the
    fields by keyword), as for `MultiHeadAttention`: `num_kv_heads`,
    `qk_norm` with `norm`, `use_bias`, `attention_dropout`. Cross-attention
    encodes no positions (its keys are another sequence's), so it ignores a
    config's `position` and refuses one given by keyword.

    The queries' projection is `query` `(d_model, d_model)`; the memory's keys
    and values share one, `key_value` `(d_model, 2 H_kv d_head)`. For decoding,
    `key_value_cache(memory)` computes the memory's keys and values once;
    passed as `cache`, they replace `memory`.

    Args:
        config: an `AttentionConfig` or `BlockConfig` (or its dict); keyword
            fields below replace its values.
        kernel_initializer: initializer of the projection kernels (each
            draws its own values: `clone_initializer`).
        output_kernel_initializer: initializer of the `output` kernel; None:
            `kernel_initializer`.
        **kwargs: `AttentionConfig` fields (`num_heads`, `num_kv_heads`,
            `qk_norm`, `norm`, `layer_norm_epsilon`, `use_bias`,
            `attention_dropout`) and base `keras.layers.Layer` arguments.

    Call arguments:
        query: `(batch, T, d_model)`.
        memory: `(batch, S, d_model)` encoder output (unless `cache`).
        key_mask: bool `(batch, S)` padding mask of `memory` (`True` = real).
        cache: the memory's keys and values `(batch, 2, S, H_kv, d_head)`
            (`key_value_cache(memory)`), instead of `memory`.
        cache_index: unused (a decode step passes every sub-layer the same
            arguments); the memory's keys have no positions.
        training: whether dropout is active.
        context: a `DecodeContext` (how sublayers are called); None:
            `DEFAULT_CONTEXT`.

    Returns:
        `(batch, T, d_model)`, or `(output, cache)` when `cache` is given.
        `attention_probabilities(query, memory, key_mask)` returns the
        probabilities `(batch, heads, T, S)`.

    Example:
    >>> import numpy as np
    >>> attention = CrossAttention(num_heads=2)
    >>> target, source = np.ones((1, 7, 8)), np.ones((1, 6, 8))
    >>> tuple(attention(target, memory=source).shape)
    (1, 7, 8)
    >>> tuple(attention.attention_probabilities(target, memory=source).shape)
    (1, 2, 7, 6)
    >>> cache = attention.key_value_cache(source)  # (batch, 2, S, H_kv, d_head)
    >>> tuple(cache.shape), tuple(attention(target, cache=cache)[0].shape)
    ((1, 2, 6, 2, 4), (1, 7, 8))
    """

    def __init__(self, config=None, kernel_initializer="glorot_uniform",
                 output_kernel_initializer=None, **kwargs):
        position = kwargs.pop("position", None)
        if position is not None:
            raise ValueError(
                "`position` is for self-attention: a cross-attention layer's keys are "
                f"another sequence's; received position={position!r} for CrossAttention."
            )
        super().__init__(config, kernel_initializer, output_kernel_initializer, **kwargs)
        if self.config.position is not None:  # a block's config: its self-attention's
            self.config = dataclasses.replace(self.config, position=None)

    def build(self, query_shape, memory_shape=None, key_mask_shape=None):
        self._check_width(query_shape)
        kv_width = self.kv_heads * self.d_head
        self.query_projection = self._dense(self.d_model, "query")
        self.query_projection.build(query_shape)
        self.key_value_projection = self._dense(2 * kv_width, "key_value")
        self.key_value_projection.build(memory_shape or query_shape)
        self._build_common(query_shape)
        self.built = True

    def _memory_keys_values(self, memory, context):
        """The memory's keys and values `(batch, S, H_kv, d_head)`."""
        k, v = self._split_heads(
            context.call(self.key_value_projection, memory), self.kv_heads, self.kv_heads
        )
        return self._keys(k, context), v

    def key_value_cache(self, memory, context=None):
        """The keys and values of `memory`, `(batch, 2, S, H_kv, d_head)`.

        Computed once per source for decoding, then passed as `cache`.

        Args:
            memory: `(batch, S, d_model)` encoder output.
            context: a `DecodeContext` (a decode loop's); None: `DEFAULT_CONTEXT`.
        """
        return ops.stack(self._memory_keys_values(memory, context_or_default(context)), axis=1)

    def _project(self, query, memory, cache, context=DEFAULT_CONTEXT):
        """Q `(batch, T, H, d_head)`, K and V `(batch, S, H_kv, d_head)`."""
        (q,) = self._split_heads(context.call(self.query_projection, query), self.num_heads)
        q = self._queries(q, context)
        if cache is not None:
            return q, cache[:, 0], cache[:, 1]
        if memory is None:
            raise ValueError(
                "CrossAttention needs `memory` (the encoder output) or `cache` "
                "(key_value_cache(memory))."
            )
        self._check_memory(query, memory)
        return (q,) + self._memory_keys_values(memory, context)

    def _check_memory(self, query, memory):
        """Static check that would otherwise broadcast silently."""
        batch_q, batch_m = query.shape[0], memory.shape[0]
        if isinstance(batch_q, int) and isinstance(batch_m, int) and batch_q != batch_m:
            raise ValueError(
                f"`memory` must have the batch size of `query` ({batch_q}); received "
                f"memory of shape {tuple(memory.shape)}."
            )

    def call(self, query, memory=None, key_mask=None, cache=None, cache_index=None,
             training=None, context=None):
        del cache_index  # the memory has no positions
        context = context_or_default(context)
        q, k, v = self._project(query, memory, cache, context)
        self._check_key_mask(key_mask, q, k)
        plan = attention_plan.cross_attention_plan(
            self.config, q, k, key_mask, self._dropout(training)
        )
        out = self._output(attention_plan.attend(q, k, v, plan), query, context)
        return out if cache is None else (out, cache)

    def attention_probabilities(self, query, memory=None, key_mask=None, cache=None,
                                context=None):
        """Attention probabilities `(batch, heads, T, S)` (float32), no dropout.

        What the layer's softmax computes for these inputs, for inspection
        (e.g. a cross-attention heatmap) and for beam search's coverage
        penalty; masked keys get probability 0.

        Args:
            query: `(batch, T, d_model)`.
            memory: `(batch, S, d_model)` encoder output.
            key_mask: bool `(batch, S)` key padding mask (`True` = real token).
            cache: the memory's keys and values (`key_value_cache(memory)`)
                instead of `memory`.
            context: a `DecodeContext` (a decode step's); None: `DEFAULT_CONTEXT`.
        """
        q, k, _ = self._project(query, memory, cache, context_or_default(context))
        self._check_key_mask(key_mask, q, k)
        plan = attention_plan.cross_attention_plan(self.config, q, k, key_mask)
        return attention_plan.probabilities(q, k, plan)

    def compute_output_shape(self, query_shape, memory_shape=None, key_mask_shape=None,
                             cache_shape=None, cache_index_shape=None, **kwargs):
        if cache_shape is not None:
            return query_shape, cache_shape
        return query_shape
