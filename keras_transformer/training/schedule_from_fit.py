"""Sizing a learning-rate schedule from the run `fit` is about to make."""

import warnings

import keras


def _unwrapped(optimizer):
    """The optimizer a `LossScaleOptimizer` (mixed_float16) wraps, or the optimizer itself."""
    return getattr(optimizer, "inner_optimizer", optimizer)


def sizable_schedule(optimizer):
    """The optimizer's schedule if `fit` can size it (it has `resolve`), else None.

    Args:
        optimizer: a Keras optimizer (a `LossScaleOptimizer` is looked into), or
            None (a model not compiled yet).
    """
    schedule = getattr(_unwrapped(optimizer), "_learning_rate", None)  # Keras keeps the schedule here
    return schedule if callable(getattr(schedule, "resolve", None)) else None


class ScheduleFromFit(keras.callbacks.Callback):
    """Sizes a schedule to the run `fit` makes, or warns when the run outlasts it.

    `TransformerModel.fit` adds it when the compiled optimizer's schedule can be
    sized (`WarmupCosineSchedule`); add it to `fit(callbacks=...)` yourself for
    another model. When the first epoch begins (before the first step is traced)
    the run ahead is `optimizer.iterations + (epochs - initial_epoch) *
    steps_per_epoch` steps. A schedule without `total_steps` takes that length;
    one that has it (given by hand, or by an earlier `fit`, and saved with the
    model) keeps it, with a warning if this run goes past its end, where the
    rate stays at the floor. Keras knows the steps per epoch for arrays, a
    `PyDataset` and a `tf.data` pipeline of known cardinality, or from
    `steps_per_epoch`.

    Args:
        schedule: the schedule to size (it has `total_steps` and `resolve`).

    Example:
    >>> import keras, numpy as np
    >>> from keras_transformer.training import gpt_optimizer
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    >>> optimizer = gpt_optimizer()  # no total_steps
    >>> model.compile(optimizer=optimizer, loss="mse")
    >>> schedule = sizable_schedule(optimizer)
    >>> _ = model.fit(np.ones((40, 3)), np.ones((40, 1)), batch_size=10, epochs=2, verbose=0,
    ...               callbacks=[ScheduleFromFit(schedule)])
    >>> schedule.total_steps, schedule.warmup_steps  # 2 epochs of 4 steps, no warmup
    (8, 0)
    """

    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule

    def on_train_begin(self, logs=None):
        self._sized = False

    def on_epoch_begin(self, epoch, logs=None):
        if self._sized:
            return
        self._sized = True
        steps, epochs = self.params.get("steps"), self.params.get("epochs")
        if not steps or not epochs:
            if self.schedule.total_steps is None:
                raise ValueError(
                    "The learning-rate schedule has no `total_steps` and fit cannot tell "
                    "how many steps it will run (data of unknown length, or a "
                    "`keras.callbacks.CallbackList` made without `epochs` and `steps`). "
                    "Pass `steps_per_epoch` to fit (or `epochs` and `steps` to the "
                    "CallbackList), or `total_steps` to the optimizer (e.g. "
                    "kt.training.gpt_optimizer(total_steps=...))."
                )
            return
        run_end = int(_unwrapped(self.model.optimizer).iterations) + (epochs - epoch) * steps
        if self.schedule.total_steps is None:
            self.schedule.resolve(total_steps=run_end)
        elif run_end > self.schedule.total_steps:
            warnings.warn(
                f"This fit runs to step {run_end}, past the end of the learning-rate "
                f"schedule ({self.schedule.total_steps} steps): the steps after it train "
                "at the floor rate. Make the optimizer with total_steps for the whole run.",
                stacklevel=2,
            )
