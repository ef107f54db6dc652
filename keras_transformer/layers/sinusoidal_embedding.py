"""Fixed sin/cos position signals of the 2017 Transformer."""

import keras
from keras import ops

from keras_transformer import validation

LAYOUTS = ("interleaved", "concatenated")


@keras.saving.register_keras_serializable(package="keras_transformer")
class SinusoidalEmbedding(keras.layers.Layer):
    """Sinusoidal position signals: no weights, any length, any start offset.

    The paper's layout interleaves the pair of each frequency:
    `PE[pos, 2i] = sin(pos / max_wavelength^(2i/d))` and
    `PE[pos, 2i+1] = cos(pos / max_wavelength^(2i/d))`.
    fairseq and tensor2tensor concatenate `[sin | cos]` instead; choose
    `layout="concatenated"` to match their weights. Moving k positions rotates
    every (sin, cos) pair by an angle that depends on k alone, which is why the
    paper expected the model to attend by relative position.

    Args:
        max_wavelength: the base of the geometric progression of wavelengths
            (10,000 in the paper).
        layout: `"interleaved"` (paper) or `"concatenated"` (fairseq/t2t).
        **kwargs: base `keras.layers.Layer` arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: embeddings `(batch, T, d_model)`; only their shape is used.
        start_index: absolute position of the first row (an int or a scalar
            tensor), used when decoding one cached step at a time.

    Returns:
        The signals broadcast to the shape of `inputs`, in the compute dtype.

    Example:
    >>> import numpy as np
    >>> layer = SinusoidalEmbedding()
    >>> tuple(layer(np.zeros((2, 5, 16))).shape)
    (2, 5, 16)
    """

    def __init__(self, max_wavelength=10000.0, layout="interleaved", **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = validation.check_positive_float(
            "max_wavelength", max_wavelength
        )
        self.layout = validation.check_choice("layout", layout, LAYOUTS)

    def build(self, inputs_shape):
        d_model = inputs_shape[-1]
        if d_model is None or d_model % 2:
            raise ValueError(
                "SinusoidalEmbedding needs an even, known last dimension "
                f"(d_model); received input shape {inputs_shape}."
            )
        self.built = True

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        length, d_model = shape[-2], shape[-1]
        positions = ops.cast(ops.arange(length) + start_index, "float32")
        # One frequency per (sin, cos) pair: 1 / max_wavelength^(2i/d).
        pair = ops.cast(ops.arange(d_model // 2), "float32")
        inverse_frequency = ops.power(
            self.max_wavelength, -2.0 * pair / ops.cast(d_model, "float32")
        )
        angles = positions[:, None] * inverse_frequency[None, :]  # (T, d/2)
        sin, cos = ops.sin(angles), ops.cos(angles)
        if self.layout == "interleaved":
            table = ops.reshape(ops.stack([sin, cos], axis=-1), (length, d_model))
        else:
            table = ops.concatenate([sin, cos], axis=-1)  # (T, d)
        return ops.broadcast_to(ops.cast(table, self.compute_dtype), shape)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(max_wavelength=self.max_wavelength, layout=self.layout)
        return config
