"""How a forward pass runs: passed explicitly with the caches, read by the layers.

A layer of this package calls each sublayer through `context.call(sublayer, ...)`
and writes its key/value cache with `context.in_place_writes`; it hands the
same `context` to the sublayers of this package it calls. Outside `generate`
the context is `DEFAULT_CONTEXT`: every sublayer through Keras'
`Layer.__call__`, every cache write a new tensor. `generate`'s torch loop
(`generation.compiled.CompiledLoop`) makes its own:

* `direct_calls`: `Layer.__call__` does real work on every call (it converts
  and casts the inputs, opens a name scope and an autocast scope, fills in
  `training`, tracks masks and losses). A compiled program (JAX, TensorFlow)
  pays it once, when traced; PyTorch runs eagerly, and a cached step of a
  small model makes about 26 sublayer calls whose bookkeeping took most of
  the step's time. With `direct_calls` the built sublayers' `call` methods
  run directly: the same code on the same tensors. It is only safe where
  that bookkeeping does nothing: every layer built, inputs tensors of the
  compute dtype, no Keras masks, `training` passed explicitly, no
  autocasting (not a `mixed_*` policy). A quantized layer is always called
  through `__call__`, which routes it to its `quantized_call`. A direct call
  also leaves out torch forward hooks on a sublayer and a sublayer's own
  `__call__` override.
* `in_place_writes`: a torch cache written in place (`index_copy_`) instead of
  copied by `slice_update`, so greedy and sampled decoding hold one cache, not
  a stream of copies. Only safe where no autograd graph can see the buffer
  change (`torch.inference_mode()`, which the loop runs under).
* `compiled_pass`: with `model.jit_compile` on torch, one pass of the decode
  loop compiled by `torch.compile`; `generation.compiled.decode_loop` runs it.
"""

import dataclasses
from typing import Callable
from typing import Optional


@dataclasses.dataclass(frozen=True)
class DecodeContext:
    """How sublayers are called and caches written in one forward pass.

    Args:
        direct_calls: call built sublayers' `call` directly, skipping
            `Layer.__call__` (torch's eager decode loop; see the module docstring
            for when that is safe).
        in_place_writes: write torch key/value caches in place (inside
            `torch.inference_mode()` only).
        compiled_pass: the compiled pass of a torch decode loop, or None (the
            loop runs eagerly, or is compiled as a whole on JAX and TensorFlow).

    Example:
    >>> import keras
    >>> dense = keras.layers.Dense(3)
    >>> dense.build((None, 4))
    >>> direct = DecodeContext(direct_calls=True)
    >>> tuple(direct.call(dense, keras.ops.ones((2, 4))).shape)
    (2, 3)
    """

    direct_calls: bool = False
    in_place_writes: bool = False
    compiled_pass: Optional[Callable] = None

    def call(self, layer, *args, **kwargs):
        """`layer(*args, **kwargs)`, or with `direct_calls` `layer.call(*args, **kwargs)`.

        Args:
            layer: a built Keras layer.
            *args: its call arguments.
            **kwargs: its call keyword arguments.
        """
        if self.direct_calls and layer.quantization_mode is None:
            return layer.call(*args, **kwargs)
        return layer(*args, **kwargs)


DEFAULT_CONTEXT = DecodeContext()
"""Every call outside `generate`'s torch loop: through `Layer.__call__`, caches copied."""


def context_or_default(context):
    """`context`, or `DEFAULT_CONTEXT` for None (a layer called without one).

    Args:
        context: a `DecodeContext` or None.

    Raises:
        ValueError: `context` is something else.
    """
    if context is None:
        return DEFAULT_CONTEXT
    if not isinstance(context, DecodeContext):
        raise ValueError(
            "`context` must be a keras_transformer.layers.DecodeContext (an instance) or "
            f"None; received {context!r}."
        )
    return context
