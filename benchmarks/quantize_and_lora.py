"""What quantization and LoRA buy: file size, memory and decode speed against float32, and
the trainable weights, optimizer state and peak training memory of LoRA against a full
fine-tune.

Each measurement runs in a fresh subprocess of this script, so that its peak resident memory
(`ru_maxrss`) is its own. The model is GPT-2-shaped with random weights (`--layers`,
`--width`, `--vocab`); figures are ratios against float32 and against the full fine-tune run
on the same machine in the same run.

    KERAS_BACKEND=jax python benchmarks/quantize_and_lora.py            # 6 layers, d=512
    KERAS_BACKEND=jax python benchmarks/quantize_and_lora.py --tiny     # seconds on a CPU
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def _model(args):
    import keras_transformer as kt

    return kt.DecoderOnly(vocab_size=args.vocab, num_layers=args.layers, d_model=args.width,
                          num_heads=max(1, args.width // 64), d_ff=4 * args.width,
                          max_length=args.prompt + args.new_tokens, dropout=0.0, pad_id=0)


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def serve(args, mode):
    """Save a (quantized) model, load it in this process, and time greedy decoding."""
    import keras
    import numpy as np

    folder = tempfile.mkdtemp()
    model = _model(args)
    if mode != "float32":
        model.quantize(mode)
    path = os.path.join(folder, "model.keras")
    model.save(path)
    size = os.path.getsize(path)
    del model
    before = _peak_mib()
    model = keras.saving.load_model(path)
    prompts = np.random.default_rng(0).integers(1, args.vocab, (args.batch, args.prompt))
    model.generate(prompts, max_new_tokens=args.new_tokens)  # compiles
    start = time.perf_counter()
    model.generate(prompts, max_new_tokens=args.new_tokens)
    seconds = time.perf_counter() - start
    return {"file_bytes": size, "tokens_per_second": args.batch * args.new_tokens / seconds,
            "peak_mib": _peak_mib(), "peak_mib_before_load": before}


def tune(args, mode):
    """A few training steps of a full fine-tune or of LoRA (rank `--rank`)."""
    import keras
    import numpy as np

    model = _model(args)
    if mode == "lora":
        model.enable_lora(args.rank)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ids = np.random.default_rng(0).integers(1, args.vocab, (args.train_batch, args.prompt + 1))
    start = time.perf_counter()
    model.fit(ids[:, :-1], ids[:, 1:], batch_size=args.train_batch, epochs=args.steps, verbose=0)
    seconds = time.perf_counter() - start
    count = lambda variables: int(sum(np.prod(v.shape) for v in variables))  # noqa: E731
    return {"trainable_params": count(model.trainable_weights),
            "total_params": count(model.weights),
            "optimizer_state_bytes": 4 * count(model.optimizer.variables),
            "peak_mib": _peak_mib(), "seconds_per_step": seconds / args.steps}


def _run_child(args, kind, mode):
    command = [sys.executable, __file__, "--child", kind, mode] + args.passthrough
    result = subprocess.run(command, capture_output=True, text=True, env=os.environ)
    if result.returncode:
        raise RuntimeError(f"{kind} {mode} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a model that runs in seconds")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--train-batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--modes", nargs="*", default=["float32", "int8", "int4", "float8"])
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tiny:
        args.layers, args.width, args.vocab, args.new_tokens, args.steps = 2, 128, 1000, 16, 2
    args.passthrough = [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
                        if k in ("layers", "width", "vocab", "prompt", "new_tokens", "batch",
                                 "train_batch", "steps", "rank")]
    if args.child:
        kind, mode = args.child
        print(json.dumps((serve if kind == "serve" else tune)(args, mode)))
        return

    import keras
    print(f"backend {keras.backend.backend()}; {args.layers} layers, d={args.width}, "
          f"vocab {args.vocab}; decode batch {args.batch}, prompt {args.prompt} + "
          f"{args.new_tokens} new tokens; fine-tune batch {args.train_batch}, {args.steps} steps")
    served = {mode: _run_child(args, "serve", mode) for mode in args.modes}
    base = served["float32"]
    print(f"{'mode':8} {'file MiB':>9} {'x f32':>6} {'peak MiB':>9} {'tok/s':>8} {'x f32':>6}")
    for mode, row in served.items():
        print(f"{mode:8} {row['file_bytes'] / 2**20:9.2f} {row['file_bytes'] / base['file_bytes']:6.2f} "
              f"{row['peak_mib']:9.0f} {row['tokens_per_second']:8.1f} "
              f"{row['tokens_per_second'] / base['tokens_per_second']:6.2f}")
    tuned = {mode: _run_child(args, "tune", mode) for mode in ("full", "lora")}
    full = tuned["full"]
    print(f"{'fine-tune':10} {'trainable':>11} {'x full':>7} {'optimizer MiB':>14} {'peak MiB':>9} "
          f"{'s/step':>7}")
    for mode, row in tuned.items():
        print(f"{mode if mode == 'full' else f'lora r={args.rank}':10} {row['trainable_params']:11d} "
              f"{row['trainable_params'] / full['trainable_params']:7.4f} "
              f"{row['optimizer_state_bytes'] / 2**20:14.2f} {row['peak_mib']:9.0f} "
              f"{row['seconds_per_step']:7.3f}")


if __name__ == "__main__":
    main()
