"""torch decoding keeps no autograd graph and holds about one cache (benchmarks/decode_memory.py)."""

import json
import os
import subprocess
import sys

import keras
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "decode_memory.py")


@pytest.mark.skipif(keras.backend.backend() != "torch", reason="the eager torch loop's memory")
def test_generating_1024_tokens_on_torch_holds_no_graph_and_about_one_cache():
    # A fresh process: peak RSS is measured over one decode, after a warm-up call.
    command = [sys.executable, SCRIPT, "--one", "--new-tokens", "1024"]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=600,
                         env=dict(os.environ, KERAS_BACKEND="torch"))
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["requires_grad"] is False  # no step's logits or cache requires grad
    assert result["peak_growth_mib"] <= 2 * result["cache_mib"], result
