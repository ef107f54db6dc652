"""Peak host memory of label-smoothed cross-entropy (value + gradient) on CPU.

Compares `LabelSmoothedCrossEntropy` (log-softmax once, no one-hot) with the
usual Keras route to label smoothing, `CategoricalCrossentropy(label_smoothing)`
on one-hot targets, at GPT-2's vocabulary: batch 8 x 1024 tokens x 50,257.
Each variant runs in a fresh process; peak RSS minus the baseline (the logits
and labels alone) is what the loss itself costs.

    KERAS_BACKEND=jax python benchmarks/loss_memory.py [--batch 8 --length 1024]
"""

import argparse
import os
import resource
import subprocess
import sys

VARIANTS = ("baseline", "ours", "one_hot")


def run_variant(variant, batch, length, vocab):
    import keras
    import numpy as np
    from keras import ops

    from keras_transformer.training import LabelSmoothedCrossEntropy

    rng = np.random.default_rng(0)
    logits = keras.Variable(rng.standard_normal((batch, length, vocab), dtype="float32"))
    labels = ops.convert_to_tensor(rng.integers(1, vocab, size=(batch, length)))
    if variant == "ours":
        loss_fn = LabelSmoothedCrossEntropy(label_smoothing=0.1, pad_id=0)
        compute = lambda x: loss_fn(labels, x)  # noqa: E731
    elif variant == "one_hot":
        loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)
        compute = lambda x: loss_fn(ops.one_hot(labels, vocab), x)  # noqa: E731
    else:
        compute = None
    if compute is not None:
        value, grad = _value_and_grad(compute, logits)
        float(value), float(ops.sum(grad))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # GiB


def _value_and_grad(compute, variable):
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.jit(jax.value_and_grad(compute))(variable.value)
    if backend == "torch":
        import torch

        x = variable.value.detach().requires_grad_(True)
        value = compute(x)
        (grad,) = torch.autograd.grad(value, x)
        return value.detach(), grad
    import tensorflow as tf

    x = tf.convert_to_tensor(variable.value)
    with tf.GradientTape() as tape:
        tape.watch(x)
        value = compute(x)
    return value, tape.gradient(value, x)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=1024)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--variant", choices=VARIANTS)
    args = parser.parse_args()
    if args.variant:
        print(run_variant(args.variant, args.batch, args.length, args.vocab))
        return
    import keras

    logits_gib = args.batch * args.length * args.vocab * 4 / 2**30
    print(
        f"backend={keras.backend.backend()} logits {args.batch}x{args.length}x{args.vocab} "
        f"float32 = {logits_gib:.2f} GiB"
    )
    peaks = {}
    for variant in VARIANTS:
        command = [sys.executable, __file__, "--variant", variant, "--batch", str(args.batch),
                   "--length", str(args.length), "--vocab", str(args.vocab)]
        output = subprocess.run(command, capture_output=True, text=True, env=os.environ, check=True)
        peaks[variant] = float(output.stdout.strip().splitlines()[-1])
    base = peaks["baseline"]
    for variant in VARIANTS[1:]:
        extra = peaks[variant] - base
        print(
            f"{variant:>8}: peak {peaks[variant]:.2f} GiB, +{extra:.2f} GiB over the logits "
            f"({extra / logits_gib:.1f}x the logits' size)"
        )
    print(f"one_hot / ours extra memory: {(peaks['one_hot'] - base) / (peaks['ours'] - base):.2f}x")


if __name__ == "__main__":
    main()
