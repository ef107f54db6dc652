"""Stop `model.fit` after a wall-clock budget: "train for N minutes"."""

import time

import keras

from keras_transformer import validation


@keras.saving.register_keras_serializable(package="keras_transformer")
class TimeLimit(keras.callbacks.Callback):
    """Stops training at the first batch end after `seconds` of training.

    A fixed time budget compares runs (sizes, backends, hardware) on equal
    terms and keeps a demo within its minutes. The clock starts at
    `on_train_begin`, so compilation counts; the current epoch's remaining
    batches are skipped, that epoch's validation (if any) still runs, and
    `fit` returns normally.

    Args:
        seconds: the training budget in seconds (> 0).

    Attributes:
        stopped_early: True when the budget, not the epoch count, ended training.

    Example:
    >>> import keras, numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(loss="mse")
    >>> limit = TimeLimit(seconds=1e-6)
    >>> history = model.fit(np.ones((64, 2)), np.ones((64, 1)), batch_size=8,
    ...                     epochs=5, callbacks=[limit], verbose=0)
    >>> limit.stopped_early, len(history.history["loss"])
    (True, 1)
    """

    def __init__(self, seconds):
        super().__init__()
        self.seconds = validation.check_positive_float("seconds", seconds)
        self.stopped_early = False
        self._start = None

    def on_train_begin(self, logs=None):
        self._start = time.monotonic()
        self.stopped_early = False

    def on_train_batch_end(self, batch, logs=None):
        if time.monotonic() - self._start >= self.seconds:
            self.stopped_early = True
            self.model.stop_training = True

    def get_config(self):
        return {"seconds": self.seconds}
