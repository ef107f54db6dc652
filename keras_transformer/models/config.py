"""One config object for both model families, and the parameter count it implies."""

import dataclasses
from typing import Optional

from keras_transformer import validation
from keras_transformer.layers.feed_forward import ACTIVATIONS
from keras_transformer.layers.sinusoidal_embedding import LAYOUTS
from keras_transformer.layers.transformer_block import LN_POSITIONS

POSITIONS = ("sinusoidal", "learned")
BANDED_LAYERS = ("alternate", "all")


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Every architecture toggle of SPEC section 1, validated once.

    `EncoderDecoder` and `DecoderOnly` build one of these from their keyword
    arguments; `num_encoder_layers == 0` means decoder-only. Nothing here is a
    runtime mode: training and decoding are call arguments, not config.

    Args:
        vocab_size: one vocabulary for source and target (the paper's shared
            BPE).
        num_decoder_layers: decoder (or GPT) blocks.
        d_model: width of the residual stream.
        num_heads: attention heads; each sees `d_model / num_heads` dimensions.
        d_ff: inner width of the feed-forward network (4 x d_model in both
            papers).
        num_encoder_layers: encoder blocks; 0 means decoder-only (GPT), 6 in
            the 2017 paper.
        max_length: rows of a learned position table; sinusoids need no limit.
        ln_position: `"post"`: `LN(x + f(x))` (2017); `"pre"`: `x + f(LN(x))`
            (GPT-2).
        position: `"sinusoidal"`: fixed, any length; `"learned"`: a table.
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
        layer_norm_epsilon: LayerNorm epsilon (GPT-2: 1e-5, tensor2tensor 1e-6).

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

    def __post_init__(self):
        validation.check_int("vocab_size", self.vocab_size)
        validation.check_int("num_decoder_layers", self.num_decoder_layers)
        validation.check_int("num_encoder_layers", self.num_encoder_layers, minimum=0)
        validation.check_int("d_model", self.d_model)
        validation.check_int("num_heads", self.num_heads)
        validation.check_divisible("d_model", self.d_model, "num_heads", self.num_heads)
        validation.check_int("d_ff", self.d_ff)
        validation.check_int("max_length", self.max_length)
        validation.check_choice("ln_position", self.ln_position, LN_POSITIONS)
        validation.check_choice("position", self.position, POSITIONS)
        validation.check_choice("position_layout", self.position_layout, LAYOUTS)
        validation.check_choice("activation", self.activation, tuple(ACTIVATIONS))
        validation.check_bool("tie_embeddings", self.tie_embeddings)
        validation.check_bool("scale_embeddings", self.scale_embeddings)
        validation.check_rate("dropout", self.dropout)
        validation.check_rate("attention_dropout", self.attention_dropout)
        for name in ("pad_id", "start_id", "end_id"):
            validation.check_token_id(name, getattr(self, name), self.vocab_size, allow_none=True)
        if self.start_id is not None and self.start_id == self.pad_id:
            raise ValueError(
                f"`start_id` must differ from `pad_id` (a start token equal to the padding "
                f"id would be masked out); received both {self.pad_id}."
            )
        validation.check_int("attention_window", self.attention_window, allow_none=True)
        validation.check_choice("banded_layers", self.banded_layers, BANDED_LAYERS)
        validation.check_positive_float("layer_norm_epsilon", self.layer_norm_epsilon)
        if self.d_model % 2 and self.position == "sinusoidal":
            raise ValueError(
                f"`d_model` must be even for sinusoidal positions; received {self.d_model}."
            )

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

        Biases on every Dense, scale and offset in every LayerNorm, one final
        LayerNorm per stack for pre-LN only, tied weights counted once.
        """
        d, d_ff = self.d_model, self.d_ff
        layer_norm = 2 * d
        attention = 4 * (d * d + d)
        feed_forward = d * d_ff + d_ff + d_ff * d + d
        encoder_block = attention + feed_forward + 2 * layer_norm
        decoder_block = encoder_block + (attention + layer_norm if self.num_encoder_layers else 0)
        stacks = 2 if self.num_encoder_layers else 1
        total = (
            self.vocab_size * d * (1 if self.tie_embeddings else 2)
            + (self.max_length * d if self.position == "learned" else 0)
            + self.num_encoder_layers * encoder_block
            + self.num_decoder_layers * decoder_block
            + (stacks * layer_norm if self.ln_position == "pre" else 0)
        )
        return total
