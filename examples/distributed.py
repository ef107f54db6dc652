"""Train a small GPT under `keras.distribution`: data parallel, then data x model parallel.

Runs on every device JAX finds: the GPUs (or TPUs) of this host, or, on a
CPU-only machine, 8 virtual CPU devices. The same model trains twice on a
synthetic counting task:

* `DataParallel`: every device holds all weights and a slice of each batch;
* `ModelParallel` on a `(batch, model)` mesh: each weight matrix is split
  Megatron-style over the model axis (see `keras_transformer.distribution`),
  and batches over the batch axis.

    KERAS_BACKEND=jax python examples/distributed.py          # about a minute on CPU
    KERAS_BACKEND=jax python examples/distributed.py --smoke  # a few seconds

`keras.distribution` is JAX-only: see docs/scaling_out.md for several hosts and
for the TensorFlow and PyTorch backends.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")
# Before JAX starts: let the host platform show 8 devices. This only changes
# the CPU platform, so a machine with GPUs still trains on its GPUs.
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
    ).strip()

import argparse  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_transformer as kt  # noqa: E402

FIRST_SYMBOL = 1  # the stream never uses id 0 (gpt2_tiny has no padding id; any id would do)
QKV_SUFFIX = "block_0/self_attention/qkv/kernel"


def counting_stream(rng, tokens, vocab_size):
    """Symbols counting up by one, jumping to a random symbol about every 16 tokens."""
    jumps = rng.random(tokens) < 1 / 16
    steps = np.where(jumps, rng.integers(0, vocab_size, tokens), 1)
    return FIRST_SYMBOL + np.cumsum(steps) % (vocab_size - FIRST_SYMBOL)


def default_model_size(num_devices, num_heads):
    """The largest of 4, 2, 1 dividing both the device count and the head count."""
    return next(size for size in (4, 2, 1) if num_devices % size == 0 and num_heads % size == 0)


def shard_summary(model):
    """Global and per-device shape of the first fused Q/K/V kernel (JAX arrays)."""
    variable = next(v for v in model.weights if v.path.endswith(QKV_SUFFIX))
    value = variable.value
    return f"qkv kernel {tuple(value.shape)} held as {tuple(value.addressable_shards[0].data.shape)}"


def train(name, distribution, args, data):
    """Creates, compiles and trains the model inside `distribution.scope()`."""
    x, y = data
    steps = args.epochs * args.steps_per_epoch
    with distribution.scope():  # the model's variables are created on the mesh
        model = kt.DecoderOnly.from_preset(args.preset, dropout=0.0)
        model.compile(
            optimizer=kt.training.gpt_optimizer(
                peak_learning_rate=args.learning_rate, warmup_steps=max(1, steps // 10),
                total_steps=steps,
            )
        )
        history = model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, verbose=0)
        prompt = np.array([[10, 11, 12, 13]], dtype="int32")
        generated = model.generate(prompt, max_new_tokens=6)
    mesh = distribution.device_mesh
    losses = history.history["loss"]
    print(f"{name} on mesh {tuple(mesh.shape)} {tuple(mesh.axis_names)}: {shard_summary(model)}")
    print(f"  loss {losses[0]:.3f} -> {losses[-1]:.3f} over {steps} steps")
    print(f"  {prompt[0].tolist()} -> {generated[0, prompt.shape[1]:].tolist()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="a few steps, for tests")
    parser.add_argument("--preset", default="gpt2_tiny")
    parser.add_argument("--model-size", type=int, default=None,
                        help="devices per model replica (default: 4, 2 or 1)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="global batch (default: 8 per device)")
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--steps-per-epoch", type=int, default=50)
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    args = parser.parse_args()
    if keras.backend.backend() != "jax":
        raise SystemExit(
            "keras.distribution shards over devices on the JAX backend only: run with "
            "KERAS_BACKEND=jax (docs/scaling_out.md covers TensorFlow and PyTorch)."
        )
    if args.smoke:
        args.epochs, args.steps_per_epoch, args.length = 2, 2, 16

    devices = keras.distribution.list_devices()
    print(f"{len(devices)} devices: {', '.join(devices)}")
    config = kt.models.preset_config(args.preset, dropout=0.0)
    model_size = args.model_size or default_model_size(len(devices), config.block.num_heads)
    args.batch_size = args.batch_size or 8 * len(devices)

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    tokens = args.batch_size * args.steps_per_epoch * args.length + 1  # whole batches
    data = kt.training.next_token_windows(
        counting_stream(rng, tokens, config.vocab_size), length=args.length
    )
    distributions = {
        "DataParallel": kt.distribution.data_parallel(devices),
        "ModelParallel": kt.distribution.model_parallel(
            kt.distribution.make_mesh(model_size, devices), config=config
        ),
    }
    for name, distribution in distributions.items():
        train(name, distribution, args, data)


if __name__ == "__main__":
    main()
