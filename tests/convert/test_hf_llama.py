"""Hugging Face Llama <-> DecoderOnly: same logits to 1e-5, both directions.

The reference runs in torch (transformers) under any Keras backend. Every
reference weight is random (RMSNorm scales near 1), so a weight mapped to the
wrong place, a dropped transpose or q and k swapped changes the logits;
`test_the_comparison_catches_wrong_layouts` shows that it does.
"""

import json

import numpy as np
import pytest
from keras import ops

from keras_transformer.convert import from_hf_llama
from keras_transformer.convert import hf_llama_config
from keras_transformer.convert import hf_llama_state_dict
from keras_transformer.convert import save_hf_llama
from keras_transformer.models import DecoderOnly

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

VOCAB, LAYERS, D_MODEL, HEADS, KV_HEADS, D_FF, MAX_LENGTH = 64, 2, 32, 4, 2, 48, 16
LENGTH = 10
PAD_ID = 0
PADDINGS = {  # per row: 0 none, n > 0 the last n positions, n < 0 the first |n|
    "unpadded": (0, 0, 0),
    "right-padded": (0, 4, 1),
    "left-padded": (-3, -1, 0),
}


def make_hf(randomize, seed=1, **overrides):
    """A tiny random LlamaForCausalLM in eval mode (GQA, untied, no biases unless overridden)."""
    arguments = dict(vocab_size=VOCAB, hidden_size=D_MODEL, num_hidden_layers=LAYERS,
                     num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                     intermediate_size=D_FF, max_position_embeddings=MAX_LENGTH,
                     bos_token_id=1, eos_token_id=2, attn_implementation="eager")
    arguments.update(overrides)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**arguments)).eval()
    return randomize(model, seed)


@pytest.fixture
def hf_model(randomize):
    return make_hf(randomize)


@pytest.fixture
def converted(hf_model):
    return from_hf_llama(hf_model)


@pytest.fixture
def saved(hf_model, tmp_path):
    """`save_pretrained` folder: model.safetensors + config.json."""
    directory = tmp_path / "hf_llama"
    hf_model.save_pretrained(str(directory))
    return directory


def hf_logits(model, ids, real, position_ids=None):
    kwargs = {} if position_ids is None else dict(position_ids=torch.from_numpy(position_ids))
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(ids.astype("int64")),
                    attention_mask=torch.from_numpy(real.astype("int64")), **kwargs)
    return out.logits.numpy()


def our_logits(model, ids, real=None):
    return ops.convert_to_numpy(model(ids, padding_mask=real))


def batch(padded_batch, seed, pads=PADDINGS["left-padded"] + PADDINGS["right-padded"]):
    return padded_batch(np.random.default_rng(seed), VOCAB, LENGTH, pads, pad_id=PAD_ID)


# --- Hugging Face -> ours -----------------------------------------------------------


@pytest.mark.parametrize("padding", list(PADDINGS))
def test_model_object_gives_the_same_logits(hf_model, converted, padded_batch, report, padding):
    """GQA (4 query heads on 2 key/value heads), untied head, no biases: every padding."""
    c = converted.config
    b = c.block
    assert (c.vocab_size, c.num_decoder_layers, c.d_model, b.num_heads, b.num_kv_heads,
            b.d_ff, c.max_length) == (VOCAB, LAYERS, D_MODEL, HEADS, KV_HEADS, D_FF, MAX_LENGTH)
    assert (c.position, b.norm, b.feed_forward, b.use_bias, c.tie_embeddings) == (
        "rotary", "rms", "swiglu", False, False)
    assert (b.layer_norm_epsilon, b.rotary_base, c.end_id, c.pad_id) == (1e-6, 10000.0, 2, None)
    assert converted.count_params() == sum(p.numel() for p in hf_model.parameters())
    ids, real = batch(padded_batch, 2, pads=PADDINGS[padding])
    report(f"HF LlamaForCausalLM, {padding}",
           our_logits(converted, ids, real), hf_logits(hf_model, ids, real), real)


