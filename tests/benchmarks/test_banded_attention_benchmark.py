"""benchmarks/banded_attention.py: a tiny side-by-side run (timings are never asserted)."""

import os
import sys

import keras
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import banded_attention  # noqa: E402

pytestmark = pytest.mark.skipif(
    keras.backend.backend() == "tensorflow", reason="the benchmark runs on JAX and torch"
)


def test_tiny_run_reports_both_paths_and_they_agree(capsys):
    rows = banded_attention.main(
        ["--lengths", "40", "96", "--window", "16", "--d-model", "16", "--heads", "2",
         "--repeats", "1"]
    )
    assert [row["length"] for row in rows] == [40, 96]
    for row in rows:
        assert row["blocked"]["ms"] > 0 and row["dense"]["ms"] > 0
    if keras.backend.backend() == "jax":  # XLA's memory analysis: the band is smaller
        assert rows[-1]["blocked"]["peak_bytes"] < rows[-1]["dense"]["peak_bytes"]
    printed = capsys.readouterr().out
    gap = float(printed.rsplit(": ", 1)[1])
    assert gap < 1e-5, printed
