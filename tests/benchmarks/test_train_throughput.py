"""benchmarks/train_throughput.py: its FLOP count and a tiny side-by-side run.

The timings themselves are never asserted (a CPU under test load says nothing
about a GPU); the run must finish, train every runner and print the ratios.
The runs start a process per runner, so they are marked slow: `make test` runs
them under one backend, `make test-all` under each.
"""

import io
import json
import math
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_transformer.models import preset_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "train_throughput.py")
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import train_throughput  # noqa: E402


def test_flop_count_is_nanogpts_over_the_exact_weight_counts():
    gpt2 = train_throughput.SHAPES["gpt2"][0]
    weights = preset_config("gpt2_small").count_params() - 1024 * 768  # no position table
    assert train_throughput.flops_per_token(gpt2, 1024) == 6 * weights + 12 * 12 * 768 * 1024
    base = train_throughput.SHAPES["transformer"][0]
    weights = preset_config("transformer_base", vocab_size=37000).count_params()
    assert train_throughput.flops_per_token(base, 128) == 6 * weights + 18 * 6 * 512 * 128


@pytest.mark.slow  # trains the plain PyTorch peer: once is enough, whatever the backend
def test_every_runner_gets_fresh_batches_and_plain_pytorch_trains_on_them():
    """The peers must do the same work: a runner that saw one batch again and again would
    memorize it (the plain-PyTorch loss once fell to 0.18 while ours stayed at log V)."""
    pytest.importorskip("torch")
    from peers import torch_models

    shape = train_throughput.SHAPES["gpt2"][1]
    steps, batch = 60, shape["batch"]
    data = train_throughput.random_batches(shape, steps * batch, shape["length"])
    assert set(data) == {"ids", "labels"}
    assert data["ids"].shape == (steps * batch, shape["length"])
    first, second = data["labels"][:batch], data["labels"][batch:2 * batch]
    assert (first != second).mean() > 0.9  # every batch is new
    # the same seed gives every runner the same arrays
    again = train_throughput.random_batches(shape, steps * batch, shape["length"])
    assert all((again[name] == data[name]).all() for name in data)

    def final_loss(batches):
        run, _ = torch_models.make_step(shape, batches, batch, compile_model=False,
                                        dropout=0.0, bf16=False)
        return run(0, steps)

    uniform = math.log(shape["vocab"])
    # fresh random labels cannot be learned: the loss stays at log V (measured 6.93, log V
    # 6.91) ...
    assert final_loss(data) > 0.95 * uniform
    # ... while one batch repeated is memorized (measured 5.17), which the runner must not do
    repeated = {name: np.tile(array[:batch], (steps, 1)) for name, array in data.items()}
    assert final_loss(repeated) < 0.85 * uniform


def test_ratios_pair_runs_of_the_same_round_and_report_median_and_range():
    def result(round_, runner, backend, tokens_per_s, workload="gpt2"):
        return dict(ok=True, round=round_, runner=runner, backend=backend, workload=workload,
                    tokens_per_s=tokens_per_s)

    results = [
        result(0, "ours", "jax", 110), result(0, "keras-hub", "jax", 100),
        result(0, "torch", "-", 220),
        result(1, "ours", "jax", 90), result(1, "keras-hub", "jax", 100),
        result(1, "torch", "-", 90),
        result(2, "ours", "jax", 120), result(2, "keras-hub", "jax", 100),
        dict(ok=False, round=2, runner="torch", backend="-", workload="gpt2"),  # failed
    ]
    pairs = {(w, b, peer): values for w, b, peer, values in train_throughput.ratios(results)}
    assert pairs[("gpt2", "jax", "keras-hub[jax]")] == pytest.approx([1.1, 0.9, 1.2])
    assert pairs[("gpt2", "jax", "plain PyTorch")] == pytest.approx([0.5, 1.0])
    out = io.StringIO()
    train_throughput.print_ratios(results, out=out)
    assert "keras-hub[jax]         = 1.10x  (median of 3 rounds; range 0.90 to 1.20x)" in (
        out.getvalue())


@pytest.mark.slow
def test_tiny_run_trains_every_runner_and_prints_the_ratios(tmp_path):
    backend = keras.backend.backend()
    peers = "keras-hub,torch" if backend == "torch" else "keras-hub"
    output = tmp_path / "results.json"
    command = [
        sys.executable, SCRIPT, "--tiny", "--backends", backend, "--peers", peers,
        "--workloads", "gpt2,transformer", "--steps", "2", "--repeats", "1",
        "--json", str(output),
        # torch.compile of every runner would take minutes on a small CPU; the
        # compiled graph itself is covered by tests/models/test_torch_compile.py
        "--jit", "0" if backend == "torch" else "auto",
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    results = json.loads(output.read_text())
    runners = {(r["runner"], r["workload"]) for r in results}
    expected = {(runner, workload) for workload in ("gpt2", "transformer")
                for runner in ["ours"] + peers.split(",")}
    assert runners == expected
    uniform = math.log(1000)  # V = 1000
    for result in results:
        assert result["ok"] and result["tokens_per_s"] > 0, result
        assert math.isfinite(result["loss"]), result
        # Every runner trains: its first batch (random labels, trained on once, then 4
        # other batches) lost 1.5-13% of its loss (measured: ours 2.8% on gpt2, 3.4% on
        # the Transformer; keras-hub 1.5% and 1.7%; plain PyTorch 1.6% and 13%), which
        # a runner whose steps update nothing would give back unchanged (inference mode).
        before, after = result["first_batch_loss"]
        assert after < 0.995 * before, result
        if result["workload"] == "gpt2":  # an untrained GPT-2 predicts about uniformly
            assert before == pytest.approx(uniform, rel=0.02), result
    # Every runner trains the same architecture: the same weight count, worked
    # out by hand (V=1000, d=64, 2 blocks, d_ff=256, 64 positions; torch's
    # nn.Transformer adds a final LayerNorm to its encoder and decoder).
    hand = {"gpt2": 1000 * 64 + 64 * 64 + 2 * (12 * 64 * 64 + 13 * 64) + 2 * 64,
            "transformer": 1000 * 64 + 2 * (49_984 + 66_752)}
    for result in results:
        final_norms = 4 * 64 if (result["runner"], result["workload"]) == (
            "torch", "transformer") else 0
        assert result["weights"] == hand[result["workload"]] + final_norms, result
    for workload in ("gpt2", "transformer"):
        line = f"{workload:<13} {'ours[' + backend + ']':<16} / {'keras-hub[' + backend + ']':<22} = "
        assert line in finished.stdout, finished.stdout


@pytest.mark.slow
def test_max_length_sweep_reports_the_longest_length_that_trained(tmp_path):
    backend = keras.backend.backend()
    output = tmp_path / "lengths.json"
    command = [
        sys.executable, SCRIPT, "--tiny", "--backends", backend, "--peers", "none",
        "--max-length-sweep", "96,32", "--json", str(output),
        "--jit", "0" if backend == "torch" else "auto",
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    rows = json.loads(output.read_text())
    # both dropout settings, ours only; lengths tried in increasing order
    assert [(w, r, b) for w, r, b, _, _ in rows] == [
        ("gpt2", "ours", backend), ("gpt2-dropout", "ours", backend)
    ]
    assert all(longest == 96 and not failure for _, _, _, longest, failure in rows), rows
