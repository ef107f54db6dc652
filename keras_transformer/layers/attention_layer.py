"""What `MultiHeadAttention` and `CrossAttention` share: their config, heads, norms, output.

Both take the block's toggles as an `AttentionConfig` (a `BlockConfig` is one)
or as its fields by keyword, under the block's names, and list those fields in
`get_config`. Older standalone configs, which named the probability dropout
`dropout`, the norms' epsilon `norm_epsilon` and the per-head norm by its kind
(`qk_norm="rms"`), still load: `from_config` translates them.
"""

import dataclasses
import functools

import keras
from keras import ops

from keras_transformer import validation
from keras_transformer.layers.block_config import AttentionConfig
from keras_transformer.layers.clone_initializer import clone_initializer
from keras_transformer.layers.normalization import make_norm

ATTENTION_FIELDS = frozenset(field.name for field in dataclasses.fields(AttentionConfig))
# Arguments of the layers before they took the block's names, and the names now.
_RENAMED = {"dropout": "attention_dropout", "norm_epsilon": "layer_norm_epsilon"}


def attention_config(config, fields):
    """The layer's `AttentionConfig` from `config` (object, dict or None) and keyword fields.

    Args:
        config: an `AttentionConfig` or `BlockConfig`, the dict of one, or None.
        fields: `AttentionConfig` fields given by keyword; they replace
            `config`'s values.
    """
    if isinstance(config, dict):  # a BlockConfig's dict has the block's fields too
        config = AttentionConfig(**{k: v for k, v in config.items() if k in ATTENTION_FIELDS})
    if config is None:
        return AttentionConfig(**fields)
    if not isinstance(config, AttentionConfig):
        raise ValueError(
            "`config` must be an AttentionConfig or BlockConfig, its dict or None (the "
            f"number of heads is the keyword `num_heads`); received {config!r}."
        )
    return dataclasses.replace(AttentionConfig.of(config), **fields)


def upgrade_config(config):
    """An attention layer's saved config with the older argument names translated.

    `dropout` -> `attention_dropout`, `norm_epsilon` -> `layer_norm_epsilon`,
    `qk_norm=None / "layer" / "rms"` -> `qk_norm=False / True` with `norm`.

    Args:
        config: a `get_config` dict, older or current.
    """
    config = dict(config)
    for old, new in _RENAMED.items():
        if old in config:
            config[new] = config.pop(old)
    qk_norm = config.get("qk_norm")
    if qk_norm is None and "qk_norm" in config:
        config["qk_norm"] = False
    elif isinstance(qk_norm, str):
        config["qk_norm"], config["norm"] = True, qk_norm
    return config


class AttentionLayer(keras.layers.Layer):
    """Base of the attention layers: config, projections' helpers, norms, output, dropout.

    Subclasses build their input projections, then `_build_common`; they call
    `_split_heads`, `_queries`/`_keys`, an `attention_plan` function, and
    `_output`.
    """

    def __init__(self, config=None, kernel_initializer="glorot_uniform",
                 output_kernel_initializer=None, **kwargs):
        for old, new in _RENAMED.items():
            if old in kwargs:
                raise ValueError(
                    f"`{old}` is not an argument of {type(self).__name__}: attention takes the "
                    f"block's names; use `{new}` (received {old}={kwargs[old]!r})."
                )
        fields = {name: kwargs.pop(name) for name in list(kwargs) if name in ATTENTION_FIELDS}
        super().__init__(**kwargs)
        self.config = attention_config(config, fields)
        self.num_heads = self.config.num_heads
        self.kv_heads = self.config.kv_heads
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.output_kernel_initializer = keras.initializers.get(
            output_kernel_initializer or self.kernel_initializer
        )

    @classmethod
    def from_config(cls, config):
        return cls(**upgrade_config(config))

    def _dense(self, units, name, initializer=None):
        return keras.layers.Dense(
            units,
            use_bias=self.config.use_bias,
            kernel_initializer=clone_initializer(initializer or self.kernel_initializer, name),
            dtype=self.dtype_policy,
            name=name,
        )

    def _check_width(self, query_shape):
        d_model = query_shape[-1]
        self.config.check_width(d_model)
        self.d_model, self.d_head = d_model, d_model // self.num_heads

    def _build_common(self, query_shape):
        """The per-head norms (with `qk_norm`), `output` and the probability dropout."""
        if self.config.qk_norm:
            heads_shape = (None, None, None, self.d_head)
            self.query_norm = make_norm(
                self.config.norm, self.config.layer_norm_epsilon, self.dtype_policy, "query_norm"
            )
            self.query_norm.build(heads_shape)
            self.key_norm = make_norm(
                self.config.norm, self.config.layer_norm_epsilon, self.dtype_policy, "key_norm"
            )
            self.key_norm.build(heads_shape)
        self.output_projection = self._dense(
            self.d_model, "output", self.output_kernel_initializer
        )
        self.output_projection.build(query_shape)
        self.probability_dropout = keras.layers.Dropout(
            self.config.attention_dropout, dtype=self.dtype_policy, name="probability_dropout"
        )

    def _split_heads(self, x, *heads):
        """`(batch, L, sum(heads) d_head)` -> tensors `(batch, L, heads[i], d_head)`."""
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, length, sum(heads), self.d_head))
        ends = [sum(heads[: i + 1]) for i in range(len(heads))]
        return [x[:, :, end - n: end] for n, end in zip(heads, ends)]

    def _queries(self, q, context):
        """Per-head norm of queries `(batch, T, H, d_head)` (with `qk_norm`)."""
        return context.call(self.query_norm, q) if self.config.qk_norm else q

    def _keys(self, k, context):
        """Per-head norm of keys `(batch, S, H_kv, d_head)` (with `qk_norm`)."""
        return context.call(self.key_norm, k) if self.config.qk_norm else k

    def _dropout(self, training):
        """The probability dropout for this call, or None (rate 0, or not training)."""
        if self.config.attention_dropout > 0 and training:
            return functools.partial(self.probability_dropout, training=training)
        return None

    def _output(self, out, query, context):
        """Heads `(batch, T, H, d_head)` -> the output projection `(batch, T, d_model)`."""
        batch, length = ops.shape(query)[0], ops.shape(query)[1]
        return context.call(self.output_projection,
                            ops.reshape(out, (batch, length, self.d_model)))

    def _check_key_mask(self, key_mask, q, k):
        if key_mask is not None:
            validation.check_key_mask("key_mask", key_mask, q.shape[0], k.shape[1])

    def get_config(self):
        config = super().get_config()
        config.update(
            **dataclasses.asdict(self.config),  # the AttentionConfig's fields, as keywords
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            output_kernel_initializer=keras.initializers.serialize(
                self.output_kernel_initializer
            ),
        )
        return config
