"""Sparse cross-entropy with label smoothing that skips padding, without a one-hot."""

import keras
from keras import ops

from keras_transformer import validation
from keras_transformer.training.subtract_at_labels import subtract_at_labels

FORMS = ("uniform", "fairseq")
REDUCTIONS = ("mean", "sum", "none")


def token_nll(labels, logits):
    """`-log p(label)` per position `(B, T)` from int labels and logits `(B, T, V)`."""
    return smoothed_token_loss(labels, logits, on_label=1.0, per_class=0.0)


def smoothed_token_loss(labels, logits, on_label, per_class):
    """`lse - on_label * logit[label] - per_class * sum_v logit_v` per position, `(B, T)`.

    This is the cross-entropy against the target that puts `on_label +
    per_class` on the label and `per_class` on every other class (its mass
    sums to 1). Its gradient `softmax - on_label * [v == label] - per_class`
    is written by hand, so backpropagation keeps one `(B, T, V)` tensor (the
    softmax, turned into the gradient) and never a one-hot, boolean or float,
    or a log-probability tensor: the label term is a scatter over the `B * T`
    labels (`subtract_at_labels`).
    """
    labels = ops.cast(labels, "int32")[..., None]  # (B, T, 1)

    @ops.custom_gradient
    def loss(x):
        lse = ops.logsumexp(x, axis=-1)  # (B, T)
        picked = ops.squeeze(ops.take_along_axis(x, labels, axis=-1), axis=-1)
        value = lse - on_label * picked
        if per_class:
            value = value - per_class * ops.sum(x, axis=-1)

        def grad(*args, upstream=None):
            upstream = args[0] if upstream is None else upstream  # (B, T)
            probs = ops.exp(x - lse[..., None])  # (B, T, V)
            gradient = (probs - per_class) * upstream[..., None]  # (B, T, V)
            return subtract_at_labels(gradient, labels[..., 0], on_label * upstream)

        return value, grad

    return loss(logits)


@keras.saving.register_keras_serializable(package="keras_transformer")
class LabelSmoothedCrossEntropy(keras.losses.Loss):
    """Token-level cross-entropy from logits, label-smoothed, padding ignored.

    The log-softmax is taken once, in float32 (also under `mixed_bfloat16`),
    and the smoothed target is never built as a `(batch, T, vocab)` one-hot:
        * `form="uniform"` (default; Szegedy et al.'s definition, Keras'
          `CategoricalCrossentropy(label_smoothing=)`): the target spreads
          `eps` uniformly over all V classes, so
          `loss = (1 - eps) * nll + eps * mean_v(-log p_v)`;
        * `form="fairseq"` (fairseq, tensor2tensor): the true class keeps
          `1 - eps` and the other V - 1 classes share `eps`, so
          `loss = (1 - eps - eps/(V-1)) * nll + eps/(V-1) * sum_v(-log p_v)`.
    Positions whose label is `pad_id` get zero weight; `"mean"` averages over
    the real tokens of the batch (the unit the paper's loss curves use).

    Args:
        label_smoothing: eps in [0, 1) (paper: 0.1).
        pad_id: label id to ignore, or None to count every position.
        form: `"uniform"` or `"fairseq"`, as above.
        reduction: `"mean"` over real tokens, `"sum"`, or `"none"` (per token).
        name: loss name.

    Call arguments:
        y_true: int labels `(batch, T)`.
        y_pred: logits `(batch, T, vocab)`.
        sample_weight: optional weights broadcastable to `(batch, T)`.

    Example:
    >>> import numpy as np
    >>> loss = LabelSmoothedCrossEntropy(label_smoothing=0.0, pad_id=0)
    >>> logits = np.zeros((1, 3, 4), "float32")  # uniform: -log(1/4) each
    >>> round(float(loss(np.array([[2, 3, 0]]), logits)), 4)
    1.3863
    """

    def __init__(
        self, label_smoothing=0.1, pad_id=0, form="uniform", reduction="mean",
        name="label_smoothed_cross_entropy",
    ):
        super().__init__(name=name, reduction=None, dtype="float32")
        self.label_smoothing = validation.check_rate("label_smoothing", label_smoothing)
        self.pad_id = validation.check_int("pad_id", pad_id, minimum=0, allow_none=True)
        self.form = validation.check_choice("form", form, FORMS)
        self.reduction = validation.check_choice("reduction", reduction, REDUCTIONS)

    def call(self, y_true, y_pred):
        """Per-token smoothed loss `(batch, T)`, float32, padding not yet zeroed.

        Both forms are `lse - on_label * logit[label] - per_class * sum_v logit_v`
        (see `smoothed_token_loss`): uniform puts `per_class = eps / V` on every
        class, fairseq `eps / (V - 1)` on the others only.
        """
        logits = ops.cast(y_pred, "float32")  # (B, T, V)
        eps = self.label_smoothing
        if self.form == "uniform":
            per_class = eps / ops.shape(logits)[-1]
            on_label = 1.0 - eps
        else:
            per_class = eps / (ops.shape(logits)[-1] - 1)
            on_label = 1.0 - eps - per_class
        return smoothed_token_loss(y_true, logits, on_label, per_class)

    def __call__(self, y_true, y_pred, sample_weight=None):
        per_token = self.call(y_true, y_pred)  # (B, T)
        weights = ops.ones_like(per_token)
        if self.pad_id is not None:
            weights = ops.cast(ops.not_equal(y_true, self.pad_id), "float32")
        if sample_weight is not None:
            weights = weights * ops.cast(sample_weight, "float32")
        weighted = per_token * weights
        if self.reduction == "none":
            return weighted
        total = ops.sum(weighted)
        if self.reduction == "sum":
            return total
        return total / ops.maximum(ops.sum(weights), 1.0)

    def get_config(self):
        return {
            "name": self.name,
            "label_smoothing": self.label_smoothing,
            "pad_id": self.pad_id,
            "form": self.form,
            "reduction": self.reduction,
        }
