"""Average the weights of the last N checkpoints at the end of training."""

import collections

import keras
import numpy as np

from keras_transformer import validation


@keras.saving.register_keras_serializable(package="keras_transformer")
class CheckpointAveraging(keras.callbacks.Callback):
    """Replaces the trained weights by the mean of the last `num_checkpoints` snapshots.

    The paper averaged the last 5 checkpoints (base, written every 10 minutes)
    or 20 (big). Here a "checkpoint" is a snapshot of the trainable weights
    taken every `every_n_steps` optimizer steps, or at every epoch end when
    `every_n_steps` is None; snapshots are kept in host memory. Only
    trainable weights are averaged (optimizer and random-seed state are
    left as they are).

    Args:
        num_checkpoints: how many of the latest snapshots to average.
        every_n_steps: snapshot period in steps, or None for once per epoch.

    Example:
    >>> callback = CheckpointAveraging(num_checkpoints=5)
    >>> callback.num_checkpoints
    5
    """

    def __init__(self, num_checkpoints=5, every_n_steps=None):
        super().__init__()
        self.num_checkpoints = validation.check_int("num_checkpoints", num_checkpoints)
        self.every_n_steps = validation.check_int(
            "every_n_steps", every_n_steps, allow_none=True
        )
        self.snapshots = collections.deque(maxlen=self.num_checkpoints)
        self._steps = 0

    def _snapshot(self):
        self.snapshots.append([np.array(v.numpy()) for v in self.model.trainable_variables])

    def on_train_begin(self, logs=None):
        self.snapshots.clear()
        self._steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self._steps += 1
        if self.every_n_steps and self._steps % self.every_n_steps == 0:
            self._snapshot()

    def on_epoch_end(self, epoch, logs=None):
        if self.every_n_steps is None:
            self._snapshot()

    def on_train_end(self, logs=None):
        if not self.snapshots:
            return
        for i, variable in enumerate(self.model.trainable_variables):
            mean = np.mean([snapshot[i] for snapshot in self.snapshots], axis=0)
            variable.assign(mean.astype(variable.dtype))

    def get_config(self):
        return {"num_checkpoints": self.num_checkpoints, "every_n_steps": self.every_n_steps}
