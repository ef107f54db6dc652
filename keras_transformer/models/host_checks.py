"""What `fit`, `evaluate` and `predict` check of NumPy inputs on the host, before a step runs.

A compiled step (JAX's, TensorFlow's) does not check its inputs: a token id or
a label outside the vocabulary gathers garbage and turns the loss, and then
every weight, into NaN without an error. Arrays the user hands to `fit`
are still on the host, where checking their ids costs one pass over them and
no device sync; datasets and generators are not looked into (their batches
are made on the fly), and `StopOnNonFiniteLoss` stops such a run at the first
NaN loss instead.
"""

import numpy as np

from keras_transformer import validation


def _arrays(x, name):
    """`[(name, array)]` for the NumPy arrays of `x` (an array or a dict of them)."""
    if isinstance(x, np.ndarray):
        return [(name, x)]
    if isinstance(x, dict):
        return [(f"{name}[{key!r}]", value) for key, value in x.items()
                if isinstance(value, np.ndarray)]
    return []


def check_arrays(model, x, y=None):
    """Checks NumPy inputs and labels of `model.fit/evaluate/predict`.

    Inputs must be integer ids of shape `(batch, length)` in `[0, vocab_size)`;
    labels must lie in the same range and have the shape of the ids they are
    predicted from (the decoder-only ids, the encoder-decoder's `"target"`).
    Anything that is not a NumPy array is left to the step.

    Args:
        model: a `DecoderOnly` or `EncoderDecoder`.
        x: what was passed as `x`.
        y: what was passed as `y`, or None.

    Raises:
        ValueError: naming the argument, what it holds and what is allowed.

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> model = kt.DecoderOnly(vocab_size=10, num_layers=1, d_model=8, num_heads=2, d_ff=16)
    >>> check_arrays(model, np.ones((2, 4), "int32"), np.full((2, 4), 10))
    Traceback (most recent call last):
    ...
    ValueError: `y` must lie in [0, vocab_size=10); received ids from 10 to 10.
    """
    vocab_size = model.config.vocab_size
    inputs = dict(_arrays(x, "x"))
    for name, ids in inputs.items():
        validation.check_token_ids(name, ids, vocab_size)
    if not isinstance(y, np.ndarray):
        return
    target = "x['target']" if isinstance(x, dict) else "x"
    if target in inputs and y.shape != inputs[target].shape:
        raise ValueError(
            f"`y` must have the shape of {target}, {inputs[target].shape}: one label per "
            f"input position (the token that follows it); received shape {y.shape}. "
            "kt.training.next_token_windows and translation_pairs make matching pairs."
        )
    if y.size and (y.min() < 0 or y.max() >= vocab_size):
        raise ValueError(
            f"`y` must lie in [0, vocab_size={vocab_size}); received ids from "
            f"{y.min():g} to {y.max():g}."
        )
