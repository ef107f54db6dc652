"""Compiling a decode loop for the current backend, and running it without autograd.

The one place in the generation package that imports a backend framework, and
only lazily: XLA through `jax.jit` on JAX, `tf.function(jit_compile=True)` on
TensorFlow.

The function compiled takes, as its first argument, the `DecodeContext` its
forward passes run with (`layers.decode_context`): on JAX and TensorFlow the
default one, bound when it is traced. PyTorch runs the loop under `torch.inference_mode()`, so that no
step keeps its inputs alive for a backward pass that never comes, with a
context whose layers call their sublayers directly (`direct_calls`, which
leaves out the per-call bookkeeping of Keras' `Layer.__call__`) and write
their caches in place (`in_place_writes`). How each step runs follows Keras'
convention for torch, `model.jit_compile`:

* False (`"auto"`, the default on torch): eagerly, the position a Python int
  (`decode_loop`). Nothing to compile; what remains per step is the Python
  cost of dispatching `keras.ops`.
* True (`model.compile(jit_compile=True)` or `model.jit_compile = True`):
  each pass of the loop (one token: the model's cached step, the sampler or
  the beam update, the stop test) is one graph compiled by `torch.compile`
  (inductor, its default backend, as Keras compiles a torch train step),
  the position a 0-d tensor, so that the graph serves every position, seed
  and prompt length of a setting. The prefill and the loop's first test
  stay eager. Compiling takes seconds (about 17 s for the tiny benchmark
  model on a 2-core CPU), which pays off over many tokens and calls.
  A model with float8 or int8 layers, or layers that quantize their
  activations, decodes eagerly all the same, with a warning
  (`untraceable_layers`).
"""

import contextlib
import types
import warnings

import keras
from keras import ops

from keras_transformer.layers.decode_context import DEFAULT_CONTEXT
from keras_transformer.layers.decode_context import DecodeContext

INDUCTOR_OPTIONS = {"cpp.vec_isa_ok": False}
"""Inductor settings of the compiled torch decode step: no SIMD in its CPU kernels.

Inductor's vectorized CPU code for the sampler's fused kernel (the int32 noise hash,
the Gumbel logs and the argmax in one loop) corrupts memory in torch 2.13.0 (the
version tested):
`SystemError: <built-in function kernel> returned a result with an exception set`
when the sampler is compiled alone, a segmentation fault inside the decode loop
(`tests/generation/test_torch_compiled_decode.py` reaches it through the loop). Scalar CPU
kernels compute the same, for every setting (greedy and beam search too, whose speed on
a CPU this may lower); CUDA kernels (Triton) do not read this setting.
"""


def untraceable_layers(model):
    """What in `model` `torch.compile` cannot trace in one graph: `["float8", "int8",
    "int4 (activations quantized)"]` or a part of it, empty for a model it can.

    Dynamo (torch 2.13.0) stops inside Keras' (3.15.1) float8 and int8 layers, and in any
    quantized layer that quantizes its activations on every call (an `inputs_quantizer`, as
    int4 has when asked): `ops.max` reads `getattr(result, "values", None)` off a tensor
    (`abs_max_quantize`; float8's amax history), float8's `quantize_and_dequantize` compares
    `ml_dtypes` dtypes ("Dynamo cannot determine the equality comparison"), and int8 fails
    even without an activation quantizer. The decode pass is compiled with `fullgraph=True`,
    so such a model's `generate` failed with Dynamo's "Observed exception" or "Unsupported
    hasattr call"; it decodes eagerly instead, the same tokens. int4 (Keras' default: weights
    only), GPTQ and AWQ layers compile (tests/generation/test_torch_compiled_decode.py).

    Args:
        model: a Keras model.

    Returns:
        The sorted kinds of such layers.
    """
    kinds = set()
    for layer in model._flatten_layers():
        mode = layer.quantization_mode
        if mode in ("float8", "int8"):
            kinds.add(mode)
        elif mode and getattr(layer, "inputs_quantizer", None):
            kinds.add(f"{mode} (activations quantized)")
    return sorted(kinds)



