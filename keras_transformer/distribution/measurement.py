"""The measured memory of a training step: XLA's buffer assignment for Keras' compiled step.

`step_memory(model, x, y)` compiles the step `model.fit` and
`model.train_on_batch` run under JAX, as Keras' JAX trainer compiles it
(`jax.jit(model.train_step, donate_argnums=0, out_shardings=...)` over the
model's state and the batch laid out by the current distribution), and
reads XLA's memory analysis of the compiled program: for a sharded step,
the program one device runs. Nothing is executed and no weight changes.

The peak is the arguments (weights, optimizer variables, metrics, the
batch) plus the outputs that do not reuse a donated argument's buffer plus
XLA's temporary buffer, into which its buffer assignment packs every
intermediate (activations kept for the backward pass, gradients): the
memory the device allocates for the step. It is the figure `plan`
estimates. Devices without a memory allocator's statistics (CPU) have
this figure too.
"""

import dataclasses

import keras

__all__ = ["StepMemory", "step_memory"]


@dataclasses.dataclass(frozen=True)
class StepMemory:
    """Bytes one device allocates for a compiled training step, from XLA's memory analysis.

    Args:
        arguments: the step's inputs: weights, optimizer and metrics
            variables, the batch.
        outputs: the step's outputs: the updated state and the logs.
        aliased: output bytes written into donated argument buffers
            (counted once, in `arguments`).
        temporaries: XLA's buffer for every intermediate value.

    Example:
    >>> memory = StepMemory(arguments=100, outputs=90, aliased=88, temporaries=400)
    >>> memory.peak
    502
    """

    arguments: int
    outputs: int
    aliased: int
    temporaries: int

    @property
    def peak(self):
        """Arguments, outputs that reuse no argument's buffer, and temporaries."""
        return self.arguments + self.outputs - self.aliased + self.temporaries


def step_memory(model, x, y=None, sample_weight=None):
    """XLA's per-device memory for one `train_on_batch(x, y)` step of a compiled model (JAX).

    Build and compile the model under the distribution to measure (inside
    `distribution.scope()`), then pass a batch as `fit` would get it (the
    global batch). The step is compiled, not run.

    Args:
        model: a compiled Keras model (any, not only this library's).
        x: a batch of inputs.
        y: its labels.
        sample_weight: optional per-example or per-token weights.

    Returns:
        A `StepMemory`; `.peak` is the bytes one device allocates.

    Raises:
        ValueError: the backend is not JAX, or the model is not compiled.

    Example:
    >>> import keras, numpy as np, keras_transformer as kt
    >>> model = kt.DecoderOnly.from_preset("gpt2_tiny", num_layers=1)
    >>> model.compile(optimizer="adamw")
    >>> ids = np.ones((2, 16), "int32")
    >>> if keras.backend.backend() == "jax":  # XLA's analysis: JAX only
    ...     memory = step_memory(model, ids, ids)
    ...     print(memory.peak > memory.arguments > 0)
    ... else:
    ...     print(True)
    True
    """
    backend = keras.backend.backend()
    if backend != "jax":
        raise ValueError(
            "`step_memory` reads XLA's memory analysis of the step Keras' JAX trainer "
            f"compiles; it needs the JAX backend (KERAS_BACKEND=jax), not {backend}."
        )
    if not isinstance(model, keras.Model) or getattr(model, "optimizer", None) is None:
        raise ValueError(
            "`model` must be a compiled keras.Model (call model.compile(...) first); "
            f"received {type(model).__name__}."
        )
    import jax
    from keras.src.backend.jax import trainer

    data = trainer._distribute_data((x, y, sample_weight))  # as train_on_batch lays it out
    model._symbolic_build(data_batch=data)
    state = model._get_jax_state(
        trainable_variables=True, non_trainable_variables=True, optimizer_variables=True,
        metrics_variables=True, purge_model_variables=False,
    )
    out_shardings = None
    if keras.distribution.distribution() is not None:  # as make_train_function does
        out_shardings = (None, model._get_state_sharding_spec())
    step = jax.jit(model.train_step, donate_argnums=0, out_shardings=out_shardings)
    analysis = step.lower(state, data).compile().memory_analysis()
    return StepMemory(
        arguments=int(analysis.argument_size_in_bytes),
        outputs=int(analysis.output_size_in_bytes),
        aliased=int(analysis.alias_size_in_bytes),
        temporaries=int(analysis.temp_size_in_bytes),
    )
