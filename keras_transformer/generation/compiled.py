"""Compiling a decode loop for the current backend, and running it without autograd.

The one place in the generation package that imports a backend framework, and
only lazily: XLA through `jax.jit` on JAX, `tf.function(jit_compile=True)` on
TensorFlow. PyTorch runs the loop eagerly under `torch.inference_mode()`, so
that no step keeps its inputs alive for a backward pass that never comes.
"""

import contextlib

import keras


class CompiledLoop:
    """`fn(*tensors)` compiled for the backend; `traces` counts its compilations.

    On JAX the model's variables are passed to the compiled function as
    arguments (through a `keras.StatelessScope`) instead of being baked in as
    constants, so compilation stays fast and weights can change. On torch the
    function runs eagerly (built once: `traces` is 1).

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
            self._run = fn

    def __call__(self, *args):
        with no_autograd():
            return self._run(*args)


def no_autograd():
    """`torch.inference_mode()` on torch (no graph kept for a backward pass); else a no-op."""
    if keras.backend.backend() == "torch":
        import torch

        return torch.inference_mode()
    return contextlib.nullcontext()

