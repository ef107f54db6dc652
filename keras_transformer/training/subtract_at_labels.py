"""`values[..., label] -= amount` at each position, without a `(batch, T, vocab)` mask."""

import keras
from keras import ops


def subtract_at_labels(values, labels, amounts):
    """Subtracts `amounts[b, t]` from `values[b, t, labels[b, t]]` and returns the result.

    The label-smoothed loss' gradient needs this once per position. Written as
    `where(arange(V) == labels, ...)` it would build a boolean `(batch, T, vocab)`
    mask on every backend that does not fuse it away (PyTorch, TensorFlow
    without XLA); as a scatter it touches `batch * T` entries only. PyTorch
    scatters in place (`scatter_add_`), because Keras' `scatter_update` there
    first copies the whole tensor; the others use `ops.scatter_update`, which
    XLA and TensorFlow update in place when `values` is not used again.

    Args:
        values: `(batch, T, vocab)` floats, not used by the caller afterwards
            (it may be changed in place).
        labels: int `(batch, T)` class ids.
        amounts: `(batch, T)` floats to subtract.

    Returns:
        `values` with the amounts subtracted at the labels.

    Example:
    >>> import numpy as np
    >>> out = subtract_at_labels(np.zeros((1, 2, 3), "float32"), np.array([[2, 0]]),
    ...                          np.array([[1.0, 0.5]], "float32"))
    >>> ops.convert_to_numpy(out).tolist()
    [[[0.0, 0.0, -1.0], [-0.5, 0.0, 0.0]]]
    """
    values = ops.convert_to_tensor(values)
    labels = ops.cast(labels, "int32")
    amounts = ops.cast(amounts, values.dtype)
    if keras.backend.backend() == "torch":  # Keras' torch scatter_update clones `values`
        return values.scatter_add_(-1, labels.long()[..., None], -amounts[..., None])
    batch, length = ops.shape(labels)[0], ops.shape(labels)[1]
    rows = ops.repeat(ops.arange(batch, dtype="int32"), length)  # (batch * T,)
    columns = ops.tile(ops.arange(length, dtype="int32"), [batch])  # (batch * T,)
    indices = ops.stack([rows, columns, ops.reshape(labels, (-1,))], axis=1)  # (batch * T, 3)
    return ops.scatter_update(values, indices, -ops.reshape(amounts, (-1,)), reduction="add")
