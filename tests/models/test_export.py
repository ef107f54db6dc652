"""`model.export(path)`: a TensorFlow SavedModel taking int32 ids of any batch size and length.

The forward pass exports (logits for a batch of ids); the cached decode loop of `generate`
does not. Keras writes SavedModels from the JAX and TensorFlow backends; from PyTorch it goes
through torch.export, whose tracing of these models is not supported here yet.
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt

needs_jax_or_tensorflow = pytest.mark.skipif(
    keras.backend.backend() == "torch",
    reason="tf_saved_model export of these models runs from the JAX and TensorFlow backends")


def _inputs(model, batch, length, rng):
    ids = rng.integers(1, model.config.vocab_size, size=(batch, length)).astype("int32")
    if isinstance(model, kt.EncoderDecoder):
        return {"source": ids, "target": ids[:, : max(1, length - 2)]}
    return ids


@needs_jax_or_tensorflow
@pytest.mark.parametrize("build", [
    lambda: kt.DecoderOnly.from_preset("gpt2_tiny", dropout=0.0),  # learned positions
    lambda: kt.DecoderOnly.from_preset("llama_tiny"),  # rotary, GQA
    lambda: kt.EncoderDecoder.from_preset("transformer_tiny", dropout=0.0),  # dict inputs
], ids=["gpt2", "llama", "transformer"])
def test_the_exported_model_serves_any_batch_and_length_with_the_same_logits(build, tmp_path):
    import tensorflow as tf

    model = build()
    path = str(tmp_path / "served")
    model.export(path, verbose=False)  # the signature defaults to int32 ids, dynamic shapes
    served = tf.saved_model.load(path)
    rng = np.random.default_rng(0)
    for batch, length in [(1, 4), (3, 11)]:
        inputs = _inputs(model, batch, length, rng)
        feed = ({k: tf.constant(v) for k, v in inputs.items()} if isinstance(inputs, dict)
                else tf.constant(inputs))
        got = served.serve(feed).numpy()
        np.testing.assert_allclose(got, ops.convert_to_numpy(model(inputs)), atol=1e-4, rtol=0)


def test_the_default_signature_names_int32_ids_of_dynamic_shape():
    spec = kt.DecoderOnly.from_preset("gpt2_tiny").input_signature()
    assert (spec.shape, spec.dtype) == ((None, None), "int32")
    specs = kt.EncoderDecoder.from_preset("transformer_tiny").input_signature()
    assert {name: (s.shape, s.dtype) for name, s in specs.items()} == {
        "source": ((None, None), "int32"), "target": ((None, None), "int32")}


def test_onnx_is_refused_with_the_reason_before_anything_is_written(tmp_path):
    # Keras' ONNX exporters fail on these models (docs/deploy.md); the call says so at once.
    model = kt.DecoderOnly.from_preset("llama_tiny")
    with pytest.raises(NotImplementedError, match="`format` 'onnx' does not export these models"):
        model.export(str(tmp_path / "model.onnx"), format="onnx")
    assert list(tmp_path.iterdir()) == []
