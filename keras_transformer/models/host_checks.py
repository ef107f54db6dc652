"""What `fit`, `evaluate` and `predict` check of NumPy inputs on the host, before a step runs.

A compiled step (JAX's, TensorFlow's) does not check its inputs: a token id or
a label outside the vocabulary gathers garbage and turns the loss, and then
every weight, into NaN without an error. Arrays the user hands to `fit`
are still on the host, where checking their ids costs one pass over them and
no device sync. The library's batches (`TranslationBatches`,
`LanguageModelBatches` and the `tf.data` pipelines made from them) record the
range of their token ids when they tokenize, which is checked instead. Other
datasets and generators are not looked into (their batches are made on the
fly), and `StopOnNonFiniteLoss` stops such a run at the first NaN loss.
"""

import numpy as np

from keras_transformer import validation
from keras_transformer.training.label_smoothed_cross_entropy import LabelSmoothedCrossEntropy


def _arrays(x, name):
    """`[(name, array)]` for the NumPy arrays of `x` (an array or a dict of them)."""
    if isinstance(x, np.ndarray):
        return [(name, x)]
    if isinstance(x, dict):
        return [(f"{name}[{key!r}]", value) for key, value in x.items()
                if isinstance(value, np.ndarray)]
    return []


def check_arrays(model, x, y=None, names=("x", "y")):
    """Checks NumPy inputs and labels of `model.fit/evaluate/predict`.

    Inputs must be integer ids of shape `(batch, length)` in `[0, vocab_size)`.
    Rank-2 labels must have the shape of the ids they are predicted from (the
    decoder-only ids, the encoder-decoder's `"target"`) and, when the model is
    compiled with the library's `LabelSmoothedCrossEntropy` (the recipes'
    loss), lie in the same range. Anything that is not a NumPy array, and
    labels of another rank, are left to the step and its loss.

    Args:
        model: a `DecoderOnly` or `EncoderDecoder`.
        x: what was passed as `x`.
        y: what was passed as `y`, or None.
        names: what the messages call `x` and `y`.

    Raises:
        ValueError: naming the argument, what it holds and what is allowed.

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> model = kt.DecoderOnly(vocab_size=10, num_layers=1, d_model=8, num_heads=2, d_ff=16)
    >>> model.compile()  # the recipe's LabelSmoothedCrossEntropy
    >>> check_arrays(model, np.ones((2, 4), "int32"), np.full((2, 4), 10))
    Traceback (most recent call last):
    ...
    ValueError: `y` must lie in [0, vocab_size=10); received ids from 10 to 10.
    """
    vocab_size = model.config.vocab_size
    x_name, y_name = names
    id_range = getattr(x, "token_id_range", None)  # the library's batches and pipelines
    if id_range is not None and not 0 <= id_range[0] <= id_range[1] < vocab_size:
        smallest, largest = id_range
        raise ValueError(
            f"`{x_name}` ({type(x).__name__}) holds token ids from {smallest} to {largest}, "
            f"outside the model's vocabulary [0, vocab_size={vocab_size}): build the model "
            "with the tokenizer's vocabulary size (`vocab_size=tokenizer.vocabulary_size()`)."
        )
    if isinstance(x, dict) and not {"source", "target"} & set(x) and "token_ids" in x:
        name = type(model).__name__
        article = "an" if name[:1] in "AEIOU" else "a"
        if model.config.num_encoder_layers:
            wanted, hint = ("a dict {'source': ids, 'target': ids} of token id arrays "
                            "(batch, length)", "pass the source and target token ids by those keys")
        else:
            wanted, hint = "one array of token ids (batch, length)", f"pass {x_name}['token_ids']"
        raise ValueError(
            f"`{x_name}` must be {wanted} for {article} {name}; received a dict with keys "
            f"{sorted(map(str, x))}. For keras-hub style inputs {hint}, with padding written "
            "as the model's `pad_id` (masked as a key, and the recipe loss skips its labels)."
        )
    inputs = dict(_arrays(x, x_name))
    for name, ids in inputs.items():
        validation.check_token_ids(name, ids, vocab_size)
        if ids.shape[0] == 0:
            raise ValueError(f"`{name}` must hold at least one row (batch >= 1); received "
                             f"shape {ids.shape}.")
    if not isinstance(y, np.ndarray) or y.ndim != 2:
        return  # e.g. (B, T, V) soft labels or (B, T, 1) ids: the compiled loss decides
    target = f"{x_name}['target']" if isinstance(x, dict) else x_name
    if target in inputs and y.shape != inputs[target].shape:
        raise ValueError(
            f"`{y_name}` must have the shape of {target}, {inputs[target].shape}: one label per "
            f"input position (the token that follows it); received shape {y.shape}. "
            "kt.training.next_token_windows and translation_pairs make matching pairs."
        )
    # The library's loss reads every label as a token id; another loss may take others
    # (e.g. SparseCategoricalCrossentropy(ignore_class=-100)).
    if not isinstance(getattr(model, "loss", None), LabelSmoothedCrossEntropy) or not y.size:
        return
    if y.dtype.kind not in "iuf" or (y.dtype.kind == "f" and not np.all(y == np.round(y))):
        example = y.flat[np.flatnonzero(y != np.round(y))[0]] if y.dtype.kind == "f" else y.flat[0]
        raise ValueError(
            f"`{y_name}` must hold integer token ids; received {y.dtype} values such as "
            f"{example!r}."
        )
    if y.min() < 0 or y.max() >= vocab_size:
        raise ValueError(
            f"`{y_name}` must lie in [0, vocab_size={vocab_size}); received ids from "
            f"{y.min():g} to {y.max():g}."
        )


def check_fit_arrays(model, x, y, validation_data):
    """`check_arrays` for `fit`'s training data and its `validation_data`.

    Args:
        model: a `DecoderOnly` or `EncoderDecoder`.
        x: what was passed as `x`.
        y: what was passed as `y`, or None.
        validation_data: what was passed as `validation_data`: a tuple
            `(x, y[, sample_weight])`, a dataset, or None.
    """
    check_arrays(model, x, y)
    if isinstance(validation_data, (tuple, list)) and 1 <= len(validation_data) <= 3:
        check_arrays(model, validation_data[0],
                     validation_data[1] if len(validation_data) > 1 else None,
                     names=("validation_data[0]", "validation_data[1]"))
    elif validation_data is not None:
        check_arrays(model, validation_data, names=("validation_data", None))
