"""Calling a sublayer: through Keras' `Layer.__call__`, or straight to its `call`.

`Layer.__call__` does real work on every call: it converts and casts the
inputs, opens a name scope and an autocast scope, fills in `training` from
the context, tracks masks and losses. In a compiled program (JAX, TensorFlow)
that costs once, when the program is traced. PyTorch runs eagerly: a cached
decode step of a small model makes about 26 sublayer calls, and their
`__call__` bookkeeping took most of the step's time. Inside `direct_calls()`
the layers of this package, which call their sublayers through `invoke`,
call the built sublayers' `call` methods directly: the same code on the same
tensors, without the bookkeeping.

It is only safe where that bookkeeping does nothing: every layer built,
inputs already tensors of the compute dtype, no Keras masks, `training`
passed explicitly, and no autocasting (the variables are stored in the
compute dtype: `float32`, or `bfloat16` stored as such; not a `mixed_*`
policy). `generate` turns it on for its torch loop under those conditions
(`generation.compiled`). A quantized layer (`model.quantize(...)`) is always
called through `__call__`, which routes it to its `quantized_call`. What a
direct call also leaves out: torch forward hooks registered on a sublayer,
and a sublayer's own `__call__` override.
"""

import contextlib
import threading

_state = threading.local()


def invoke(layer, *args, **kwargs):
    """`layer(*args, **kwargs)`; inside `direct_calls()`, `layer.call(*args, **kwargs)`.

    Args:
        layer: a built Keras layer.
        *args: its call arguments.
        **kwargs: its call keyword arguments.

    Example:
    >>> import keras, numpy as np
    >>> dense = keras.layers.Dense(3)
    >>> x = keras.ops.ones((2, 4))
    >>> through_keras = invoke(dense, x)  # builds the layer
    >>> with direct_calls():
    ...     direct = invoke(dense, x)
    >>> bool(np.allclose(keras.ops.convert_to_numpy(direct),
    ...                  keras.ops.convert_to_numpy(through_keras)))
    True
    """
    if getattr(_state, "direct", False) and layer.quantization_mode is None:
        return layer.call(*args, **kwargs)
    return layer(*args, **kwargs)


@contextlib.contextmanager
def direct_calls(enabled=True):
    """Within this context (in this thread), `invoke` skips `Layer.__call__`.

    Args:
        enabled: False leaves calls as they are (for a caller that decides
            at run time).

    Example:
    >>> import keras
    >>> dense = keras.layers.Dense(3)
    >>> dense.build((None, 4))
    >>> with direct_calls():
    ...     tuple(invoke(dense, keras.ops.ones((2, 4))).shape)
    (2, 3)
    """
    previous = getattr(_state, "direct", False)
    _state.direct = bool(enabled)
    try:
        yield
    finally:
        _state.direct = previous
