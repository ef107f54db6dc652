"""Stop `model.fit` at the first NaN or infinite loss, saying what usually causes one."""

import math
import warnings

import keras


@keras.saving.register_keras_serializable(package="keras_transformer")
class StopOnNonFiniteLoss(keras.callbacks.Callback):
    """Stops training at the first batch whose loss is NaN or infinite, with a warning.

    Once the loss is NaN the weights are too, and every later step is wasted.
    Keras' `TerminateOnNaN` stops as well but prints only "Invalid loss"; this
    callback's `RuntimeWarning` names the step and the usual causes: token ids
    or labels outside the vocabulary (a compiled JAX or TensorFlow step does
    not check them; arrays passed to `fit` are checked before it starts,
    batches of a dataset are not), a learning rate too high, or float16
    overflow. `TransformerModel.fit` adds it to every run. It reads the loss
    of every batch, one scalar sync with the device per step (the progress
    bar of `verbose=1` reads it too).

    Attributes:
        stopped_at: the optimizer step whose loss was not finite, or None.

    Example:
    >>> import keras, numpy as np, warnings
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer=keras.optimizers.SGD(1e30), loss="mse")
    >>> stop = StopOnNonFiniteLoss()
    >>> with warnings.catch_warnings(record=True):
    ...     history = model.fit(np.ones((8, 1)), np.full((8, 1), 1e20), batch_size=1,
    ...                         epochs=3, callbacks=[stop], verbose=0)
    >>> stop.stopped_at is not None and stop.stopped_at < 8
    True
    """

    def __init__(self):
        super().__init__()
        self.stopped_at = None

    def on_train_begin(self, logs=None):
        self.stopped_at = None

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        loss = float(keras.ops.convert_to_numpy(loss))
        if math.isfinite(loss):
            return
        self.stopped_at = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        self.model.stop_training = True
        vocab_size = getattr(getattr(self.model, "config", None), "vocab_size", None)
        ids = f"[0, vocab_size={vocab_size})" if vocab_size else "the vocabulary"
        warnings.warn(
            f"Training stopped: the loss is {loss} at step {self.stopped_at} (batch {batch} "
            f"of the epoch). Usual causes: token ids or labels outside {ids} in the data "
            "(a compiled step does not check them), a learning rate too high, or float16 "
            "overflow (try mixed_bfloat16).",
            RuntimeWarning, stacklevel=2,
        )

    def get_config(self):
        return {}
