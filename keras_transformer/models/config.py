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

    Example:
    >>> config = TransformerConfig(vocab_size=50257, num_encoder_layers=0,
    ...     num_decoder_layers=12, d_model=768, num_heads=12, d_ff=3072,
    ...     ln_position="pre", position="learned", activation="gelu",
    ...     scale_embeddings=False)
    >>> config.count_params()
    124439808
    """

    vocab_size: int  # one vocabulary for source and target (the paper's shared BPE)
    num_decoder_layers: int  # decoder (or GPT) blocks
    d_model: int  # width of the residual stream
    num_heads: int  # attention heads; each sees d_model / num_heads dimensions
    d_ff: int  # inner width of the feed-forward network (4 x d_model in both papers)
    num_encoder_layers: int = 0  # 0 = decoder-only (GPT); 6 in the 2017 paper
    max_length: int = 1024  # rows of a learned position table; sinusoids need no limit
    ln_position: str = "post"  # "post": LN(x + f(x)) (2017); "pre": x + f(LN(x)) (GPT-2)
    position: str = "sinusoidal"  # "sinusoidal": fixed, any length; "learned": a table
    position_layout: str = "interleaved"  # sinusoid layout: paper or fairseq "concatenated"
    activation: str = "relu"  # feed-forward non-linearity: ReLU (2017) or GELU (GPT-2)
    dropout: float = 0.1  # on embeddings+positions and on each sub-layer output
    attention_dropout: float = 0.0  # on attention probabilities; 0 keeps flash kernels
    tie_embeddings: bool = True  # pre-softmax projection reuses the token embedding
    scale_embeddings: bool = True  # x sqrt(d_model) so tokens are not drowned by sinusoids
    pad_id: Optional[int] = 0  # token id treated as padding; None = no padding mask
    attention_window: Optional[int] = None  # GPT-3 banded layers: look this far back
    banded_layers: str = "alternate"  # which decoder layers are banded: GPT-3 alternates
    layer_norm_epsilon: float = 1e-5  # LayerNorm epsilon (GPT-2: 1e-5, tensor2tensor 1e-6)

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
        validation.check_int("pad_id", self.pad_id, minimum=0, allow_none=True)
        if self.pad_id is not None and self.pad_id >= self.vocab_size:
            raise ValueError(
                f"`pad_id` must be None or in [0, vocab_size={self.vocab_size}); "
                f"received {self.pad_id}."
            )
        validation.check_int("attention_window", self.attention_window, allow_none=True)
        validation.check_choice("banded_layers", self.banded_layers, BANDED_LAYERS)
        validation.check_positive_float("layer_norm_epsilon", self.layer_norm_epsilon)
        if self.d_model % 2 and self.position == "sinusoidal":
            raise ValueError(
                f"`d_model` must be even for sinusoidal positions; received {self.d_model}."
            )

    def decoder_attention_mode(self, layer_index):
        """Self-attention mode of decoder layer `layer_index`: causal or banded."""
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
