"""Which variables the GPT recipe decays, for every preset and toggle, before and after a reload.

The documented rule (docs/training.md): every projection kernel and the token
embedding decay; biases, norm scales and offsets (LayerNorm's gamma/beta,
RMSNorm's and qk-norm's scale) and position tables do not. Written here by
variable kind, not by the code's own test (number of dimensions).
"""

import os

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.training import DecayMaskedAdamW
from model_zoo import preset_model
from model_zoo import preset_names
from model_zoo import toggle_draws

DECAYED = ("kernel", "embeddings")
NOT_DECAYED = ("bias", "gamma", "beta", "scale", "table")
DRAWS = toggle_draws(6, seed=1)


def _decay_mask(optimizer, model):
    return {v.path: bool(optimizer._use_weight_decay(v)) for v in model.trainable_variables}


def _check(model, optimizer):
    mask = _decay_mask(optimizer, model)
    kinds = {path: path.rsplit("/", 1)[-1] for path in mask}
    assert set(kinds.values()) <= set(DECAYED + NOT_DECAYED), sorted(set(kinds.values()))
    assert {p for p, kind in kinds.items() if kind in DECAYED} == {p for p, d in mask.items() if d}
    return mask


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_decays_exactly_its_matrices(name):
    model = preset_model(name)
    mask = _check(model, kt.training.gpt_optimizer())
    undecayed = {p.rsplit("/", 1)[-1] for p, d in mask.items() if not d}
    arguments = kt.models.PRESETS[name][1]
    if arguments.get("norm") == "rms":
        assert "scale" in undecayed  # the defect: RMSNorm's weight was decayed
    if arguments.get("position") == "learned":
        assert "table" in undecayed


@pytest.mark.parametrize("family,arguments", DRAWS, ids=[str(i) for i in range(len(DRAWS))])
def test_drawn_toggles_decay_exactly_their_matrices(family, arguments):
    _check(family(**arguments), kt.training.gpt_optimizer())


def test_llama_with_qk_norm_keeps_every_norm_scale_undecayed_after_a_reload(tmp_path):
    model = kt.DecoderOnly.from_preset("llama_tiny", qk_norm=True)
    model.compile()
    ids = np.random.default_rng(0).integers(1, 128, size=(4, 9)).astype("int32")
    model.fit(ids[:, :-1], ids[:, 1:], epochs=1, batch_size=2, verbose=0)
    before = _check(model, model.optimizer)
    scales = [p for p in before if p.endswith("/scale")]
    assert any("query_norm" in p for p in scales) and not any(before[p] for p in scales)
    path = os.path.join(tmp_path, "llama.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert isinstance(reloaded.optimizer, DecayMaskedAdamW)
    assert _decay_mask(reloaded.optimizer, reloaded) == before


def test_decay_moves_only_the_decayed_variables():
    # A step with zero gradients: Adam's update is 0, so only decay changes weights.
    model = kt.DecoderOnly.from_preset("llama_tiny")
    optimizer = DecayMaskedAdamW(learning_rate=0.1, weight_decay=0.5)
    variables = model.trainable_variables
    before = [keras.ops.convert_to_numpy(v).copy() for v in variables]
    optimizer.apply_gradients([(keras.ops.zeros(v.shape), v) for v in variables])
    mask = _check(model, optimizer)
    for v, old in zip(variables, before):
        moved = not np.array_equal(keras.ops.convert_to_numpy(v), old)
        assert moved == mask[v.path], v.path
