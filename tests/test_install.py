"""The README's install lines: Keras, NumPy and one backend, in a fresh virtual environment.

Builds the wheel a user installs (`pip wheel .`) and runs each CPU line of the README's install
block (`benchmarks/install_sizes.install_lines`) in a fresh virtual environment, the wheel in
place of the checkout. Then runs the Quickstart there as a user would: build both model
families, `fit` on NumPy arrays, generate, save, reload. For the `jax` and `torch` lines the
same script checks that nothing imported TensorFlow or keras-hub, and that a tokenizer function
names the extra it needs. (The GPU lines need a GPU to mean anything; their extras are checked
to exist.) Marked slow (each install takes a minute or two): `make test` runs it once.
"""

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest

from test_docs import python_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import install_sizes  # noqa: E402

LINES = dict(install_sizes.install_lines())
CPU_LINES = [label for label in LINES if label.startswith("CPU")]
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
    return install_sizes.build_wheel(str(tmp_path_factory.mktemp("wheel")))


def test_the_install_block_has_a_cpu_and_a_gpu_line_per_backend_with_known_extras():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as handle:
        extras = tomllib.load(handle)["project"]["optional-dependencies"]
    devices = {}
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        block = handle.read().split("<!-- install -->")[1]
    for label, argv in LINES.items():
        # each line is shown with the size of the environment it makes
        assert re.search(rf"{re.escape(label)}[^\n]*\d[\d,]* MiB", block), label
        (ours,) = [arg for arg in argv if arg.startswith(".[")]
        assert set(ours[2:-1].split(",")) <= set(extras), ours
        devices.setdefault(install_sizes.backend_of(argv), []).append(label.split(",")[0])
    assert devices == {backend: ["CPU", "GPU"] for backend in install_sizes.BACKENDS}
    with open(os.path.join(ROOT, "docs", "quickstart.md"), encoding="utf-8") as handle:
        assert '--8<-- "README.md:install"' in handle.read()  # the README's block, included


@pytest.mark.slow
@pytest.mark.parametrize("label", CPU_LINES)
def test_each_readme_cpu_line_builds_trains_generates_and_reloads(label, wheel, tmp_path):
    backend = install_sizes.backend_of(LINES[label])
    python = install_sizes.fresh_venv(str(tmp_path / "venv"))
    venv = tmp_path / "venv"
    install = subprocess.run(
        [python, "-m", *install_sizes.with_wheel(LINES[label], wheel), "-q", "--no-compile"],
        capture_output=True, text=True, timeout=1200,
        env=install_sizes.pip_environment(LINES[label]),  # no retries of an index not reachable
    )
    assert install.returncode == 0, install.stdout[-2000:] + install.stderr[-2000:]
    listed = subprocess.run([python, "-m", "pip", "list", "--format=json"], check=True,
                            capture_output=True, text=True, timeout=300)
    versions = {package["name"].lower(): package["version"]
                for package in json.loads(listed.stdout)}
    assert {"keras", "numpy", "keras-transformer", backend} <= set(versions)
    if backend == "torch":
        assert versions["torch"].endswith("+cpu"), versions["torch"]  # no CUDA libraries
    assert not any(name.startswith("nvidia-") for name in versions), sorted(versions)
    lean = backend != "tensorflow"
    if lean:
        assert not set(versions) & HEAVY, sorted(set(versions) & HEAVY)

    script = tmp_path / "quickstart.py"
    quickstart = python_blocks(os.path.join(ROOT, "docs", "quickstart.md"))
    script.write_text("\n".join(quickstart) + (CHECKS if lean else ""))
    environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    run = subprocess.run(
        [python, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=900,
        env=dict(environment, KERAS_BACKEND=backend),
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "19200" in run.stdout  # the Quickstart's own check, as tests/test_docs.py reads it
    if not lean:
        return
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
    # The command, by its script or as `python -m keras_transformer`, behaves the same.
    # Each with a KERAS_HOME of its own: Keras writes a keras.json there when it first loads.
    for home, command in enumerate(([str(venv / "bin" / "keras-transformer")],
                                    [python, "-m", "keras_transformer"])):
        bare["KERAS_HOME"] = str(tmp_path / f"keras_home_{home}")
        chosen = subprocess.run([*command, "--version"], cwd=tmp_path, capture_output=True,
                                text=True, timeout=300, env=bare)
        assert chosen.returncode == 0, chosen.stderr[-3000:]
        assert chosen.stdout.strip() == "keras-transformer 0.1.0"
        assert chosen.stderr.strip() == (
            "keras-transformer: KERAS_BACKEND is not set and the backend Keras would load "
            f"(tensorflow, Keras' default) is not installed; using {backend}")
        refused = subprocess.run([*command, "--version"], cwd=tmp_path, capture_output=True,
                                 text=True, timeout=300,
                                 env=dict(bare, KERAS_BACKEND="tensorflow"))
        assert refused.returncode == 1
        assert refused.stderr.strip() == (
            "keras-transformer: error: the Keras backend tensorflow (from KERAS_BACKEND) is "
            f"not installed: set KERAS_BACKEND={backend}")
