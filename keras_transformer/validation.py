"""Argument checks shared by every layer and model.

Each check raises `ValueError` naming the argument, the value received and what
is allowed, so a bad toggle fails at construction with a readable message.
"""

import math
import numbers
import sys

import numpy as np
from keras import backend
from keras import ops


def lone_surrogate(text):
    """Where a string holds a lone surrogate, and what it stands for; None when it has none.

    Python keeps bytes it could not decode (command-line arguments, `surrogateescape`) as
    the surrogates U+DC80 to U+DCFF; no tokenizer can take them as text.

    Args:
        text: a string.

    Returns:
        `(index, description)`, e.g. `(3, "the byte 0xE9")` or `(0, "U+D800")`, or None.

    Example:
    >>> lone_surrogate("Caf\\udce9"), lone_surrogate("Café")
    ((3, 'the byte 0xE9'), None)
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        undecoded = 0xDC80 <= code <= 0xDCFF
        return error.start, f"the byte 0x{code - 0xDC00:02X}" if undecoded else f"U+{code:04X}"
    return None


def check_choice(name, value, allowed):
    """`value` must be one of `allowed` (strings, compared exactly)."""
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"`{name}` must be one of {choices}; received {value!r}.")
    return value


def check_int(name, value, minimum=1, allow_none=False):
    """`value` must be an int >= `minimum` (bools are rejected)."""
    if value is None and allow_none:
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < minimum
    ):
        raise ValueError(
            f"`{name}` must be an integer >= {minimum}; received {value!r}."
        )
    return int(value)


def check_rate(name, value):
    """`value` must be a float in [0, 1)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0 <= value < 1
    ):
        raise ValueError(f"`{name}` must be a float in [0, 1); received {value!r}.")
    return float(value)


def check_positive_float(name, value):
    """`value` must be a float > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or value <= 0:
        raise ValueError(f"`{name}` must be a number > 0; received {value!r}.")
    return float(value)


def check_non_negative_float(name, value):
    """`value` must be a finite float >= 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0 <= value < math.inf
    ):
        raise ValueError(f"`{name}` must be a finite number >= 0; received {value!r}.")
    return float(value)


def check_fraction(name, value):
    """`value` must be a float in (0, 1]."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0 < value <= 1
    ):
        raise ValueError(f"`{name}` must be a float in (0, 1]; received {value!r}.")
    return float(value)


def check_divisible(name, value, divisor_name, divisor):
    """`value` must be a multiple of `divisor` (e.g. `d_model` by `num_heads`)."""
    if value % divisor:
        raise ValueError(
            f"`{name}` ({value}) must be divisible by `{divisor_name}` ({divisor})."
        )


def concrete_value(x):
    """`x` as a NumPy array when its values are on the host now, else `None`.

    Symbolic Keras tensors, JAX tracers, TensorFlow graph tensors and tensors
    that `torch.compile` is tracing have no values yet; tensors on a GPU or TPU
    have them, but reading them would stall the device once per call. Checks
    that need values are skipped for all of these: they guard the eager,
    host-side calls where a bad input is most often made.
    """
    if isinstance(x, np.ndarray):
        return x
    if backend.is_keras_tensor(x) or _torch_is_compiling() or not _on_host(x):
        return None
    try:
        return ops.convert_to_numpy(x)
    except Exception:  # traced or graph tensor: no values to check
        return None


def _on_host(x):
    """Whether tensor `x` lives in host memory (reading it costs no device sync)."""
    device = getattr(x, "device", None)
    if callable(device):  # a JAX array's .device() in older JAX
        device = device()
    return device is None or "cpu" in str(device).lower()


def _torch_is_compiling():
    """Whether `torch.compile` is tracing now (torch is loaded by then; never imported here)."""
    torch = sys.modules.get("torch")
    compiler = getattr(torch, "compiler", None)
    return bool(compiler is not None and compiler.is_compiling())


def check_token_ids(name, ids, vocab_size):
    """`ids` must be a rank-2 int tensor; eager values must lie in [0, vocab_size)."""
    if getattr(ids.dtype, "kind", None) in ("U", "S", "O"):  # NumPy text or objects
        raise ValueError(
            f"`{name}` must hold integer token ids; received a NumPy array of "
            f"{'text' if ids.dtype.kind in 'US' else 'Python objects'} ({ids.dtype}). "
            "Tokenize text first (kt.TextGenerator and kt.Translator take text)."
        )
    dtype = backend.standardize_dtype(ids.dtype)
    if "int" not in dtype:
        raise ValueError(
            f"`{name}` must hold integer token ids; received dtype {dtype}."
        )
    if len(ids.shape) != 2:
        raise ValueError(
            f"`{name}` must have shape (batch, length); received shape "
            f"{tuple(ids.shape)}."
        )
    if ids.shape[1] == 0:
        raise ValueError(
            f"`{name}` must hold at least one position (length >= 1); received shape "
            f"{tuple(ids.shape)}."
        )
    values = concrete_value(ids)
    if values is not None and values.size:
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"`{name}` must lie in [0, vocab_size={vocab_size}); received "
                f"ids from {low} to {high}."
            )


def check_token_id(name, value, vocab_size, allow_none=False):
    """`value` must be an int id in `[0, vocab_size)` (bools rejected)."""
    if value is None and allow_none:
        return value
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or not 0 <= value < vocab_size
    ):
        allowed = "None or " if allow_none else ""
        raise ValueError(
            f"`{name}` must be {allowed}a token id in [0, vocab_size={vocab_size}); "
            f"received {value!r}."
        )
    return int(value)


def check_bool(name, value):
    """`value` must be a Python or NumPy bool (no truthy strings or ints)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"`{name}` must be True or False; received {value!r}.")
    return bool(value)


def check_key_mask(name, key_mask, batch, length):
    """`key_mask` must be a bool `(batch, length)` tensor; static sizes must match."""
    dtype = backend.standardize_dtype(key_mask.dtype)
    if dtype != "bool":
        raise ValueError(
            f"`{name}` must be a bool mask (True = real token); received dtype {dtype}."
        )
    shape = tuple(key_mask.shape)
    expected = (batch, length)
    mismatch = len(shape) != 2 or any(
        isinstance(got, int) and isinstance(want, int) and got != want
        for got, want in zip(shape, expected)
    )
    if mismatch:
        raise ValueError(
            f"`{name}` must have shape (batch, key_length) = {expected}; received shape "
            f"{shape}."
        )
