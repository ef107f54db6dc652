"""Sizing a learning-rate schedule from the run `fit` is about to make."""

import keras


def unsized_schedule(optimizer):
    """The optimizer's schedule if it waits for a length (`total_steps=None`), else None.

    Args:
        optimizer: a Keras optimizer, or None (a model not compiled yet).
    """
    schedule = getattr(optimizer, "_learning_rate", None)  # Keras keeps the schedule here
    if callable(getattr(schedule, "resolve", None)) and schedule.total_steps is None:
        return schedule
    return None


class ScheduleFromFit(keras.callbacks.Callback):
    """Gives an unsized schedule `epochs * steps_per_epoch` steps when `fit` begins.

    `TransformerModel.fit` adds it when the compiled optimizer's schedule has no
    `total_steps`. Keras knows the steps per epoch for arrays, a `PyDataset` and a
    finite `tf.data` pipeline, or from `steps_per_epoch`; it runs before the
    first step is traced, so the compiled step sees the length.

    Args:
        schedule: the schedule to size (it has a `resolve(total_steps)` method).
    """

    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule

    def on_train_begin(self, logs=None):
        steps, epochs = self.params.get("steps"), self.params.get("epochs")
        if not steps or not epochs:
            raise ValueError(
                "The learning-rate schedule has no `total_steps` and fit cannot tell how "
                "many steps it will run (data of unknown length). Pass "
                "`steps_per_epoch` to fit, or `total_steps` to the optimizer (e.g. "
                "kt.training.gpt_optimizer(total_steps=...))."
            )
        self.schedule.resolve(total_steps=epochs * steps)
