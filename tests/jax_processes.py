"""Fresh JAX processes for the tests: CPU devices only, this checkout importable, quiet TF.

Tests that need several (virtual) devices, a cluster of processes, or JAX whatever backend
the session runs start a process with `jax_env()`; `run_on_eight_devices` runs a script on
8 virtual CPU devices and returns what it printed.
"""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def jax_env(xla_flags=""):
    """This process's environment for a JAX child: `xla_flags` added to any XLA_FLAGS."""
    return dict(
        os.environ,
        KERAS_BACKEND="jax",
        JAX_PLATFORMS="cpu",
        TF_CPP_MIN_LOG_LEVEL="3",
        XLA_FLAGS=" ".join(filter(None, [os.environ.get("XLA_FLAGS", ""), xla_flags])),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )


def run_on_eight_devices(*command, xla_flags=""):
    """Stdout of `python *command` with 8 virtual CPU devices; fails the test if it fails."""
    flags = " ".join(filter(None, ["--xla_force_host_platform_device_count=8", xla_flags]))
    result = subprocess.run(
        [sys.executable, *map(str, command)], env=jax_env(flags), cwd=ROOT,
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    return result.stdout
