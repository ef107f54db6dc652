"""torch.nn.TransformerEncoder/Decoder stacks -> EncoderDecoder: same logits to 1e-5 (eval).

The torch reference below embeds exactly as our EncoderDecoder does (shared
embedding x sqrt(d_model) + interleaved sinusoids, logits = hidden @ E^T), so
any difference comes from the blocks and the masks.
"""

import math

import numpy as np
import pytest
from keras import ops

from keras_transformer import masks
from keras_transformer.convert import from_torch_transformer
from keras_transformer.convert import torch_causal_mask
from keras_transformer.convert import torch_key_padding_mask
from keras_transformer.models import EncoderDecoder

torch = pytest.importorskip("torch")
nn = torch.nn

VOCAB, D_MODEL, HEADS, D_FF = 64, 32, 4, 64
ENCODER_LAYERS, DECODER_LAYERS = 2, 3
SOURCE_LENGTH, TARGET_LENGTH = 8, 7
PAD_ID = 0
SOURCE_PADS = (0, 3, -2)  # none, right, left: the encoder is bidirectional
TARGET_PADS = (0, 2, 4)  # right padding, under the causal mask


def sinusoids(length, d_model):
    """The paper's interleaved table, computed independently in float64."""
    position = np.arange(length)[:, None]
    angle = position / 10000.0 ** (2 * np.arange(d_model // 2)[None, :] / d_model)
    table = np.zeros((length, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table.astype("float32")


class TorchReference(nn.Module):
    """Embedding x sqrt(d) + sinusoids, torch encoder and decoder stacks, tied output."""

    def __init__(self, norm_first=False, activation="relu", final_norm=None):
        super().__init__()
        final_norm = norm_first if final_norm is None else final_norm
        layer = dict(d_model=D_MODEL, nhead=HEADS, dim_feedforward=D_FF, dropout=0.1,
                     activation=activation, batch_first=True, norm_first=norm_first)
        self.embedding = nn.Embedding(VOCAB, D_MODEL)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(**layer), ENCODER_LAYERS,
            norm=nn.LayerNorm(D_MODEL) if final_norm else None, enable_nested_tensor=False,
        )
        self.decoder = nn.TransformerDecoder(
            nn.TransformerDecoderLayer(**layer), DECODER_LAYERS,
            norm=nn.LayerNorm(D_MODEL) if final_norm else None,
        )

    def embed(self, ids):
        ids = torch.from_numpy(ids.astype("int64"))
        positions = torch.from_numpy(sinusoids(ids.shape[1], D_MODEL))
        return self.embedding(ids) * math.sqrt(D_MODEL) + positions

    def forward(self, source, target, mask_source=True):
        """Logits (numpy) with torch's True = blocked masks built from the ids."""
        source_padding = torch.from_numpy(torch_key_padding_mask(source, PAD_ID))
        source_padding = source_padding if mask_source else None
        target_padding = torch.from_numpy(torch_key_padding_mask(target, PAD_ID))
        causal = torch.from_numpy(torch_causal_mask(target.shape[1]))
        with torch.no_grad():
            memory = self.encoder(self.embed(source), src_key_padding_mask=source_padding)
            hidden = self.decoder(
                self.embed(target), memory, tgt_mask=causal,
                tgt_key_padding_mask=target_padding, memory_key_padding_mask=source_padding,
            )
            return (hidden @ self.embedding.weight.T).numpy()


def make_reference(randomize, seed=1, **kwargs):
    torch.manual_seed(seed)
    model = TorchReference(**kwargs).eval()  # eval: dropout off
    return randomize(model, seed)


@pytest.fixture
def reference(randomize):
    return make_reference(randomize)


@pytest.fixture
def inputs(padded_batch):
    rng = np.random.default_rng(5)
    source, _ = padded_batch(rng, VOCAB, SOURCE_LENGTH, SOURCE_PADS, pad_id=PAD_ID)
    target, real = padded_batch(rng, VOCAB, TARGET_LENGTH, TARGET_PADS, pad_id=PAD_ID)
    return source, target, real


def our_logits(model, source, target):
    return ops.convert_to_numpy(model({"source": source, "target": target}))


def test_post_ln_stacks_match(reference, inputs, report):
    model = from_torch_transformer(reference.encoder, reference.decoder, reference.embedding)
    assert isinstance(model, EncoderDecoder)
    c = model.config
    b = c.block
    assert (c.num_encoder_layers, c.num_decoder_layers, c.d_model, b.num_heads, b.d_ff) == (
        ENCODER_LAYERS, DECODER_LAYERS, D_MODEL, HEADS, D_FF
    )
    assert (b.ln_position, b.activation, b.layer_norm_epsilon, c.pad_id, b.dropout) == (
        "post", "relu", 1e-5, PAD_ID, 0.1
    )
    assert c.scale_embeddings and c.tie_embeddings and c.position == "sinusoidal"
    assert model.count_params() == sum(p.numel() for p in reference.parameters())
    source, target, real = inputs
    report("torch post-LN, source padding + causal target",
           our_logits(model, source, target), reference(source, target), real)


def test_from_state_dicts(reference, inputs, report):
    encoder, decoder = reference.encoder.state_dict(), reference.decoder.state_dict()
    with pytest.raises(ValueError, match="num_heads"):
        from_torch_transformer(encoder, decoder, reference.embedding.weight)
    model = from_torch_transformer(encoder, decoder, reference.embedding.weight, num_heads=HEADS)
    source, target, real = inputs
    report("torch state dicts + num_heads",
           our_logits(model, source, target), reference(source, target), real)


def test_source_padding_matters(reference, inputs):
    """The padded comparison is meaningful: ignoring source padding changes real logits."""
    source, target, real = inputs
    masked, unmasked = reference(source, target), reference(source, target, mask_source=False)
    for row in (1, 2):  # the padded source rows
        assert np.max(np.abs(masked[row][real[row]] - unmasked[row][real[row]])) > 1e-3


def test_pre_ln_stacks_with_final_norms(randomize, inputs, report):
    reference = make_reference(randomize, seed=2, norm_first=True)
    model = from_torch_transformer(reference.encoder, reference.decoder, reference.embedding)
    assert model.config.block.ln_position == "pre"
    source, target, real = inputs
    report("torch pre-LN with final norms",
           our_logits(model, source, target), reference(source, target), real)


def test_gelu_is_the_exact_form(randomize, inputs, report):
    reference = make_reference(randomize, seed=3, activation="gelu")
    model = from_torch_transformer(reference.encoder, reference.decoder, reference.embedding)
    assert model.config.block.activation == "gelu_exact"
    source, target, real = inputs
    report("torch post-LN GELU (erf)",
           our_logits(model, source, target), reference(source, target), real)
    tanh = make_reference(randomize, seed=3, activation=nn.GELU(approximate="tanh"))
    assert from_torch_transformer(
        tanh.encoder, tanh.decoder.state_dict(), tanh.embedding, num_heads=HEADS
    ).config.block.activation == "gelu"  # our "gelu" is the tanh approximation
    # torch quirk: TransformerDecoder deep-copies its layer, and the copy's __setstate__
    # replaces a module activation with F.relu, which its forward then uses. We read
    # what forward uses, so the stacks disagree and we say so.
    assert tanh.decoder.layers[0].activation is torch.nn.functional.relu
    with pytest.raises(ValueError, match="differ in activation"):
        from_torch_transformer(tanh.encoder, tanh.decoder, tanh.embedding)


def test_masks_are_torch_conventions():
    ids = np.array([[5, 6, 0, 0]])
    np.testing.assert_array_equal(
        torch_key_padding_mask(ids, PAD_ID), ~ops.convert_to_numpy(masks.padding_mask(ids, PAD_ID))
    )
    np.testing.assert_array_equal(
        torch_causal_mask(5),
        nn.Transformer.generate_square_subsequent_mask(5).numpy() != 0,
    )
    ours = ops.convert_to_numpy(masks.causal_mask(5))[0]  # True = may attend
    np.testing.assert_array_equal(torch_causal_mask(5), ~ours)


def test_what_our_model_cannot_express_raises(randomize, reference):
    with_norms = make_reference(randomize, final_norm=True)  # nn.Transformer's default
    with pytest.raises(ValueError, match="final LayerNorm"):
        from_torch_transformer(with_norms.encoder, with_norms.decoder, with_norms.embedding)
    without_norms = make_reference(randomize, norm_first=True, final_norm=False)
    with pytest.raises(ValueError, match="no final LayerNorm"):
        from_torch_transformer(without_norms.encoder, without_norms.decoder,
                               without_norms.embedding)
    with pytest.raises(ValueError, match="contradicts"):
        from_torch_transformer(reference.encoder, reference.decoder, reference.embedding,
                               num_heads=2)
    custom = nn.TransformerDecoder(nn.TransformerDecoderLayer(
        D_MODEL, HEADS, D_FF, activation=torch.tanh, batch_first=True), 1)
    with pytest.raises(ValueError, match="pass `activation`"):
        from_torch_transformer(reference.encoder, custom, reference.embedding)
    bias_kv = dict(reference.encoder.state_dict())
    bias_kv["layers.0.self_attn.bias_k"] = torch.zeros(1, 1, D_MODEL)
    with pytest.raises(ValueError, match="no place for.*bias_k"):
        from_torch_transformer(bias_kv, reference.decoder, reference.embedding)


def test_shape_errors_name_the_tensor(reference):
    decoder = dict(reference.decoder.state_dict())
    decoder["layers.1.linear2.weight"] = torch.zeros(D_MODEL, D_FF + 1)
    with pytest.raises(ValueError, match=r"'layers.1.linear2.weight' has shape \(32, 65\)"):
        from_torch_transformer(reference.encoder, decoder, reference.embedding)
    missing = {k: v for k, v in reference.decoder.state_dict().items()
               if k != "layers.2.multihead_attn.in_proj_bias"}
    with pytest.raises(ValueError, match="missing 1 tensor.*layers.2.multihead_attn.in_proj_bias"):
        from_torch_transformer(reference.encoder, missing, reference.embedding, num_heads=HEADS)
    with pytest.raises(ValueError, match="in_proj_weight"):
        from_torch_transformer(reference.encoder, reference.decoder, torch.zeros(VOCAB, 16))
    with pytest.raises(ValueError, match="embedding"):
        from_torch_transformer(reference.encoder, reference.decoder, torch.zeros(VOCAB))
