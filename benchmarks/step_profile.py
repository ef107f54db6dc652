"""Where a JAX training step's time goes: ours vs keras-hub, one compiled step taken apart.

For each runner of `train_throughput.py` (the same models, compiled the same way, on the same
fresh batches: `train_throughput.compiled_runner`) it prints:

* `fit ms`: a step through `model.fit` (the figure `train_throughput.py` reports);
* `step ms`: the same compiled train step called in a Python loop on batches already on the
  device, so `fit ms - step ms` is Keras' per-step overhead (data adapter, callbacks);
* XLA's own count of the compiled step: FLOPs, bytes moved, transcendental ops (exp, tanh),
  and the number of kernels (fusions) it launches;
* `custom calls`: library kernels XLA called instead of generating code (on a GPU: the cuDNN
  flash-attention kernel shows here as `__cudnn$fmha...`; none means plain attention).

Each step time is the median of `--repeats` loops of `--steps` steps, with the range.

    KERAS_BACKEND=jax python benchmarks/step_profile.py --tiny          # CPU, tiny shapes
    KERAS_BACKEND=jax python benchmarks/step_profile.py --workloads gpt2  # GPU, GPT-2 small
"""

import argparse
import collections
import os
import re
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import train_throughput as tt  # noqa: E402


def jitted_step(model):
    """`(jax.jit(train_step), state)` of a compiled Keras model on JAX."""
    import jax

    state = model._get_jax_state(trainable_variables=True, non_trainable_variables=True,
                                 optimizer_variables=True, metrics_variables=True,
                                 purge_model_variables=False)
    return jax.jit(model.train_step), state


def timed(fn, repeats):
    """Median and range of `repeats` calls of `fn() -> seconds per step`."""
    values = [fn() for _ in range(repeats)]
    return statistics.median(values), min(values), max(values)


def profile(runner, workload, options):
    import jax

    shape_name, dropout = tt.WORKLOADS[workload]
    shape = tt.shape_of(shape_name, options.tiny)
    batch, steps = shape["batch"], options.steps
    model, _, inputs, labels = tt.compiled_runner(
        runner, shape, shape["length"], dropout, batch * (steps + 1), options.precision)
    rows = lambda a, first, count: a[first * batch:(first + count) * batch]  # noqa: E731

    def select(first, count):
        if isinstance(inputs, dict):
            return {k: rows(v, first, count) for k, v in inputs.items()}
        return rows(inputs, first, count)

    def fit():
        start = time.perf_counter()
        model.fit(select(1, steps), rows(labels, 1, steps), batch_size=batch,
                  epochs=1, verbose=0, shuffle=False)
        return (time.perf_counter() - start) / steps

    model.fit(select(0, 1), rows(labels, 0, 1), batch_size=batch, verbose=0)
    fit_ms = timed(fit, options.repeats)

    step, state = jitted_step(model)
    on_device = [jax.device_put((select(i, 1), rows(labels, i, 1)))
                 for i in range(1, steps + 1)]
    compiled = step.lower(state, on_device[0]).compile()
    _, state = compiled(state, on_device[0])
    jax.block_until_ready(state)

    def loop():
        nonlocal state
        start = time.perf_counter()
        for batch_data in on_device:
            _, state = compiled(state, batch_data)
        jax.block_until_ready(state)
        return (time.perf_counter() - start) / steps

    step_ms = timed(loop, options.repeats)
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    text = compiled.as_text()
    fusions = len(re.findall(r"^\s*\S+ = \S+ fusion\(", text, re.M))
    calls = collections.Counter(re.findall(r'custom_call_target="([^"]+)"', text))
    return dict(runner=runner, workload=workload, fit=fit_ms, step=step_ms,
                flops=cost.get("flops", 0), bytes=cost.get("bytes accessed", 0),
                transcendentals=cost.get("transcendentals", 0), fusions=fusions, calls=calls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shapes, float32 (CPU)")
    parser.add_argument("--workloads", default="gpt2,transformer")
    parser.add_argument("--runners", default="ours,keras-hub")
    parser.add_argument("--steps", type=int, default=None, help="steps per loop (tiny 400, else 20)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--precision", default=None, help="default: tiny float32, else mixed_bfloat16")
    options = parser.parse_args()
    options.steps = options.steps or (400 if options.tiny else 20)
    options.precision = options.precision or ("float32" if options.tiny else "mixed_bfloat16")
    import keras

    if keras.backend.backend() != "jax":
        parser.error("the profile reads JAX's compiled step: run it with KERAS_BACKEND=jax")
    print(f"{'workload':<13} {'runner':<10} {'fit ms (range)':>20} {'step ms (range)':>20} "
          f"{'GFLOP':>7} {'MB moved':>9} {'transc. M':>9} {'kernels':>8}  custom calls")
    for workload in options.workloads.split(","):
        for runner in options.runners.split(","):
            r = profile(runner, workload, options)
            span = lambda t: f"{1e3 * t[0]:.2f} ({1e3 * t[1]:.2f}-{1e3 * t[2]:.2f})"  # noqa: E731
            calls = ", ".join(f"{name} x{n}" for name, n in sorted(r["calls"].items())) or "none"
            print(f"{workload:<13} {runner:<10} {span(r['fit']):>20} {span(r['step']):>20} "
                  f"{r['flops'] / 1e9:>7.3f} {r['bytes'] / 1e6:>9.1f} "
                  f"{r['transcendentals'] / 1e6:>9.2f} {r['fusions']:>8}  {calls}", flush=True)


if __name__ == "__main__":
    main()
