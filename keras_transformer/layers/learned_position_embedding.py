"""A trainable table of position vectors (GPT-2)."""

import keras
from keras import ops

from keras_transformer import validation
from keras_transformer.validation import concrete_value


@keras.saving.register_keras_serializable(package="keras_transformer")
class LearnedPositionEmbedding(keras.layers.Layer):
    """Learned positions: one trainable row per position, `max_length` rows.

    GPT-2 learns 1,024 rows. Unlike sinusoids the table cannot extrapolate, so
    a sequence that does not fit raises `ValueError` instead of being clamped
    (JAX clamps out-of-range gathers silently; this layer slices, checks the
    static length, and checks a concrete `start_index`).

    Args:
        max_length: number of rows (positions) in the table.
        initializer: initializer of the table (GPT-2: normal, stddev 0.01).
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: embeddings `(batch, T, d_model)`; only their shape is used.
        start_index: absolute position of the first row (int or scalar tensor).

    Returns:
        Rows `start_index .. start_index + T - 1` broadcast to `inputs`' shape.

    Example:
    >>> import numpy as np
    >>> layer = LearnedPositionEmbedding(max_length=8)
    >>> tuple(layer(np.zeros((2, 5, 16))).shape)
    (2, 5, 16)
    """

    def __init__(self, max_length, initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.max_length = validation.check_int("max_length", max_length)
        self.initializer = keras.initializers.get(
            initializer or keras.initializers.RandomNormal(stddev=0.01)
        )

    def build(self, inputs_shape):
        self.table = self.add_weight(
            name="table",
            shape=(self.max_length, inputs_shape[-1]),
            initializer=self.initializer,
        )
        self.built = True

    def _check_fits(self, length, start_index):
        if isinstance(start_index, int):
            start = start_index
        else:
            start = concrete_value(start_index)  # None while traced
        if start is not None and int(start) < 0:
            raise ValueError(
                f"`start_index` must be >= 0 (a position in the table); received {int(start)}."
            )
        if isinstance(length, int) and start is not None:
            end = int(start) + length
            if end > self.max_length:
                raise ValueError(
                    f"Sequence of length {length} starting at position {int(start)} "
                    f"needs {end} positions, but the learned position table has "
                    f"max_length={self.max_length} rows. Use shorter inputs or "
                    "a model with a larger `max_length` (or sinusoidal positions)."
                )

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        length = shape[-2]
        self._check_fits(length, start_index)
        table = ops.convert_to_tensor(self.table)
        # A length that is neither a number nor a tensor is a symbolic dimension (JAX's shape
        # polymorphism, as in `model.export`), which a slice cannot bound by the table.
        symbolic = not isinstance(length, int) and not ops.is_tensor(length)
        if isinstance(start_index, int) and not symbolic:
            # A slice: an unknown length past the table raises at run time (TensorFlow).
            rows = ops.slice(table, (start_index, 0), (length, shape[-1]))  # (T, d)
        else:  # a gather, which a traced torch step keeps in its graph (ops.slice reads the
            # start back to the host there)
            positions = ops.arange(length, dtype="int32") + ops.cast(start_index, "int32")
            rows = ops.take(table, positions, axis=0)  # (T, d)
        return ops.broadcast_to(ops.cast(rows, self.compute_dtype), shape)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            max_length=self.max_length,
            initializer=keras.initializers.serialize(self.initializer),
        )
        return config
