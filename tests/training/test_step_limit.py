"""StepLimit stops fit at an optimizer step count, across epochs and across fit calls."""

import keras
import numpy as np
import pytest

from keras_transformer.training import StepLimit


def _model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_stops_mid_epoch_at_the_step_count_and_a_later_fit_after_one_batch():
    model, x, y = _model(), np.ones((40, 2)), np.ones((40, 1))
    limit = StepLimit(7)
    history = model.fit(x, y, batch_size=10, epochs=5, callbacks=[limit], verbose=0)
    assert int(model.optimizer.iterations) == 7 and limit.stopped_early
    assert len(history.history["loss"]) == 2  # 4 steps, then 3 of the second epoch
    # The count is the optimizer's, so a resumed fit stops where the whole run would have.
    model.fit(x, y, batch_size=10, epochs=5, callbacks=[limit], verbose=0)
    assert int(model.optimizer.iterations) == 8  # Keras runs a batch before any check


def test_a_run_shorter_than_the_limit_is_not_stopped_early():
    model, x, y = _model(), np.ones((40, 2)), np.ones((40, 1))
    limit = StepLimit(100)
    model.fit(x, y, batch_size=10, epochs=2, callbacks=[limit], verbose=0)
    assert int(model.optimizer.iterations) == 8 and not limit.stopped_early
    assert StepLimit(**limit.get_config()).steps == 100


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", None])
def test_bad_steps(bad):
    with pytest.raises(ValueError, match="steps"):
        StepLimit(bad)