class CompiledLoop:
    """`fn(context, *tensors)` compiled for the backend; `traces` counts its compilations.

    On JAX the model's variables are passed to the compiled function as
    arguments (through a `keras.StatelessScope`) instead of being baked in as
    constants, so compilation stays fast and weights can change. On torch the
    function runs eagerly, with direct sublayer calls unless the model's dtype
    policy autocasts (`mixed_*`; quantized sublayers keep `__call__` too);
    with `model.jit_compile` its decode loop's pass is compiled (see the
    module docstring), unless the model has layers `untraceable_layers`
    names. There `traces` counts 1 for the eager function (built
    once) if it ran, plus each graph `torch.compile` made of the loop's pass:
    one per setting, whatever the seed or prompt lengths.

    Args:
        model: the Keras model whose variables `fn` reads.
        fn: `fn(context, *tensors)`: a `DecodeContext`, then tensors only (shapes
            and settings are fixed in it).
    """

    def __init__(self, model, fn):
        self.backend = keras.backend.backend()
        self.traces = 0

        def traced(*args):
            self.traces += 1  # runs once per trace on JAX and TensorFlow
            return fn(DEFAULT_CONTEXT, *args)

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
            self._model, self._fn = model, fn
            self._ran_eagerly = False
            self._iterate = None  # the compiled loop pass, made on the first compiled run
            self._run = self._run_torch

    def __call__(self, *args):
        with no_autograd():
            return self._run(*args)

    def _run_torch(self, *args):
        iterate = None
        compile_pass = self._model.jit_compile  # read per call, as Keras' fit does
        untraceable = untraceable_layers(self._model) if compile_pass else ()  # per call too
        if untraceable:
            compile_pass = False
            warnings.warn(
                f"generate decodes eagerly on torch despite jit_compile=True: torch.compile "
                f"cannot trace Keras' {' and '.join(untraceable)} layers in one graph",
                RuntimeWarning, stacklevel=5)
        if compile_pass:
            iterate = self._compiled_iteration()
        elif not self._ran_eagerly:
            self._ran_eagerly = True
            self.traces += 1
        policy = self._model.dtype_policy  # read per call: a policy can change
        context = DecodeContext(
            direct_calls=policy.compute_dtype == policy.variable_dtype,  # nothing to autocast
            in_place_writes=True,  # under inference mode (`__call__`)
            compiled_pass=iterate,
        )
        return self._fn(context, *args)

    def _compiled_iteration(self):
        if self._iterate is None:
            import torch

            def counting_inductor(graph, example_inputs):
                self.traces += 1  # Dynamo hands its backend each graph it makes, once
                return torch._inductor.compile(graph, example_inputs, options=INDUCTOR_OPTIONS)

            # Its own code object: Dynamo keeps compiled graphs, and counts recompilations
            # against its limit, per code object; so each setting gets its own budget.
            self._iterate = torch.compile(
                _own_code(_iteration), backend=counting_inductor, fullgraph=True, dynamic=False
            )
        return self._iterate


class CompiledLoops:
    """A model's compiled decode loops, one per `DecodeSettings`: `generate`'s compile cache.

    Each model has one, `model.compiled_loops`. A loop is compiled the first time
    `generate` runs with its settings and reused after, for every seed and
    prompt width of its bucket. The loops capture the model's variables: after
    `quantize` or `enable_lora` (new variables) the model clears them.

    Args:
        model: the model whose loops these are.

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> gpt = kt.DecoderOnly.from_preset("gpt2_tiny")
    >>> _ = gpt.generate(np.array([[5, 6, 7]]), max_new_tokens=2)
    >>> [(s.batch, s.input_length, s.length) for s in gpt.compiled_loops.settings()]
    [(1, 8, 10)]
    >>> gpt.compiled_loops.clear()
    >>> gpt.compiled_loops.compilations()
    0
    """

    def __init__(self, model):
        self._model = model
        self._loops = {}

    def get(self, settings, build):
        """The loop of `settings`, compiled from `build(settings)` on first use.

        Args:
            settings: a `DecodeSettings` (hashable).
            build: `build(settings) -> fn(context, *tensors)`, the loop to compile.

        Returns:
            A `CompiledLoop`.
        """
        if settings not in self._loops:
            self._loops[settings] = CompiledLoop(self._model, build(settings))
        return self._loops[settings]

    def settings(self):
        """The `DecodeSettings` of the loops kept, in the order they were made."""
        return list(self._loops)

    def compilations(self):
        """How many times the kept loops were compiled (traced) so far."""
        return sum(loop.traces for loop in self._loops.values())

    def clear(self):
        """Forgets every loop: the next `generate` compiles afresh."""
        self._loops.clear()


