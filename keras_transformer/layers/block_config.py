"""Every toggle of one Transformer block, in one frozen object.

A block's architecture is a handful of choices, each from a paper: where the
norm stands and which norm, which feed-forward, how attention encodes
positions, how many key/value heads. A toggle of the block is a field here
and nothing else: `TransformerConfig.block` holds one, and the models take it
as `block=` or its fields as keywords, by these names (no list of them
elsewhere).

The attention toggles are `AttentionConfig`'s fields, and a `BlockConfig` is an
`AttentionConfig` with the block's other fields added: the attention layers
(`MultiHeadAttention`, `CrossAttention`) take the block's config itself and
read its fields under the same names, so an attention toggle is one field of
`AttentionConfig` plus its use in the attention code (`attention_plan`). The
feed-forward takes its share through `feed_forward_arguments`. A block's or an
attention layer's `get_config` lists the fields as keywords, next to its own
arguments.
"""

import dataclasses
import math
from typing import Optional

from keras_transformer import validation
from keras_transformer.layers import attention_plan
from keras_transformer.layers.feed_forward import ACTIVATIONS
from keras_transformer.layers.feed_forward import KINDS as FEED_FORWARDS
from keras_transformer.layers.normalization import NORMS
from keras_transformer.layers.normalization import norm_weights
from keras_transformer.layers.rotary_embedding import check_head_width

LN_POSITIONS = ("post", "pre")
# What self-attention does about positions (None: the model adds them to the embeddings).
ATTENTION_POSITIONS = (None, "rotary", "alibi")


