"""Named architectures: the papers' sizes and small ones for tests and demos.

Each preset is the family's class name and the keyword arguments of its
constructor, block fields among them as keywords (each one can then be
overridden alone). `from_preset(name, **overrides)` starts from them.
"""

import dataclasses

from keras_transformer.layers.block_config import BlockConfig

_TRANSFORMER = dict(  # the 2017 paper's toggles
    ln_position="post",
    position="sinusoidal",
    activation="relu",
    tie_embeddings=True,
    scale_embeddings=True,
    layer_norm_epsilon=1e-6,  # tensor2tensor's value
)
_GPT = dict(  # GPT-2's toggles, also GPT-3's
    pad_id=None,  # byte-level BPE has no padding token: every id is real text
    ln_position="pre",
    position="learned",
    activation="gelu",
    tie_embeddings=True,
    scale_embeddings=False,
    layer_norm_epsilon=1e-5,
)


_LLAMA = dict(  # LLaMA's toggles (Touvron et al. 2023), also Mistral's
    pad_id=None,  # its SentencePiece vocabulary has no padding token
    ln_position="pre",
    position="rotary",
    norm="rms",
    feed_forward="swiglu",
    activation="silu",  # SwiGLU's gate; set so that config and built model agree
    use_bias=False,
    tie_embeddings=False,
    scale_embeddings=False,
    layer_norm_epsilon=1e-5,
    dropout=0.0,
    end_id=2,  # </s>
)


def _llama(num_layers, d_model, num_heads, d_ff, max_length=4096, vocab_size=32000, **extra):
    return dict(
        _LLAMA,
        vocab_size=vocab_size,
        num_layers=num_layers,
        d_model=d_model,
        num_heads=num_heads,
        d_ff=d_ff,
        max_length=max_length,
        **extra,
    )


def _gpt(num_layers, d_model, num_heads, max_length=1024, vocab_size=50257, **extra):
    if vocab_size == 50257:  # GPT-2's byte-level BPE: <|endoftext|> ends every text
        extra.setdefault("end_id", 50256)
    return dict(
        _GPT,
        vocab_size=vocab_size,
        num_layers=num_layers,
        d_model=d_model,
        num_heads=num_heads,
        d_ff=4 * d_model,
        max_length=max_length,
        dropout=0.1,
        **extra,
    )


def _transformer(d_model, num_heads, d_ff, dropout, num_layers=6, vocab_size=37000, **extra):
    return dict(
        _TRANSFORMER,
        vocab_size=vocab_size,
        num_layers=num_layers,
        d_model=d_model,
        num_heads=num_heads,
        d_ff=d_ff,
        dropout=dropout,
        **extra,
    )


PRESETS = {
    "transformer_base": ("EncoderDecoder", _transformer(512, 8, 2048, dropout=0.1)),
    "transformer_big": ("EncoderDecoder", _transformer(1024, 16, 4096, dropout=0.3)),
    "transformer_tiny": (
        "EncoderDecoder",
        _transformer(32, 4, 64, dropout=0.1, num_layers=2, vocab_size=128, max_length=64),
    ),
    "gpt2_small": ("DecoderOnly", _gpt(12, 768, 12)),
    "gpt2_medium": ("DecoderOnly", _gpt(24, 1024, 16)),
    "gpt2_large": ("DecoderOnly", _gpt(36, 1280, 20)),
    "gpt2_xl": ("DecoderOnly", _gpt(48, 1600, 25)),
    # GPT-3 alternates dense and locally banded layers; the paper gives no band
    # width, so we take the Sparse Transformer's 256.
    "gpt3_175b": (
        "DecoderOnly",
        _gpt(96, 12288, 96, max_length=2048, attention_window=256),
    ),
    # Count them with `preset_config`: 6.7 and 7.2 billion weights.
    "llama2_7b": ("DecoderOnly", _llama(32, 4096, 32, 11008)),
    "mistral_7b": (
        "DecoderOnly",
        _llama(32, 4096, 32, 14336, max_length=32768, num_kv_heads=8,
               attention_window=4096, banded_layers="all"),
    ),
    "gpt2_tiny": ("DecoderOnly", _gpt(2, 32, 4, max_length=64, vocab_size=128)),
    "llama_tiny": (
        "DecoderOnly",
        _llama(2, 32, 4, 64, max_length=64, vocab_size=128, num_kv_heads=2, end_id=3),
    ),
    "gpt3_tiny": (
        "DecoderOnly",
        _gpt(4, 32, 4, max_length=64, vocab_size=128, attention_window=4),
    ),
}
"""Every named architecture: `name -> (family class name, constructor arguments)`.

`transformer_base`/`transformer_big` (2017 paper), `gpt2_small` to `gpt2_xl`,
`gpt3_175b`, `llama2_7b` and `mistral_7b` (count the last three with
`preset_config`: too large to build here), and the test-sized
`transformer_tiny`, `gpt2_tiny`, `gpt3_tiny` and `llama_tiny`.
"""


def override(arguments, overrides):
    """A preset's constructor arguments with `overrides` applied.

    GPT-2's end id (50256, `<|endoftext|>`) belongs to GPT-2's vocabulary: a
    preset given another `vocab_size` drops it (no default stop id) unless
    `end_id` is overridden too. A `block` override replaces the preset's block
    fields (a `BlockConfig` is a whole block); flat block fields replace one each.
    """
    arguments = dict(arguments)
    if "block" in overrides:
        block_fields = {field.name for field in dataclasses.fields(BlockConfig)}
        arguments = {k: v for k, v in arguments.items() if k not in block_fields}
    vocab_changed = overrides.get("vocab_size", arguments.get("vocab_size")) != arguments.get(
        "vocab_size"
    )
    if vocab_changed and arguments.get("end_id") == 50256 and "end_id" not in overrides:
        arguments["end_id"] = None
    arguments.update(overrides)
    return arguments


def get_preset(name):
    """(family class name, constructor arguments) of preset `name`."""
    if name not in PRESETS:
        raise ValueError(
            f"Unknown preset {name!r}. Available presets: {', '.join(PRESETS)}."
        )
    family, arguments = PRESETS[name]
    return family, dict(arguments)
