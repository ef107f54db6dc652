"""Models saved by an earlier version of the library load and compute what they did.

`tests/models/saved_files/` holds small `.keras` files of both families, covering every
architecture toggle and int8 quantization, with the logits they gave when they were
written (`write_files.py`; the commit is in `manifest.json`, and a file added later, for a
toggle added later, names its own). A change to the layers' structure, weight names or configs
that breaks users' saved models fails here.
"""

import dataclasses
import json
import os

import numpy as np
import pytest

import keras

import keras_transformer as kt  # noqa: F401  (registers the serializable classes)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "saved_files")
with open(os.path.join(HERE, "manifest.json")) as _file:
    MANIFEST = json.load(_file)


def _inputs(arrays):
    if "ids" in arrays:
        return arrays["ids"]
    return {"source": arrays["source"], "target": arrays["target"]}


def _logits(model, inputs):
    """The logits: on JAX from `predict` (one compiled pass, where an eager call compiles each
    op), elsewhere from an eager call. The files were compiled and saved on JAX, so they load
    with `jit_compile=True`, which on torch sends `predict` through `torch.compile`: 5 to 100 s
    a file here, for the same numbers (compiled torch is tested in tests/models/test_torch_compile.py).
    """
    if keras.backend.backend() == "jax":
        return model.predict(inputs, batch_size=2, verbose=0)
    return keras.ops.convert_to_numpy(model(inputs))


@pytest.mark.parametrize("item", MANIFEST["models"], ids=lambda item: item["name"])
def test_saved_file_loads_with_its_logits(item):
    path = os.path.join(HERE, f"{item['name']}.keras")
    model = keras.saving.load_model(path, safe_mode=True)
    assert type(model).__name__ == item["family"]
    arrays = np.load(os.path.join(HERE, f"{item['name']}.npz"))
    logits = _logits(model, _inputs(arrays))
    np.testing.assert_allclose(logits, arrays["logits"], atol=1e-5, rtol=0)
    quantized = {layer.path for layer in model._flatten_layers()
                 if getattr(layer, "quantization_mode", None) == "int8"}
    assert bool(quantized) == (item["quantize"] == "int8"), sorted(quantized)
    model_fields = {field.name for field in dataclasses.fields(kt.models.TransformerConfig)}
    for name, value in item["arguments"].items():  # the toggles came back as saved
        # The model's own fields on its config, a block toggle on `config.block`.
        config = model.config if name in model_fields else model.config.block
        assert getattr(config, name) == value, name


def test_the_files_cover_every_toggle():
    """Each toggle of TransformerConfig and of its BlockConfig is away from its default in at
    least one file."""
    covered = set()
    for item in MANIFEST["models"]:
        covered.update(item["arguments"])
    toggles = ({field.name for field in dataclasses.fields(kt.models.TransformerConfig)}
               - {"block"}) | {field.name for field in dataclasses.fields(kt.layers.BlockConfig)}
    # What every file sets (sizes) or what is not architecture (remat, the layer counts).
    fixed = {"vocab_size", "num_decoder_layers", "num_encoder_layers", "d_model", "num_heads",
             "d_ff", "max_length", "dropout", "remat"}
    assert toggles - fixed <= covered, sorted(toggles - fixed - covered)
