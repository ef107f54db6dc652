"""Shared pieces of the conversion tests: random weights and padded batches.

Every reference model gets random weights everywhere (biases and LayerNorm
scales/offsets included), so a weight mapped to the wrong place, a missing
transpose or a swapped q/k/v block changes the logits.
"""

import numpy as np
import pytest

ATOL = 1e-5  # float32, as the issue asks


def _random_like(rng, name, shape):
    """A random array for weight `name`: LayerNorm scales near 1, everything else near 0."""
    layer_norm_weight = ("norm" in name or "ln_" in name) and name.endswith("weight")
    is_scale = name.endswith("gamma") or layer_norm_weight
    values = rng.normal(0.0, 0.1, size=shape)
    return (1.0 + values if is_scale else values).astype("float32")


def _padded_batch(rng, vocab_size, length, pads, pad_id=0):
    """Ids `(len(pads), length)` whose real ids avoid `pad_id`, and the real-position mask.

    `pads[i]` is the padding of row i: an int n > 0 pads the last n positions
    (right padding), n < 0 the first |n| (left padding), 0 none.
    """
    ids = rng.integers(0, vocab_size - 1, size=(len(pads), length))
    ids = np.where(ids >= pad_id, ids + 1, ids).astype("int32")  # skip pad_id
    real = np.ones(ids.shape, bool)
    for row, n in enumerate(pads):
        if n > 0:
            real[row, length - n:] = False
        elif n < 0:
            real[row, :-n] = False
    ids[~real] = pad_id
    return ids, real


def _max_abs_difference(ours, theirs, real):
    """Largest |ours - theirs| over the real (non-padding) positions."""
    return float(np.max(np.abs(np.asarray(ours)[real] - np.asarray(theirs)[real])))


def _randomize(model, seed):
    """Fills every parameter of torch `model` with `_random_like` values; returns `model`."""
    import torch

    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.copy_(torch.from_numpy(_random_like(rng, name, tuple(parameter.shape))))
    return model


@pytest.fixture
def random_like():
    return _random_like


@pytest.fixture
def randomize():
    return _randomize


@pytest.fixture
def padded_batch():
    return _padded_batch


@pytest.fixture
def report(request):
    """Asserts ours == theirs to ATOL at real positions; prints the max abs difference (-s)."""

    def record(label, ours, theirs, real):
        difference = _max_abs_difference(ours, theirs, real)
        print(f"[max-abs-diff] {request.node.name} {label}: {difference:.3e}")
        assert difference <= ATOL, f"{label}: max abs difference {difference:.3e} > {ATOL}"
        return difference

    return record
