"""One process of a JAX cluster: train a few steps of tiny models on a shared mesh.

Start it once per process, on one machine or many. Two processes on this
machine, each with 4 virtual CPU devices, training on one mesh of 8 devices:

    python examples/many_hosts.py --coordinator localhost:12355 --num-processes 2 \\
        --process-id 0 --output runs/cluster &
    python examples/many_hosts.py --coordinator localhost:12355 --num-processes 2 \\
        --process-id 1 --output runs/cluster

Each process joins the cluster with `keras.distribution.initialize` (or,
with `--join bounded`, `kt.distribution.join_cluster`: the same with bounded
timeouts), then, for each model
family and layout, builds the model under the layout over every device of
every process and trains it with `fit` on a `tf.data.Dataset` batched at the
global batch size, which Keras shards so that each process reads its own
rows. `kt.distribution.save_model` gathers the weights from every process and
process 0 writes `FAMILY-LAYOUT/model.keras` (a checkpoint that loads in one
process) and `weights.npz` under `--output`; every process writes
`process-N.json` (losses, the rows it read and the rows of the global batch
per step, which weights are split over processes).
With `--num-processes 1 --devices-per-process 8` the same script is the
one-process reference: the same meshes over the same number of devices.

Layouts (`--layouts`): `data_parallel` (every weight on every device),
`model_parallel` (Megatron's split over a model axis of `--model-size`
devices, 2 by default: inside a process), `fully_sharded` (every weight and
optimizer moment split over the batch axis too, across processes).

With `--join bounded`, a process that loses a peer stops with JAX's error
("another task died") within about `--timeout` seconds, or twice that when
the peer raised an exception (it waits at exit for the others first).
"""

import argparse
import os
import sys

