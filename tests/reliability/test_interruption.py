"""A training run killed with SIGKILL mid-epoch and resumed with
`keras.callbacks.BackupAndRestore` ends with the weights of an uninterrupted run.

The child process trains a tiny GPT for 3 epochs (8 steps each, shuffle=False,
fixed seed, dropout 0 so that no random state has to survive the restart) with
the library's own recipe: `compile()`'s defaults, the GPT AdamW whose warmup +
cosine schedule `fit` sizes from the run ahead (`ScheduleFromFit`). The resumed
process sizes it again from the restored step count, so it must arrive at the
same length, warmup and rates. The child reports every finished batch in a
progress file. The parent kills it with
SIGKILL in the middle of epoch 2 (after the epoch-1 backup exists), restarts it
with the same backup directory, and compares its final weights with a run that
was never interrupted, to 1e-6.

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

CHILD = r"""
import json, os, sys, time
import numpy as np
import keras
import keras_transformer as kt

backup_dir, progress_path, weights_path, delay = sys.argv[1:5]
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.integers(1, 32, size=(16, 8)).astype("int32")
y = np.roll(x, -1, axis=1)
model = kt.DecoderOnly(vocab_size=32, num_layers=1, d_model=16, num_heads=2, d_ff=32,
                       max_length=8, dropout=0.0)
model.compile(optimizer=kt.training.gpt_optimizer(peak_learning_rate=1e-2))  # no total_steps


class Progress(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        with open(progress_path, "a") as f:
            f.write(json.dumps({"epoch": self.epoch, "batch": batch}) + "\n")
        time.sleep(float(delay))


callbacks = [Progress()]
if backup_dir != "-":
    callbacks.insert(0, keras.callbacks.BackupAndRestore(backup_dir, save_freq="epoch"))
model.fit(x, y, batch_size=2, epochs=3, shuffle=False, verbose=0, callbacks=callbacks)
np.savez(weights_path, *[np.asarray(w) for w in model.get_weights()])
schedule = kt.training.schedule_from_fit.sizable_schedule(model.optimizer)
print(json.dumps({"total_steps": schedule.total_steps, "warmup_steps": schedule.warmup_steps,
                  "iterations": int(model.optimizer.iterations)}))
print("finished")
"""


def _child(tmp_path, backup_dir, progress, weights, delay):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, backup_dir, str(progress), str(weights), str(delay)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _finish(process):
    """The child's schedule and step count once it ends."""
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    lines = stdout.splitlines()
    assert lines[-1] == "finished", stdout[-3000:]
    return json.loads(lines[-2])


def _progress(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _weights(path):
    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


def test_sigkill_mid_epoch_then_resume_matches_an_uninterrupted_run(tmp_path):
    backup = tmp_path / "backup"
    reference = _child(tmp_path, "-", tmp_path / "ref.progress", tmp_path / "ref.npz", 0)
    killed = _child(tmp_path, str(backup), tmp_path / "run.progress", tmp_path / "run.npz", 0.3)

    # Kill once epoch 1 is backed up and epoch 2 is half done.
    deadline = time.time() + 240
    while time.time() < deadline:
        done = _progress(tmp_path / "run.progress")
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
    interrupted_at = _progress(tmp_path / "run.progress")[-1]
    assert interrupted_at["epoch"] == 1 and 0 < interrupted_at["batch"] < 7  # mid-epoch

    resumed = _child(tmp_path, str(backup), tmp_path / "resume.progress", tmp_path / "run.npz", 0)
    resumed_schedule = _finish(resumed)
    reference_schedule = _finish(reference)
    # fit sized the schedule to the whole run (3 epochs of 8 steps, a tenth as warmup), in the
    # uninterrupted process and again, from the restored step count, in the resumed one.
    assert reference_schedule == {"total_steps": 24, "warmup_steps": 2, "iterations": 24}
    assert resumed_schedule == reference_schedule
    # The resumed run restarted at epoch 2's first batch, not at epoch 1.
    first = _progress(tmp_path / "resume.progress")[0]
    assert first == {"epoch": 1, "batch": 0}, first

    expected, got = _weights(tmp_path / "ref.npz"), _weights(tmp_path / "run.npz")
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        np.testing.assert_allclose(g, e, atol=1e-6, rtol=0)
