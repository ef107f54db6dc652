"""The GPT recipe across saving: the decay mask and the schedule's length survive a reload."""

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.training import DecayMaskedAdamW
from keras_transformer.training import WarmupCosineSchedule

ROWS, BATCH, EPOCHS = 32, 8, 2  # 4 steps per epoch


def _model():
    return kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=50, max_length=16, dropout=0.0)


def _data():
    ids = np.random.default_rng(0).integers(1, 50, size=(ROWS, 9)).astype("int32")
    return ids[:, :-1], ids[:, 1:]


class _StopAfterFirstEpoch(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        self.model.stop_training = True


def test_reloaded_model_continues_as_an_uninterrupted_run(tmp_path):
    x, y = _data()
    keras.utils.set_random_seed(3)
    uninterrupted = _model()
    interrupted = _model()
    interrupted.set_weights(uninterrupted.get_weights())
    fit = dict(batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)

    uninterrupted.compile()  # the GPT recipe: no total_steps, fit gives it
    uninterrupted.fit(x, y, **fit)

    interrupted.compile()
    interrupted.fit(x, y, callbacks=[_StopAfterFirstEpoch()], **fit)
    path = tmp_path / "gpt.keras"
    interrupted.save(path)
    reloaded = keras.saving.load_model(path)
    schedule = reloaded.optimizer._learning_rate
    assert isinstance(reloaded.optimizer, DecayMaskedAdamW)
    assert isinstance(schedule, WarmupCosineSchedule)
    # sized by the first fit: epochs * steps per epoch; a tenth of 8 steps is no warmup
    assert (schedule.total_steps, schedule.warmup_steps) == (EPOCHS * ROWS // BATCH, 0)
    decayed = {v.path: reloaded.optimizer._use_weight_decay(v)
               for v in reloaded.trainable_variables}
    kept = {p for p, decay in decayed.items() if not decay}
    assert kept == {p for p in decayed if p.endswith(("bias", "gamma", "beta", "table"))}
    # every kind of excluded variable is there: biases, both LayerNorm parts, positions
    assert {p.rsplit("/", 1)[-1] for p in kept} == {"bias", "gamma", "beta", "table"}
    assert len(kept) < len(decayed)  # the matrices are decayed
    reloaded.fit(x, y, initial_epoch=1, **fit)

    assert int(reloaded.optimizer.iterations) == int(uninterrupted.optimizer.iterations) == 8
    for a, b in zip(reloaded.get_weights(), uninterrupted.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=0)


def test_data_of_unknown_length_needs_a_length():
    x, y = _data()

    def endless():
        while True:
            yield x[:BATCH], y[:BATCH]

    model = _model()
    model.compile()
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(endless(), epochs=1, verbose=0)
    model.fit(endless(), epochs=1, steps_per_epoch=3, verbose=0)
    assert model.optimizer._learning_rate.total_steps == 3


def test_no_decay_is_checked():
    for bad in ("bias", None, ["bias", ""]):
        with pytest.raises(ValueError, match="no_decay"):
            DecayMaskedAdamW(no_decay=bad)


def test_the_run_ahead_sizes_the_schedule_and_a_longer_run_warns():
    x, y = _data()
    model = _model()
    model.compile()
    # a fresh optimizer started at epoch 1 of 3 runs 2 epochs: 8 steps
    model.fit(x, y, batch_size=BATCH, epochs=3, initial_epoch=1, verbose=0,
              callbacks=keras.callbacks.History())  # a bare callback is accepted too
    assert model.optimizer._learning_rate.total_steps == 8
    # the length stays; a fit that runs past it says so
    with pytest.warns(UserWarning, match="past the end of the learning-rate schedule"):
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    assert model.optimizer._learning_rate.total_steps == 8


def test_decay_mask_takes_the_learning_rate_first_and_adds_further_patterns():
    optimizer = DecayMaskedAdamW(1e-3, weight_decay=0.1)
    optimizer.exclude_from_weight_decay(var_names=["kernel"])
    assert optimizer.no_decay[-1] == "kernel" and "position_embedding/table" in optimizer.no_decay
    assert DecayMaskedAdamW.from_config(optimizer.get_config()).no_decay == optimizer.no_decay
    layer = keras.layers.Dense(2)
    layer.build((None, 3))
    assert [optimizer._use_weight_decay(v) for v in layer.weights] == [False, False]


def test_a_callback_list_is_used_as_it_is_and_the_schedule_is_still_sized():
    x, y = _data()
    model = _model()
    model.compile()
    batches = []
    probe = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: batches.append(batch))
    callbacks = keras.callbacks.CallbackList([probe], add_history=True, model=model,
                                             epochs=EPOCHS, steps=ROWS // BATCH)
    history = model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, verbose=0, callbacks=callbacks)
    schedule = model.optimizer._learning_rate
    assert (schedule.total_steps, schedule.warmup_steps) == (8, 0)
    assert batches == [0, 1, 2, 3] * EPOCHS  # the user's callbacks ran
    assert len(history.history["loss"]) == EPOCHS
    assert [type(c) for c in callbacks.callbacks].count(kt.training.ScheduleFromFit) == 1
    # A list made without the run's length cannot size the schedule: fit says what to pass.
    model = _model()
    model.compile()
    with pytest.raises(ValueError, match="CallbackList"):
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0,
                  callbacks=keras.callbacks.CallbackList([probe], model=model))


def test_mixed_float16_trains_with_the_default_recipe():
    """Keras wraps the recipe's AdamW in a LossScaleOptimizer; fit still sizes its schedule."""
    keras.config.set_dtype_policy("mixed_float16")
    x, y = _data()
    model = _model()
    model.compile()
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    before = model.evaluate(x, y, batch_size=BATCH, verbose=0, return_dict=True)["loss"]
    history = model.fit(x, y, batch_size=BATCH, epochs=4, verbose=0)
    schedule = model.optimizer.inner_optimizer._learning_rate
    assert schedule.total_steps == 4 * ROWS // BATCH
    assert int(model.optimizer.inner_optimizer.iterations) == 4 * ROWS // BATCH
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    after = model.evaluate(x, y, batch_size=BATCH, verbose=0, return_dict=True)["loss"]
    assert after < before - 0.05, (before, after)
