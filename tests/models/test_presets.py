"""Named presets: exact parameter counts, config-only counts, overrides, errors.

The paper-sized presets are built once each (gpt2_medium is the slow one) and
deleted straight after, with the Keras session cleared, to keep memory down.
"""

import gc

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt
from keras_transformer.models import DecoderOnly
from keras_transformer.models import EncoderDecoder
from keras_transformer.models import preset_config

# SPEC section 1: biases on every Dense, LayerNorm scale+offset, a final LN per
# pre-LN stack only, tied weights counted once.
PAPER_COUNTS = {
    "gpt2_small": 124_439_808,
    "gpt2_medium": 354_823_168,
    "gpt2_large": 774_030_080,
    "gpt2_xl": 1_557_611_200,
    "gpt3_175b": 174_604_259_328,
    "transformer_base": 63_082_496,  # vocab 37,000 (the paper's "65M")
    "transformer_big": 214_245_376,
    # The figures: Meta's LLaMA 2 7B and Mistral 7B v0.1 (HF model cards).
    "llama2_7b": 6_738_415_616,
    "mistral_7b": 7_241_732_096,
}
# Worked out by hand from the preset sizes (see each comment), not from the code.
TINY_COUNTS = {
    # V=128, d=32, d_ff=128, 2 blocks, 64 learned rows, pre-LN:
    # 128*32 + 64*32 + 2*(4*(32*32+32) + (32*128+128+128*32+32) + 2*64) + 64
    "gpt2_tiny": 31_616,
    # same with 4 blocks
    "gpt3_tiny": 57_024,
    # V=128, d=32, d_ff=64, 2+2 blocks, sinusoids, post-LN:
    # 128*32 + 2*8544 (encoder block) + 2*(8544 + 4224 + 64) (decoder block)
    "transformer_tiny": 46_848,
    # V=128, d=32, 4 heads of 8, 2 K/V heads, d_ff=64, 2 blocks, no biases, untied:
    # 2*128*32 + 2*(32*32 + 2*32*16 + 32*32 (attention) + 3*32*64 (SwiGLU) + 2*32 (RMS)) + 32
    "llama_tiny": 26_784,
}
TOO_BIG_TO_BUILD = ("gpt2_large", "gpt2_xl", "gpt3_175b", "llama2_7b", "mistral_7b")
FAMILY = {"DecoderOnly": DecoderOnly, "EncoderDecoder": EncoderDecoder}


def _family(name):
    return FAMILY[kt.models.PRESETS[name][0]]


def test_every_spec_preset_exists_in_its_family():
    expected = {
        "transformer_base": "EncoderDecoder",
        "transformer_big": "EncoderDecoder",
        "gpt2_small": "DecoderOnly",
        "gpt2_medium": "DecoderOnly",
        "gpt2_large": "DecoderOnly",
        "gpt2_xl": "DecoderOnly",
        "gpt3_175b": "DecoderOnly",
    }
    for name, family in expected.items():
        assert kt.models.PRESETS[name][0] == family, name
    tiny = [n for n in kt.models.PRESETS if n.endswith("_tiny")]
    assert {kt.models.PRESETS[n][0] for n in tiny} == {"DecoderOnly", "EncoderDecoder"}


@pytest.mark.parametrize("name", sorted(PAPER_COUNTS))
def test_config_only_count_matches_the_paper(name):
    assert preset_config(name).count_params() == PAPER_COUNTS[name]
    # The class method and the module function agree.
    assert _family(name).preset_config(name).count_params() == PAPER_COUNTS[name]


@pytest.mark.parametrize("name", sorted(TINY_COUNTS))
def test_config_only_count_of_tiny_presets(name):
    assert preset_config(name).count_params() == TINY_COUNTS[name]


def test_transformer_base_with_explicit_vocab_matches_the_paper():
    assert preset_config("transformer_base", vocab_size=37000).count_params() == 63_082_496
    # A different vocabulary changes only the (shared, counted once) embedding.
    assert (
        preset_config("transformer_base", vocab_size=37001).count_params()
        == 63_082_496 + 512
    )


# Every preset small enough to build here, each built exactly once.
BUILDABLE = [n for n in kt.models.PRESETS if n not in TOO_BIG_TO_BUILD]


def test_buildable_list_covers_the_paper_models_and_tiny_ones():
    assert {"gpt2_small", "gpt2_medium", "transformer_base", "transformer_big"} <= set(BUILDABLE)
    assert {"gpt2_tiny", "gpt3_tiny", "transformer_tiny"} <= set(BUILDABLE)


