"""A training run killed with SIGKILL mid-epoch and resumed with
`keras.callbacks.BackupAndRestore` ends with the weights of an uninterrupted run,
with the library's default training recipe (`model.compile()`, no arguments).

The child process trains a tiny model for 3 epochs (8 steps each, shuffle=False,
fixed seed, dropout 0 so that no random state has to survive the restart) and
reports every finished batch in a progress file. The parent kills it with
SIGKILL in the middle of epoch 2 (after the epoch-1 backup exists), restarts it
with the same backup directory, and compares its final weights with a run that
was never interrupted, to 1e-6. Two families, two recipes:

- `DecoderOnly`: the GPT recipe, `DecayMaskedAdamW` on a `WarmupCosineSchedule`
  without `total_steps`, which `ScheduleFromFit` sizes when the first epoch of
  each `fit` begins. The resumed process starts from a fresh, unsized schedule;
  from the restored step count (8) and the 2 epochs left it must size the same
  run as the uninterrupted one: 24 steps, 2 of warmup.
- `EncoderDecoder`: the 2017 paper's recipe, Adam on `InverseSqrtSchedule`
  (4,000 warmup steps), whose rate is a function of the restored step count.

Besides the weights, the schedule's sizing and the optimizer's step count must
resume exactly: the step count restored at the start of the resumed fit is
the 8 of the backed-up epoch, and each run ends at step 24 with the same
schedule length and warmup.

Backups are taken at epoch ends (`save_freq="epoch"`). Keras 3.15's
BackupAndRestore cannot resume exactly from a backup taken mid-epoch
(`save_freq=<int>`): it writes {"epoch", "batch"} but restores only "epoch",
so the batches of the interrupted epoch before the backup are trained twice.
"""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

EPOCHS, STEPS = 3, 8  # 16 rows in batches of 2

CHILD = r"""
import json, os, sys, time
import numpy as np
import keras
import keras_transformer as kt

family, backup_dir, progress_path, weights_path, delay = sys.argv[1:6]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
ids = rng.integers(1, 32, size=(16, 9)).astype("int32")
sizes = dict(vocab_size=32, num_layers=1, d_model=16, num_heads=2, d_ff=32, max_length=16,
             dropout=0.0)
if family == "DecoderOnly":
    model = kt.DecoderOnly(**sizes)
    x, y = ids[:, :-1], ids[:, 1:]
else:
    model = kt.EncoderDecoder(**sizes)
    x = {"source": rng.integers(1, 32, size=(16, 7)).astype("int32"), "target": ids[:, :-1]}
    y = ids[:, 1:]
model.compile()  # the family's recipe: optimizer, schedule, loss and metrics
optimizer = model.optimizer
schedule = optimizer._learning_rate


def sizing():
    return {"total_steps": getattr(schedule, "total_steps", None),
            "warmup_steps": schedule.warmup_steps, "iterations": int(optimizer.iterations)}


def report(**entry):
    with open(progress_path, "a") as f:
        f.write(json.dumps(entry) + "\n")


class Progress(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):  # after BackupAndRestore restored the state
        report(event="train_begin", **sizing())

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        report(event="batch", epoch=self.epoch, batch=batch)
        time.sleep(float(delay))

    def on_epoch_end(self, epoch, logs=None):  # the state is synced here (JAX too)
        report(event="epoch_end", epoch=epoch, **sizing())


callbacks = [Progress()]
if backup_dir != "-":
    callbacks.insert(0, keras.callbacks.BackupAndRestore(backup_dir, save_freq="epoch"))
model.fit(x, y, batch_size=2, epochs=3, shuffle=False, verbose=0, callbacks=callbacks)
np.savez(weights_path, *[np.asarray(w) for w in model.get_weights()])
report(event="finished", optimizer=type(optimizer).__name__,
       schedule=type(schedule).__name__, **sizing())
print("finished")
"""


def _child(family, backup_dir, progress, weights, delay):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, family, backup_dir, str(progress), str(weights),
         str(delay)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _finish(process):
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    assert "finished" in stdout


