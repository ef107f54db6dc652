import keras
import numpy as np
import pytest

from keras_transformer.training import CheckpointAveraging


class _Recorder(keras.callbacks.Callback):
    """Copies the trainable weights at the same moments CheckpointAveraging does."""

    def __init__(self, every_n_steps=None):
        super().__init__()
        self.every_n_steps = every_n_steps
        self.saved = []
        self.steps = 0

    def _save(self):
        self.saved.append([np.array(v.numpy()) for v in self.model.trainable_variables])

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1
        if self.every_n_steps and self.steps % self.every_n_steps == 0:
            self._save()

    def on_epoch_end(self, epoch, logs=None):
        if self.every_n_steps is None:
            self._save()


def _model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


@pytest.mark.parametrize("every_n_steps", [None, 3])
def test_final_weights_are_the_mean_of_the_last_checkpoints(rng, every_n_steps):
    x = rng.normal(size=(64, 4)).astype("float32")
    y = x.sum(-1, keepdims=True)
    model = _model()
    # The recorder runs before the averaging callback, so it sees the raw weights.
    recorder = _Recorder(every_n_steps)
    averaging = CheckpointAveraging(num_checkpoints=3, every_n_steps=every_n_steps)
    model.fit(x, y, batch_size=8, epochs=4, verbose=0, callbacks=[recorder, averaging])
    assert len(recorder.saved) >= 4
    last = recorder.saved[-3:]
    for i, variable in enumerate(model.trainable_variables):
        expected = np.mean([snapshot[i] for snapshot in last], axis=0)
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-6, atol=1e-7)
    # The average differs from the last raw weights: the callback really acted.
    assert not np.allclose(model.trainable_variables[0].numpy(), recorder.saved[-1][0])


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_checkpoints"):
        CheckpointAveraging(num_checkpoints=0)
    with pytest.raises(ValueError, match="every_n_steps"):
        CheckpointAveraging(every_n_steps=-2)
