"""The core install: Keras, NumPy and one backend, with no TensorFlow and no keras-hub.

Builds the wheel a user installs (`pip wheel .`), installs it with the `jax` or the `torch`
extra into a fresh virtual environment, and runs the Quickstart there as a user would: build
both model families, `fit` on NumPy arrays, generate, save, reload. The same script then checks
that nothing imported TensorFlow or keras-hub, and that a tokenizer function names the extra it
needs. Marked slow (each install takes a minute): `make test` runs it once.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from test_docs import python_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What each extra's install is given: torch pinned first, as the Makefile does, so pip takes
# the CPU wheel rather than a multi-GB CUDA build.
PINS = {"jax": [], "torch": ["torch==2.13.0"]}
HEAVY = {"tensorflow", "tensorflow-cpu", "tensorflow-text", "tf-keras", "keras-hub"}
CHECKS = '''
import sys
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"tensorflow", "keras_hub"})
assert not loaded, f"imported {loaded}"
try:
    kt.data.train_sentencepiece(["open the file"] * 10, vocab_size=8)
except ImportError as error:
    assert "pip install 'keras-transformer[text]'" in str(error), error
else:
    raise AssertionError("train_sentencepiece ran without the text extra")
print("core install ok")
'''


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The project's wheel, built from a copy of its sources (the checkout stays clean)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE", "keras_transformer_launch.py"):
        if os.path.exists(os.path.join(ROOT, name)):
            shutil.copy(os.path.join(ROOT, name), source)
    shutil.copytree(os.path.join(ROOT, "keras_transformer"), source / "keras_transformer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
                    str(source)], check=True, capture_output=True, timeout=600)
    (built,) = out.glob("keras_transformer-*.whl")
    return built


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_core_install_builds_trains_generates_and_reloads_without_tensorflow(
    backend, wheel, tmp_path
):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    install = subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-compile", *PINS[backend],
         f"{wheel}[{backend}]"], capture_output=True, text=True, timeout=1200,
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    listed = subprocess.run([python, "-m", "pip", "list", "--format=json"], check=True,
                            capture_output=True, text=True, timeout=300)
    installed = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert {"keras", "numpy", "keras-transformer", backend} <= installed
    assert not installed & HEAVY, sorted(installed & HEAVY)

    script = tmp_path / "quickstart.py"
    quickstart = python_blocks(os.path.join(ROOT, "docs", "quickstart.md"))
    script.write_text("\n".join(quickstart) + CHECKS)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    run = subprocess.run(
        [python, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env=dict(environment, KERAS_BACKEND=backend),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "19200" in run.stdout  # the Quickstart's own check, as tests/test_docs.py reads it
    assert "core install ok" in run.stdout

    # No KERAS_BACKEND and no keras.json: Keras would load TensorFlow, which is not here.
    # The import says in one line what to set; the command picks the installed backend.
    bare = dict(environment, KERAS_HOME=str(tmp_path / "keras_home"))
    bare.pop("KERAS_BACKEND", None)
    imported = subprocess.run([python, "-c", "import keras_transformer"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, env=bare)
    assert imported.returncode == 1
    assert imported.stderr.strip().splitlines()[-1] == (
        "ImportError: keras_transformer: no Keras backend is set and Keras' default, "
        f"tensorflow, is not installed: set KERAS_BACKEND={backend}")
    command = str(venv / "bin" / "keras-transformer")
    chosen = subprocess.run([command, "--version"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300, env=bare)
    assert chosen.returncode == 0, chosen.stderr[-3000:]
    assert chosen.stdout.strip() == "keras-transformer 0.1.0"
    assert chosen.stderr.strip() == (
        "keras-transformer: KERAS_BACKEND is not set and the backend Keras would load "
        f"(tensorflow, Keras' default) is not installed; using {backend}")
    refused = subprocess.run([command, "--version"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=300, env=dict(bare, KERAS_BACKEND="tensorflow"))
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        "keras-transformer: error: the Keras backend tensorflow (from KERAS_BACKEND) is not "
        f"installed: set KERAS_BACKEND={backend}")
