"""benchmarks/remat_memory.py: a tiny run (timings and resident memory are never asserted).

The script runs under JAX whatever backend the tests use (XLA's memory analysis). `--tiny`
compiles its three train steps in its own process and measures the remat setting's
resident memory in one fresh process (a full run measures both settings that way), so the
run is marked slow: two processes, each importing JAX and compiling a train step.
"""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("jax")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "remat_memory.py")


@pytest.mark.slow  # two processes, compiling three train steps and one
def test_tiny_run_shows_remat_needs_less_memory_for_the_same_loss(tmp_path):
    done = subprocess.run([sys.executable, SCRIPT, "--tiny"], capture_output=True, text=True,
                          cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    ratio = re.search(r"ratio remat/no-remat at T=256: XLA total ([\d.]+) \(XLA's default CPU "
                      r"passes: ([\d.]+)\), peak RSS -, \+ step -, step time ([\d.]+)", out)
    assert ratio, out  # --tiny: no resident memory of the no-remat setting, so no RSS ratios
    assert float(ratio.group(1)) < 0.8, out  # the backward pass keeps less of the forward
    rows = {setting: line.split()[-6:] for setting in ("no remat", "remat", "remat, XLA default")
            for line in out.splitlines() if re.match(rf"\s*256  {setting}\s+\d", line)}
    assert len(rows) == 3, out  # each: XLA temp, XLA total, peak RSS, + step, s/step, loss
    assert abs(float(rows["remat"][-1]) - float(rows["no remat"][-1])) < 1e-3, out  # same loss
    assert float(rows["remat"][0]) < float(rows["no remat"][0]), out  # XLA's temporaries
    assert float(rows["remat"][2]) > 0 and float(rows["remat"][3]) >= 0, out  # the fresh process
    assert rows["no remat"][2:4] == ["-", "-"], out
