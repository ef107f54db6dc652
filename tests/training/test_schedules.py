import keras
import numpy as np
import pytest

from keras_transformer.training import InverseSqrtSchedule
from keras_transformer.training import WarmupCosineSchedule


def _paper(step, d_model=512, warmup=4000):
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


@pytest.mark.parametrize("step", [1, 2, 4000, 4001, 100000])
def test_inverse_sqrt_matches_paper_formula(step):
    schedule = InverseSqrtSchedule(d_model=512, warmup_steps=4000)
    # Keras passes optimizer.iterations, 0 before the first update: step = iterations + 1.
    assert float(schedule(step - 1)) == pytest.approx(_paper(step), rel=1e-6)


def test_inverse_sqrt_peaks_at_warmup_and_scales():
    schedule = InverseSqrtSchedule(d_model=64, warmup_steps=100, scale=2.0)
    rates = [float(schedule(i)) for i in range(300)]
    assert int(np.argmax(rates)) == 99
    assert rates[99] == pytest.approx(2.0 * (64 * 100) ** -0.5, rel=1e-6)


def test_optimizer_uses_step_one_for_first_update():
    schedule = InverseSqrtSchedule(d_model=512, warmup_steps=4000)
    optimizer = keras.optimizers.Adam(schedule)
    variable = keras.Variable(np.ones(3, "float32"))
    optimizer.build([variable])
    assert float(optimizer.learning_rate) == pytest.approx(_paper(1), rel=1e-6)
    optimizer.apply_gradients([(keras.ops.ones((3,)), variable)])
    assert float(optimizer.learning_rate) == pytest.approx(_paper(2), rel=1e-6)


@pytest.mark.parametrize(
    "schedule",
    [
        InverseSqrtSchedule(d_model=256, warmup_steps=123, scale=0.5),
        WarmupCosineSchedule(3e-4, warmup_steps=10, total_steps=50, final_fraction=0.2),
    ],
)
def test_schedules_round_trip_through_config(schedule):
    restored = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule)
    )
    assert type(restored) is type(schedule)
    assert restored.get_config() == schedule.get_config()
    for step in (0, 9, 10, 49, 80):
        assert float(restored(step)) == pytest.approx(float(schedule(step)), rel=1e-7)


def test_warmup_cosine_shape():
    schedule = WarmupCosineSchedule(1.0, warmup_steps=10, total_steps=110, final_fraction=0.1)
    assert float(schedule(0)) == pytest.approx(0.1)
    assert float(schedule(9)) == pytest.approx(1.0)
    assert float(schedule(59)) == pytest.approx(0.1 + 0.9 * 0.5, rel=1e-6)
    assert float(schedule(109)) == pytest.approx(0.1, rel=1e-6)
    assert float(schedule(10_000)) == pytest.approx(0.1, rel=1e-6)
    rates = [float(schedule(i)) for i in range(10, 110)]
    assert all(a >= b for a, b in zip(rates, rates[1:]))


def test_bad_schedule_arguments():
    with pytest.raises(ValueError, match="warmup_steps"):
        InverseSqrtSchedule(d_model=512, warmup_steps=0)
    with pytest.raises(ValueError, match="d_model"):
        InverseSqrtSchedule(d_model=-1)
    with pytest.raises(ValueError, match="total_steps"):
        WarmupCosineSchedule(1e-3, warmup_steps=10, total_steps=5)


def test_keras_cosine_decay_is_ours_one_step_later():
    """Why ours is kept: Keras' CosineDecay with warmup spends the first update at rate 0
    (it counts steps from 0); otherwise its curve is ours, one step later."""
    ours = WarmupCosineSchedule(6e-4, warmup_steps=10, total_steps=110, final_fraction=0.1)
    keras_schedule = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=100, alpha=0.1, warmup_target=6e-4, warmup_steps=10
    )
    assert float(keras_schedule(0)) == 0.0 and float(ours(0)) > 0
    for iterations in range(0, 130):
        assert float(keras_schedule(iterations + 1)) == pytest.approx(
            float(ours(iterations)), rel=1e-6, abs=1e-12)


def test_unsized_schedule_takes_its_length_once_and_a_tenth_as_warmup():
    schedule = WarmupCosineSchedule(1.0)
    with pytest.raises(ValueError, match="no `total_steps` yet"):
        schedule(0)
    assert schedule.resolve(50).total_steps == 50 and schedule.warmup_steps == 5
    assert schedule.resolve(50) is schedule  # the same length again is fine
    with pytest.raises(ValueError, match="already runs 50 steps"):
        schedule.resolve(60)
    assert WarmupCosineSchedule(1.0, total_steps=10**6).warmup_steps == 2000
    one_step = WarmupCosineSchedule(1.0, total_steps=1)  # a one-step fit: no warmup
    assert one_step.warmup_steps == 0 and np.isfinite(float(one_step(0)))
    no_warmup = WarmupCosineSchedule(1.0, warmup_steps=0, total_steps=11)
    assert float(no_warmup(0)) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi / 11)))
    restored = WarmupCosineSchedule.from_config(schedule.get_config())
    assert (restored.warmup_steps, restored.total_steps) == (5, 50)
