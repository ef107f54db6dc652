import keras
import numpy as np
import pytest

from keras_transformer.training import MaskedAccuracy
from keras_transformer.training import Perplexity


def _batches(rng):
    for _ in range(3):
        logits = rng.normal(size=(2, 5, 6)).astype("float32")
        labels = rng.integers(0, 6, size=(2, 5))
        yield labels, logits


def test_masked_accuracy_skips_padding_across_batches(rng):
    metric = MaskedAccuracy(pad_id=0)
    correct = count = 0
    for labels, logits in _batches(rng):
        metric.update_state(labels, logits)
        real = labels != 0
        correct += ((logits.argmax(-1) == labels) & real).sum()
        count += real.sum()
    assert float(metric.result()) == pytest.approx(correct / count, rel=1e-6)
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_perplexity_is_exp_of_mean_real_token_nll(rng):
    metric = Perplexity(pad_id=0)
    nll = []
    for labels, logits in _batches(rng):
        metric.update_state(labels, logits)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        picked = -np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
        nll.extend(picked[labels != 0].tolist())
    assert float(metric.result()) == pytest.approx(np.exp(np.mean(nll)), rel=1e-5)


def test_metrics_serialize():
    for metric in (MaskedAccuracy(pad_id=2), Perplexity(pad_id=None)):
        restored = keras.metrics.deserialize(keras.metrics.serialize(metric))
        assert restored.get_config() == metric.get_config()
