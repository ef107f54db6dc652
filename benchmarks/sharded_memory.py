"""Per-device memory of weights + optimizer state under each layout, on 8 devices.

A GPT-style DecoderOnly (8 layers, d_model 512, vocabulary 8,192 by default:
about 29 million weights) is built and compiled with AdamW under data
parallelism, Megatron model parallelism on a (2, 4) mesh, and sharded weights
on (8, 1) and (2, 4) meshes. For each, two figures of device 0, next to their
ratio to data parallelism:

* from the arrays' shardings: the bytes of the weights and optimizer variables
  whose shards device 0 holds;
* from XLA: the peak of the compiled training step
  (`kt.distribution.step_memory`), which adds the batch, the activations
  and the gradients.

Runs on the devices JAX finds, or on 8 virtual CPU devices (the flag is set
here before JAX starts):

    python benchmarks/sharded_memory.py            # a minute or two on 2 CPU cores
    python benchmarks/sharded_memory.py --tiny     # seconds: a smoke run
"""

import os

os.environ["KERAS_BACKEND"] = "jax"  # keras.distribution shards on JAX only
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()

import argparse  # noqa: E402
import json  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_transformer as kt  # noqa: E402

MIB = 2**20


def layouts():
    """`{name: distribution}` of the layouts compared, over every device."""
    mesh = kt.distribution.make_mesh
    return {
        "data_parallel": kt.distribution.data_parallel(),
        "model_parallel (2, 4)": kt.distribution.model_parallel(mesh(4)),
        "fully_sharded (8, 1)": kt.distribution.fully_sharded(mesh(1)),
        "fully_sharded (2, 4)": kt.distribution.fully_sharded(mesh(4)),
    }


def held_bytes(model):
    """Bytes of weights and optimizer variables whose shards device 0 holds."""
    return sum(
        variable.value.addressable_shards[0].data.nbytes
        for variable in model.weights + model.optimizer.variables
    )


def measure(args):
    ids = np.random.default_rng(0).integers(1, args.vocab_size, (args.batch, args.length))
    ids = ids.astype("int32")
    rows = {}
    for name, distribution in layouts().items():
        with distribution.scope():
            model = kt.DecoderOnly(
                vocab_size=args.vocab_size, num_layers=args.layers, d_model=args.d_model,
                num_heads=8, d_ff=4 * args.d_model, max_length=args.length, dropout=0.0,
            )
            model.compile(optimizer=keras.optimizers.AdamW(1e-4))
            model.optimizer.build(model.trainable_variables)
            weights = model.count_params()
            rows[name] = {
                "state_bytes": held_bytes(model),
                "step_peak_bytes": kt.distribution.step_memory(model, ids, ids).peak,
            }
        del model
    return {"weights": weights, "rows": rows}


def table(result, devices):
    base = result["rows"]["data_parallel"]
    lines = [
        f"{result['weights']:,} weights, AdamW, {devices} devices; device 0 holds:",
        "",
        "| layout | weights + optimizer state (MiB) | ratio | XLA step peak (MiB) | ratio |",
        "|---|---|---|---|---|",
    ]
    for name, row in result["rows"].items():
        lines.append(
            f"| {name} | {row['state_bytes'] / MIB:.1f} | "
            f"{row['state_bytes'] / base['state_bytes']:.3f} | "
            f"{row['step_peak_bytes'] / MIB:.1f} | "
            f"{row['step_peak_bytes'] / base['step_peak_bytes']:.3f} |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--batch", type=int, default=8, help="global batch")
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--tiny", action="store_true", help="a seconds-long smoke run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args()
    if args.tiny:
        args.layers, args.d_model, args.vocab_size, args.length = 1, 64, 256, 16
    devices = len(keras.distribution.list_devices())
    if devices != 8:
        raise SystemExit(f"the layouts need 8 devices; JAX found {devices}")
    result = measure(args)
    print(table(result, devices))
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
