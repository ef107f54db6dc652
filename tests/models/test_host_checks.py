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
    with pytest.raises(ValueError, match=r"`validation_data\[0\]` must lie in "
                                         r"\[0, vocab_size=50\); received ids from 1 to 50"):
        model.fit(x, y, validation_data=(bad, y), verbose=0)
    with pytest.raises(ValueError, match=r"`validation_data\[1\]` must lie in"):
        # validation_data by position, as keras.Model.fit's signature orders it
        model.fit(x, y, 4, 1, 0, None, 0.0, (x, np.full_like(y, VOCAB)))
    with pytest.raises(ValueError, match=r"`y` must hold integer token ids; received float32 "
                                         r"values such as np.float32\(1.5\)"):
        model.fit(x, np.where(y == y[0, 0], 1.5, y).astype("float32"), verbose=0)
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


def test_library_batches_outside_the_vocabulary_are_refused_before_a_step():
    chars = lambda texts: [[ord(c) % 40 + 4 for c in t] for t in texts]  # ids 4..43
    texts = ["hello world, open the file"] * 8
    batches = kt.data.LanguageModelBatches(texts, chars, sequence_length=8, batch_size=2)
    smallest, largest = batches.token_id_range
    assert smallest >= 3 and largest == max(max(row) for row in chars(texts))
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=largest, max_length=16)
    model.compile()
    message = (rf"`x` \(LanguageModelBatches\) holds token ids from {smallest} to {largest}, "
               rf"outside the model's vocabulary \[0, vocab_size={largest}\)")
    with pytest.raises(ValueError, match=message):
        model.fit(batches, verbose=0)
    with pytest.raises(ValueError, match="`validation_data` \\(LanguageModelBatches\\)"):
        ones = np.ones((4, 8), "int32")
        model.fit(ones, ones, validation_data=batches, verbose=0)
    assert int(np.asarray(model.optimizer.iterations)) == 0
    fits = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=largest + 1, max_length=16)
    fits.compile()
    fits.fit(batches, epochs=1, verbose=0, shuffle=False)  # one more id: accepted
    assert int(np.asarray(fits.optimizer.iterations)) == len(batches)

    pairs = [("open the file", "die Datei öffnen")] * 8
    translation = kt.data.TranslationBatches(pairs, chars, tokens_per_batch=64, max_length=32)
    assert translation.token_id_range[0] == kt.data.PAD_ID
    seq2seq = kt.EncoderDecoder.from_preset("transformer_tiny", vocab_size=20, max_length=32)
    seq2seq.compile()
    with pytest.raises(ValueError, match=r"`x` \(TranslationBatches\) holds token ids from 0"):
        seq2seq.evaluate(translation, verbose=0)
