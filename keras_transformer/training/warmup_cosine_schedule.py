"""GPT-style learning rate: linear warmup, then cosine decay to a floor."""

import math

import keras
from keras import ops

from keras_transformer import validation


@keras.saving.register_keras_serializable(package="keras_transformer")
class WarmupCosineSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak_learning_rate`, cosine decay to a floor, then flat.

    GPT-2/GPT-3 training used this shape (GPT-3 decays to 10% of the peak).
    Steps count from 1 like `InverseSqrtSchedule`: the first update uses
    `step = iterations + 1`.

    Args:
        peak_learning_rate: the rate reached at the end of the warmup.
        warmup_steps: length of the linear warmup.
        total_steps: step at which the cosine reaches the floor.
        final_fraction: the floor, as a fraction of the peak (GPT-3: 0.1).

    Example:
    >>> schedule = WarmupCosineSchedule(6e-4, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(i)), 7) for i in (4, 9, 59, 109, 500)]
    [0.0003, 0.0006, 0.00033, 6e-05, 6e-05]
    """

    def __init__(self, peak_learning_rate, warmup_steps, total_steps, final_fraction=0.1):
        self.peak_learning_rate = validation.check_positive_float(
            "peak_learning_rate", peak_learning_rate
        )
        self.warmup_steps = validation.check_int("warmup_steps", warmup_steps)
        self.total_steps = validation.check_int(
            "total_steps", total_steps, minimum=self.warmup_steps + 1
        )
        if not 0 <= final_fraction <= 1:
            raise ValueError(
                f"`final_fraction` must be in [0, 1]; received {final_fraction!r}."
            )
        self.final_fraction = float(final_fraction)

    def __call__(self, iterations):
        step = ops.cast(iterations, "float32") + 1.0
        warmup = step / self.warmup_steps
        progress = (step - self.warmup_steps) / (self.total_steps - self.warmup_steps)
        progress = ops.clip(progress, 0.0, 1.0)
        cosine = 0.5 * (1.0 + ops.cos(math.pi * progress))
        decay = self.final_fraction + (1.0 - self.final_fraction) * cosine
        return self.peak_learning_rate * ops.where(step <= self.warmup_steps, warmup, decay)

    def get_config(self):
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "final_fraction": self.final_fraction,
        }
