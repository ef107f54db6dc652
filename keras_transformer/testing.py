"""Test helper shared by every layer test (in the manner of keras-hub's `run_layer_test`).

`run_layer_test` checks one layer the way a user meets it: eager and
symbolic calls, output shapes and dtypes, exact weight counts, a training
step through `model.fit`, the `get_config`/`from_config` round trip, a
`.keras` save and load giving the same outputs, and `mixed_bfloat16`.
"""

import os
import tempfile

import keras
import numpy as np
from keras import ops


def _functional(layer, inputs):
    """A functional model calling `layer(first_input, **other_inputs)`."""
    symbolic = {
        name: keras.Input(shape=value.shape[1:], dtype=str(value.dtype), name=name)
        for name, value in inputs.items()
    }
    names = list(inputs)
    outputs = layer(symbolic[names[0]], **{n: symbolic[n] for n in names[1:]})
    return keras.Model(list(symbolic.values()), outputs)


def _as_list(inputs):
    return [inputs[name] for name in inputs]


def run_layer_test(
    layer_cls,
    init_kwargs,
    inputs,
    expected_output_shape,
    expected_num_params,
    expected_num_trainable_weights=None,
    run_training=True,
    run_mixed_precision=True,
):
    """Checks a layer end to end; raises `AssertionError` on the first failure.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        inputs: dict of call arguments to NumPy arrays; the first entry is
            passed positionally, the rest by keyword.
        expected_output_shape: the output shape for `inputs`.
        expected_num_params: exact number of scalar weights after building.
        expected_num_trainable_weights: number of trainable variables.
        run_training: run one `fit` epoch and check that trainable weights move.
        run_mixed_precision: rerun under `mixed_bfloat16`.
    """
    layer = layer_cls(**init_kwargs)

    # Config round trip mirrors __init__.
    config = layer.get_config()
    for key, value in init_kwargs.items():
        if isinstance(value, (bool, int, float, str, type(None))):
            assert config[key] == value, f"get_config()[{key!r}] = {config[key]!r} != {value!r}"
    assert layer_cls.from_config(config).get_config() == config

    # Symbolic and eager calls agree on shape; eager output has the compute dtype.
    model = _functional(layer, inputs)
    assert tuple(model.output.shape[1:]) == tuple(expected_output_shape[1:]), (
        model.output.shape,
        expected_output_shape,
    )
    eager = layer(*_as_list(inputs)[:1], **dict(list(inputs.items())[1:]))
    assert tuple(eager.shape) == tuple(expected_output_shape), eager.shape
    assert keras.backend.standardize_dtype(eager.dtype) == layer.compute_dtype
    np.testing.assert_allclose(
        ops.convert_to_numpy(model(_as_list(inputs))), ops.convert_to_numpy(eager), atol=1e-6
    )

    # Exact weight counts.
    assert layer.count_params() == expected_num_params, (
        f"{layer.count_params()} params, expected {expected_num_params}"
    )
    if expected_num_trainable_weights is not None:
        assert len(layer.trainable_weights) == expected_num_trainable_weights

    # A training step through fit moves every trainable weight.
    if run_training:
        before = [ops.convert_to_numpy(w) for w in layer.trainable_weights]
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        target = np.ones(expected_output_shape, "float32")
        history = model.fit(_as_list(inputs), target, epochs=1, batch_size=len(target), verbose=0)
        assert np.isfinite(history.history["loss"][0])
        for old, new in zip(before, layer.trainable_weights):
            assert not np.array_equal(old, ops.convert_to_numpy(new)), f"{new.path} did not train"

    # Save and load give the same outputs.
    reference = ops.convert_to_numpy(model(_as_list(inputs)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "layer.keras")
        model.save(path)
        restored = keras.saving.load_model(path)
    np.testing.assert_allclose(
        ops.convert_to_numpy(restored(_as_list(inputs))), reference, rtol=1e-6, atol=1e-6
    )

    # Mixed precision: float32 variables, bfloat16 compute, finite outputs.
    if run_mixed_precision:
        mixed = layer_cls(**init_kwargs, dtype="mixed_bfloat16")
        out = mixed(*_as_list(inputs)[:1], **dict(list(inputs.items())[1:]))
        assert keras.backend.standardize_dtype(out.dtype) == "bfloat16", out.dtype
        assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in mixed.weights)
        assert np.all(np.isfinite(ops.convert_to_numpy(ops.cast(out, "float32"))))
    return layer


def gradients(fn, *inputs):
    """Gradients of the scalar `fn(*inputs)` with respect to each input, as NumPy arrays.

    One helper for every backend (JAX `grad`, a PyTorch backward pass, a
    TensorFlow tape), for tests that compare two paths' gradients.

    Args:
        fn: a function of `keras.ops` tensors returning a scalar.
        *inputs: float NumPy arrays.

    Example:
    >>> import numpy as np
    >>> from keras import ops
    >>> gradients(lambda x: ops.sum(x ** 2), np.array([1.0, 2.0], "float32"))[0]
    array([2., 4.], dtype=float32)
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return [np.asarray(g) for g in jax.grad(fn, argnums=tuple(range(len(inputs))))(*inputs)]
    if backend == "torch":
        import torch

        tensors = [torch.tensor(x, requires_grad=True) for x in inputs]
        fn(*tensors).backward()
        return [t.grad.numpy() for t in tensors]
    import tensorflow as tf

    tensors = [tf.constant(x) for x in inputs]
    with tf.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        value = fn(*tensors)
    return [g.numpy() for g in tape.gradient(value, tensors)]
