"""Compiling a decode loop for the current backend, and running it without autograd.

The one place in the generation package that imports a backend framework, and
only lazily: XLA through `jax.jit` on JAX, `tf.function(jit_compile=True)` on
TensorFlow. PyTorch runs the loop eagerly under `torch.inference_mode()`, so
that no step keeps its inputs alive for a backward pass that never comes, and
with the model's layers calling their sublayers directly
(`layers.sublayer_call`), which leaves out the per-call bookkeeping of Keras'
`Layer.__call__` that dominated a small model's step.
"""

import contextlib

import keras
from keras import ops

from keras_transformer.layers import sublayer_call


class CompiledLoop:
    """`fn(*tensors)` compiled for the backend; `traces` counts its compilations.

    On JAX the model's variables are passed to the compiled function as
    arguments (through a `keras.StatelessScope`) instead of being baked in as
    constants, so compilation stays fast and weights can change. On torch the
    function runs eagerly (built once: `traces` is 1), with direct sublayer
    calls unless the model's dtype policy autocasts (`mixed_*`; quantized
    sublayers keep `__call__` too).

    Args:
        model: the Keras model whose variables `fn` reads.
        fn: a function of tensors only (shapes and settings are fixed in it).
    """

    def __init__(self, model, fn):
        self.backend = keras.backend.backend()
        self.traces = 0

        def traced(*args):
            self.traces += 1  # runs once per trace on JAX and TensorFlow
            return fn(*args)

        if self.backend == "jax":
            import jax

            variables = list(model.variables)

            @jax.jit
            def stateless(values, *args):
                with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                    return traced(*args)

            self._run = lambda *args: stateless([v.value for v in variables], *args)
        elif self.backend == "tensorflow":
            import tensorflow as tf

            self._run = tf.function(traced, jit_compile=True, reduce_retracing=False)
        else:
            self.traces = 1

            def eager(*args):
                policy = model.dtype_policy  # read per call: a policy can change
                direct = policy.compute_dtype == policy.variable_dtype  # nothing to autocast
                with sublayer_call.direct_calls(direct):
                    return fn(*args)

            self._run = eager

    def __call__(self, *args):
        with no_autograd():
            return self._run(*args)


def decode_loop(cond, body, state):
    """`keras.ops.while_loop(cond, body, state)` for a loop whose first variable is the
    position it fills.

    On JAX and TensorFlow this is `ops.while_loop` (compiled). On torch, which
    runs the loop eagerly, the position stays a Python int instead of becoming
    a tensor: slicing the buffers, the caches and the position table at a host
    int is a view, while at a tensor each slice reads the index back from the
    device. The loop computes the same either way.

    Args:
        cond: `cond(*state) -> bool scalar`.
        body: `body(*state) -> new state` (same structure).
        state: a tuple whose first element is the int32 scalar position.

    Returns:
        The final state (its position a Python int on torch, a tensor elsewhere).

    Example:
    >>> from keras import ops
    >>> state = decode_loop(lambda i, total: i < 4, lambda i, total: (i + 1, total + i),
    ...                     (ops.convert_to_tensor(1), ops.convert_to_tensor(0)))
    >>> int(ops.convert_to_numpy(state[1]))
    6
    """
    if keras.backend.backend() != "torch":
        return ops.while_loop(cond, body, state)
    index, *rest = state
    state = (int(ops.convert_to_numpy(index)), *rest)
    while bool(ops.convert_to_numpy(cond(*state))):
        state = tuple(body(*state))
    return state


def no_autograd():
    """`torch.inference_mode()` on torch (no graph kept for a backward pass); else a no-op."""
    if keras.backend.backend() == "torch":
        import torch

        return torch.inference_mode()
    return contextlib.nullcontext()

