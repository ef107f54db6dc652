"""Compiling a decode function for the current backend.

The one place in the library that imports a backend framework, and only
lazily: XLA through `jax.jit` on JAX, `tf.function(jit_compile=True)` on
TensorFlow. PyTorch runs the loop eagerly: each step is a handful of large
kernels, and `torch.compile` of a loop whose cache index changes every step
recompiles rather than helping.
"""

import keras


def compile_for_backend(model, fn):
    """`fn(*tensors)`, compiled once per input shape for the current backend.

    On JAX the model's variables are passed to the compiled function as
    arguments (through a `keras.StatelessScope`) instead of being baked in
    as constants, so compilation stays fast and weights can change.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        variables = list(model.variables)

        @jax.jit
        def stateless(values, *args):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return fn(*args)

        return lambda *args: stateless([v.value for v in variables], *args)
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    return fn
