"""NumPy inputs of fit/evaluate/predict are checked on the host; valid Keras inputs still pass."""

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.models import host_checks

VOCAB = 50


def _model():
    return kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=VOCAB, max_length=16, dropout=0.0)


def _data():
    ids = np.random.default_rng(0).integers(1, VOCAB, size=(8, 9)).astype("int32")
    return ids[:, :-1], ids[:, 1:]


def test_labels_another_loss_allows_are_left_to_it():
    x, y = _data()
    model = _model()
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=-100))
    ignored = y.copy()
    ignored[:, :3] = -100  # ignored positions, as Hugging Face writes them
    # Not refused on the host (whether a backend's loss then takes them is Keras' matter:
    # TensorFlow's gather of this loss rejects -100 at 3-D logits, JAX and PyTorch train).
    host_checks.check_fit_arrays(model, x, ignored, (x, ignored))
    host_checks.check_arrays(model, x, np.eye(VOCAB, dtype="float32")[y])  # soft labels


def test_the_recipe_loss_refuses_labels_outside_the_vocabulary_and_validation_is_checked():
    x, y = _data()
    model = _model()
    model.compile()
    with pytest.raises(ValueError, match=r"`y` must lie in \[0, vocab_size=50\)"):
        model.fit(x, np.full_like(y, -100), verbose=0)
    bad = x.copy()
    bad[0, 0] = VOCAB
    with pytest.raises(ValueError, match=r"`x` must lie in \[0, vocab_size=50\); received "
                                         r"ids from 1 to 50"):
        model.fit(x, y, validation_data=(bad, y), verbose=0)
    assert int(np.asarray(model.optimizer.iterations)) == 0  # refused before any step
    with pytest.raises(ValueError, match=r"`x` must hold at least one row"):
        model.predict(x[:0], verbose=0)


def test_a_users_nan_callback_replaces_ours_and_a_reused_callback_list_gets_one_of_each():
    x, y = _data()
    model = _model()
    model.compile()
    callbacks = keras.callbacks.CallbackList([], add_history=True, model=model, epochs=1,
                                             steps=2)
    for _ in range(2):
        model.fit(x, y, batch_size=4, verbose=0, callbacks=callbacks)
    kinds = [type(c).__name__ for c in callbacks.callbacks]
    assert kinds.count("StopOnNonFiniteLoss") == 1 and kinds.count("ScheduleFromFit") == 1
    mine = [keras.callbacks.TerminateOnNaN()]
    model.fit(x, y, batch_size=4, verbose=0, callbacks=mine)
    assert mine == [mine[0]]  # the user's list is not changed
