"""Every preset (the paper-sized ones at a reduced width) and a fixed draw of toggles.

Shared by the initialization and weight-decay tests, which must hold for every
preset and toggle of both families.
"""

import numpy as np

import keras_transformer as kt

# Paper-sized presets keep their toggles and shrink to 2 blocks of width 64.
REDUCED = dict(num_layers=2, d_model=64, num_heads=4, vocab_size=256, max_length=64)
REDUCED_FF = dict(d_ff=128)
TINY_PRESETS = ("transformer_tiny", "gpt2_tiny", "gpt3_tiny", "llama_tiny")


def preset_names():
    return list(kt.models.PRESETS)


def preset_model(name):
    """Preset `name` with its own toggles; the paper-sized ones at width 64."""
    family = getattr(kt, kt.models.PRESETS[name][0])
    if name in TINY_PRESETS:
        return family.from_preset(name)
    overrides = dict(REDUCED, **REDUCED_FF)
    arguments = kt.models.PRESETS[name][1]
    if arguments.get("num_kv_heads"):
        overrides["num_kv_heads"] = 2
    if arguments.get("attention_window"):
        overrides["attention_window"] = 8
    return family.from_preset(name, **overrides)


def toggle_draws(count, seed=0):
    """`count` (family, constructor arguments) pairs drawn from the block and model toggles."""
    rng = np.random.default_rng(seed)
    draws = []
    for i in range(count):
        family = (kt.DecoderOnly, kt.EncoderDecoder)[i % 2]
        pick = lambda options: options[rng.integers(len(options))]  # noqa: E731
        arguments = dict(
            vocab_size=256, num_layers=int(pick([1, 2, 3])), d_model=64, num_heads=4, d_ff=128,
            max_length=64,
            ln_position=pick(["pre", "post"]),
            norm=pick(["layer", "rms"]),
            feed_forward=pick(["mlp", "swiglu", "geglu"]),
            position=pick(["sinusoidal", "learned", "rotary", "alibi"]),
            num_kv_heads=pick([None, 1, 2]),
            use_bias=bool(pick([True, False])),
            qk_norm=bool(pick([True, False])),
            tie_embeddings=bool(pick([True, False])),
        )
        if family is kt.DecoderOnly and pick([True, False]):
            arguments.update(attention_window=8, banded_layers=pick(["alternate", "all"]))
        draws.append((family, arguments))
    return draws