FAMILIES = ("decoder_only", "encoder_decoder")
LAYOUTS = ("data_parallel", "model_parallel", "fully_sharded")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coordinator", default="localhost:12355",
                        help="host:port of process 0 (the coordinator)")
    parser.add_argument("--num-processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    parser.add_argument("--devices-per-process", type=int, default=4,
                        help="virtual CPU devices of each process (CPU only)")
    parser.add_argument("--families", nargs="+", choices=FAMILIES, default=list(FAMILIES))
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--model-size", type=int, default=None,
                        help="devices of the model axis (default: 2 for model_parallel, "
                        "keeping it inside a process, 1 otherwise)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=8, help="the global batch")
    parser.add_argument("--join", choices=("keras", "bounded"), default="keras",
                        help="keras: keras.distribution.initialize (JAX's timeouts: 300 s to "
                        "join, 100 s of silence); bounded: kt.distribution.join_cluster with "
                        "--timeout")
    parser.add_argument("--timeout", type=int, default=None,
                        help="with --join bounded: seconds to wait for a peer before giving up "
                        "(default 60)")
    parser.add_argument("--output", required=True)
    parser.add_argument("--fail-after-steps", type=int, default=None,
                        help="(testing) this process fails after this many steps")
    parser.add_argument("--failure", choices=("crash", "raise"), default="crash",
                        help="(testing) crash: die at once; raise: an exception")
    args = parser.parse_args(argv)
    for name in ("num_processes", "devices_per_process", "steps", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if not 0 <= args.process_id < args.num_processes:
        parser.error(f"--process-id must be in [0, {args.num_processes - 1}]")
    if args.timeout is not None and args.join != "bounded":
        parser.error("--timeout needs --join bounded: keras.distribution.initialize keeps "
                     "JAX's timeouts (300 s to join, 100 s of silence)")
    args.timeout = 60 if args.timeout is None else args.timeout
    if args.batch_size % (args.num_processes * args.devices_per_process):
        parser.error("--batch-size must be divisible by every device of the cluster "
                     f"({args.num_processes} x {args.devices_per_process})")
    try:  # before any training: a lost run for a typo would be a waste
        os.makedirs(args.output, exist_ok=True)
        with open(os.path.join(args.output, f".writable-{args.process_id}"), "w"):
            pass
        os.remove(os.path.join(args.output, f".writable-{args.process_id}"))
    except OSError as error:
        parser.error(f"--output {args.output!r} is not a writable folder: {error.strerror}")
    return args


def start_jax(args):
    """JAX, virtual devices, then the cluster, before JAX computes anything."""
    os.environ["KERAS_BACKEND"] = "jax"  # keras.distribution runs clusters on JAX
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = (
        f"{flags} --xla_force_host_platform_device_count={args.devices_per_process}"
    ).strip()
    if args.num_processes == 1:
        return
    if args.join == "keras":
        import keras

        keras.distribution.initialize(args.coordinator, args.num_processes, args.process_id)
    else:
        from keras_transformer.distribution import cluster

        cluster.join_cluster(
            args.coordinator, args.num_processes, args.process_id, timeout=args.timeout,
            heartbeat_timeout=args.timeout,
        )


def cluster_model(kt, family):
    """A tiny model of `family`, without dropout (so every layout computes the same)."""
    if family == "decoder_only":
        return kt.DecoderOnly.from_preset("gpt2_tiny", num_layers=2, dropout=0.0)
    return kt.EncoderDecoder.from_preset("transformer_tiny", num_layers=1, dropout=0.0)


def global_batches(args, family, rng):
    """`args.steps` global batches of token ids as a `tf.data.Dataset`, the same everywhere."""
    import tensorflow as tf

    ids = rng.integers(3, 128, size=(3, args.steps * args.batch_size, 16)).astype("int32")
    ids[:, ::3, -4:] = 0  # some padding
    if family == "decoder_only":
        inputs, targets = ids[0], ids[1]
    else:
        inputs, targets = {"source": ids[0], "target": ids[1]}, ids[2]
    return tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(args.batch_size)


def batch_rows(y_true, y_pred):
    """The batch size, once per label: its mean is the rows of the global batch."""
    import keras

    return keras.ops.full(keras.ops.shape(y_true), keras.ops.shape(y_true)[0])


def register_metric():
    """Lets `.keras` files compiled with the `global_rows` metric load (here or elsewhere)."""
    import keras

    name = "many_hosts>batch_rows"
    if name not in keras.saving.get_custom_objects():
        keras.saving.register_keras_serializable(package="many_hosts")(batch_rows)


def local_fraction(value):
    """The share of a `jax.Array` that this process's devices hold."""
    held = {str(shard.index): shard.data.size for shard in value.addressable_shards}
    return sum(held.values()) / value.size


def run(args, family, layout):
    """Trains one model under one layout; returns what the test compares."""
    import keras
    import numpy as np

    import keras_transformer as kt
    from keras_transformer.distribution import cluster

    model_size = args.model_size or (2 if layout == "model_parallel" else 1)
    mesh = kt.distribution.make_mesh(model_size)
    if layout == "fully_sharded":
        distribution = kt.distribution.fully_sharded(mesh)
    elif layout == "model_parallel":
        distribution = kt.distribution.model_parallel(mesh)
    else:
        distribution = kt.distribution.data_parallel()
    keras.utils.set_random_seed(0)  # every process and layout: the same initial weights
    dataset = global_batches(args, family, np.random.default_rng(1))
    rows = next(iter(distribution.distribute_dataset(dataset)))[1].shape[0]
    losses, global_rows = [], []

    def after_step(batch, logs):
        losses.append(float(logs["loss"]))
        global_rows.append(float(logs["global_rows"]))
        if args.fail_after_steps == len(losses):
            if args.failure == "crash":
                os._exit(3)  # no clean-up, no goodbye to the cluster
            raise RuntimeError(f"process {args.process_id} fails after {len(losses)} steps")

    with distribution.scope():
        model = cluster_model(kt, family)
        # SGD with momentum: the update is linear in the gradient, so the last-bit
        # differences of a cross-process reduction stay last-bit (Adam divides tiny
        # gradients by their own size and would turn them into step-sized ones).
        # `global_rows`: rows of the global batch each step trained on, from the labels the
        # loss saw (each process feeding its whole batch instead of its share would double it).
        rows_metric = keras.metrics.MeanMetricWrapper(batch_rows, name="global_rows")
        model.compile(
            optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9), metrics=[rows_metric]
        )
        model.fit(
            dataset, epochs=1, verbose=0,
            callbacks=[keras.callbacks.LambdaCallback(on_train_batch_end=after_step)],
        )
    folder = os.path.join(args.output, f"{family}-{layout}")
    os.makedirs(folder, exist_ok=True)
    weights = cluster.gathered_weights(model)
    cluster.save_model(model, os.path.join(folder, "model.keras"))
    if cluster.is_coordinator():
        np.savez(os.path.join(folder, "weights.npz"), *weights)
    split = [v.path for v in model.weights if local_fraction(v.value) < 1]
    return {
        "family": family, "layout": layout, "mesh": list(mesh.shape), "losses": losses,
        "rows_per_step": int(rows), "global_rows": global_rows, "weights_split_over_processes": split,
        "weights": len(model.weights),
    }


def main(argv=None):
    args = parse_args(argv)
    start_jax(args)
    register_metric()
    import json

    import jax

    results = [
        run(args, family, layout) for family in args.families for layout in args.layouts
    ]
    name = f"process-{jax.process_index()}.json"
    with open(os.path.join(args.output, name), "w") as file:
        json.dump({"processes": jax.process_count(), "devices": jax.device_count(),
                   "runs": results}, file, indent=1)
    print(f"process {jax.process_index()} of {jax.process_count()}: "
          + "; ".join(f"{r['family']} {r['layout']} loss {r['losses'][-1]:.4f}"
                      for r in results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
