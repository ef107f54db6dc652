import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from keras import ops

BACKENDS = ("tensorflow", "jax", "torch")

_LOAD_SCRIPT = """
import sys
import numpy as np
import keras
from keras import ops
import keras_transformer  # registers the classes; no custom_objects below
assert keras.backend.backend() == sys.argv[1], keras.backend.backend()
model = keras.saving.load_model(sys.argv[2])
arrays = dict(np.load(sys.argv[3]))
expected = arrays.pop("__expected__")
inputs = arrays.pop("__ids__") if "__ids__" in arrays else arrays
got = ops.convert_to_numpy(model(inputs))
np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
print("loaded-and-matched", type(model).__name__)
"""


@pytest.fixture
def assert_loads_under_other_backends(tmp_path):
    """Saves `model`, loads it under the two other backends, compares logits to 1e-5."""

    def check(model, inputs):
        expected = ops.convert_to_numpy(model(inputs))
        model.save(str(tmp_path / "model.keras"))
        arrays = dict(inputs) if isinstance(inputs, dict) else {"__ids__": inputs}
        np.savez(tmp_path / "arrays.npz", __expected__=expected, **arrays)
        here = keras.backend.backend()
        others = [b for b in BACKENDS if b != here]
        running = {
            backend: subprocess.Popen(
                [sys.executable, "-c", _LOAD_SCRIPT, backend,
                 str(tmp_path / "model.keras"), str(tmp_path / "arrays.npz")],
                env=dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
                         OMP_NUM_THREADS="1"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for backend in others  # both at once: most of their time is importing
        }
        for backend, process in running.items():
            stdout, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, f"{here} -> {backend}:\n{stderr[-3000:]}"
            assert f"loaded-and-matched {type(model).__name__}" in stdout

    return check
