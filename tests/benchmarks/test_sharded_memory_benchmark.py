"""benchmarks/sharded_memory.py: a tiny run on 8 virtual devices, in its own JAX process."""

import json
import pathlib
import subprocess
import sys

import pytest
from jax_processes import jax_env

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_tiny_run_shows_sharded_weights_at_an_eighth():
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "sharded_memory.py"), "--tiny", "--json"],
        env=jax_env(), cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(result.stdout.strip().splitlines()[-1])["rows"]
    base = rows["data_parallel"]
    assert "| fully_sharded (8, 1) |" in result.stdout
    for name in ("fully_sharded (8, 1)", "fully_sharded (2, 4)"):
        # The tiny model's vectors that no split divides keep it a little above 1/8.
        assert rows[name]["state_bytes"] < 0.15 * base["state_bytes"], name
        assert rows[name]["step_peak_bytes"] < base["step_peak_bytes"], name
    assert rows["model_parallel (2, 4)"]["state_bytes"] < 0.3 * base["state_bytes"]
