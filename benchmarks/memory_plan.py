"""Will it fit? The memory-plan table of docs/scaling_out.md, from `kt.distribution.plan`.

For GPT-2 XL, LLaMA 2 7B and GPT-3 175B (the library's presets) on 1, 8, 64
and 1,024 H200s, prints a markdown table of each layout's per-device peak
without and with remat, whether it fits in an H200's memory, and the tokens
per second the step's model FLOPs allow at 40% MFU. Nothing is built or run:
the plan is arithmetic on the config, so this takes a second on any machine.

    python benchmarks/memory_plan.py [--utilization 0.4]
    KERAS_BACKEND=jax python benchmarks/memory_plan.py --rss [--batch 32]

`--rss` is a second view of the plan's check, on one device: the GPT-style
config of tests/distribution/plan_checks.py, its plan, XLA's figure for the
compiled step (`step_memory`), and how far the process's peak resident memory
rises over one real `train_on_batch` above what it held before (after a
first step at batch 1, so the runtime is warm; the rise includes compiling
the step at the new batch size).

Assumptions (also printed under the table): the dtype policy
"mixed_bfloat16" as Keras runs it: float32 weights, gradients and Adam
moments (Keras creates the moments in the weights' dtype), bfloat16
compute and activations; one sequence per batch-axis device at the model's
context length; cuDNN flash attention (no T x T scores kept); XLA:GPU's
all-reduce in place; the model axis at most 8 (one host's NVLink domain).
"""

import argparse
import re

H200_BYTES = 141e9  # HBM3e per H200
H200_FLOPS = 989e12  # dense bfloat16 tensor-core peak, FLOP/s
MODELS = (  # (name shown, preset, context length, embedding split)
    ("GPT-2 XL (1.5B)", "gpt2_xl", 1024, "model"),  # 50,257 tokens (GPT-3 too) do not split by 8
    ("LLaMA 2 7B", "llama2_7b", 4096, "vocab"),
    ("GPT-3 175B", "gpt3_175b", 2048, "model"),
)
DEVICES = (1, 8, 64, 1024)
MODEL_AXIS = 8


def layouts(devices):
    """(column, layout, mesh) of each layout for `devices` H200s."""
    if devices == 1:
        return [("data_parallel", "data_parallel", {"batch": 1})]
    model = min(MODEL_AXIS, devices)
    return [
        ("data_parallel", "data_parallel", {"batch": devices}),
        (f"model_parallel ({devices // model} x {model})", "model_parallel",
         {"batch": devices // model, "model": model}),
        (f"fully_sharded ({devices} x 1)", "fully_sharded", {"batch": devices, "model": 1}),
        (f"fully_sharded ({devices // model} x {model})", "fully_sharded",
         {"batch": devices // model, "model": model}),
    ][: 4 if devices > model else 3]  # on one host, 1 x 8 is model_parallel's mesh


def cell(plain, remat):
    """`peak GB / remat peak GB`, each marked with whether it fits."""
    def one(step):
        mark = "fits" if step.fits(H200_BYTES) else "**no**"
        return f"{step.total / 1e9:,.0f} {mark}"

    return f"{one(plain)} / {one(remat)}"


def table(utilization):
    import keras_transformer as kt

    lines = ["| model | H200s | layout (batch x model) | peak GB per device: no remat / remat "
             f"| tokens/s at {utilization:.0%} MFU |", "|---|---:|---|---|---:|"]
    for title, preset, length, embedding in MODELS:
        config = kt.models.preset_config(preset)
        for devices in DEVICES:
            for column, layout, mesh in layouts(devices):
                batch = devices // mesh.get("model", 1) if layout != "data_parallel" else devices
                steps = [
                    kt.distribution.plan(
                        config, mesh, batch_size=batch, length=length, layout=layout,
                        dtype="mixed_bfloat16", remat=remat,
                        flash_attention=True, embedding=embedding)
                    for remat in (False, True)
                ]
                fits = any(step.fits(H200_BYTES) for step in steps)
                speed = f"{steps[0].tokens_per_second(H200_FLOPS, utilization):,.0f}" if fits else "-"
                lines.append(f"| {title} | {devices:,} | {column} | {cell(*steps)} | {speed} |")
    return "\n".join(lines)


def _status(key):
    """A `/proc/self/status` figure in bytes (Linux)."""
    with open("/proc/self/status") as status:
        return int(re.search(rf"{key}:\s+(\d+) kB", status.read()).group(1)) * 1024


def rss(batch_size):
    """Plan, XLA and the process's peak resident memory of one single-device step."""
    import os
    import sys

    import keras
    import numpy as np

    import keras_transformer as kt

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "distribution"))
    from plan_checks import CONFIGS

    spec = CONFIGS["gpt"]
    model = kt.DecoderOnly(**spec["arguments"])
    model.compile(optimizer=keras.optimizers.AdamW(1e-3))
    ids = np.random.default_rng(0).integers(4, model.config.vocab_size,
                                            (batch_size, spec["length"])).astype("int32")
    planned = kt.distribution.plan(model.config, {"batch": 1}, batch_size, spec["length"])
    measured = kt.distribution.step_memory(model, ids, ids)
    model.train_on_batch(ids[:1], ids[:1])
    before = _status("VmRSS")
    model.train_on_batch(ids, ids)
    rise = _status("VmHWM") - before
    print(f"GPT-style config, batch {batch_size} x {spec['length']}, one device: plan "
          f"{planned.total / 1e6:,.0f} MB, XLA {measured.peak / 1e6:,.0f} MB "
          f"(of which temporaries {measured.temporaries / 1e6:,.0f} MB), peak RSS rise over "
          f"the step {rise / 1e6:,.0f} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--utilization", type=float, default=0.4, help="MFU assumed")
    parser.add_argument("--rss", action="store_true",
                        help="measure one single-device step instead (JAX, Linux)")
    parser.add_argument("--batch", type=int, default=32, help="with --rss: the batch size")
    args = parser.parse_args()
    if args.rss:
        rss(args.batch)
        return
    print(table(args.utilization))
    print()
    print(f"mixed_bfloat16: float32 weights, gradients and Adam moments, bfloat16 compute; "
          f"one sequence per batch-axis device; flash attention; H200: "
          f"{H200_BYTES / 1e9:.0f} GB, {H200_FLOPS / 1e12:.0f} TFLOP/s dense bfloat16.")


if __name__ == "__main__":
    main()
