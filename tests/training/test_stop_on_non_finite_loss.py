"""A NaN loss ends fit at the step it appears, with a warning that names the usual causes."""

import numpy as np
import pytest

import keras_transformer as kt


def _model():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=50, max_length=16, dropout=0.0)
    model.compile()
    return model


def _batches(rows=32):
    ids = np.random.default_rng(0).integers(1, 50, size=(rows, 9)).astype("int32")
    return ids[:, :-1], ids[:, 1:]


def test_a_nan_loss_stops_fit_at_its_step_with_the_causes():
    model = _model()
    table = model.token_embedding.embeddings
    table.assign(np.full(tuple(table.shape), np.nan, "float32"))  # every loss is NaN
    x, y = _batches()
    with pytest.warns(RuntimeWarning, match=r"the loss is nan at step 1 \(batch 0 of the "
                      r"epoch\)\. Usual causes: token ids or labels outside "
                      r"\[0, vocab_size=50\)"):
        history = model.fit(x, y, batch_size=8, epochs=3, verbose=0)
    assert int(np.asarray(model.optimizer.iterations)) == 1  # not 12
    assert len(history.history["loss"]) == 1


def test_a_finite_run_is_left_alone():
    model = _model()
    x, y = _batches()
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert int(np.asarray(model.optimizer.iterations)) == 8
    assert np.all(np.isfinite(history.history["loss"]))
