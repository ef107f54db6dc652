"""Rematerializing a layer that takes keyword arguments and draws dropout masks.

Keras 3.15 rematerializes a layer built inside a `keras.RematScope` that
names it: the layer's `__call__` wraps its `call` in `keras.remat`
(`jax.checkpoint`, `tf.recompute_grad`, `torch.utils.checkpoint`), which
recomputes the call's activations in the backward pass instead of storing
them. Keras passes every call argument through that wrapper, and for a
Transformer block this fails or goes wrong (probed with Keras 3.15.1):

* JAX traces every argument: `training=True` becomes a tracer and `if
  training` raises ("Attempted boolean conversion");
* TensorFlow's `custom_gradient` takes no keyword arguments in a graph, and
  asks for a gradient of every argument (a bool mask has none);
* dropout draws its mask from a `SeedGenerator`, whose state variable the
  forward pass advances. Under JAX the advanced state is a tracer of the
  checkpointed function that escapes it (`UnexpectedTracerError`); under
  TensorFlow the recomputation would read the advanced state and draw another
  mask than the forward pass did, so the gradient would not be the forward
  pass's. (PyTorch draws an unseeded `Dropout`'s mask from torch's own
  generator, which `torch.utils.checkpoint` restores.)

`rematerialized` passes only the floating-point tensors through
`keras.remat` (they need gradients) and closes over the rest, and it makes
the recomputation draw the forward pass's dropout masks: the checkpointed
function first sets each seed state to its value before the call, and hands
back the advanced states, which are assigned outside it.
"""

import keras
from keras import ops

SEED_STATE_NAME = "seed_generator_state"
"""The name of a Keras `SeedGenerator`'s state variable."""


def seed_states(layer):
    """The state variables of the `SeedGenerator`s in `layer` and its sublayers.

    Args:
        layer: a Keras layer.

    Example:
    >>> import keras
    >>> len(seed_states(keras.layers.Dropout(0.1))), len(seed_states(keras.layers.Dropout(0.0)))
    (1, 0)
    """
    return [v for v in layer.non_trainable_variables if v.name == SEED_STATE_NAME]


def rematerialized(layer_call, states=()):
    """`layer_call`, recomputed in the backward pass instead of storing its activations.

    Args:
        layer_call: a layer's `call` (tensors, masks, Python values in; a
            tensor or a structure of tensors out).
        states: the seed state variables `layer_call` draws dropout masks from
            (`seed_states(layer)`): the recomputation draws the same masks.

    Returns:
        A function of `layer_call`'s arguments, with the same results.

    Example:
    >>> import keras, numpy as np
    >>> dense = keras.layers.Dense(3)
    >>> x = keras.ops.ones((2, 4))
    >>> plain = dense(x)
    >>> again = rematerialized(dense.call)(x)
    >>> bool(np.allclose(keras.ops.convert_to_numpy(again), keras.ops.convert_to_numpy(plain)))
    True
    """
    states = list(states)

    def call(*args, **kwargs):
        arguments = {**dict(enumerate(args)), **kwargs}
        differentiable = [key for key, value in arguments.items() if _is_float_tensor(value)]
        before = [ops.copy(state.value) for state in states]  # a snapshot, not the variable

        def forward(*tensors):
            for state, value in zip(states, before):
                state.assign(value)
            given = {**arguments, **dict(zip(differentiable, tensors))}
            outputs = layer_call(*(given[i] for i in range(len(args))),
                                 **{key: given[key] for key in kwargs})
            return outputs, [state.value for state in states]

        outputs, after = keras.remat(forward)(*(arguments[key] for key in differentiable))
        for state, value in zip(states, after):
            state.assign(value)
        return outputs

    return call


def _is_float_tensor(value):
    return ops.is_tensor(value) and "float" in keras.backend.standardize_dtype(value.dtype)