@pytest.fixture
def zero_initial_values(monkeypatch):
    """Initializers fill with zeros instead of drawing: a count depends on shapes only, and
    drawing GPT-2 medium's 355M initial values took most of its build (5 s of 5.6 s, JAX)."""
    from keras.src.initializers import random_initializers

    def zeros(shape, *args, dtype=None, **kwargs):
        return ops.zeros(shape, dtype=dtype)

    for draw in ("uniform", "normal", "truncated_normal"):
        monkeypatch.setattr(random_initializers.random, draw, zeros)
    # Were Keras to draw elsewhere, the tests would stay right but slow: say so instead.
    assert not np.any(ops.convert_to_numpy(keras.initializers.GlorotUniform()((4, 4))))


@pytest.mark.parametrize("name", BUILDABLE)
def test_built_count_equals_config_count(name, zero_initial_values):
    overrides = {"vocab_size": 37000} if name == "transformer_base" else {}
    model = _family(name).from_preset(name, **overrides)
    is_model = isinstance(model, keras.Model)
    built, own_config_count = model.count_params(), model.config.count_params()
    del model  # before the next preset is built
    if name in PAPER_COUNTS:  # hundreds of MB, freed now (late in a run, a collection of the
        keras.backend.clear_session()  # whole heap takes seconds: not for the tiny ones)
        gc.collect()
    assert is_model
    assert built == preset_config(name, **overrides).count_params()
    assert built == own_config_count
    expected = PAPER_COUNTS.get(name, TINY_COUNTS.get(name))
    assert built == expected, f"{name}: built {built}, expected {expected}"


# Toggle combinations the presets do not exercise, built small.
VARIANTS = [
    ("gpt2_tiny", dict(tie_embeddings=False)),
    ("gpt2_tiny", dict(position="sinusoidal", ln_position="post")),
    ("gpt3_tiny", dict(banded_layers="all", tie_embeddings=False)),
    ("transformer_tiny", dict(tie_embeddings=False)),
    ("transformer_tiny", dict(position="learned", max_length=48)),
    ("transformer_tiny", dict(ln_position="pre")),
    ("transformer_tiny", dict(num_encoder_layers=1, num_decoder_layers=3)),
    ("transformer_tiny", dict(num_encoder_layers=3, num_decoder_layers=1, ln_position="pre")),
    # The block toggles, alone and together.
    ("gpt2_tiny", dict(position="rotary")),
    ("gpt2_tiny", dict(position="alibi", norm="rms")),
    ("gpt2_tiny", dict(feed_forward="swiglu", use_bias=False)),
    ("gpt2_tiny", dict(num_kv_heads=1, qk_norm=True)),
    ("gpt3_tiny", dict(num_kv_heads=2, feed_forward="geglu", norm="rms", qk_norm=True)),
    ("transformer_tiny", dict(num_kv_heads=2, position="rotary", norm="rms", use_bias=False)),
    ("transformer_tiny", dict(feed_forward="swiglu", qk_norm=True)),
    ("llama_tiny", dict(num_kv_heads=None, tie_embeddings=True)),
    ("gpt2_tiny", dict(parallel_block=True)),
    ("llama_tiny", dict(parallel_block=True, attention_softcap=50.0)),
]


def test_a_parallel_block_with_cross_attention_is_refused_when_configured():
    """An EncoderDecoder's decoder blocks read the encoder: no parallel block, and the config
    says so before any count or build."""
    for make in (lambda: preset_config("transformer_tiny", parallel_block=True,
                                       ln_position="pre"),
                 lambda: EncoderDecoder.from_preset("transformer_tiny", parallel_block=True,
                                                    ln_position="pre")):
        with pytest.raises(ValueError, match="parallel_block.*cross-attention"):
            make()