def _iteration(body, cond, state):
    """One pass of a decode loop: the next state, and whether to go on."""
    state = tuple(body(*state))
    return state, cond(*state)


def _own_code(function):
    """A copy of `function` with a code object of its own."""
    return types.FunctionType(function.__code__.replace(), function.__globals__,
                              function.__name__, function.__defaults__, function.__closure__)


def decode_loop(cond, body, state, context=DEFAULT_CONTEXT):
    """`keras.ops.while_loop(cond, body, state)` for a loop whose first variable is the
    position it fills.

    On JAX and TensorFlow this is `ops.while_loop` (compiled). On torch, run
    eagerly, the position stays a Python int instead of becoming a tensor:
    slicing the buffers, the caches and the position table at a host int is a
    view, while at a tensor each slice reads the index back from the device.
    With a `context` whose `compiled_pass` is set (a `CompiledLoop` run with
    `model.jit_compile`), each pass
    (`body`, then `cond`) is one compiled graph, the position a 0-d tensor,
    and only the go-on flag comes back to the host per step. The loop
    computes the same either way. The first state must not share tensors
    with what `body` reads otherwise (Dynamo would guard on that aliasing
    and compile a second graph for the later steps).

    Args:
        cond: `cond(*state) -> bool scalar`.
        body: `body(*state) -> new state` (same structure).
        state: a tuple whose first element is the int32 scalar position.
        context: the `DecodeContext` the `CompiledLoop` passed its function.

    Returns:
        The final state (its position a Python int on eager torch, a tensor elsewhere).

    Example:
    >>> from keras import ops
    >>> state = decode_loop(lambda i, total: i < 4, lambda i, total: (i + 1, total + i),
    ...                     (ops.convert_to_tensor(1), ops.convert_to_tensor(0)))
    >>> int(ops.convert_to_numpy(state[1]))
    6
    """
    if keras.backend.backend() != "torch":
        return ops.while_loop(cond, body, state)
    iterate = context.compiled_pass
    if iterate is not None:  # a compiled torch loop: the position stays a tensor
        state = tuple(keras.tree.map_structure(_like_pass_output, tuple(state)))
        go = cond(*state)
        while bool(go):
            state, go = iterate(body, cond, state)
        return state
    index, *rest = state
    state = (int(ops.convert_to_numpy(index)), *rest)
    while bool(ops.convert_to_numpy(cond(*state))):
        state = tuple(body(*state))
    return state


def _like_pass_output(x):
    """`x` as the compiled pass returns its state: a contiguous inference tensor.

    Dynamo guards on each input's strides and on whether it is an inference
    tensor; a first state made of views or of tensors from outside inference
    mode (the loop's inputs) would otherwise compile a second graph.
    """
    import torch

    if isinstance(x, torch.Tensor) and not (x.is_inference() and x.is_contiguous()):
        return x.clone(memory_format=torch.contiguous_format)
    return x


def no_autograd():
    """`torch.inference_mode()` on torch (no graph kept for a backward pass); else a no-op."""
    if keras.backend.backend() == "torch":
        import torch

        return torch.inference_mode()
    return contextlib.nullcontext()

