"""Position-wise feed-forward network: Dense(d_ff) -> activation -> Dense(d_model)."""

import functools

import keras

from keras_transformer import validation
from keras_transformer.layers.sublayer_call import invoke

# "gelu" is GPT-2's tanh approximation; "gelu_exact" is the erf form.
ACTIVATIONS = {
    "relu": keras.activations.relu,
    "gelu": functools.partial(keras.activations.gelu, approximate=True),
    "gelu_exact": functools.partial(keras.activations.gelu, approximate=False),
    "silu": keras.activations.silu,
}


@keras.saving.register_keras_serializable(package="keras_transformer")
class FeedForward(keras.layers.Layer):
    """`FFN(x) = act(x W1 + b1) W2 + b2`, applied to every position alike.

    Args:
        d_ff: inner width (paper: 4 x d_model, 2048 for the base model).
        activation: `"relu"` (paper), `"gelu"` (GPT-2, tanh approximation),
            `"gelu_exact"` or `"silu"`.
        use_bias: whether both matrices have biases.
        kernel_initializer: initializer of both kernels.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(batch, T, d_model)`.

    Returns:
        `(batch, T, d_model)`.

    Example:
    >>> import numpy as np
    >>> tuple(FeedForward(d_ff=32, activation="gelu")(np.ones((2, 3, 8))).shape)
    (2, 3, 8)
    """

    def __init__(
        self,
        d_ff,
        activation="relu",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.d_ff = validation.check_int("d_ff", d_ff)
        self.activation = validation.check_choice(
            "activation", activation, tuple(ACTIVATIONS)
        )
        self.use_bias = bool(use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, inputs_shape):
        d_model = inputs_shape[-1]
        dense = functools.partial(
            keras.layers.Dense,
            use_bias=self.use_bias,
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
        )
        self.inner = dense(self.d_ff, name="inner")
        self.inner.build(inputs_shape)
        self.outer = dense(d_model, name="outer")
        self.outer.build(tuple(inputs_shape[:-1]) + (self.d_ff,))
        self.built = True

    def call(self, inputs):
        hidden = ACTIVATIONS[self.activation](invoke(self.inner, inputs))  # (batch, T, d_ff)
        return invoke(self.outer, hidden)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            d_ff=self.d_ff,
            activation=self.activation,
            use_bias=self.use_bias,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
