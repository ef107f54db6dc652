"""What every converter shares: arrays from any framework, checked name lookups, checked writes.

Nothing here imports torch, transformers or keras-hub: a torch tensor is
recognised by its `detach` method (duck typing), so a JAX-only install imports
this package.
"""

import collections.abc
import os
import re

import keras
import numpy as np


def to_numpy(value, name="tensor"):
    """A NumPy array from a NumPy/JAX/TensorFlow array, a Keras variable or a torch tensor."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch.Tensor, duck-typed
        value = value.detach().cpu()
        if "bfloat16" in str(value.dtype):  # NumPy has no bfloat16
            value = value.float()
        return value.numpy()
    if isinstance(value, keras.Variable):
        return keras.ops.convert_to_numpy(value)
    try:
        return np.asarray(value)
    except Exception as error:  # noqa: BLE001 - reported with the tensor's name
        raise ValueError(f"Cannot read tensor {name!r} as an array: {error}") from error


def as_mapping(source, what):
    """`source.state_dict()` if it has one, else `source` itself, which must be a mapping."""
    if callable(getattr(source, "state_dict", None)):
        source = source.state_dict()
    if not isinstance(source, collections.abc.Mapping):
        raise ValueError(
            f"{what} must be a mapping of tensor name -> array (a state dict) or an "
            f"object with a `state_dict()` method; received {type(source).__name__}."
        )
    return {str(key): value for key, value in source.items()}


def layer_count(names, pattern, what):
    """Number of layers from names matching `pattern` (one group: the index); checks 0..n-1."""
    indices = sorted({int(m.group(1)) for m in map(re.compile(pattern).match, names) if m})
    if not indices:
        raise ValueError(f"{what}: no layer weights found (no name matches {pattern!r}).")
    if indices != list(range(len(indices))):
        missing = sorted(set(range(indices[-1] + 1)) - set(indices))
        raise ValueError(f"{what}: layer indices are not contiguous; missing layer(s) {missing}.")
    return len(indices)


class StateReader:
    """Reads named tensors from a mapping, remembering what was missing and what was read.

    `get` returns None for a missing name and records it, so that `check`
    reports every missing name at once; `check` also reports names nobody read
    (weights our model has no place for), except those matching `ignore`.
    """

    def __init__(self, state, what, ignore=()):
        self.state = state
        self.what = what
        self.ignore = [re.compile(pattern) for pattern in ignore]
        self.read = set()
        self.missing = []

    def __contains__(self, name):
        return name in self.state

    def get(self, name):
        if name not in self.state:
            self.missing.append(name)
            return None
        self.read.add(name)
        return to_numpy(self.state[name], name)

    def skip(self, name):
        """Marks `name` as deliberately unused."""
        self.read.add(name)

    def check(self):
        if self.missing:
            shown = ", ".join(self.missing[:10]) + (" ..." if len(self.missing) > 10 else "")
            raise ValueError(
                f"{self.what} is missing {len(self.missing)} tensor(s): {shown}"
            )
        unused = sorted(
            name
            for name in self.state
            if name not in self.read and not any(p.fullmatch(name) for p in self.ignore)
        )
        if unused:
            shown = ", ".join(unused[:10]) + (" ..." if len(unused) > 10 else "")
            raise ValueError(
                f"{self.what} has {len(unused)} tensor(s) our model has no place for "
                f"(an architecture it cannot express): {shown}"
            )


class WeightWriter:
    """Collects (our variable, array, their name) and assigns them after checking every shape."""

    def __init__(self, what):
        self.what = what
        self.pending = []

    def add(self, variable, array, their_name, their_shape=None):
        """Queues `array` for `variable`; `their_shape` is the stored shape before a transpose."""
        if array is not None:  # None: missing, already reported by StateReader
            array = np.asarray(array)
            shape = tuple(array.shape) if their_shape is None else tuple(their_shape)
            self.pending.append((variable, array, their_name, shape))

    def apply(self):
        for variable, array, their_name, their_shape in self.pending:
            if tuple(array.shape) != tuple(variable.shape):
                became = "" if their_shape == tuple(array.shape) else f" (as {array.shape})"
                raise ValueError(
                    f"{self.what}: tensor {their_name!r} has shape {their_shape}{became} "
                    f"but maps to {variable.path} of shape {tuple(variable.shape)}."
                )
        for variable, array, _, _ in self.pending:
            variable.assign(array.astype(keras.backend.standardize_dtype(variable.dtype)))


def model_kwargs(dtype, name):
    """Keras base-model arguments: only those the caller set."""
    kwargs = {}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if name is not None:
        kwargs["name"] = name
    return kwargs


def check_path(path, what):
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"{what} must be a path; received {type(path).__name__}.")
    return os.fspath(path)
