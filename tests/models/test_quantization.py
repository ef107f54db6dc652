"""`model.quantize(mode)`, then save and load: the same logits and the same generated ids.

Keras rebuilds a quantized model from a `DTypePolicyMap` (each quantized sublayer's policy by
path) passed as `dtype`, as it does keras-hub's backbones; the tied token embedding is Keras'
`ReversibleEmbedding`, so its table and the output projection quantize too (int8, int4).
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt

MODES = ("int8", "int4", "float8")
TOLERANCE = {"int8": 0.05, "float8": 0.1, "int4": 0.3}  # of the largest logit


def _decoder_only():
    return kt.DecoderOnly.from_preset("llama_tiny")  # rotary, RMSNorm, SwiGLU, GQA, no biases


def _encoder_decoder():
    return kt.EncoderDecoder.from_preset("transformer_tiny", dropout=0.0)


def _inputs(model, rng):
    vocab = model.config.vocab_size
    ids = rng.integers(1, vocab, size=(2, 6)).astype("int32")
    if isinstance(model, kt.EncoderDecoder):
        return {"source": ids, "target": rng.integers(1, vocab, size=(2, 5)).astype("int32")}
    return ids


def _generate(model, inputs):
    if isinstance(model, kt.EncoderDecoder):
        return model.generate(inputs["source"], max_length=6, beam_size=2)
    return model.generate(inputs[:, :3], max_new_tokens=4)


def _dense_paths(model):
    """Every layer `quantize` can turn into integers or float8: the Dense projections and,
    for int8 and int4, the tied token embedding."""
    return {layer.path for layer in model._flatten_layers()
            if isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense, kt.layers.TokenEmbedding))}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("build", [_decoder_only, _encoder_decoder], ids=["DecoderOnly", "EncoderDecoder"])
def test_a_quantized_model_saves_and_loads_to_the_same_outputs(build, mode, tmp_path):
    keras.utils.set_random_seed(0)  # the quantization error depends on the draw
    model = build()
    inputs = _inputs(model, np.random.default_rng(0))
    before = ops.convert_to_numpy(model(inputs))
    model.quantize(mode)
    quantized = {layer.path: layer.quantization_mode for layer in model._flatten_layers()
                 if layer.quantization_mode is not None}
    expected_paths = _dense_paths(model)
    if mode == "float8":  # Keras quantizes no embedding to float8
        expected_paths = {p for p in expected_paths if not p.endswith("token_embedding")}
    assert set(quantized) == expected_paths and set(quantized.values()) == {mode}
    logits = ops.convert_to_numpy(model(inputs))
    assert not np.array_equal(logits, before)  # the weights really changed
    # ... and still approximate them (these models under seed 0, on the three backends:
    # int8 at most 1.8%, float8 7.3%, int4 22% of the largest logit)
    assert np.abs(logits - before).max() < TOLERANCE[mode] * np.abs(before).max()
    generated = _generate(model, inputs)

    path = str(tmp_path / f"{mode}.keras")
    model.save(path)
    restored = keras.saving.load_model(path, safe_mode=True)
    assert {layer.path: layer.quantization_mode for layer in restored._flatten_layers()
            if layer.quantization_mode is not None} == quantized
    np.testing.assert_allclose(ops.convert_to_numpy(restored(inputs)), logits, atol=1e-5, rtol=0)
    np.testing.assert_array_equal(_generate(restored, inputs), generated)


def test_a_dtype_policy_map_gives_each_sublayer_its_policy_by_path():
    reference = _decoder_only()
    paths = sorted(_dense_paths(reference))
    policy_map = keras.dtype_policies.DTypePolicyMap()
    policy_map[paths[0]] = "int8_from_float32"
    policy_map[paths[-1]] = "int4/128_from_float32"
    model = kt.DecoderOnly.from_preset("llama_tiny", dtype=policy_map, name=reference.name)
    quantized = {layer.path: layer.quantization_mode for layer in model._flatten_layers()
                 if layer.quantization_mode is not None}
    assert quantized == {paths[0]: "int8", paths[-1]: "int4"}
    # The configuration round-trips the map, so the file of such a model loads as it is.
    assert isinstance(keras.dtype_policies.deserialize(model.get_config()["dtype"]),
                      keras.dtype_policies.DTypePolicyMap)


def test_an_unquantized_model_keeps_a_plain_dtype_policy():
    model = kt.DecoderOnly.from_preset("llama_tiny", dtype="mixed_bfloat16")
    assert keras.dtype_policies.deserialize(model.get_config()["dtype"]).name == "mixed_bfloat16"


def test_an_unknown_mode_is_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"mode=int3"):
        _decoder_only().quantize("int3")
