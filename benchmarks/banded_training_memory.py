"""Peak memory of `model.fit` on long sequences: GPT-3's banded layers vs dense attention.

Trains `gpt3_tiny` (4 layers, d_model 32, 4 heads) at `--length` positions for a few steps
of batch 1, three ways, each in a fresh process so that its peak resident memory is its own:

* `gpt3`: GPT-3's layout, dense and banded layers alternating (banded: the blocked path);
* `all banded`: every layer banded;
* `all dense`: every layer dense (causal) attention, `attention_window=None`.

It prints what `fit` added to each process's peak resident memory (the peak after training
less the peak before the first `fit`), the whole peak, the time per step, and each run's
`fit` memory as a multiple of `gpt3`'s.

    KERAS_BACKEND=jax python benchmarks/banded_training_memory.py            # T = 8192, CPU
    KERAS_BACKEND=jax python benchmarks/banded_training_memory.py --length 2048 --steps 2
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

VARIANTS = {"gpt3": "alternate", "all banded": "all", "all dense": None}


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def train(variant, options):
    """Runs in the child process: builds, fits, returns the figures as a dict."""
    import numpy as np

    import keras_transformer as kt

    layout = VARIANTS[variant]
    overrides = dict(max_length=options.length, dropout=0.0)
    if layout is None:
        overrides["attention_window"] = None
    else:
        overrides.update(attention_window=options.window, banded_layers=layout)
    model = kt.DecoderOnly.from_preset("gpt3_tiny", **overrides)
    model.compile(optimizer="adam", loss=kt.training.LabelSmoothedCrossEntropy(0.0))
    rng = np.random.default_rng(0)
    ids = rng.integers(1, model.config.vocab_size, size=(options.steps + 1, options.length + 1))
    x, y = ids[:, :-1].astype("int32"), ids[:, 1:].astype("int32")
    before = peak_rss_bytes()
    model.fit(x[:1], y[:1], batch_size=1, epochs=1, verbose=0)  # compile
    start = time.perf_counter()
    history = model.fit(x[1:], y[1:], batch_size=1, epochs=1, verbose=0)
    seconds = (time.perf_counter() - start) / options.steps
    return {"variant": variant, "peak_bytes": peak_rss_bytes(), "before_fit_bytes": before,
            "step_seconds": seconds, "loss": float(history.history["loss"][-1])}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--length", type=int, default=8192)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--variant", choices=list(VARIANTS), help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.variant:  # the child
        print(json.dumps(train(options.variant, options)))
        return None
    backend = os.environ.get("KERAS_BACKEND", "jax")
    print(f"gpt3_tiny, KERAS_BACKEND={backend}, T = {options.length}, window "
          f"{options.window}, batch 1, {options.steps} steps of model.fit")
    rows = []
    for variant in VARIANTS:
        command = [sys.executable, os.path.abspath(__file__), "--variant", variant,
                   "--length", str(options.length), "--window", str(options.window),
                   "--steps", str(options.steps)]
        done = subprocess.run(command, capture_output=True, text=True,
                              env=dict(os.environ, KERAS_BACKEND=backend))
        if done.returncode:
            print(f"{variant}: failed (exit {done.returncode})\n{done.stderr[-2000:]}")
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for row in rows:
        row["fit_bytes"] = row["peak_bytes"] - row["before_fit_bytes"]
    base = next((r["fit_bytes"] for r in rows if r["variant"] == "gpt3"), None)
    print(f"{'layers':<11} {'fit GiB':>8} {'x gpt3':>7} {'peak GiB':>9} {'s/step':>7} {'loss':>6}")
    for row in rows:
        ratio = f"{row['fit_bytes'] / base:.2f}" if base else "n/a"
        print(f"{row['variant']:<11} {row['fit_bytes'] / 2**30:>8.2f} {ratio:>7} "
              f"{row['peak_bytes'] / 2**30:>9.2f} {row['step_seconds']:>7.2f} "
              f"{row['loss']:>6.2f}")
    return rows


if __name__ == "__main__":
    main()
