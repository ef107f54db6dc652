"""The 2017 paper's learning rate: linear warmup, then decay with 1/sqrt(step)."""

import keras
from keras import ops

from keras_transformer import validation


@keras.saving.register_keras_serializable(package="keras_transformer")
class InverseSqrtSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """`lr(step) = scale * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)`.

    The rate rises linearly for `warmup_steps` steps, peaks at
    `scale * (d_model * warmup_steps)^-0.5`, then falls as `1/sqrt(step)`.
    Deep post-LN models need this warmup; without it their early updates blow
    up the un-normalized residual branches.

    Steps count from 1, as in the paper: Keras passes the optimizer's
    `iterations` (0 before the first update), so the first update uses
    `step = iterations + 1 = 1`.

    Args:
        d_model: the model width the paper scales by.
        warmup_steps: length of the linear warmup (paper: 4,000).
        scale: a constant factor on the whole curve (default 1).

    Example:
    >>> schedule = InverseSqrtSchedule(d_model=512, warmup_steps=4000)
    >>> f"{float(schedule(3999)):.6f}"  # the peak, at step 4000
    '0.000699'
    """

    def __init__(self, d_model, warmup_steps=4000, scale=1.0):
        self.d_model = validation.check_int("d_model", d_model)
        self.warmup_steps = validation.check_int("warmup_steps", warmup_steps)
        self.scale = validation.check_positive_float("scale", scale)

    def __call__(self, iterations):
        step = ops.cast(iterations, "float32") + 1.0
        warmup = ops.cast(self.warmup_steps, "float32")
        rate = ops.minimum(ops.rsqrt(step), step * warmup**-1.5)
        return self.scale * self.d_model**-0.5 * rate

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "scale": self.scale}
