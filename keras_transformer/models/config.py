"""One config object for both model families, and the parameter count it implies."""

import dataclasses
from typing import Optional

from keras_transformer import validation
from keras_transformer.layers.block_config import BlockConfig
from keras_transformer.layers.normalization import norm_weights
from keras_transformer.layers.sinusoidal_embedding import LAYOUTS

# Added to the embeddings ("sinusoidal", "learned") or made by attention itself.
POSITIONS = ("sinusoidal", "learned", "rotary", "alibi")
EMBEDDED_POSITIONS = ("sinusoidal", "learned")
BANDED_LAYERS = ("alternate", "all")


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Every architecture toggle of SPEC section 1, validated once.

    `EncoderDecoder` and `DecoderOnly` build one of these from their keyword
    arguments; `num_encoder_layers == 0` means decoder-only. Nothing here is a
    runtime mode: training and decoding are call arguments, not config
    (`remat`, how training stores activations, is the one training option
    kept here, so that a saved model keeps it).

    The toggles of a single block carry the names of `BlockConfig`'s fields;
    `block` collects them into the `BlockConfig` every block of the model is
    built from (and which validates them). The rest (vocabulary, depth,
    embeddings, special ids, which layers are banded) belong to the model.

    Args:
        vocab_size: one vocabulary for source and target (the paper's shared
            BPE).
        num_decoder_layers: decoder (or GPT) blocks.
        d_model: width of the residual stream.
        num_heads: attention heads; each sees `d_model / num_heads` dimensions.
            With `num_kv_heads`: query heads.
        d_ff: inner width of the feed-forward network (4 x d_model in both
            papers).
        num_encoder_layers: encoder blocks; 0 means decoder-only (GPT), 6 in
            the 2017 paper.
        max_length: rows of a learned position table; sinusoids need no limit.
        ln_position: `"post"`: `LN(x + f(x))` (2017); `"pre"`: `x + f(LN(x))`
            (GPT-2).
        position: `"sinusoidal"`: fixed, any length; `"learned"`: a table;
            `"rotary"`: RoPE on each self-attention's queries and keys
            (LLaMA); `"alibi"`: a distance penalty on the scores. The last
            two add nothing to the embeddings.
        position_layout: sinusoid layout: `"interleaved"` (paper) or fairseq's
            `"concatenated"`.
        activation: feed-forward non-linearity: `"relu"` (2017) or `"gelu"`
            (GPT-2), also `"gelu_exact"` and `"silu"`.
        dropout: on embeddings+positions and on each sub-layer output.
        attention_dropout: on attention probabilities; 0 keeps fused kernels.
        tie_embeddings: the pre-softmax projection reuses the token embedding.
        scale_embeddings: multiply token embeddings by `sqrt(d_model)` so they
            are not drowned by the sinusoids.
        pad_id: token id treated as padding (masked as a key, ignored by the
            loss, never generated); None: no padding (GPT-2 has none).
        start_id: the token every target starts with (encoder-decoder:
            `generate`'s default `start_id`); None: none.
        end_id: the token that ends a sequence (`generate`'s default stop id);
            None: none.
        attention_window: GPT-3 banded layers look this far back (None:
            every layer is dense).
        banded_layers: which decoder layers are banded: `"alternate"` (GPT-3)
            or `"all"`.
        layer_norm_epsilon: the norms' epsilon (GPT-2: 1e-5, tensor2tensor
            1e-6, LLaMA 2: 1e-5).
        norm: `"layer"` (LayerNorm) or `"rms"` (RMSNorm, LLaMA).
        feed_forward: `"mlp"` or the gated `"swiglu"` (LLaMA) / `"geglu"`.
        use_bias: biases in the attention and feed-forward projections.
        num_kv_heads: key/value heads for grouped-query attention (None: as
            many as `num_heads`; 1: multi-query).
        qk_norm: normalize each query and key head before their product.
        rotary_base: RoPE's wavelength base (`position="rotary"`).
        rotary_fraction: share of each head's features RoPE rotates.
        remat: recompute each block's activations in the backward pass
            instead of storing them: less memory for one more forward pass of
            each block; losses, gradients and `generate` are unchanged. Not
            architecture: `==` and `count_params` leave it out. Under JAX on
            CPU, XLA undoes it unless the process starts with
            `XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`
            (docs/training.md, Rematerialization).

    Example:
    >>> config = TransformerConfig(vocab_size=50257, num_encoder_layers=0,
    ...     num_decoder_layers=12, d_model=768, num_heads=12, d_ff=3072,
    ...     ln_position="pre", position="learned", activation="gelu",
    ...     scale_embeddings=False)
    >>> config.count_params()
    124439808
    """

    vocab_size: int
    num_decoder_layers: int
    d_model: int
    num_heads: int
    d_ff: int
    num_encoder_layers: int = 0
    max_length: int = 1024
    ln_position: str = "post"
    position: str = "sinusoidal"
    position_layout: str = "interleaved"
    activation: str = "relu"
    dropout: float = 0.1
    attention_dropout: float = 0.0
    tie_embeddings: bool = True
    scale_embeddings: bool = True
    pad_id: Optional[int] = 0
    start_id: Optional[int] = None
    end_id: Optional[int] = None
    attention_window: Optional[int] = None
    banded_layers: str = "alternate"
    layer_norm_epsilon: float = 1e-5
    norm: str = "layer"
    feed_forward: str = "mlp"
    use_bias: bool = True
    num_kv_heads: Optional[int] = None
    qk_norm: bool = False
    rotary_base: float = 10000.0
    rotary_fraction: float = 1.0
    remat: bool = dataclasses.field(default=False, compare=False)

    def __post_init__(self):
        validation.check_int("vocab_size", self.vocab_size)
        validation.check_int("num_decoder_layers", self.num_decoder_layers)
        validation.check_int("num_encoder_layers", self.num_encoder_layers, minimum=0)
        validation.check_int("d_model", self.d_model)
        validation.check_int("max_length", self.max_length)
        validation.check_choice("position", self.position, POSITIONS)
        validation.check_choice("position_layout", self.position_layout, LAYOUTS)
        validation.check_bool("tie_embeddings", self.tie_embeddings)
        validation.check_bool("scale_embeddings", self.scale_embeddings)
        validation.check_bool("remat", self.remat)
        self.block.check_width(self.d_model)  # validates every block toggle on the way
        for name in ("pad_id", "start_id", "end_id"):
            validation.check_token_id(name, getattr(self, name), self.vocab_size, allow_none=True)
        if self.start_id is not None and self.start_id == self.pad_id:
            raise ValueError(
                f"`start_id` must differ from `pad_id` (a start token equal to the padding "
                f"id would be masked out); received both {self.pad_id}."
            )
        validation.check_int("attention_window", self.attention_window, allow_none=True)
        validation.check_choice("banded_layers", self.banded_layers, BANDED_LAYERS)
        if self.d_model % 2 and self.position == "sinusoidal":
            raise ValueError(
                f"`d_model` must be even for sinusoidal positions; received {self.d_model}."
            )

    @property
    def block(self):
        """The `BlockConfig` of every block: this config's fields of the same names."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(BlockConfig)}
        if self.position in EMBEDDED_POSITIONS:
            fields["position"] = None  # added to the embeddings, not made by attention
        return BlockConfig(**fields)

    def decoder_attention_mode(self, layer_index):
        """Self-attention mode of decoder layer `layer_index`: causal or banded.

        Args:
            layer_index: 0-based index of the decoder block.
        """
        if self.attention_window is None:
            return "causal"
        if self.banded_layers == "all" or layer_index % 2 == 1:
            return "banded"
        return "causal"

    def count_params(self):
        """Parameter count implied by the config, without building anything.

        Each block as `BlockConfig.count_params` counts it, the token
        embedding (and an untied output projection), a learned position
        table, and one final norm per stack for pre-LN only; tied weights
        counted once.
        """
        d, block = self.d_model, self.block
        stacks = 2 if self.num_encoder_layers else 1
        total = (
            self.vocab_size * d * (1 if self.tie_embeddings else 2)
            + (self.max_length * d if self.position == "learned" else 0)
            + self.num_encoder_layers * block.count_params(d)
            + self.num_decoder_layers * block.count_params(
                d, cross_attention=bool(self.num_encoder_layers)
            )
            + (stacks * norm_weights(self.norm, d) if self.ln_position == "pre" else 0)
        )
        return total
