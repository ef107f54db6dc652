"""Metrics over real tokens: accuracy and perplexity that skip padding."""

import keras
from keras import ops

from keras_transformer import validation
from keras_transformer.training.label_smoothed_cross_entropy import token_nll


class _MaskedTokenMean(keras.metrics.Metric):
    """Running mean of a per-token quantity over the tokens whose label is not `pad_id`."""

    def __init__(self, pad_id=0, name=None, dtype="float32"):
        super().__init__(name=name, dtype=dtype)
        self.pad_id = validation.check_int("pad_id", pad_id, minimum=0, allow_none=True)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def per_token(self, labels, logits):
        raise NotImplementedError

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels = ops.cast(y_true, "int32")
        values = self.per_token(labels, ops.cast(y_pred, "float32"))  # (B, T)
        weights = ops.ones_like(values)
        if self.pad_id is not None:
            weights = ops.cast(ops.not_equal(labels, self.pad_id), "float32")
        if sample_weight is not None:
            weights = weights * ops.cast(sample_weight, "float32")
        self.total.assign_add(ops.sum(values * weights))
        self.count.assign_add(ops.sum(weights))

    def mean(self):
        return ops.divide_no_nan(self.total, self.count)

    def result(self):
        return self.mean()

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, "pad_id": self.pad_id}


@keras.saving.register_keras_serializable(package="keras_transformer")
class MaskedAccuracy(_MaskedTokenMean):
    """Fraction of real (non-pad) tokens whose argmax prediction is the label.

    Args:
        pad_id: label id to skip, or None.
        name: metric name.
        dtype: dtype of the running totals (float32).

    Example:
    >>> import numpy as np
    >>> metric = MaskedAccuracy(pad_id=0)
    >>> logits = np.eye(4, dtype="float32")[None, [1, 2, 0]]  # predicts 1, 2, 0
    >>> metric.update_state(np.array([[1, 3, 0]]), logits)
    >>> float(metric.result())
    0.5
    """

    def __init__(self, pad_id=0, name="masked_accuracy", dtype="float32"):
        super().__init__(pad_id=pad_id, name=name, dtype=dtype)

    def per_token(self, labels, logits):
        predicted = ops.argmax(logits, axis=-1)
        return ops.cast(ops.equal(ops.cast(predicted, "int32"), labels), "float32")


@keras.saving.register_keras_serializable(package="keras_transformer")
class Perplexity(_MaskedTokenMean):
    """`exp(mean negative log-likelihood)` over the real tokens seen so far.

    Args:
        pad_id: label id to skip, or None.
        name: metric name.
        dtype: dtype of the running totals (float32).

    Example:
    >>> import numpy as np
    >>> metric = Perplexity(pad_id=0)
    >>> metric.update_state(np.array([[1, 2, 0]]), np.zeros((1, 3, 4), "float32"))
    >>> round(float(metric.result()), 4)  # uniform over 4 tokens
    4.0
    """

    def __init__(self, pad_id=0, name="perplexity", dtype="float32"):
        super().__init__(pad_id=pad_id, name=name, dtype=dtype)

    def per_token(self, labels, logits):
        return token_nll(labels, logits)

    def result(self):
        return ops.exp(self.mean())