def test_left_padding_positions(hf_model, converted, padded_batch, report):
    """Which positions Hugging Face gives a left-padded row, and why both conventions agree.

    A plain forward numbers positions 0..T-1 whatever the mask (as we do);
    `generate` numbers them from each row's first real token (cumsum of the
    mask - 1). RoPE scores depend on `p - s` only, so both give our logits at
    real positions; positions that are not a shift of 0..T-1 do not.
    """
    ids, real = batch(padded_batch, 3, pads=(-3, -5, 0))
    arange = np.broadcast_to(np.arange(LENGTH), ids.shape).astype("int64")
    from_mask = np.where(real, np.cumsum(real, axis=1) - 1, 0).astype("int64")  # generate's
    plain = hf_logits(hf_model, ids, real)
    np.testing.assert_array_equal(plain, hf_logits(hf_model, ids, real, arange))
    ours = our_logits(converted, ids, real)
    report("HF plain forward (positions 0..T-1)", ours, plain, real)
    report("HF generate positions (from the first real token)", ours,
           hf_logits(hf_model, ids, real, from_mask), real)
    # The two conventions differ in the padded rows, and positions matter to the model.
    assert not np.array_equal(arange[~real.all(1)], from_mask[~real.all(1)])
    flat = hf_logits(hf_model, ids, real, np.zeros_like(arange))
    assert np.max(np.abs(flat[real] - plain[real])) > 1e-3
    # And the padding mask matters: without it the left-padded rows read the pads.
    unmasked = our_logits(converted, ids)
    assert np.max(np.abs(unmasked[0][real[0]] - plain[0][real[0]])) > 1e-3


def test_from_folder_file_and_state_dict(hf_model, saved, tmp_path, padded_batch, report):
    ids, real = batch(padded_batch, 4)
    expected = hf_logits(hf_model, ids, real)
    report("HF folder", our_logits(from_hf_llama(saved), ids, real), expected, real)
    from_file = from_hf_llama(saved / "model.safetensors")  # reads config.json beside it
    report("HF model.safetensors", our_logits(from_file, ids, real), expected, real)
    # A state dict of torch tensors without the "model." prefix, and a config dict.
    state = {k.removeprefix("model."): v for k, v in hf_model.state_dict().items()}
    from_state = from_hf_llama(state, hf_model.config.to_dict())
    report("HF state dict (torch tensors) + config dict",
           our_logits(from_state, ids, real), expected, real)
    # A bare file: the heads are needed; the KV heads come from k_proj, the rest are
    # LlamaConfig's defaults (which this model uses).
    bare = tmp_path / "bare" / "weights.safetensors"
    bare.parent.mkdir()
    bare.write_bytes((saved / "model.safetensors").read_bytes())
    with pytest.raises(ValueError, match="num_heads"):
        from_hf_llama(bare)
    from_bare = from_hf_llama(bare, num_heads=HEADS)
    assert from_bare.config.block.num_kv_heads == KV_HEADS
    assert not from_bare.config.tie_embeddings  # a stored lm_head unlike the embedding
    report("HF bare safetensors + num_heads", our_logits(from_bare, ids, real), expected, real)
    with pytest.raises(ValueError, match="contradicts"):
        from_hf_llama(saved, num_heads=2)


def test_tied_embeddings_with_biases(randomize, tmp_path, padded_batch, report):
    """Tied output projection, biases in attention and MLP, 2 KV heads."""
    hf_model = make_hf(randomize, seed=5, tie_word_embeddings=True, attention_bias=True,
                       mlp_bias=True, pad_token_id=PAD_ID)
    hf_model.save_pretrained(str(tmp_path / "tied"))
    model = from_hf_llama(tmp_path / "tied")
    assert (model.config.tie_embeddings, model.config.block.use_bias) == (True, True)
    assert model.config.pad_id == PAD_ID
    assert model.count_params() == sum(p.numel() for p in hf_model.parameters())
    ids, real = batch(padded_batch, 6)
    expected = hf_logits(hf_model, ids, real)
    report("HF tied + biases", our_logits(model, ids, real), expected, real)
    assert "lm_head.weight" not in hf_llama_state_dict(model)
    save_hf_llama(model, tmp_path / "tied_export")
    reloaded, info = transformers.LlamaForCausalLM.from_pretrained(
        str(tmp_path / "tied_export"), output_loading_info=True)
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    assert reloaded.config.tie_word_embeddings and reloaded.config.attention_bias
    report("tied + biases: export -> HF reload", hf_logits(reloaded.eval(), ids, real),
           expected, real)


