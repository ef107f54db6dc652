"""One GPT-3 banded layer, blocked (computes the band) vs dense-masked (the `(T, T)` mask).

Both are the same `MultiHeadAttention` layer with the same weights; the dense-masked one
runs the old path, dense attention over `masks.banded_mask`. For each length it prints the
forward+backward time (median of `--repeats` steps, after a compiled warm-up) and the peak
memory of one step, and the ratios dense / blocked.

Peak memory: on JAX, what XLA's memory analysis of the compiled step says it needs
(temporaries plus outputs, on any device); on a CUDA GPU with torch,
`torch.cuda.max_memory_allocated` during the step. On CPU with torch memory is not reported.

    KERAS_BACKEND=jax python benchmarks/banded_attention.py               # CPU, float32
    KERAS_BACKEND=jax python benchmarks/banded_attention.py --dtype bfloat16 --lengths \\
        1024 2048 4096 8192 16384 32768                                       # GPU (H200)
    KERAS_BACKEND=torch python benchmarks/banded_attention.py --dtype bfloat16  # GPU

`--json PATH` also writes the rows (rewritten after each length, so a cut run keeps them).
"""

import argparse
import dataclasses
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from keras_transformer.layers import MultiHeadAttention  # noqa: E402
from train_throughput import write_json  # noqa: E402


class DenseMaskedAttention(MultiHeadAttention):
    """The path banded layers took before: dense attention over the `(T, T)` banded mask."""

    def _plan(self, *args, **kwargs):
        # The same band, as a call at explicit position 0: the plan's `masked` kernel.
        return dataclasses.replace(super()._plan(*args, **kwargs), offset=0)


def layers(options):
    """The blocked and the dense-masked layer, with the same weights."""
    made = {}
    for name, cls in (("blocked", MultiHeadAttention), ("dense", DenseMaskedAttention)):
        layer = cls(num_heads=options.heads, mode="banded", window=options.window,
                    dtype=options.dtype)
        layer.build((options.batch, None, options.d_model))
        made[name] = layer
    made["dense"].set_weights(made["blocked"].get_weights())
    return made


def jax_step(layer, x):
    """`(run() -> seconds, peak bytes)`: a jitted forward+backward step on JAX."""
    import jax

    trainable = [v.value for v in layer.trainable_variables]

    def loss(weights, x):
        out, _ = layer.stateless_call(weights, [], x)
        return ops.mean(ops.square(ops.cast(out, "float32")))

    step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    compiled = step.lower(trainable, x).compile()
    analysis = compiled.memory_analysis()
    peak = analysis.temp_size_in_bytes + analysis.output_size_in_bytes
    jax.block_until_ready(compiled(trainable, x))  # warm-up

    def run():
        start = time.perf_counter()
        jax.block_until_ready(compiled(trainable, x))
        return time.perf_counter() - start

    return run, peak


def torch_step(layer, x):
    """`(run() -> seconds, peak bytes or None)`: an eager forward+backward step on torch."""
    import torch

    cuda = x.is_cuda  # `x` is already a tensor on Keras' device

    def once():
        for v in layer.trainable_variables:
            v.value.grad = None
        out = layer(x)
        ops.mean(ops.square(ops.cast(out, "float32"))).backward()
        if cuda:
            torch.cuda.synchronize()

    once()  # warm-up
    peak = None
    if cuda:
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        once()
        peak = torch.cuda.max_memory_allocated() - before

    def run():
        start = time.perf_counter()
        once()
        return time.perf_counter() - start

    return run, peak


def measure(layer, length, options):
    x = np.random.default_rng(0).normal(size=(options.batch, length, options.d_model))
    x = ops.convert_to_tensor(x.astype("float32"), dtype=options.dtype)
    step = jax_step if keras.backend.backend() == "jax" else torch_step
    run, peak = step(layer, x)
    seconds = statistics.median(run() for _ in range(options.repeats))
    return seconds, peak


def gib(n):
    return "n/a" if n is None else f"{n / 2**30:.3f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the rows to this file")
    options = parser.parse_args(argv)
    if keras.backend.backend() not in ("jax", "torch"):
        parser.error("KERAS_BACKEND must be jax or torch")
    made = layers(options)
    print(f"backend {keras.backend.backend()}, {options.dtype}, batch {options.batch}, "
          f"d_model {options.d_model}, {options.heads} heads, window {options.window}; "
          f"forward+backward, median of {options.repeats}")
    print(f"{'T':>6} {'blocked ms':>11} {'dense ms':>10} {'speed-up':>9} "
          f"{'blocked GiB':>12} {'dense GiB':>10} {'memory ratio':>13}")
    rows = []
    for length in options.lengths:
        row = {"length": length}
        for name, layer in made.items():
            seconds, peak = measure(layer, length, options)
            row[name] = {"ms": seconds * 1e3, "peak_bytes": peak}
        blocked, dense = row["blocked"], row["dense"]
        speed = dense["ms"] / blocked["ms"]
        memory = (dense["peak_bytes"] / blocked["peak_bytes"]
                  if blocked["peak_bytes"] else None)
        row.update(speed_up=speed, memory_ratio=memory)
        rows.append(row)
        write_json(options.json, rows)
        memory_text = "n/a" if memory is None else f"{memory:.1f}x"
        print(f"{length:>6} {blocked['ms']:>11.1f} {dense['ms']:>10.1f} {speed:>8.2f}x "
              f"{gib(blocked['peak_bytes']):>12} {gib(dense['peak_bytes']):>10} "
              f"{memory_text:>13}", flush=True)
    # Sanity: the two layers compute the same thing.
    x = np.random.default_rng(1).normal(size=(1, 3 * options.window + 5, options.d_model))
    x = x.astype("float32")
    gap = np.abs(ops.convert_to_numpy(ops.cast(made["blocked"](x), "float32"))
                 - ops.convert_to_numpy(ops.cast(made["dense"](x), "float32"))).max()
    print(f"largest |blocked - dense| on a {x.shape[1]}-position input: {gap:.2e}")
    return rows


if __name__ == "__main__":
    main()
