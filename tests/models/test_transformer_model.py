"""TransformerModel, the base of both families: what its compile config saves, and the
untied output projection's float8 training.

Keras (3.15.1) keeps `jit_compile="auto"` as the backend resolved it, True on JAX, and saved
that: a file compiled with the default on JAX loaded on torch with `jit_compile=True`, where
`predict` and `generate` then ran through `torch.compile` (a float8 model's `generate` failed
there). The models save `jit_compile` as asked.
"""

import json
import zipfile

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt


def _tiny():
    return kt.DecoderOnly(vocab_size=16, num_layers=1, d_model=8, num_heads=2, d_ff=8,
                          max_length=8)


def _saved_compile_config(path):
    with zipfile.ZipFile(path) as archive:
        return json.loads(archive.read("config.json"))["compile_config"]


def test_default_jit_compile_is_saved_as_auto_and_resolved_by_the_loading_backend(tmp_path):
    model = _tiny()
    model.compile(optimizer="sgd")
    plain = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    plain.compile(optimizer="sgd")
    assert model.jit_compile == plain.jit_compile  # this backend's "auto", as Keras resolves it
    assert model.get_compile_config()["jit_compile"] == "auto"
    path = str(tmp_path / "model.keras")
    model.save(path)
    assert _saved_compile_config(path)["jit_compile"] == "auto"
    loaded = keras.saving.load_model(path)
    assert loaded.jit_compile == plain.jit_compile
    assert loaded.get_compile_config()["jit_compile"] == "auto"


@pytest.mark.parametrize("jit_compile", [True, False])
def test_an_explicit_jit_compile_is_saved_as_given(jit_compile):
    model = _tiny()
    model.compile(optimizer="sgd", jit_compile=jit_compile)
    assert model.get_compile_config()["jit_compile"] is jit_compile


def test_a_later_compile_replaces_what_is_saved():
    # Keras makes the compile config afresh at each compile: one through keras.Model.compile
    # saves what Keras saves, not what an earlier compile of ours asked for.
    model = _tiny()
    model.compile(optimizer="sgd")
    keras.Model.compile(model, optimizer="sgd", jit_compile=False)
    assert model.jit_compile is False
    assert model.get_compile_config()["jit_compile"] is False


@pytest.mark.parametrize("family", [kt.DecoderOnly, kt.EncoderDecoder])
def test_fit_updates_an_untied_float8_output_projection(family):
    """Keras' JAX trainer calls the model's `call` through `stateless_call`, not `__call__`:
    no outer call sets `training`, and the output projection, which the model calls itself,
    ran as in inference unless `logits` passes `training`. Its float8 scales and amax
    histories then got no update, and JAX's zero "gradients" overwrote them: scales 0 after
    one step, and the model emitted one token. A step of `fit` fills the amax histories of
    its inputs and kernel (their scales, computed from the histories before the step, stay 1)."""
    model = family(vocab_size=16, num_layers=1, d_model=8, num_heads=2, d_ff=8, max_length=8,
                   tie_embeddings=False, dropout=0.0)
    ids = np.random.default_rng(0).integers(1, 16, size=(2, 6)).astype("int32")
    inputs = {"source": ids, "target": ids} if family is kt.EncoderDecoder else ids
    model(inputs)
    model.quantize("float8")
    model.compile(optimizer=keras.optimizers.SGD(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(inputs, np.roll(ids, -1, axis=1), batch_size=2, epochs=1, verbose=0)
    projection = model.output_projection
    for part in ("inputs", "kernel"):
        scale = ops.convert_to_numpy(getattr(projection, f"{part}_scale"))
        history = ops.convert_to_numpy(getattr(projection, f"{part}_amax_history"))
        assert np.all(scale == 1), (part, scale)
        assert history.max() > 0, (part, history)
