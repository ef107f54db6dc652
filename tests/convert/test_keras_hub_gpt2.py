"""keras-hub GPT2Backbone -> DecoderOnly: same logits to 1e-5 at every real position."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.convert import from_keras_hub_gpt2
from keras_transformer.models import DecoderOnly

keras_hub = pytest.importorskip("keras_hub")

VOCAB, LAYERS, D_MODEL, HEADS, D_FF, MAX_LENGTH = 64, 2, 32, 4, 128, 16
LENGTH = 10
PAD_ID = 0
PADS = (0, 4, -3)  # no padding, right padding, left padding


@pytest.fixture
def backbone(random_like):
    """A tiny keras-hub GPT-2 with every weight random (biases and LayerNorms too)."""
    model = keras_hub.models.GPT2Backbone(
        vocabulary_size=VOCAB,
        num_layers=LAYERS,
        num_heads=HEADS,
        hidden_dim=D_MODEL,
        intermediate_dim=D_FF,
        dropout=0.1,  # inactive in inference calls
        max_sequence_length=MAX_LENGTH,
    )
    rng = np.random.default_rng(1)
    for weight in model.weights:
        weight.assign(random_like(rng, weight.path, weight.shape))
    return model


def reference_logits(backbone, ids, padding_mask):
    hidden = backbone({"token_ids": ids, "padding_mask": padding_mask.astype("int32")})
    return ops.convert_to_numpy(backbone.token_embedding(hidden, reverse=True))


def our_logits(model, ids):
    return ops.convert_to_numpy(model(ids))


def test_config_is_inferred(backbone):
    model = from_keras_hub_gpt2(backbone)
    assert isinstance(model, DecoderOnly)
    c = model.config
    b = c.block
    assert (c.vocab_size, c.num_decoder_layers, c.d_model, b.num_heads, b.d_ff, c.max_length) == (
        VOCAB, LAYERS, D_MODEL, HEADS, D_FF, MAX_LENGTH
    )
    assert (b.ln_position, c.position, b.activation, b.layer_norm_epsilon) == (
        "pre", "learned", "gelu", 1e-5
    )
    assert c.tie_embeddings and not c.scale_embeddings
    assert c.pad_id is None and b.dropout == 0.1
    assert model.count_params() == backbone.count_params()


def test_right_padding_matches_without_pad_id(backbone, padded_batch, report):
    """pad_id=None (the default): exact at real positions of right-padded rows."""
    ids, real = padded_batch(np.random.default_rng(2), VOCAB, LENGTH, (0, 4, 1))
    model = from_keras_hub_gpt2(backbone)
    report("keras-hub right padding, pad_id=None",
           our_logits(model, ids), reference_logits(backbone, ids, real), real)


def test_any_padding_matches_with_pad_id(backbone, padded_batch, report):
    """With pad_id, left padding matches too; and padding does change the logits."""
    ids, real = padded_batch(np.random.default_rng(3), VOCAB, LENGTH, PADS, pad_id=PAD_ID)
    expected = reference_logits(backbone, ids, real)
    model = from_keras_hub_gpt2(backbone, pad_id=PAD_ID)
    report("keras-hub left+right padding, pad_id=0", our_logits(model, ids), expected, real)
    # The comparison is meaningful: without masking, the left-padded row differs.
    unmasked = reference_logits(backbone, ids, np.ones_like(real))
    assert np.max(np.abs(unmasked[2][real[2]] - expected[2][real[2]])) > 1e-3
    ours_unmasked = our_logits(from_keras_hub_gpt2(backbone), ids)
    assert np.max(np.abs(ours_unmasked[2][real[2]] - expected[2][real[2]])) > 1e-3


def test_from_preset_folder(backbone, padded_batch, report, tmp_path):
    preset = tmp_path / "gpt2_tiny_preset"
    backbone.save_to_preset(str(preset))
    model = from_keras_hub_gpt2(preset, pad_id=PAD_ID)
    ids, real = padded_batch(np.random.default_rng(4), VOCAB, LENGTH, PADS, pad_id=PAD_ID)
    report("keras-hub preset folder", our_logits(model, ids),
           reference_logits(backbone, ids, real), real)


def test_rejects_what_is_not_a_gpt2_backbone(tmp_path):
    with pytest.raises(ValueError, match="GPT2Backbone"):
        from_keras_hub_gpt2(keras.Sequential([keras.layers.Dense(2)]))
    with pytest.raises(ValueError, match="not a local keras-hub preset folder"):
        from_keras_hub_gpt2(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="not a local keras-hub preset folder"):
        from_keras_hub_gpt2("gpt2_base_en")  # never downloads