def _progress(path, event=None):
    if not path.exists():
        return []
    entries = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in entries if event is None or e["event"] == event]


def _weights(path):
    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


def _sizing(entry):
    return {key: entry[key] for key in ("total_steps", "warmup_steps", "iterations")}


# The run's length and warmup, as each recipe has them at every epoch end and at the end.
RECIPES = {
    # GPT: sized by ScheduleFromFit to 3 epochs of 8 steps; warmup a tenth of it.
    "DecoderOnly": ("DecayMaskedAdamW", "WarmupCosineSchedule", EPOCHS * STEPS, 2),
    # The paper's: no length, 4,000 warmup steps.
    "EncoderDecoder": ("Adam", "InverseSqrtSchedule", None, 4000),
}


@pytest.mark.parametrize("family", sorted(RECIPES))
def test_sigkill_mid_epoch_then_resume_matches_an_uninterrupted_run(family, tmp_path):
    optimizer, schedule, total_steps, warmup_steps = RECIPES[family]
    backup = tmp_path / "backup"
    reference = _child(family, "-", tmp_path / "ref.progress", tmp_path / "ref.npz", 0)
    killed = _child(family, str(backup), tmp_path / "run.progress", tmp_path / "run.npz", 0.3)

    # Kill once epoch 1 is backed up and epoch 2 is half done.
    deadline = time.time() + 240
    while time.time() < deadline:
        done = _progress(tmp_path / "run.progress", "batch")
        if done and done[-1]["epoch"] == 1 and done[-1]["batch"] >= 3:
            break
        assert killed.poll() is None, killed.communicate()[1][-3000:]
        time.sleep(0.05)
    else:
        raise AssertionError("the child never reached the middle of epoch 2")
    assert os.listdir(backup), "no backup was written before the kill"
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "run.npz").exists()
    interrupted_at = _progress(tmp_path / "run.progress", "batch")[-1]
    assert interrupted_at["epoch"] == 1 and 0 < interrupted_at["batch"] < 7  # mid-epoch
    # The killed run had sized its schedule for the whole run before it died.
    first_epoch = _progress(tmp_path / "run.progress", "epoch_end")[0]
    assert _sizing(first_epoch) == dict(total_steps=total_steps, warmup_steps=warmup_steps,
                                        iterations=STEPS)

    resumed = _child(family, str(backup), tmp_path / "resume.progress", tmp_path / "run.npz", 0)
    _finish(resumed)
    _finish(reference)
    resume = tmp_path / "resume.progress"
    # The resumed run restored the step count of the epoch-1 backup (its schedule is
    # not sized yet: that happens when the epoch begins) ...
    (begin,) = _progress(resume, "train_begin")
    assert begin["iterations"] == STEPS, begin
    # ... and restarted at epoch 2's first batch, not at epoch 1.
    first = _progress(resume, "batch")[0]
    assert (first["epoch"], first["batch"]) == (1, 0), first
    # Schedule length, warmup and step count at each later epoch end and at the end:
    # those of the uninterrupted run.
    ref_ends = _progress(tmp_path / "ref.progress", "epoch_end")
    ends = _progress(resume, "epoch_end")
    assert [e["epoch"] for e in ends] == [1, 2]
    assert [_sizing(e) for e in ends] == [_sizing(e) for e in ref_ends[1:]]
    assert [e["iterations"] for e in ends] == [2 * STEPS, 3 * STEPS]
    (ref_end,) = _progress(tmp_path / "ref.progress", "finished")
    (end,) = _progress(resume, "finished")
    assert (end["optimizer"], end["schedule"]) == (optimizer, schedule)  # the default recipe
    assert _sizing(end) == _sizing(ref_end) == dict(
        total_steps=total_steps, warmup_steps=warmup_steps, iterations=EPOCHS * STEPS)

    expected, got = _weights(tmp_path / "ref.npz"), _weights(tmp_path / "run.npz")
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, atol=1e-6, rtol=0)
