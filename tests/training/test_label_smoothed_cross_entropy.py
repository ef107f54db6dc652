import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.testing import gradients
from keras_transformer.training import LabelSmoothedCrossEntropy


def _reference(labels, logits, eps, form, pad_id):
    """Smoothed cross-entropy with an explicit target distribution, in float64."""
    logits = logits.astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    vocab = logits.shape[-1]
    one_hot = np.eye(vocab)[labels]
    if form == "uniform":
        target = (1 - eps) * one_hot + eps / vocab
    else:
        target = (1 - eps) * one_hot + eps / (vocab - 1) * (1 - one_hot)
    per_token = -(target * log_probs).sum(-1)
    weights = (labels != pad_id).astype("float64")
    return per_token * weights, (per_token * weights).sum() / weights.sum()


@pytest.mark.parametrize("form", ["uniform", "fairseq"])
@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
def test_equals_numpy_reference(form, eps, rng):
    logits = rng.normal(size=(3, 6, 11)).astype("float32") * 3
    labels = rng.integers(1, 11, size=(3, 6))
    labels[0, 4:] = 0
    labels[2, 1:] = 0
    per_token, mean = _reference(labels, logits, eps, form, pad_id=0)
    loss = LabelSmoothedCrossEntropy(label_smoothing=eps, pad_id=0, form=form)
    np.testing.assert_allclose(float(loss(labels, logits)), mean, rtol=1e-5)
    none = LabelSmoothedCrossEntropy(eps, pad_id=0, form=form, reduction="none")
    np.testing.assert_allclose(ops.convert_to_numpy(none(labels, logits)), per_token, rtol=1e-5, atol=1e-6)
    total = LabelSmoothedCrossEntropy(eps, pad_id=0, form=form, reduction="sum")
    np.testing.assert_allclose(float(total(labels, logits)), per_token.sum(), rtol=1e-5)


def test_pad_positions_have_no_weight(rng):
    logits = rng.normal(size=(2, 5, 7)).astype("float32")
    labels = np.array([[3, 4, 5, 0, 0], [1, 2, 0, 0, 0]])
    loss = LabelSmoothedCrossEntropy(0.1, pad_id=0)
    before = float(loss(labels, logits))
    changed = logits.copy()
    changed[labels == 0] = rng.normal(size=(int((labels == 0).sum()), 7)) * 100
    assert float(loss(labels, changed)) == pytest.approx(before, rel=1e-6)
    # Mean over the 5 real tokens, not over all 10 positions.
    _, mean = _reference(labels, logits, 0.1, "uniform", 0)
    assert before == pytest.approx(mean, rel=1e-5)


def test_pad_id_none_counts_every_position(rng):
    logits = rng.normal(size=(2, 3, 5)).astype("float32")
    labels = np.array([[0, 1, 2], [3, 4, 0]])
    _, mean = _reference(labels, logits, 0.1, "uniform", pad_id=-1)
    loss = LabelSmoothedCrossEntropy(0.1, pad_id=None)
    assert float(loss(labels, logits)) == pytest.approx(mean, rel=1e-5)


def test_sample_weight_multiplies_token_weights(rng):
    logits = rng.normal(size=(2, 3, 5)).astype("float32")
    labels = np.array([[1, 2, 3], [4, 1, 0]])
    per_token, _ = _reference(labels, logits, 0.1, "uniform", 0)
    weights = np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 1.0]])
    expected = (per_token * weights).sum() / (weights * (labels != 0)).sum()
    loss = LabelSmoothedCrossEntropy(0.1, pad_id=0)
    assert float(loss(labels, logits, sample_weight=weights)) == pytest.approx(expected, rel=1e-5)


def test_bfloat16_logits_are_reduced_in_float32(rng):
    logits = (rng.normal(size=(2, 4, 300)) * 4).astype("float32")
    labels = rng.integers(1, 300, size=(2, 4))
    loss = LabelSmoothedCrossEntropy(0.1, pad_id=0)
    full = float(loss(labels, logits))
    half = loss(labels, ops.cast(logits, "bfloat16"))
    assert keras.backend.standardize_dtype(half.dtype) == "float32"
    # Only the bfloat16 rounding of the logits themselves remains.
    rounded = ops.convert_to_numpy(ops.cast(ops.cast(logits, "bfloat16"), "float32"))
    assert float(half) == pytest.approx(float(loss(labels, rounded)), rel=1e-6)
    assert float(half) == pytest.approx(full, rel=2e-2)


def test_config_round_trip_and_bad_arguments():
    loss = LabelSmoothedCrossEntropy(0.2, pad_id=3, form="fairseq", reduction="sum")
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert restored.get_config() == loss.get_config()
    with pytest.raises(ValueError, match="label_smoothing"):
        LabelSmoothedCrossEntropy(1.5)
    with pytest.raises(ValueError, match="form"):
        LabelSmoothedCrossEntropy(0.1, form="t2t")
    with pytest.raises(ValueError, match="reduction"):
        LabelSmoothedCrossEntropy(0.1, reduction="avg")


@pytest.mark.parametrize("form", ["uniform", "fairseq"])
def test_gradient_is_softmax_minus_smoothed_target(form, rng):
    eps, vocab = 0.1, 9
    logits = rng.normal(size=(2, 4, vocab)).astype("float32")
    labels = np.array([[1, 2, 3, 0], [4, 0, 0, 0]])
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    one_hot = np.eye(vocab)[labels]
    if form == "uniform":
        target = (1 - eps) * one_hot + eps / vocab
    else:
        target = (1 - eps) * one_hot + eps / (vocab - 1) * (1 - one_hot)
    real = (labels != 0)[..., None]
    expected = (probs - target) * real / real.sum()
    loss = LabelSmoothedCrossEntropy(eps, pad_id=0, form=form)
    np.testing.assert_allclose(
        gradients(lambda x: loss(labels, x), logits)[0], expected, atol=1e-6
    )