@dataclasses.dataclass(frozen=True)
class AttentionConfig:
    """The attention toggles of a block; validated when made. `BlockConfig` extends it.

    Args:
        num_heads: query heads; each reads `d_model / num_heads` features.
        num_kv_heads: key/value heads, shared by groups of
            `num_heads / num_kv_heads` query heads (grouped-query attention,
            Ainslie et al. 2023; 1 is multi-query attention, Shazeer 2019).
            The decode cache shrinks by the same factor. None: `num_heads`.
        norm: `"layer"` (LayerNorm) or `"rms"` (RMSNorm, LLaMA: no mean, no
            offset), in every place a norm stands (the `qk_norm` norms too).
        layer_norm_epsilon: the norms' epsilon.
        use_bias: biases in the attention and feed-forward projections
            (LLaMA has none).
        attention_dropout: rate on the attention probabilities.
        position: what self-attention does about positions: None (the model
            adds them to the embeddings), `"rotary"` (RoPE on queries and keys)
            or `"alibi"` (a linear distance penalty on the scores).
        rotary_base: RoPE's wavelength base (10,000).
        rotary_fraction: share of each head's features that rotate (GPT-NeoX:
            0.25; LLaMA: 1).
        qk_norm: normalize queries and keys per head (with `norm`) before
            their product (Dehghani et al. 2023; OLMo 2, Qwen3): keeps the
            scores from growing large in long or low-precision training.
        attention_softcap: soft-caps every attention score (after the
            `1/sqrt(d_head)` scale, before ALiBi's bias and the mask) to
            `cap * tanh(score / cap)`, inside `(-cap, cap)` (Gemma 2, Gemma
            Team 2024: 50): the scores stay bounded without the norms
            `qk_norm` adds. None: no cap. Each call forms its scores
            explicitly (no fused kernel).

    Example:
    >>> AttentionConfig(num_heads=8, num_kv_heads=2, position="rotary").kv_heads
    2
    """

    num_heads: int
    num_kv_heads: Optional[int] = None
    norm: str = "layer"
    layer_norm_epsilon: float = 1e-5
    use_bias: bool = True
    attention_dropout: float = 0.0
    position: Optional[str] = None
    rotary_base: float = 10000.0
    rotary_fraction: float = 1.0
    qk_norm: bool = False
    attention_softcap: Optional[float] = None

    def __post_init__(self):
        validation.check_int("num_heads", self.num_heads)
        validation.check_int("num_kv_heads", self.num_kv_heads, allow_none=True)
        if self.num_kv_heads is not None:
            validation.check_divisible("num_heads", self.num_heads, "num_kv_heads",
                                       self.num_kv_heads)
        validation.check_choice("norm", self.norm, NORMS)
        validation.check_positive_float("layer_norm_epsilon", self.layer_norm_epsilon)
        validation.check_bool("use_bias", self.use_bias)
        validation.check_rate("attention_dropout", self.attention_dropout)
        validation.check_choice("position", self.position, ATTENTION_POSITIONS)
        validation.check_positive_float("rotary_base", self.rotary_base)
        validation.check_fraction("rotary_fraction", self.rotary_fraction)
        validation.check_bool("qk_norm", self.qk_norm)
        if self.attention_softcap is not None:
            cap = validation.check_positive_float("attention_softcap", self.attention_softcap)
            if not math.isfinite(cap):
                raise ValueError(f"`attention_softcap` must be finite (or None); received {cap!r}.")

    @classmethod
    def of(cls, config):
        """The `AttentionConfig` of `config` (a `BlockConfig` or `AttentionConfig`): its fields.

        Args:
            config: an `AttentionConfig` (a `BlockConfig` is one).
        """
        return cls(**{field.name: getattr(config, field.name)
                      for field in dataclasses.fields(cls)})

    @property
    def forms_scores(self):
        """Whether attention in training forms its `T x keys` scores per head explicitly.

        Probability dropout and a score transform (`attention_softcap`) need
        every score; otherwise a fused (flash) kernel keeps none. Memory
        plans read this.
        """
        return self.attention_dropout > 0 or attention_plan.score_transform(self) is not None

    @property
    def kv_heads(self):
        """Key/value heads: `num_kv_heads`, or `num_heads` when it is None."""
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    def check_width(self, d_model):
        """Checks that `d_model` suits these toggles (heads divide it; RoPE has features).

        Args:
            d_model: the width of the residual stream.
        """
        validation.check_divisible("d_model", d_model, "num_heads", self.num_heads)
        if self.position == "rotary":
            check_head_width(d_model // self.num_heads, self.rotary_fraction)

    def count_attention_params(self, d_model):
        """Weights of one attention layer (self or cross) of width `d_model`.

        Args:
            d_model: the width of the residual stream.
        """
        d_head = d_model // self.num_heads
        kv_width = self.kv_heads * d_head
        bias = int(self.use_bias)
        return (
            2 * d_model * d_model + 2 * d_model * kv_width  # Q and output; K and V
            + bias * (2 * d_model + 2 * kv_width)
            + (2 * norm_weights(self.norm, d_head) if self.qk_norm else 0)
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class BlockConfig(AttentionConfig):
    """The architecture of one block; validated when made.

    The attention toggles (`num_heads`, `num_kv_heads`, `norm`,
    `layer_norm_epsilon`, `use_bias`, `attention_dropout`, `position`,
    `rotary_base`, `rotary_fraction`, `qk_norm`, `attention_softcap`) are
    `AttentionConfig`'s, under the same names; the block adds its own
    (keywords only).

    Args:
        d_ff: inner width of the feed-forward network.
        ln_position: `"post"`: `norm(x + f(x))` (2017); `"pre"`:
            `x + f(norm(x))` (GPT-2 and every model since).
        feed_forward: `"mlp"`: `act(x W1) W2`; `"swiglu"` / `"geglu"`: the
            gated `(silu or gelu(x W_gate) * x W_in) W_out` of Shazeer (2020),
            LLaMA's choice (three matrices, `d_ff` wide).
        activation: the `"mlp"` non-linearity (`"relu"`, `"gelu"`, ...); the
            gated kinds name their own.
        dropout: rate on each sub-layer's output before the residual add (in
            a model, also on the embedding sum).
        parallel_block: attention and feed-forward read the same normalized
            input and join the residual together, `x + attn(norm(x)) +
            ff(norm(x))` (GPT-J, Wang & Komatsuzaki 2021; PaLM, Chowdhery et
            al. 2022), where a sequential block feeds attention's output to
            the feed-forward: one norm per block fewer, and the two sub-layers
            can run at once (PaLM: about 15% faster training at scale, no loss
            of quality at 62B parameters, a small one at 8B). Pre-LN only, and
            not in a block with cross-attention (no paper defines where it
            would read).
        num_heads: query heads (`AttentionConfig`).
        num_kv_heads: key/value heads; None: `num_heads` (`AttentionConfig`).
        norm: `"layer"` or `"rms"`, in every place a norm stands.
        layer_norm_epsilon: the norms' epsilon.
        use_bias: biases in the attention and feed-forward projections.
        attention_dropout: rate on the attention probabilities.
        position: None, `"rotary"` or `"alibi"` (`AttentionConfig`).
        rotary_base: RoPE's wavelength base.
        rotary_fraction: share of each head's features that rotate.
        qk_norm: normalize queries and keys per head (with `norm`).
        attention_softcap: cap every attention score at `cap * tanh(s / cap)`
            (`AttentionConfig`); None: no cap.

    Example:
    >>> llama = BlockConfig(num_heads=8, d_ff=64, num_kv_heads=2, ln_position="pre",
    ...                     norm="rms", feed_forward="swiglu", use_bias=False,
    ...                     position="rotary", dropout=0.0)
    >>> llama.kv_heads, AttentionConfig.of(llama).position
    (2, 'rotary')
    """

    d_ff: int
    ln_position: str = "post"
    feed_forward: str = "mlp"
    activation: str = "relu"
    dropout: float = 0.0
    parallel_block: bool = False

    def __post_init__(self):
        super().__post_init__()
        validation.check_int("d_ff", self.d_ff)
        validation.check_choice("ln_position", self.ln_position, LN_POSITIONS)
        validation.check_choice("feed_forward", self.feed_forward, FEED_FORWARDS)
        validation.check_choice("activation", self.activation, tuple(ACTIVATIONS))
        validation.check_rate("dropout", self.dropout)
        validation.check_bool("parallel_block", self.parallel_block)
        if self.parallel_block and self.ln_position != "pre":
            raise ValueError(
                "`parallel_block=True` needs `ln_position='pre'` (attention and feed-forward "
                f"read one normalized input); received ln_position={self.ln_position!r}."
            )

    def norm_names(self, cross_attention=False):
        """The names of a block's residual norms, in the order the block makes them.

        One per sub-layer (`self_attention_norm`, `cross_attention_norm`,
        `feed_forward_norm`); a parallel block has one, read by both
        sub-layers. The block, its parameter count and memory plans read
        this list.

        Args:
            cross_attention: whether the block reads an encoder output.

        Raises:
            ValueError: a parallel block with cross-attention.
        """
        if self.parallel_block:
            if cross_attention:
                raise ValueError(
                    "`parallel_block=True` is for blocks without cross-attention (a "
                    "DecoderOnly, or a lone TransformerBlock): an EncoderDecoder's decoder "
                    "blocks read the encoder, and no paper defines a parallel block that does."
                )
            return ("self_attention_norm",)
        return ("self_attention_norm",) + (("cross_attention_norm",) if cross_attention
                                           else ()) + ("feed_forward_norm",)

    def check_stack(self, d_model, cross_attention=False):
        """Checks these toggles for blocks of width `d_model`, with cross-attention or not.

        Args:
            d_model: the width of the residual stream.
            cross_attention: whether the blocks read an encoder output.
        """
        self.check_width(d_model)
        self.norm_names(cross_attention)

    def feed_forward_arguments(self):
        """Keyword arguments of this block's `FeedForward` layer."""
        return dict(
            d_ff=self.d_ff, kind=self.feed_forward, activation=self.activation,
            use_bias=self.use_bias,
        )

    def count_params(self, d_model, cross_attention=False):
        """Weights of one block of width `d_model` (with cross-attention if asked).

        Args:
            d_model: the width of the residual stream.
            cross_attention: whether the block also reads an encoder output.
        """
        attention = self.count_attention_params(d_model)
        bias = int(self.use_bias)
        matrices = 3 if self.feed_forward != "mlp" else 2
        feed_forward = matrices * d_model * self.d_ff + bias * (
            (matrices - 1) * self.d_ff + d_model
        )
        norms = len(self.norm_names(cross_attention))
        return (norms * norm_weights(self.norm, d_model)
                + (1 + int(cross_attention)) * attention + feed_forward)