@pytest.mark.parametrize("name,overrides", VARIANTS)
def test_overridden_variants_built_count_equals_config_count(name, overrides):
    model = _family(name).from_preset(name, **overrides)
    config_count = preset_config(name, **overrides).count_params()
    assert model.count_params() == config_count
    # Each override really changes the architecture's size (or is a pure toggle).
    base = TINY_COUNTS[name]
    if overrides.get("tie_embeddings") is False:
        assert config_count == base + 128 * 32  # one more vocab x d_model matrix
    if overrides.get("parallel_block"):  # one norm per block fewer; the cap has no weights
        layers, d_model = model.config.num_decoder_layers, model.config.d_model
        norm = d_model * (2 if model.config.block.norm == "layer" else 1)
        assert config_count == base - layers * norm
    if "num_encoder_layers" in overrides:
        assert model.config.num_encoder_layers == overrides["num_encoder_layers"]
        assert model.config.num_decoder_layers == overrides["num_decoder_layers"]
        assert len(model.encoder_blocks) == overrides["num_encoder_layers"]
        assert len(model.decoder_blocks) == overrides["num_decoder_layers"]
    if overrides.get("position") == "learned":
        assert config_count == base + 48 * 32
    # The new toggles' deltas, worked out by hand (gpt2_tiny: 2 blocks, d=32, d_ff=128).
    if name == "gpt2_tiny":
        if overrides.get("position") in ("rotary", "alibi"):
            norm_delta = -(2 * 2 + 1) * 32 if overrides.get("norm") == "rms" else 0
            assert config_count == base - 64 * 32 + norm_delta  # no table; RMS: no offsets
        if overrides.get("feed_forward") == "swiglu":
            # + a 32x128 gate per block; no biases: -(4*32 + 128 + 32 + 2*128 ... )
            per_block = 32 * 128 - (4 * 32) - (128 + 32)
            assert config_count == base + 2 * per_block
        if overrides.get("num_kv_heads") == 1:
            # K and V shrink from 32 to 8 columns (+ biases); q/k norms add 2*2*8 per block
            per_block = -2 * (32 * 24 + 24) + 2 * 2 * 8
            assert config_count == base + 2 * per_block
    if overrides.get("ln_position") == "pre" and name == "transformer_tiny":
        if "num_encoder_layers" not in overrides:
            assert config_count == base + 2 * 2 * 32  # a final LayerNorm per stack


def test_unequal_depths_count_by_hand():
    # 1 encoder block (8544) + 3 decoder blocks (12832) + embedding (4096).
    config = preset_config("transformer_tiny", num_encoder_layers=1, num_decoder_layers=3)
    assert config.count_params() == 4096 + 8544 + 3 * 12832


def test_paper_toggles_of_the_presets():
    gpt2 = preset_config("gpt2_small")
    assert (gpt2.num_encoder_layers, gpt2.num_decoder_layers) == (0, 12)
    assert (gpt2.d_model, gpt2.block.num_heads, gpt2.block.d_ff) == (768, 12, 3072)
    assert (gpt2.vocab_size, gpt2.max_length) == (50257, 1024)
    assert (gpt2.block.ln_position, gpt2.position, gpt2.block.activation) == (
        "pre", "learned", "gelu")
    assert gpt2.tie_embeddings and not gpt2.scale_embeddings

    base = preset_config("transformer_base")
    assert (base.num_encoder_layers, base.num_decoder_layers) == (6, 6)
    assert (base.d_model, base.block.num_heads, base.block.d_ff, base.block.dropout) == (
        512, 8, 2048, 0.1)
    assert (base.block.ln_position, base.position, base.block.activation) == (
        "post", "sinusoidal", "relu")
    assert base.tie_embeddings and base.scale_embeddings
    assert preset_config("transformer_big").block.dropout == 0.3

    gpt3 = preset_config("gpt3_175b")
    assert (gpt3.num_decoder_layers, gpt3.d_model, gpt3.block.num_heads) == (96, 12288, 96)
    assert gpt3.max_length == 2048
    modes = [gpt3.decoder_attention_mode(i) for i in range(4)]
    assert modes == ["causal", "banded", "causal", "banded"]  # GPT-3 alternates


# --- overrides ----------------------------------------------------------------


def test_override_dropout_reaches_the_layers_and_behaviour():
    ids = np.random.default_rng(0).integers(1, 128, size=(8, 8)).astype("int32")
    off = DecoderOnly.from_preset("gpt2_tiny", dropout=0.0)
    assert off.config.block.dropout == 0.0
    assert off.get_config()["block"]["dropout"] == 0.0
    assert all(block.config.dropout == 0.0 for block in off.blocks)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(off(ids, training=True)),
        ops.convert_to_numpy(off(ids, training=False)),
    )
    on = DecoderOnly.from_preset("gpt2_tiny")  # preset dropout 0.1
    assert on.config.block.dropout == 0.1
    assert not np.allclose(
        ops.convert_to_numpy(on(ids, training=True)),
        ops.convert_to_numpy(on(ids, training=False)),
    )


