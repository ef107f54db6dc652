"""One Transformer layer: self-attention, optional cross-attention, feed-forward."""

import dataclasses

import keras
from keras import ops

from keras_transformer import validation
from keras_transformer.layers.block_cache import BlockCache
from keras_transformer.layers.block_config import BlockConfig
from keras_transformer.layers.clone_initializer import clone_initializer
from keras_transformer.layers.cross_attention import CrossAttention
from keras_transformer.layers.decode_context import context_or_default
from keras_transformer.layers.feed_forward import FeedForward
from keras_transformer.layers.multi_head_attention import MultiHeadAttention
from keras_transformer.layers.normalization import make_norm
from keras_transformer.layers.remat import rematerialized
from keras_transformer.layers.remat import seed_states

SELF_ATTENTION_MODES = ("bidirectional", "causal", "banded")
_BLOCK_FIELDS = frozenset(field.name for field in dataclasses.fields(BlockConfig))


@keras.saving.register_keras_serializable(package="keras_transformer")
class TransformerBlock(keras.layers.Layer):
    """Encoder layer, decoder layer, GPT or LLaMA block, depending on its toggles.

    Each sub-layer f (self-attention, cross-attention when asked, feed-forward)
    is wrapped in a residual connection with dropout on f's output:
        * `ln_position="post"` (2017 paper): `x = norm(x + dropout(f(x)))`;
        * `ln_position="pre"` (GPT-2): `x = x + dropout(f(norm(x)))`.
    Post-LN keeps every block's output normalized but needs a long learning
    rate warmup when deep; pre-LN leaves an un-normalized residual stream
    (the model adds one final norm) and trains without it.
    Both positions have the same weights: only the order of operations differs.
    A parallel block (`parallel_block=True`, pre-LN) computes
    `x + dropout(attn(norm(x))) + dropout(ff(norm(x)))`: its one norm is
    `self_attention_norm`, which both sub-layers read.

    The architecture toggles (norm, feed-forward kind, positions in attention,
    key/value heads, biases, ...) are one `BlockConfig`, passed as `config`
    or as its fields by keyword (`TransformerBlock(num_heads=2, d_ff=32,
    norm="rms")`). What differs between the blocks of one model (which
    attention mode, the band width, whether there is cross-attention) are
    the block's own arguments.

    Args:
        config: a `BlockConfig` (or its dict); keyword fields below replace
            its values.
        self_attention: `"bidirectional"` (encoder), `"causal"` (decoder) or
            `"banded"` (GPT-3's local layers, with `window`).
        window: band width when `self_attention="banded"`.
        cross_attention: whether the block reads an encoder output (`memory`).
        kernel_initializer: initializer of the projection kernels; every
            sublayer draws its own values (`clone_initializer`).
        output_kernel_initializer: initializer of the kernels that write
            into the residual stream (attention `output`, feed-forward
            `outer`; GPT-2 scales them by `1/sqrt(2 num_layers)`); None:
            `kernel_initializer`.
        **kwargs: `BlockConfig` fields (`num_heads`, `d_ff`, `ln_position`,
            `norm`, `feed_forward`, `position`, `num_kv_heads`, ...) and base
            `keras.layers.Layer` arguments.

    Call arguments:
        x: `(batch, T, d_model)`.
        padding_mask: bool `(batch, T)`, `True` for real positions of `x`.
        memory: `(batch, S, d_model)` encoder output (with `cross_attention`).
        memory_mask: bool `(batch, S)`, `True` for real positions of `memory`.
        cache: for cached decoding, the block's `BlockCache`
            (`empty_cache(...)`, or what the previous call returned); `memory`
            may then be omitted (its keys and values are in the cache). A
            cache that records `source_attention` gets this call's
            cross-attention (mean over heads, summed over positions).
        cache_index: absolute position of `x`'s first row (with `cache`).
        training: whether dropout is active.
        keep_until: positions from here on will be fed again: a banded
            block's ring cache does not keep them (default: keep all).
        context: a `DecodeContext`: how the sublayers are called and the
            cache written; None: `DEFAULT_CONTEXT`.

    Returns:
        `(batch, T, d_model)`, or `(output, updated BlockCache)` when `cache`
        is given.

    Example:
    >>> import numpy as np
    >>> block = TransformerBlock(num_heads=2, d_ff=32, self_attention="causal",
    ...                          cross_attention=True)
    >>> tuple(block(np.ones((2, 7, 8)), memory=np.ones((2, 6, 8))).shape)
    (2, 7, 8)
    >>> llama = TransformerBlock(num_heads=4, num_kv_heads=2, d_ff=32, ln_position="pre",
    ...                          norm="rms", feed_forward="swiglu", use_bias=False,
    ...                          position="rotary", self_attention="causal")
    >>> tuple(llama(np.ones((2, 7, 16))).shape)
    (2, 7, 16)
    """

    def __init__(
        self,
        config=None,
        self_attention="bidirectional",
        window=None,
        cross_attention=False,
        kernel_initializer="glorot_uniform",
        output_kernel_initializer=None,
        **kwargs,
    ):
        fields = {name: kwargs.pop(name) for name in list(kwargs) if name in _BLOCK_FIELDS}
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = BlockConfig(**config)
        if config is None:
            config = BlockConfig(**fields)
        elif not isinstance(config, BlockConfig):
            raise ValueError(
                f"`config` must be a BlockConfig, its dict or None; received {config!r}."
            )
        elif fields:
            config = dataclasses.replace(config, **fields)
        self.config = config
        self.self_attention_mode = validation.check_choice(
            "self_attention", self_attention, SELF_ATTENTION_MODES
        )
        self.window = window
        self.has_cross_attention = bool(cross_attention)
        norms = config.norm_names(self.has_cross_attention)  # refuses what has no meaning
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.output_kernel_initializer = keras.initializers.get(
            output_kernel_initializer or self.kernel_initializer
        )
        # Sub-layers are created here so that a bad `window` fails at once.
        self.self_attention = MultiHeadAttention(
            config, mode=self_attention, window=window, name="self_attention",
            **self._sublayer_arguments("self_attention"),
        )
        self.self_attention_norm = self._norm("self_attention_norm")
        if self.has_cross_attention:
            self.cross_attention = CrossAttention(
                config, name="cross_attention", **self._sublayer_arguments("cross_attention"),
            )
            self.cross_attention_norm = self._norm("cross_attention_norm")
        self.feed_forward = FeedForward(
            name="feed_forward", **config.feed_forward_arguments(),
            **self._sublayer_arguments("feed_forward"),
        )
        if "feed_forward_norm" in norms:  # a parallel block's feed-forward reads the one norm
            self.feed_forward_norm = self._norm("feed_forward_norm")
        self.residual_dropout = keras.layers.Dropout(
            config.dropout, dtype=self.dtype_policy, name="residual_dropout"
        )

    @property
    def ln_position(self):
        return self.config.ln_position

    def _sublayer_arguments(self, name):
        """Initializers (the sublayer's own copies) and dtype of sublayer `name`."""
        return dict(
            kernel_initializer=clone_initializer(self.kernel_initializer, name),
            output_kernel_initializer=clone_initializer(
                self.output_kernel_initializer, f"{name}/output"
            ),
            dtype=self.dtype_policy,
        )

    def _norm(self, name):
        return make_norm(self.config.norm, self.config.layer_norm_epsilon, self.dtype_policy, name)

    def build(self, x_shape, padding_mask_shape=None, memory_shape=None,
              memory_mask_shape=None):
        self.config.check_width(x_shape[-1])
        self.self_attention.build(x_shape)
        self.self_attention_norm.build(x_shape)
        if self.has_cross_attention:
            self.cross_attention.build(x_shape, memory_shape or x_shape)
            self.cross_attention_norm.build(x_shape)
        self.feed_forward.build(x_shape)
        if hasattr(self, "feed_forward_norm"):
            self.feed_forward_norm.build(x_shape)
        self.built = True

    def _residual(self, x, norm, sublayer, training, context):
        """Residual sub-layer: post-LN `LN(x + f(x))` or pre-LN `x + f(LN(x))`."""
        dropout = self.residual_dropout
        if self.ln_position == "pre":
            return x + context.call(dropout, sublayer(context.call(norm, x)), training=training)
        return context.call(norm, x + context.call(dropout, sublayer(x), training=training))

    def call(
        self,
        x,
        padding_mask=None,
        memory=None,
        memory_mask=None,
        cache=None,
        cache_index=None,
        training=None,
        keep_until=None,
        context=None,
    ):
        context = context_or_default(context)
        if cache is not None and not isinstance(cache, BlockCache):
            raise ValueError(
                "`cache` must be the block's BlockCache (`empty_cache(...)`, or what the "
                f"previous cached call returned); received {type(cache).__name__}. Caches are "
                "no longer dicts of 'self'/'cross'/'coverage': read `cache.self_attention`, "
                "`cache.cross_attention`, and record cross-attention with "
                "`empty_cache(..., record_attention=True)`."
            )
        cached_memory = cache is not None and cache.holds_memory
        if self.has_cross_attention and memory is None and not cached_memory:
            raise ValueError("This block has cross_attention=True and needs `memory`.")
        if not self.has_cross_attention and memory is not None:
            raise ValueError(
                "`memory` was given to a block built with cross_attention=False."
            )
        if padding_mask is not None:
            validation.check_key_mask("padding_mask", padding_mask, x.shape[0], x.shape[1])
        if memory_mask is not None and memory is not None:
            validation.check_key_mask(
                "memory_mask", memory_mask, memory.shape[0], memory.shape[1]
            )
        updated = {}  # the BlockCache fields this call replaces

        def attend(layer, part, h, **kwargs):
            """One attention sub-layer; with a cache, keeps its part of the updated cache."""
            if cache is None:
                return context.call(layer, h, training=training, context=context, **kwargs)
            out, updated[part] = context.call(
                layer, h, cache=getattr(cache, part), cache_index=cache_index,
                training=training, context=context, **kwargs
            )
            return out

        def self_attend(h):
            return attend(self.self_attention, "self_attention", h, key_mask=padding_mask,
                          keep_until=keep_until)

        def feed_forward(h):
            return context.call(self.feed_forward, h, context=context)

        def result(x):
            return x if cache is None else (x, cache._replace(**updated))

        if self.config.parallel_block:  # both sub-layers read one normalized input
            h = context.call(self.self_attention_norm, x)
            dropout = self.residual_dropout
            x = (x + context.call(dropout, self_attend(h), training=training)
                 + context.call(dropout, feed_forward(h), training=training))
            return result(x)
        x = self._residual(x, self.self_attention_norm, self_attend, training, context)

        def cross_attend(h):
            if cache is not None and cache.records_attention:  # for a coverage penalty
                probs = self.cross_attention.attention_probabilities(
                    h, key_mask=memory_mask, cache=cache.cross_attention, context=context
                )  # (batch, heads, T, S)
                updated["source_attention"] = ops.cast(
                    ops.sum(ops.mean(probs, axis=1), axis=1), "float32")  # (batch, S)
            return attend(
                self.cross_attention, "cross_attention", h,
                memory=None if cached_memory else memory, key_mask=memory_mask,
            )

        if self.has_cross_attention:
            x = self._residual(x, self.cross_attention_norm, cross_attend, training, context)
        x = self._residual(x, self.feed_forward_norm, feed_forward, training, context)
        return result(x)

    def rematerialized_call(self, layer_call, *args, **kwargs):
        """Keras' rematerialization of this block (built in a `keras.RematScope` naming it),
        made to work with its keyword arguments and dropout (`keras_transformer.layers.remat`).

        A cached decoding step is never rematerialized: nothing differentiates it.

        Args:
            layer_call: the method `Layer.__call__` would run (`call`).
            *args: the call's arguments.
            **kwargs: the call's keyword arguments.

        Returns:
            `layer_call`, or a function of the same arguments that recomputes it in the
            backward pass.

        Example:
        >>> import keras
        >>> with keras.RematScope(mode="list_of_layers", layer_names=["block"]):
        ...     block = TransformerBlock(num_heads=2, d_ff=16, name="block")
        >>> x = keras.ops.ones((1, 3, 8))
        >>> block.build(x.shape)
        >>> call = block.call
        >>> block.rematerialized_call(call, x) is call
        False
        >>> block.rematerialized_call(call, x, cache=block.empty_cache(1, 3)) is call
        True
        """
        if (kwargs.get("cache") is not None
                or super().rematerialized_call(layer_call, *args, **kwargs) is layer_call):
            return layer_call  # decoding, or a mode that leaves this block out
        return rematerialized(layer_call, seed_states(self))

    def cross_attention_probabilities(self, x, memory, padding_mask=None, memory_mask=None):
        """Cross-attention weights `(batch, heads, T, S)` this block computes for input `x`.

        Runs the self-attention sub-layer as `call` does (no dropout), then
        returns the cross-attention softmax over the memory positions: which
        source tokens each target position reads. For inspection and figures.

        Args:
            x: the block's input `(batch, T, d_model)`.
            memory: the encoder output `(batch, S, d_model)`.
            padding_mask: bool `(batch, T)` key padding mask of `x`.
            memory_mask: bool `(batch, S)` key padding mask of `memory`.
        """
        if not self.has_cross_attention:
            raise ValueError("This block has cross_attention=False: it has no cross-attention.")
        x = self._residual(
            x, self.self_attention_norm,
            lambda h: self.self_attention(h, key_mask=padding_mask), False,
            context_or_default(None),
        )
        query = self.cross_attention_norm(x) if self.ln_position == "pre" else x
        return self.cross_attention.attention_probabilities(query, memory, key_mask=memory_mask)

    def empty_cache(self, batch_size, max_length, memory=None, record_attention=False,
                    context=None):
        """The `BlockCache` to start decoding up to `max_length` positions from.

        `self_attention` holds zeros of `self_cache_shape(batch_size,
        max_length)`; a cross-attention block's `cross_attention` holds the
        keys and values of `memory`, computed once. With `record_attention`,
        each cached call stores in `source_attention` `(batch, S)` the
        cross-attention (mean over heads) each source position received in
        that call (zeros before the first).

        Args:
            batch_size: rows of the batch to decode.
            max_length: positions to decode (prompt plus new tokens).
            memory: `(batch, S, d_model)` encoder output (cross-attention
                blocks only).
            record_attention: whether cached calls record `source_attention`
                (cross-attention blocks only).
            context: a `DecodeContext` (a decode loop's), for the memory's keys
                and values; None: `DEFAULT_CONTEXT`.
        """
        validation.check_bool("record_attention", record_attention)
        shape = self.self_cache_shape(batch_size, max_length)
        cache = BlockCache(ops.zeros(shape, dtype=self.compute_dtype))
        if self.has_cross_attention:
            if memory is None:
                raise ValueError("This block has cross_attention=True: its cache needs "
                                 "`memory` (the encoder output).")
            cache = cache._replace(
                cross_attention=self.cross_attention.key_value_cache(memory, context))
        if record_attention:
            if not self.has_cross_attention:
                raise ValueError("`record_attention` needs a block with cross_attention=True.")
            cache = cache._replace(
                source_attention=ops.zeros(tuple(ops.shape(memory)[:2]), dtype="float32"))
        return cache

    def self_cache_shape(self, batch_size, max_length):
        """Shape of the self-attention decode cache: `(batch, 2, slots, heads, d_head)`.

        A slot per position (`max_length`), or for a banded block a ring of
        `min(window, max_length)` slots.

        Args:
            batch_size: rows of the batch to decode.
            max_length: positions to decode (prompt plus new tokens).
        """
        attention = self.self_attention
        slots = attention.cache_length(max_length)
        return (batch_size, 2, slots, attention.kv_heads, attention.d_head)

    def compute_output_shape(self, x_shape, *args, **kwargs):
        cache_shape = kwargs.get("cache_shape")
        return x_shape if cache_shape is None else (x_shape, cache_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            **dataclasses.asdict(self.config),  # the BlockConfig's fields, as keywords
            self_attention=self.self_attention_mode,
            window=self.window,
            cross_attention=self.has_cross_attention,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            output_kernel_initializer=keras.initializers.serialize(
                self.output_kernel_initializer
            ),
        )
        return config
