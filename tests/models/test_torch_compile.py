"""torch.compile traces our models whole: no graph break, so no recompile storm.

Keras' `jit_compile=True` on torch compiles the train step with `torch.compile`.
A graph break inside a layer call (a data-dependent check, a C++ object built
in the forward pass) splits the graph and makes Dynamo recompile per layer
until it hits its recompile limit; `fullgraph=True` turns any break into an
error, so these tests fail on the first one.
"""

import keras
import numpy as np
import pytest

import keras_transformer as kt

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="torch.compile is the torch backend's compiler"
)


def _compiled(model):
    import torch

    # "aot_eager" traces forward and backward graphs without generating code.
    return torch.compile(lambda inputs: model(inputs, training=True), fullgraph=True,
                         backend="aot_eager")


@pytest.mark.parametrize(
    "preset, pad_id, attention_dropout",
    [("gpt2_tiny", None, 0.0), ("gpt2_tiny", 0, 0.1), ("gpt3_tiny", 0, 0.0)],
)
def test_decoder_only_forward_and_backward_trace_as_one_graph(preset, pad_id, attention_dropout):
    """gpt3_tiny: a dense and a banded layer (window 4 < 16 positions: the blocked path)."""
    import torch

    model = kt.DecoderOnly.from_preset(
        preset, dropout=0.1, attention_dropout=attention_dropout, pad_id=pad_id,
        num_layers=2 if preset == "gpt3_tiny" else 1,
    )
    ids = torch.tensor(np.random.default_rng(0).integers(1, 128, (2, 16)), dtype=torch.int32)
    ids[1, -3:] = 0  # padding when pad_id=0, a real token otherwise
    model(ids)
    logits = _compiled(model)(ids)  # raises on any graph break
    logits.float().sum().backward()
    assert tuple(logits.shape) == (2, 16, 128)
    assert all(v.value.grad is not None for v in model.trainable_variables)


def test_encoder_decoder_forward_traces_as_one_graph():
    import torch

    model = kt.EncoderDecoder.from_preset("transformer_tiny")
    rng = np.random.default_rng(0)
    inputs = {
        "source": torch.tensor(rng.integers(1, 128, (2, 12)), dtype=torch.int32),
        "target": torch.tensor(rng.integers(1, 128, (2, 9)), dtype=torch.int32),
    }
    inputs["source"][0, -4:] = 0
    model(inputs)
    assert tuple(_compiled(model)(inputs).shape) == (2, 9, 128)


def test_compiled_forward_matches_eager():
    import torch

    model = kt.DecoderOnly.from_preset("gpt2_tiny", dropout=0.0)
    ids = torch.tensor(np.random.default_rng(1).integers(1, 128, (2, 16)), dtype=torch.int32)
    ids[0, -5:] = 0
    compiled = torch.compile(lambda x: model(x), fullgraph=True, backend="aot_eager")
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(compiled(ids)), keras.ops.convert_to_numpy(model(ids)),
        rtol=1e-5, atol=1e-5,
    )