def test_multi_query_attention_and_rope_base(randomize, tmp_path, padded_batch, report):
    """One key/value head for all 4 query heads; a RoPE base and epsilon not the defaults."""
    hf_model = make_hf(randomize, seed=7, num_key_value_heads=1, rms_norm_eps=1e-5,
                       rope_parameters={"rope_type": "default", "rope_theta": 500.0})
    model = from_hf_llama(hf_model)
    c = model.config
    b = c.block
    assert (b.num_kv_heads, b.rotary_base, b.layer_norm_epsilon) == (1, 500.0, 1e-5)
    ids, real = batch(padded_batch, 8)
    expected = hf_logits(hf_model, ids, real)
    report("HF MQA, rope_theta=500", our_logits(model, ids, real), expected, real)
    # The base matters: the default one does not give these logits.
    default_base = from_hf_llama(hf_model.state_dict(), dict(
        hf_model.config.to_dict(), rope_parameters={"rope_type": "default", "rope_theta": 1e4}))
    assert np.max(np.abs(our_logits(default_base, ids, real)[real] - expected[real])) > 1e-3
    # A transformers-4 style config (top-level rope_theta) reads the same base.
    old_style = {k: v for k, v in hf_model.config.to_dict().items() if k != "rope_parameters"}
    old_style.update(rope_theta=500.0, rope_scaling=None)
    assert from_hf_llama(hf_model.state_dict(), old_style).config.block.rotary_base == 500.0
    save_hf_llama(model, tmp_path / "mqa")
    reloaded, info = transformers.LlamaForCausalLM.from_pretrained(
        str(tmp_path / "mqa"), output_loading_info=True)
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys"))
    assert reloaded.config.rope_parameters["rope_theta"] == 500.0
    report("MQA: export -> HF reload", hf_logits(reloaded.eval(), ids, real), expected, real)


def test_the_comparison_catches_wrong_layouts(randomize, padded_batch):
    """q and k swapped, or a square matrix left untransposed, converts but changes the logits."""
    hf_model = make_hf(randomize, seed=9, num_key_value_heads=HEADS)  # q, k, v all (d, d)
    ids, real = batch(padded_batch, 10)
    expected = hf_logits(hf_model, ids, real)
    config = hf_model.config.to_dict()
    state = dict(hf_model.state_dict())
    right = from_hf_llama(state, config)
    assert np.max(np.abs(our_logits(right, ids, real)[real] - expected[real])) <= 1e-5
    q, k = "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight"
    o = "model.layers.1.self_attn.o_proj.weight"
    for wrong in (dict(state, **{q: state[k], k: state[q]}), dict(state, **{o: state[o].T})):
        model = from_hf_llama(wrong, config)
        assert np.max(np.abs(our_logits(model, ids, real)[real] - expected[real])) > 1e-3


# --- ours -> Hugging Face -------------------------------------------------------------


def random_like_our(rng, weight):
    scale = weight.path.endswith("scale")
    values = rng.normal(0.0, 0.1, size=tuple(weight.shape))
    return (1.0 + values if scale else values).astype("float32")


