"""Hugging Face GPT-2 <-> DecoderOnly: same logits to 1e-5, both directions.

The reference runs in torch (transformers) under any Keras backend.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from keras import ops

from keras_transformer.convert import from_hf_gpt2
from keras_transformer.convert import hf_gpt2_config
from keras_transformer.convert import hf_gpt2_state_dict
from keras_transformer.convert import save_hf_gpt2
from keras_transformer.models import DecoderOnly

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
safetensors_numpy = pytest.importorskip("safetensors.numpy")

VOCAB, LAYERS, D_MODEL, HEADS, MAX_LENGTH = 64, 2, 32, 4, 16
LENGTH = 10
PAD_ID = 0
PADS = (0, 4, -3)  # no padding, right padding, left padding


def make_hf(randomize, seed=1, **overrides):
    """A tiny random GPT2LMHeadModel in eval mode, every weight random."""
    arguments = dict(vocab_size=VOCAB, n_positions=MAX_LENGTH, n_embd=D_MODEL, n_layer=LAYERS,
                     n_head=HEADS, layer_norm_epsilon=1e-5, bos_token_id=VOCAB - 1,
                     eos_token_id=VOCAB - 1, attn_implementation="eager")
    arguments.update(overrides)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(**arguments)).eval()
    return randomize(model, seed)


@pytest.fixture
def hf_model(randomize):
    return make_hf(randomize)


@pytest.fixture
def saved(hf_model, tmp_path):
    """`save_pretrained` folder: model.safetensors + config.json."""
    directory = tmp_path / "hf_gpt2"
    hf_model.save_pretrained(str(directory))
    return directory


def hf_logits(model, ids, real):
    with torch.no_grad():
        out = model(input_ids=torch.from_numpy(ids.astype("int64")),
                    attention_mask=torch.from_numpy(real.astype("int64")))
    return out.logits.numpy()


def our_logits(model, ids):
    return ops.convert_to_numpy(model(ids))


def batch(padded_batch, seed, pads=PADS):
    return padded_batch(np.random.default_rng(seed), VOCAB, LENGTH, pads, pad_id=PAD_ID)


# --- Hugging Face -> ours -----------------------------------------------------------


def test_from_safetensors_file(hf_model, saved, padded_batch, report):
    """The file alone, with config.json beside it: config inferred, logits equal."""
    model = from_hf_gpt2(saved / "model.safetensors", pad_id=PAD_ID)
    assert isinstance(model, DecoderOnly)
    c = model.config
    b = c.block
    assert (c.vocab_size, c.num_decoder_layers, c.d_model, b.num_heads, b.d_ff, c.max_length) == (
        VOCAB, LAYERS, D_MODEL, HEADS, 4 * D_MODEL, MAX_LENGTH
    )
    assert (b.activation, b.layer_norm_epsilon, c.tie_embeddings) == ("gelu", 1e-5, True)
    assert model.count_params() == sum(p.numel() for p in hf_model.parameters())
    ids, real = batch(padded_batch, 2)
    report("HF safetensors, left+right padding, pad_id=0",
           our_logits(model, ids), hf_logits(hf_model, ids, real), real)


def test_right_padding_needs_no_pad_id(hf_model, saved, padded_batch, report):
    model = from_hf_gpt2(saved)  # the folder; pad_id=None by default
    assert model.config.pad_id is None
    ids, real = batch(padded_batch, 3, pads=(0, 4, 1))
    report("HF folder, right padding, pad_id=None",
           our_logits(model, ids), hf_logits(hf_model, ids, real), real)


def test_padding_changes_the_logits(hf_model, saved, padded_batch):
    """The padded comparisons are meaningful: the left-padded row needs its mask."""
    ids, real = batch(padded_batch, 2)
    masked = hf_logits(hf_model, ids, real)[2][real[2]]
    unmasked = hf_logits(hf_model, ids, np.ones_like(real))[2][real[2]]
    assert np.max(np.abs(masked - unmasked)) > 1e-3
    ours_unmasked = our_logits(from_hf_gpt2(saved), ids)[2][real[2]]
    assert np.max(np.abs(ours_unmasked - masked)) > 1e-3


def test_bare_file_needs_num_heads(hf_model, saved, tmp_path, padded_batch, report):
    bare = tmp_path / "bare" / "weights.safetensors"
    bare.parent.mkdir()
    shutil.copy(saved / "model.safetensors", bare)
    with pytest.raises(ValueError, match="num_heads"):
        from_hf_gpt2(bare)
    model = from_hf_gpt2(bare, num_heads=HEADS, pad_id=PAD_ID)
    ids, real = batch(padded_batch, 4)
    report("HF bare safetensors + num_heads",
           our_logits(model, ids), hf_logits(hf_model, ids, real), real)
    with pytest.raises(ValueError, match="contradicts"):
        from_hf_gpt2(saved, num_heads=2)


def test_from_state_dict_and_model_object(hf_model, padded_batch, report):
    ids, real = batch(padded_batch, 5)
    expected = hf_logits(hf_model, ids, real)
    # A state dict of torch tensors (no "transformer." prefix here) plus a config object.
    state = {k.removeprefix("transformer."): v for k, v in hf_model.state_dict().items()}
    from_state = from_hf_gpt2(state, hf_model.config, pad_id=PAD_ID)
    report("HF state dict (torch tensors)", our_logits(from_state, ids), expected, real)
    from_object = from_hf_gpt2(hf_model, pad_id=PAD_ID)
    report("HF model object", our_logits(from_object, ids), expected, real)


def test_untied_lm_head(randomize, tmp_path, padded_batch, report):
    hf_model = make_hf(randomize, seed=7, tie_word_embeddings=False)
    hf_model.save_pretrained(str(tmp_path / "untied"))
    model = from_hf_gpt2(tmp_path / "untied", pad_id=PAD_ID)
    assert not model.config.tie_embeddings
    ids, real = batch(padded_batch, 6)
    expected = hf_logits(hf_model, ids, real)
    report("HF untied lm_head", our_logits(model, ids), expected, real)
    # Without a config, a stored lm_head that differs from wte means untied.
    state = dict(hf_model.state_dict())
    assert not from_hf_gpt2(state, num_heads=HEADS).config.tie_embeddings
    # Export keeps lm_head (transposed back), and Hugging Face reloads it.
    save_hf_gpt2(model, tmp_path / "export_untied")
    reloaded = transformers.GPT2LMHeadModel.from_pretrained(str(tmp_path / "export_untied")).eval()
    assert not reloaded.config.tie_word_embeddings
    report("export untied -> HF reload", hf_logits(reloaded, ids, real), expected, real)


# --- ours -> Hugging Face -------------------------------------------------------------


def test_export_reloads_in_transformers(hf_model, saved, tmp_path, padded_batch, report):
    """Random DecoderOnly -> GPT-2 folder -> GPT2LMHeadModel.from_pretrained: same logits."""
    ours = DecoderOnly(vocab_size=VOCAB, num_layers=LAYERS, d_model=D_MODEL, num_heads=HEADS,
                       d_ff=4 * D_MODEL, max_length=MAX_LENGTH, dropout=0.0, pad_id=PAD_ID)
    rng = np.random.default_rng(8)
    for weight in ours.weights:
        weight.assign(random_like_our(rng, weight))
    path = save_hf_gpt2(ours, tmp_path / "export")
    assert os.path.basename(path) == "model.safetensors"
    with open(tmp_path / "export" / "config.json") as file:
        assert json.load(file)["pad_token_id"] == PAD_ID
    reloaded, info = transformers.GPT2LMHeadModel.from_pretrained(
        str(tmp_path / "export"), output_loading_info=True
    )
    reloaded.eval()
    problems = ("missing_keys", "unexpected_keys", "mismatched_keys")
    assert not any(info[key] for key in problems), info
    ids, real = batch(padded_batch, 9)
    report("export -> HF reload", hf_logits(reloaded, ids, real), our_logits(ours, ids), real)
    # Round trip through our importer gives back the same weights exactly.
    back = from_hf_gpt2(path, pad_id=PAD_ID)
    for a, b in zip(ours.weights, back.weights):
        np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))
    # And a converted checkpoint exports to the tensors it came from.
    original = safetensors_numpy.load_file(str(saved / "model.safetensors"))
    exported = hf_gpt2_state_dict(from_hf_gpt2(saved))
    assert set(exported) == set(original)
    for name, array in original.items():
        np.testing.assert_array_equal(exported[name], array, err_msg=name)


def random_like_our(rng, weight):
    scale = weight.path.endswith("gamma")
    values = rng.normal(0.0, 0.1, size=tuple(weight.shape))
    return (1.0 + values if scale else values).astype("float32")


def test_export_rejects_what_gpt2_cannot_express():
    common = dict(vocab_size=VOCAB, num_layers=1, d_model=D_MODEL, num_heads=HEADS, d_ff=64,
                  max_length=MAX_LENGTH)
    for toggle in (dict(ln_position="post"), dict(position="sinusoidal"),
                   dict(scale_embeddings=True), dict(attention_window=4),
                   # Newer toggles: exported, each would be dropped or mis-shaped silently.
                   dict(norm="rms"), dict(feed_forward="swiglu"), dict(use_bias=False),
                   dict(qk_norm=True), dict(num_kv_heads=1),
                   # Any block field away from its default that the exporter does not
                   # write is refused, toggles added after it included.
                   dict(parallel_block=True), dict(attention_softcap=50.0)):
        with pytest.raises(ValueError, match=f"GPT-2 cannot express.*{next(iter(toggle))}"):
            hf_gpt2_config(DecoderOnly(**common, **toggle))
    assert hf_gpt2_config(DecoderOnly(**common, num_kv_heads=HEADS))["n_head"] == HEADS
    config = hf_gpt2_config(DecoderOnly(**common, activation="gelu_exact"))
    assert config["activation_function"] == "gelu"  # Hugging Face's "gelu" is the erf form


# --- validation ----------------------------------------------------------------------


def test_unsupported_configs_raise(hf_model):
    state = hf_model.state_dict()
    config = hf_model.config.to_dict()
    for key, value in (("scale_attn_by_inverse_layer_idx", True), ("scale_attn_weights", False),
                       ("activation_function", "quick_gelu")):
        with pytest.raises(ValueError, match=key):
            from_hf_gpt2(state, dict(config, **{key: value}))
    with pytest.raises(ValueError, match="n_layer=3 but the tensors give 2"):
        from_hf_gpt2(state, dict(config, n_layer=3))


def test_missing_unexpected_and_misshapen_tensors(hf_model):
    config = hf_model.config
    state = dict(hf_model.state_dict())
    missing = {k: v for k, v in state.items() if k != "transformer.h.1.mlp.c_proj.bias"}
    with pytest.raises(ValueError, match=r"missing 1 tensor\(s\): transformer.h.1.mlp.c_proj.bias"):
        from_hf_gpt2(missing, config)
    extra = dict(state, **{"transformer.h.0.crossattention.c_attn.weight": torch.zeros(2, 2)})
    with pytest.raises(ValueError, match="no place for.*crossattention"):
        from_hf_gpt2(extra, config)
    transposed = dict(state, **{"transformer.h.0.attn.c_proj.weight": torch.zeros(D_MODEL, 8)})
    message = r"'transformer.h.0.attn.c_proj.weight' has shape \(32, 8\)"
    with pytest.raises(ValueError, match=message):
        from_hf_gpt2(transposed, config)
    with pytest.raises(ValueError, match="wte.weight"):
        from_hf_gpt2({"foo": np.zeros(3)}, num_heads=4)


def test_no_heavy_imports_at_module_level():
    """A JAX-only install imports the package: torch and transformers are never needed."""
    script = (
        "import sys\n"
        "for name in ('torch', 'transformers', 'safetensors', 'keras_hub'):\n"
        "    sys.modules[name] = None  # any import of them now fails\n"
        "import keras_transformer.convert as c\n"
        "print(sorted(c.__all__))\n"
    )
    env = dict(os.environ, KERAS_BACKEND="jax", TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "from_hf_gpt2" in result.stdout
