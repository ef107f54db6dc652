"""Stop `model.fit` after a number of optimizer steps: "train for N steps"."""

import keras

from keras_transformer import validation


@keras.saving.register_keras_serializable(package="keras_transformer")
class StepLimit(keras.callbacks.Callback):
    """Stops training once the optimizer has taken `steps` steps.

    A fixed number of steps compares two versions of a model, or two seeds,
    on the same amount of training whatever the machine's speed (a
    `TimeLimit` does not: a busy machine trains fewer steps). The count is
    the optimizer's `iterations`, so a resumed run stops at the same step as
    an uninterrupted one; the current epoch's remaining batches are skipped,
    that epoch's validation (if any) still runs, and `fit` returns normally.
    Keras checks after each batch, so a `fit` that starts at or past `steps`
    still runs one.

    Args:
        steps: stop once `model.optimizer.iterations` reaches this (>= 1).

    Attributes:
        stopped_early: True when the step count, not the epoch count, ended training.

    Example:
    >>> import keras, numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile(loss="mse")
    >>> limit = StepLimit(steps=12)
    >>> history = model.fit(np.ones((64, 2)), np.ones((64, 1)), batch_size=8,
    ...                     epochs=5, callbacks=[limit], verbose=0)
    >>> limit.stopped_early, int(model.optimizer.iterations), len(history.history["loss"])
    (True, 12, 2)
    """

    def __init__(self, steps):
        super().__init__()
        self.steps = validation.check_int("steps", steps, minimum=1)
        self.stopped_early = False

    def on_train_begin(self, logs=None):
        self.stopped_early = False

    def on_train_batch_end(self, batch, logs=None):
        if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) >= self.steps:
            self.stopped_early = True
            self.model.stop_training = True

    def get_config(self):
        return {"steps": self.steps}