def test_overrides_apply_to_encoder_decoder_presets():
    model = EncoderDecoder.from_preset(
        "transformer_tiny", vocab_size=64, activation="gelu", pad_id=3, max_length=16
    )
    config = model.config
    assert (config.vocab_size, config.block.activation, config.pad_id) == (64, "gelu", 3)
    assert model.get_config()["vocab_size"] == 64
    assert model.token_embedding.embeddings.shape == (64, 32)
    assert all(b.config.activation == "gelu" for b in model.encoder_blocks + model.decoder_blocks)
    assert model.count_params() == TINY_COUNTS["transformer_tiny"] - 64 * 32
    # The preset itself is untouched by an override.
    assert EncoderDecoder.from_preset("transformer_tiny").config.vocab_size == 128


def test_override_is_validated_like_a_constructor_argument():
    with pytest.raises(ValueError, match="ln_position"):
        DecoderOnly.from_preset("gpt2_tiny", ln_position="middle")
    with pytest.raises(ValueError, match="dropout"):
        preset_config("transformer_tiny", dropout=1.5)


# --- errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: DecoderOnly.from_preset("gpt4_mini"),
        lambda: EncoderDecoder.from_preset("gpt4_mini"),
        lambda: preset_config("gpt4_mini"),
        lambda: kt.DecoderOnly.preset_config("gpt4_mini"),
    ],
)
def test_unknown_preset_raises_naming_it(make):
    with pytest.raises(ValueError) as info:
        make()
    message = str(info.value)
    assert "gpt4_mini" in message
    assert "gpt2_small" in message and "transformer_base" in message  # lists the choices


@pytest.mark.parametrize(
    "make,unknown",
    [
        (lambda: DecoderOnly.from_preset("gpt2_tiny", num_blocks=3), "num_blocks"),
        (lambda: EncoderDecoder.from_preset("transformer_tiny", num_blocks=3), "num_blocks"),
        (lambda: preset_config("gpt2_tiny", num_blocks=3), "num_blocks"),
        # DecoderOnly has no encoder, so this is not one of its arguments.
        (lambda: DecoderOnly.from_preset("gpt2_tiny", num_encoder_layers=3), "num_encoder_layers"),
    ],
)
def test_unknown_override_raises_naming_it(make, unknown):
    with pytest.raises(ValueError) as info:
        make()
    message = str(info.value)
    assert f"['{unknown}']" in message  # the unknown name, as such
    assert "vocab_size" in message  # and what is accepted


def test_preset_of_the_other_family_raises():
    with pytest.raises(ValueError) as info:
        DecoderOnly.from_preset("transformer_tiny")
    assert "transformer_tiny" in str(info.value) and "EncoderDecoder" in str(info.value)
    with pytest.raises(ValueError) as info:
        DecoderOnly.from_preset("transformer_base", vocab_size=37000)
    assert "EncoderDecoder" in str(info.value)
    with pytest.raises(ValueError) as info:
        EncoderDecoder.from_preset("gpt2_tiny")
    assert "gpt2_tiny" in str(info.value) and "DecoderOnly" in str(info.value)
    with pytest.raises(ValueError):
        DecoderOnly.preset_config("transformer_big")


def test_gpt_presets_stop_on_end_of_text_only_with_gpt2s_vocabulary():
    config = kt.DecoderOnly.preset_config("gpt2_small")
    assert (config.pad_id, config.end_id) == (None, 50256)
    assert kt.DecoderOnly.preset_config("gpt2_small", vocab_size=1000).end_id is None
    assert kt.DecoderOnly.preset_config("gpt2_small", vocab_size=1000, end_id=7).end_id == 7
    assert kt.DecoderOnly.preset_config("gpt2_tiny").end_id is None


@pytest.mark.parametrize("name", ["gpt2_tiny", "transformer_tiny"])
def test_from_preset_takes_the_models_dtype_and_name(name):
    model = _family(name).from_preset(name, dtype="mixed_bfloat16", name="mine", dropout=0.0)
    assert model.name == "mine" and model.dtype_policy.name == "mixed_bfloat16"
    assert model.config.block.dropout == 0.0
    assert {v.dtype for v in model.weights} == {"float32"}
    # the config is the preset's: dtype and name are the model's, not config fields
    assert _family(name).preset_config(name, dtype="bfloat16") == _family(name).preset_config(name)
    with pytest.raises(ValueError, match="dtype"):
        _family(name).from_preset(name, dtypes="bfloat16")
