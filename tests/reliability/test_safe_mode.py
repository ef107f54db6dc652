"""`.keras` files load with safe_mode=True: no Lambda layers or pickled code."""

import json
import zipfile

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt

VOCAB = 32
MODELS = {
    "gpt-banded": lambda: kt.DecoderOnly(vocab_size=VOCAB, num_layers=2, d_model=16,
                                         num_heads=2, d_ff=32, max_length=8,
                                         attention_window=2, activation="gelu_exact"),
    "transformer-pre-untied": lambda: kt.EncoderDecoder(
        vocab_size=VOCAB, num_layers=1, d_model=16, num_heads=2, d_ff=32, max_length=8,
        ln_position="pre", position="learned", tie_embeddings=False, activation="silu",
        dtype="mixed_bfloat16"),
    "preset-gpt3-tiny": lambda: kt.DecoderOnly.from_preset("gpt3_tiny"),
    # Rotary, RMSNorm, SwiGLU, no biases, grouped-query attention; qk-norm adds its norms.
    "preset-llama-tiny-qk-norm": lambda: kt.DecoderOnly.from_preset("llama_tiny", qk_norm=True),
}
FORBIDDEN = ("lambda", "__lambda__", "function_type", "marshal", "pickle", "bytecode")


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_saved_model_loads_in_safe_mode(name, tmp_path):
    model = MODELS[name]()
    model.compile()  # the compiled state (recipe) is saved too
    ids = np.random.default_rng(0).integers(1, VOCAB, size=(2, 6)).astype("int32")
    inputs = {"source": ids, "target": ids} if isinstance(model, kt.EncoderDecoder) else ids
    expected = ops.convert_to_numpy(ops.cast(model(inputs), "float32"))
    path = str(tmp_path / "model.keras")
    model.save(path)

    with zipfile.ZipFile(path) as archive:
        assert set(archive.namelist()) >= {"config.json", "metadata.json"}
        assert not any(n.endswith((".pkl", ".pickle", ".py")) for n in archive.namelist())
        text = archive.read("config.json").decode()
    config = json.loads(text)
    for entry in _walk(config):
        assert entry.get("class_name") != "Lambda", entry
        assert entry.get("class_name") != "__lambda__", entry
        module = entry.get("module") or ""
        assert module.startswith(("keras", "builtins")) or not module, module
    lowered = text.lower()
    for word in FORBIDDEN:
        assert word not in lowered, word

    restored = keras.saving.load_model(path, safe_mode=True)
    assert type(restored) is type(model)
    got = ops.convert_to_numpy(ops.cast(restored(inputs), "float32"))
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)
