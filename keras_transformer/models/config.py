"""One config object for both model families, and the parameter count it implies.

A model's architecture is its own few fields (vocabulary, depth, width,
embeddings, special ids, which layers are banded) and one `BlockConfig`, the
toggles every block is built from. A toggle of the block is a field of
`BlockConfig` and nothing else: the models take it through `block=` (or as a
flat keyword, routed by `block_from_arguments` by `BlockConfig`'s field names),
save it under `"block"` in their config, and hand it to every block.
"""

import dataclasses
from typing import Optional

from keras_transformer import validation
from keras_transformer.layers.block_config import BlockConfig
from keras_transformer.layers.multi_head_attention import POSITIONS as ATTENTION_POSITIONS
from keras_transformer.layers.normalization import norm_weights
from keras_transformer.layers.sinusoidal_embedding import LAYOUTS

# Added to the embeddings ("sinusoidal", "learned") or made by attention itself.
POSITIONS = ("sinusoidal", "learned", "rotary", "alibi")
EMBEDDED_POSITIONS = ("sinusoidal", "learned")
BANDED_LAYERS = ("alternate", "all")

BLOCK_FIELDS = tuple(field.name for field in dataclasses.fields(BlockConfig))
"""The names of `BlockConfig`'s fields: the keywords a model routes to its block."""


def attention_position(position):
    """The blocks' `BlockConfig.position` for a model's `position`.

    The model's `position` says where positions come from; the block's, what
    self-attention does about them: `"rotary"` and `"alibi"` are made by
    attention (the same name in both), the embedded kinds by the model (None
    in the block). This is the one place that maps the one to the other.

    Args:
        position: the model's `position` (one of `POSITIONS`).

    Example:
    >>> attention_position("learned"), attention_position("rotary")
    (None, 'rotary')
    """
    return None if position in EMBEDDED_POSITIONS else position


