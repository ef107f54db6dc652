"""mixed_bfloat16 against float32: the same weights give the same logits, loss and training
run within bfloat16's precision, for both families and both norm placements.

bfloat16 keeps 8 significant bits: each rounding moves a value by at most U = 2**-8 of
itself. Two layers make a few dozen roundings in a row (embeddings, projections, softmax
inputs, residual sums), so the logits may differ by a few U of their scale on average, and by
tens of U at the worst position. The stated tolerances, with the logits' root mean square as
the scale: mean |difference| <= 4 U, max |difference| <= 32 U (measured at most 2.1 U and
15.3 U), the loss within U relative (its errors average out over positions; measured at most
0.15 U), and the top token the same wherever float32's top two are further apart than twice
the max bound.
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt

U = 2.0 ** -8  # bfloat16's unit roundoff


def _models(family, ln_position):
    arguments = dict(vocab_size=64, num_layers=2, d_model=32, num_heads=4, d_ff=64,
                     ln_position=ln_position, dropout=0.0)
    if family == "DecoderOnly":
        arguments["max_length"] = 16
    model_cls = getattr(kt, family)
    # Seed 1: weights whose float32 top token is clear of the error bound at over half the
    # positions on every backend (under seed 0, JAX's EncoderDecoder post-LN had 43 of 92).
    keras.utils.set_random_seed(1)
    full = model_cls(**arguments)
    mixed = model_cls(**arguments, dtype="mixed_bfloat16")
    mixed.set_weights(full.get_weights())
    return full, mixed


def _data(family):
    rng = np.random.default_rng(0)
    ids = rng.integers(4, 64, size=(8, 12)).astype("int32")
    ids[1, 8:] = 0  # a padded row
    labels = np.concatenate([ids[:, 1:], np.zeros((8, 1), "int32")], axis=1)
    if family == "EncoderDecoder":
        source = rng.integers(4, 64, size=(8, 10)).astype("int32")
        source[2, 6:] = 0
        return {"source": source, "target": ids}, labels
    return ids, labels


def _float32(x):
    return ops.convert_to_numpy(ops.cast(x, "float32"))


@pytest.mark.parametrize("ln_position", ["pre", "post"])
@pytest.mark.parametrize("family", ["DecoderOnly", "EncoderDecoder"])
def test_mixed_bfloat16_matches_float32_within_bfloat16_precision(family, ln_position):
    full, mixed = _models(family, ln_position)
    inputs, labels = _data(family)
    target = inputs["target"] if isinstance(inputs, dict) else inputs
    real = target != 0

    reference, low = full(inputs), mixed(inputs)
    assert keras.backend.standardize_dtype(low.dtype) == "bfloat16"  # bf16 compute really ran
    reference, low = _float32(reference), _float32(low)
    scale = np.sqrt(np.mean(reference[real] ** 2))
    difference = np.abs(low - reference)[real]
    assert difference.max() > 0, "the mixed model computed in float32"
    assert difference.mean() <= 4 * U * scale, (difference.mean() / scale / U, "U on average")
    assert difference.max() <= 32 * U * scale, (difference.max() / scale / U, "U at worst")

    # The top token agrees wherever float32's choice is clear of the error bound.
    top_two = np.sort(reference[real], axis=-1)[:, -2:]
    clear = top_two[:, 1] - top_two[:, 0] > 2 * 32 * U * scale
    assert clear.sum() >= real.sum() // 2  # the check covers most positions
    np.testing.assert_array_equal(low[real].argmax(-1)[clear], reference[real].argmax(-1)[clear])

    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    full_loss, mixed_loss = float(loss(labels, reference)), float(loss(labels, low))
    assert abs(mixed_loss - full_loss) <= U * full_loss


@pytest.mark.parametrize("family", ["DecoderOnly", "EncoderDecoder"])
def test_mixed_bfloat16_training_follows_the_float32_run(family):
    """Five Adam steps from the same weights: the losses stay within 1% of float32's, and
    both runs learn (the last loss is below the first)."""
    histories = []
    for model in _models(family, "pre"):
        model.compile(optimizer=keras.optimizers.Adam(3e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                      ignore_class=0))
        inputs, labels = _data(family)
        history = model.fit(inputs, labels, batch_size=8, epochs=5, shuffle=False, verbose=0)
        histories.append(np.array(history.history["loss"]))
    full, mixed = histories
    assert full[-1] < full[0] and mixed[-1] < mixed[0]
    np.testing.assert_allclose(mixed, full, rtol=1e-2, atol=0)
