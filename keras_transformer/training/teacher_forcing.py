"""Turn token ids into (inputs, labels) for teacher-forced training."""

import numpy as np

from keras_transformer import validation


def shift_right(target_ids, start_id):
    """Decoder inputs: `start_id` then the target without its last token.

    Args:
        target_ids: int `(..., T)` target ids.
        start_id: the token every decoder input starts with.

    Example:
    >>> shift_right(np.array([[7, 8, 2, 0]]), start_id=1)
    array([[1, 7, 8, 2]])
    """
    target_ids = np.asarray(target_ids)
    start = np.full(target_ids.shape[:-1] + (1,), start_id, dtype=target_ids.dtype)
    return np.concatenate([start, target_ids[..., :-1]], axis=-1)


def translation_pairs(source_ids, target_ids, start_id):
    """`({"source", "target"}, labels)` for an `EncoderDecoder` and `model.fit`.

    `labels` are the target ids themselves (end with your end token);
    `"target"` is the same sequence shifted right behind `start_id`, so all
    positions train in one pass under the causal mask.

    Args:
        source_ids: int `(N, S)` source ids, padded with the model's `pad_id`.
        target_ids: int `(N, T)` target ids, padded likewise.
        start_id: the token every decoder input starts with.

    Example:
    >>> inputs, labels = translation_pairs([[5, 6, 2]], [[7, 8, 2, 0]], start_id=1)
    >>> inputs["target"], labels
    (array([[1, 7, 8, 2]]), array([[7, 8, 2, 0]]))
    """
    source_ids, target_ids = np.asarray(source_ids), np.asarray(target_ids)
    if len(source_ids) != len(target_ids):
        raise ValueError(
            f"`source_ids` and `target_ids` must hold the same number of examples; "
            f"received {len(source_ids)} and {len(target_ids)}."
        )
    decoder_inputs = shift_right(target_ids, start_id)
    return {"source": source_ids, "target": decoder_inputs}, target_ids


def next_token_windows(stream, length, stride=None):
    """`(inputs, labels)` windows of a token stream for a `DecoderOnly`.

    Each input is `length` consecutive tokens and its labels are the same
    window moved one token on. Windows start every `stride` tokens (default
    `length`: no overlap); the tail that does not fill a window is dropped.

    Args:
        stream: 1-D token ids (a whole corpus, documents joined by an end token).
        length: tokens per window (the model's context, e.g. 1,024).
        stride: tokens between window starts (default `length`).

    Example:
    >>> inputs, labels = next_token_windows(np.arange(10), length=4)
    >>> inputs.tolist(), labels.tolist()
    ([[0, 1, 2, 3], [4, 5, 6, 7]], [[1, 2, 3, 4], [5, 6, 7, 8]])
    """
    stream = np.asarray(stream)
    length = validation.check_int("length", length)
    stride = validation.check_int("stride", stride or length)
    if stream.ndim != 1:
        raise ValueError(f"`stream` must be 1-D; received shape {stream.shape}.")
    starts = np.arange(0, len(stream) - length, stride)
    if not len(starts):
        raise ValueError(
            f"`stream` of {len(stream)} tokens is too short for one window of "
            f"length {length} plus its next-token label."
        )
    index = starts[:, None] + np.arange(length)[None, :]
    return stream[index], stream[index + 1]
