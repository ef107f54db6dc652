"""The loader of tests/reliability/test_cross_backend.py: loads what another backend saves.

Run by path, `python cross_backend_loader.py BACKEND MANIFEST PARENT_PID` with `KERAS_BACKEND`
set to BACKEND: it loads each file in safe mode as the saving process lists it in MANIFEST (a
JSON line an item, then `null`), computes what the item asks for, and prints one line,
`RESULT {name: [class of the loaded model, what it computed]}` (`["error", repr]` for a file that
failed). It exits when PARENT_PID is no longer its parent (the test died) and fails when the
manifest gains no line for `STALL` seconds, so no loader outlives its test.

The test imports `logits`, `hypotheses` and `weights` from here: the saving process computes
what it expects as the loaders compute what they got.
"""

import json
import os
import sys
import time
from pathlib import Path

import keras
import numpy as np
from keras import ops

TESTS = str(Path(__file__).resolve().parents[1])
if TESTS not in sys.path:  # run by path: tests/ (calibrated_zoo) is not on the path yet
    sys.path.append(TESTS)
from calibrated_zoo import quantized_layers  # noqa: E402

STALL = 300  # seconds without a new manifest line: the saving process is stuck


def logits(model, inputs):
    """The model's logits: on JAX through `predict`, which compiles the forward pass once (JAX
    compiles each eager op on first use: four times as long for these models)."""
    if keras.backend.backend() == "jax":
        return model.predict(inputs, verbose=0)
    return ops.convert_to_numpy(model(inputs))


def hypotheses(model, prompt, arguments):
    """`model.generate(prompt, **arguments)` as JSON: `{"ids": ..., "scores": ...}` for beam
    search with `num_return` (ids `(batch, num_return, length)`), else `{"ids": ...}`."""
    generated = model.generate(np.asarray(prompt, "int32"), **arguments)
    if "num_return" in arguments:
        return {"ids": np.asarray(generated.ids).tolist(),
                "scores": np.asarray(generated.scores).tolist()}
    return {"ids": np.asarray(generated).tolist()}


def weights(model):
    """`{path without the model's name: NumPy value}` of the model's weights (quantized
    kernels, scales, zero points, float8 amax histories...)."""
    return {variable.path.split("/", 1)[-1]: ops.convert_to_numpy(variable)
            for variable in model.weights}


def manifest(path, parent):
    """Yields the items as the saving process appends them, a JSON line each, until `null`.

    Exits (status 1, saying why) when `parent` is no longer its parent; raises `TimeoutError`
    when no line comes for `STALL` seconds.
    """
    pending, stall = "", time.monotonic() + STALL
    with open(path) as lines:
        while True:
            pending += lines.readline()
            if not pending.endswith("\n"):  # the saving process has not written it yet
                if os.getppid() != parent:
                    sys.exit(f"the test (pid {parent}) ended: {path} stays unread")
                if time.monotonic() > stall:
                    raise TimeoutError(f"{path} gained no line for {STALL} s")
                time.sleep(0.05)
                continue
            item, pending, stall = json.loads(pending), "", time.monotonic() + STALL
            if item is None:
                return
            yield item


def jit_compile_as_loaded(loaded):
    """`[loaded.jit_compile, what "auto" gives a model compiled here]` for a compiled model,
    else None: a file compiled with the default saves "auto", for the loading backend."""
    if not loaded.compiled:
        return None
    plain = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    plain.compile(optimizer="sgd")
    return [loaded.jit_compile, plain.jit_compile]


def _quantized(loaded, item, arrays):
    """What a quantized model's loader reports beside its logits: the loaded model's quantized
    layers, the weights that differ from the saved model's, and beam search's hypotheses."""
    with np.load(item["weights"]) as saved:
        expected = {path: saved[f"arr_{i}"] for i, path in enumerate(item["weight_paths"])}
    mine = weights(loaded)
    differ = sorted(set(mine) ^ set(expected)) + sorted(
        path for path in set(mine) & set(expected)
        if mine[path].dtype != expected[path].dtype
        or not np.array_equal(mine[path], expected[path]))
    return {"quantized": quantized_layers(loaded), "weights_differ": differ,
            "jit_compile": jit_compile_as_loaded(loaded),
            "generated": hypotheses(loaded, arrays["__prompt__"], item["generate"])}


def load(item):
    """`[class name of the loaded model, what `item` asks to compute]`."""
    loaded = keras.saving.load_model(item["path"], safe_mode=True)
    if "optimizer" in item:  # a compiled model: its optimizer and state came along
        with np.load(item["optimizer"]) as saved:
            expected = [saved[f"arr_{i}"] for i in range(len(saved.files))]
        state = [ops.convert_to_numpy(v) for v in loaded.optimizer.variables]
        assert type(loaded.optimizer).__name__ == item["optimizer_cls"], loaded.optimizer
        assert len(state) == len(expected), (len(state), len(expected))
        got = {"state": max(float(np.abs(a - b).max()) for a, b in zip(state, expected)),
               "jit_compile": jit_compile_as_loaded(loaded)}
    elif "arrays" in item:
        arrays = dict(np.load(item["arrays"]))
        expected = arrays.pop("__expected__")
        inputs = arrays["__ids__"] if "__ids__" in arrays else {
            key: value for key, value in arrays.items() if not key.startswith("__")}
        mine = logits(loaded, inputs)
        assert mine.shape == expected.shape, (mine.shape, expected.shape)
        got = {"logits": float(np.abs(mine - expected).max())}
        if "mode" in item:
            got.update(_quantized(loaded, item, arrays))
    else:
        got = getattr(loaded, item["method"])(*item["args"], **item["kwargs"])
    return [type(loaded).__name__, got]


def main(backend, manifest_path, parent):
    import keras_transformer  # noqa: F401  (registers the classes: no custom_objects)

    assert keras.backend.backend() == backend, keras.backend.backend()
    results = {}
    for item in manifest(manifest_path, int(parent)):
        try:  # each file on its own: one failure does not hide the others
            results[item["name"]] = load(item)
        except Exception as error:
            results[item["name"]] = ["error", repr(error)]
    print("RESULT " + json.dumps(results), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