def test_export_reloads_in_transformers(saved, tmp_path, padded_batch, report):
    """Random Llama-shaped DecoderOnly -> folder -> LlamaForCausalLM.from_pretrained: same logits."""
    ours = DecoderOnly.from_preset("llama_tiny", vocab_size=VOCAB, max_length=MAX_LENGTH,
                                   pad_id=PAD_ID, rotary_base=1000.0)
    rng = np.random.default_rng(11)
    for weight in ours.weights:
        weight.assign(random_like_our(rng, weight))
    path = save_hf_llama(ours, tmp_path / "export")
    with open(tmp_path / "export" / "config.json") as file:
        written = json.load(file)
    assert (written["pad_token_id"], written["eos_token_id"], written["num_key_value_heads"]) == (
        PAD_ID, 3, 2)
    reloaded, info = transformers.LlamaForCausalLM.from_pretrained(
        str(tmp_path / "export"), output_loading_info=True)
    reloaded.eval()
    assert not any(info[key] for key in ("missing_keys", "unexpected_keys", "mismatched_keys")), info
    ids, real = batch(padded_batch, 12)
    report("export -> HF reload", hf_logits(reloaded, ids, real), our_logits(ours, ids, real), real)
    # Round trip through our importer gives back the same weights exactly.
    back = from_hf_llama(path)
    assert back.get_config() == ours.get_config() | {"name": back.name}
    for a, b in zip(ours.weights, back.weights):
        np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))
    # And a converted checkpoint exports to the tensors it came from.
    original = safetensors_numpy.load_file(str(saved / "model.safetensors"))
    exported = hf_llama_state_dict(from_hf_llama(saved))
    assert set(exported) == set(original)
    for name, array in original.items():
        np.testing.assert_array_equal(exported[name], array, err_msg=name)


def test_export_rejects_what_llama_cannot_express():
    for toggle in (dict(norm="layer"), dict(feed_forward="mlp"), dict(position="learned"),
                   dict(rotary_fraction=0.5), dict(qk_norm=True), dict(ln_position="post"),
                   dict(attention_window=4), dict(parallel_block=True),
                   dict(attention_softcap=50.0)):
        model = DecoderOnly.from_preset("llama_tiny", num_layers=1, **toggle)
        with pytest.raises(ValueError, match=f"Llama cannot express.*{next(iter(toggle))}"):
            hf_llama_config(model)


# --- validation ----------------------------------------------------------------------


def test_unsupported_configs_raise(hf_model):
    state = hf_model.state_dict()
    config = hf_model.config.to_dict()
    bad = {
        "hidden_act": dict(hidden_act="gelu"),
        "rope_scaling": dict(rope_scaling={"rope_type": "linear", "factor": 2.0}),
        "rope_parameters": dict(rope_parameters={"rope_type": "llama3", "rope_theta": 1e4,
                                                 "factor": 8.0}),
        "head_dim": dict(head_dim=16),
        "attention_bias": dict(attention_bias=True, mlp_bias=False),
        "model_type": dict(model_type="mistral"),
        "num_hidden_layers=3 but the tensors give 2": dict(num_hidden_layers=3),
        "num_key_value_heads=4 but the tensors give 2": dict(num_key_value_heads=4),
    }
    for field, changes in bad.items():
        with pytest.raises(ValueError, match=field):
            from_hf_llama(state, dict(config, **changes))


def test_missing_unexpected_and_misshapen_tensors(hf_model):
    config = hf_model.config
    state = dict(hf_model.state_dict())
    name = "model.layers.1.mlp.down_proj.weight"
    with pytest.raises(ValueError, match=rf"missing 1 tensor\(s\): {name}"):
        from_hf_llama({k: v for k, v in state.items() if k != name}, config)
    extra = dict(state, **{"model.layers.0.self_attn.q_norm.weight": torch.ones(8)})
    with pytest.raises(ValueError, match="no place for.*q_norm"):
        from_hf_llama(extra, config)
    misshapen = dict(state, **{"model.layers.1.self_attn.v_proj.weight": torch.zeros(8, D_MODEL)})
    message = r"'model.layers.1.self_attn.v_proj.weight' has shape \(8, 32\) but maps to"
    with pytest.raises(ValueError, match=message):
        from_hf_llama(misshapen, config)
    with pytest.raises(ValueError, match="embed_tokens.weight"):
        from_hf_llama({"foo": np.zeros(3)}, num_heads=4)
    # Old checkpoints' RoPE frequency buffers are not weights: ignored.
    with_buffer = dict(state, **{"model.layers.0.self_attn.rotary_emb.inv_freq": torch.ones(4)})
    assert from_hf_llama(with_buffer, config).count_params() == sum(
        p.numel() for p in hf_model.parameters())