def block_from_arguments(block, flat, defaults, owner="the model"):
    """The `BlockConfig` of a model's `block` argument and its flat block keywords.

    The one place where a model's keywords become block toggles: each key of
    `flat` must name a field of `BlockConfig`; nothing lists them again.

    Args:
        block: a `BlockConfig` (taken as it is), a dict of some of its fields
            (what `get_config` writes), or None.
        flat: block fields given as keywords of the model (`num_heads=12`),
            the form of the models' configs before `block` existed.
        defaults: the family's block fields, under the dict and the keywords.
        owner: who takes these arguments, for the messages.

    Returns:
        A `BlockConfig`.

    Raises:
        ValueError: a keyword names no field of `BlockConfig`, a field is given
            both in `block` and as a keyword, or a required field is missing.

    Example:
    >>> block_from_arguments(None, dict(num_heads=4, d_ff=64), dict(norm="rms")).norm
    'rms'
    >>> block_from_arguments(BlockConfig(num_heads=4, d_ff=64), dict(d_ff=32), {})
    Traceback (most recent call last):
    ...
    ValueError: the model got `d_ff` both in `block` and as a keyword; give each block field once.
    """
    unknown = sorted(set(flat) - set(BLOCK_FIELDS))
    if unknown:
        raise ValueError(
            f"{owner} got unknown keyword argument(s) {unknown}: a block toggle is a field of "
            f"BlockConfig ({', '.join(BLOCK_FIELDS)})."
        )
    if isinstance(block, BlockConfig):
        given = dataclasses.asdict(block)
    elif block is None or isinstance(block, dict):
        given = dict(block or {})
        unknown = sorted(set(given) - set(BLOCK_FIELDS))
        if unknown:
            raise ValueError(
                f"`block` of {owner} has unknown field(s) {unknown}; BlockConfig's fields: "
                f"{', '.join(BLOCK_FIELDS)}."
            )
    else:
        raise ValueError(
            f"`block` must be a BlockConfig, a dict of its fields or None; received "
            f"{block!r}. (Block toggles such as `num_heads` are keywords: `num_heads=12`.)"
        )
    twice = [name for name in BLOCK_FIELDS if name in given and name in flat]
    if twice:
        names = ", ".join(f"`{name}`" for name in twice)
        raise ValueError(
            f"{owner} got {names} both in `block` and as a keyword; give each block field once."
        )
    if isinstance(block, BlockConfig):
        return block
    fields = {**defaults, **given, **flat}
    missing = [f.name for f in dataclasses.fields(BlockConfig)
               if f.default is dataclasses.MISSING and f.name not in fields]
    if missing:
        raise ValueError(
            f"{owner} needs the block's {', '.join(f'`{name}`' for name in missing)}: pass "
            f"`block=BlockConfig(...)` or the fields as keywords."
        )
    return BlockConfig(**fields)


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """A model's architecture: its own fields and the `BlockConfig` of its blocks.

    `EncoderDecoder` and `DecoderOnly` build one of these from their arguments;
    `num_encoder_layers == 0` means decoder-only. Nothing here is a runtime
    mode: training and decoding are call arguments, not config (`remat`, how
    training stores activations, is the one training option kept here, so
    that a saved model keeps it).

    Every toggle of a block (heads, widths, norms, feed-forward, attention,
    dropout) is a field of `block`, read as `config.block.num_heads`; the
    fields here belong to the model as a whole.

    Args:
        vocab_size: one vocabulary for source and target (the paper's shared
            BPE).
        num_decoder_layers: decoder (or GPT) blocks.
        d_model: width of the residual stream.
        block: the `BlockConfig` of every block. Its `dropout` is also the
            rate on the embedding sum (one dropout rate, as in both papers);
            its `position` follows this config's `position`
            (`attention_position`): left None it is filled in, set it must
            agree.
        num_encoder_layers: encoder blocks; 0 means decoder-only (GPT), 6 in
            the 2017 paper.
        max_length: rows of a learned position table; sinusoids need no limit.
        position: where positions come from: `"sinusoidal"`: fixed, any
            length; `"learned"`: a table; both added to the embeddings;
            `"rotary"`: RoPE on each self-attention's queries and keys
            (LLaMA); `"alibi"`: a distance penalty on the scores.
        position_layout: sinusoid layout: `"interleaved"` (paper) or fairseq's
            `"concatenated"`.
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
        remat: recompute each block's activations in the backward pass
            instead of storing them: less memory for one more forward pass of
            each block; losses, gradients and `generate` are unchanged. Not
            architecture: `==` and `count_params` leave it out. Under JAX on
            CPU, XLA undoes it unless the process starts with
            `XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`
            (docs/training.md, Rematerialization).

    Example:
    >>> gpt2 = BlockConfig(num_heads=12, d_ff=3072, ln_position="pre",
    ...                    activation="gelu", dropout=0.1)
    >>> config = TransformerConfig(vocab_size=50257, num_decoder_layers=12,
    ...     d_model=768, block=gpt2, position="learned", scale_embeddings=False)
    >>> config.count_params(), config.block.num_heads
    (124439808, 12)
    """

    vocab_size: int
    num_decoder_layers: int
    d_model: int
    block: BlockConfig
    num_encoder_layers: int = 0
    max_length: int = 1024
    position: str = "sinusoidal"
    position_layout: str = "interleaved"
    tie_embeddings: bool = True
    scale_embeddings: bool = True
    pad_id: Optional[int] = 0
    start_id: Optional[int] = None
    end_id: Optional[int] = None
    attention_window: Optional[int] = None
    banded_layers: str = "alternate"
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
        if not isinstance(self.block, BlockConfig):
            raise ValueError(f"`block` must be a BlockConfig; received {self.block!r}.")
        attention = attention_position(self.position)
        if self.block.position is None and attention is not None:
            object.__setattr__(self, "block", dataclasses.replace(self.block, position=attention))
        elif self.block.position != attention:
            raise ValueError(
                f"The block's `position` ({self.block.position!r}) must follow the model's "
                f"`position` ({self.position!r}, which makes it {attention!r}): set the "
                f"model's `position`, which decides both the embeddings and attention."
            )
        self.block.check_stack(self.d_model, cross_attention=self.num_encoder_layers > 0)
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
            + (stacks * norm_weights(block.norm, d) if block.ln_position == "pre" else 0)
        )
        return total
