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
    `step = iterations + 1`, so no update is spent at rate 0. That is the one way
    it differs from `keras.optimizers.schedules.CosineDecay(0, total - warmup,
    alpha=final_fraction, warmup_target=peak, warmup_steps=warmup)`, whose value
    at `iterations + 1` is ours at `iterations` (tested); it is kept for that step.

    The length may be left to the data: with `total_steps=None` the schedule is
    sized by `fit` (`epochs * steps_per_epoch`, see `resolve`) before the first
    update, and saved with the length it was given.

    Args:
        peak_learning_rate: the rate reached at the end of the warmup.
        warmup_steps: length of the linear warmup (0 for none), or None for
            `min(2000, total_steps // 10)` (nanoGPT's 2,000 for long runs, the
            first tenth of a short one; none under 10 steps), set with
            `total_steps`.
        total_steps: step at which the cosine reaches the floor, or None to
            have `fit` set it.
        final_fraction: the floor, as a fraction of the peak (GPT-3: 0.1).

    Example:
    >>> schedule = WarmupCosineSchedule(6e-4, warmup_steps=10, total_steps=110)
    >>> [round(float(schedule(i)), 7) for i in (4, 9, 59, 109, 500)]
    [0.0003, 0.0006, 0.00033, 6e-05, 6e-05]
    >>> later = WarmupCosineSchedule(6e-4)  # sized by fit, or by hand:
    >>> later.resolve(total_steps=300).warmup_steps
    30
    """

    def __init__(self, peak_learning_rate, warmup_steps=None, total_steps=None,
                 final_fraction=0.1):
        self.peak_learning_rate = validation.check_positive_float(
            "peak_learning_rate", peak_learning_rate
        )
        self.warmup_steps = validation.check_int(
            "warmup_steps", warmup_steps, minimum=0, allow_none=True)
        self.total_steps = None
        if not 0 <= final_fraction <= 1:
            raise ValueError(
                f"`final_fraction` must be in [0, 1]; received {final_fraction!r}."
            )
        self.final_fraction = float(final_fraction)
        if total_steps is not None:
            self.resolve(total_steps)

    def resolve(self, total_steps):
        """Sets the length (and a `None` warmup from it); returns the schedule.

        Args:
            total_steps: the step at which the cosine reaches the floor; more
                than `warmup_steps`.

        Raises:
            ValueError: `total_steps` is not an int above the warmup, or the
                schedule already has another length.
        """
        warmup = self.warmup_steps
        if warmup is None:
            total_steps = validation.check_int("total_steps", total_steps)
            warmup = min(2000, total_steps // 10)
        total_steps = validation.check_int("total_steps", total_steps, minimum=warmup + 1)
        if self.total_steps is not None and self.total_steps != total_steps:
            raise ValueError(
                f"This schedule already runs {self.total_steps} steps; received "
                f"total_steps={total_steps}. Make a new schedule for a run of another length."
            )
        self.warmup_steps, self.total_steps = warmup, total_steps
        return self

    def __call__(self, iterations):
        if self.total_steps is None:
            raise ValueError(
                "WarmupCosineSchedule has no `total_steps` yet: pass it (e.g. "
                "gpt_optimizer(total_steps=...)), or train with `fit` on data of known "
                "length: a DecoderOnly or EncoderDecoder sizes it to the run, another "
                "model does with fit(callbacks=[kt.training.ScheduleFromFit(schedule)])."
            )
        step = ops.cast(iterations, "float32") + 1.0
        warmup = step / max(self.warmup_steps, 1)
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
