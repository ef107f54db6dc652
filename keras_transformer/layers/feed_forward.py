"""Position-wise feed-forward network: plain (2017, GPT) or gated (LLaMA)."""

import functools

import keras

from keras_transformer import validation
from keras_transformer.layers.clone_initializer import clone_initializer
from keras_transformer.layers.decode_context import context_or_default

# "gelu" is GPT-2's tanh approximation; "gelu_exact" is the erf form.
ACTIVATIONS = {
    "relu": keras.activations.relu,
    "gelu": functools.partial(keras.activations.gelu, approximate=True),
    "gelu_exact": functools.partial(keras.activations.gelu, approximate=False),
    "silu": keras.activations.silu,
}
# Feed-forward kinds: the plain MLP, and the gated units of Shazeer (2020), named
# after the gate's activation (SwiGLU: silu, LLaMA; GEGLU: the exact gelu).
KINDS = ("mlp", "swiglu", "geglu")
_GATES = {"swiglu": "silu", "geglu": "gelu_exact"}


@keras.saving.register_keras_serializable(package="keras_transformer")
class FeedForward(keras.layers.Layer):
    """`FFN(x) = act(x W1 + b1) W2 + b2`, or its gated form, at every position alike.

    * `kind="mlp"` (2017 paper, GPT): `act(x W_in + b) W_out + b`.
    * `kind="swiglu"` / `"geglu"` (Shazeer 2020; LLaMA uses SwiGLU): a third
      matrix gates the inner activations, `(g(x W_gate) * x W_in) W_out` with
      g = silu or the exact gelu. At the same `d_ff` it has 1.5x the weights;
      LLaMA shrinks `d_ff` to about `8/3 d_model` to keep the count.

    Args:
        d_ff: inner width (paper: 4 x d_model, 2048 for the base model).
        activation: the `"mlp"` activation: `"relu"` (paper), `"gelu"`
            (GPT-2, tanh approximation), `"gelu_exact"` or `"silu"`. The
            gated kinds use their own gate activation.
        kind: `"mlp"`, `"swiglu"` or `"geglu"`.
        use_bias: whether the matrices have biases.
        kernel_initializer: initializer of the `inner` and `gate` kernels
            (each draws its own values: `clone_initializer`).
        output_kernel_initializer: initializer of the `outer` kernel, which
            writes into the residual stream (GPT-2 scales it down with
            depth); None: `kernel_initializer`.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: `(batch, T, d_model)`.
        context: a `DecodeContext` (how the sublayers are called); None:
            `DEFAULT_CONTEXT`.

    Returns:
        `(batch, T, d_model)`.

    Example:
    >>> import numpy as np
    >>> tuple(FeedForward(d_ff=32, activation="gelu")(np.ones((2, 3, 8))).shape)
    (2, 3, 8)
    >>> FeedForward(d_ff=32, kind="swiglu", use_bias=False)(np.ones((2, 3, 8))).shape[-1]
    8
    """

    def __init__(
        self,
        d_ff,
        activation="relu",
        kind="mlp",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        output_kernel_initializer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.d_ff = validation.check_int("d_ff", d_ff)
        self.kind = validation.check_choice("kind", kind, KINDS)
        self.activation = validation.check_choice(
            "activation", activation, tuple(ACTIVATIONS)
        )
        self.use_bias = bool(use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.output_kernel_initializer = keras.initializers.get(
            output_kernel_initializer or self.kernel_initializer
        )

    def _dense(self, units, name, initializer):
        return keras.layers.Dense(
            units,
            use_bias=self.use_bias,
            kernel_initializer=clone_initializer(initializer, name),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, inputs_shape):
        d_model = inputs_shape[-1]
        self.inner = self._dense(self.d_ff, "inner", self.kernel_initializer)
        self.inner.build(inputs_shape)
        if self.kind != "mlp":
            self.gate = self._dense(self.d_ff, "gate", self.kernel_initializer)
            self.gate.build(inputs_shape)
        self.outer = self._dense(d_model, "outer", self.output_kernel_initializer)
        self.outer.build(tuple(inputs_shape[:-1]) + (self.d_ff,))
        self.built = True

    def call(self, inputs, context=None):
        context = context_or_default(context)
        hidden = context.call(self.inner, inputs)  # (batch, T, d_ff)
        if self.kind == "mlp":
            hidden = ACTIVATIONS[self.activation](hidden)
        else:
            hidden = ACTIVATIONS[_GATES[self.kind]](context.call(self.gate, inputs)) * hidden
        return context.call(self.outer, hidden)

    def compute_output_shape(self, inputs_shape):
        return inputs_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            d_ff=self.d_ff,
            kind=self.kind,
            activation=self.activation,
            use_bias=self.use_bias,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            output_kernel_initializer=keras.initializers.serialize(
                self.output_kernel_initializer
            ),
        )
        return config
