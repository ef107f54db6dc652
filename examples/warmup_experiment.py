"""Do deep post-LN Transformers need the learning-rate warmup that pre-LN ones do not?

The 2017 paper warms its learning rate up over 4,000 steps. Later work (Liu et
al. 2020, "Understanding the Difficulty of Training Transformers"; Xiong et al.
2020, "On Layer Normalization in the Transformer Architecture") found that the
warmup is what lets post-LN stacks (`x = LN(x + f(x))`) train at all once they
are deep, while pre-LN stacks (`x = x + f(LN(x))`) train without it.

This script checks the claim on a task small enough for a laptop CPU: a
decoder-only model reads a random symbol sequence and a separator, then must
write the sequence reversed (the loss counts the reversed half only). For each
LayerNorm position, each depth and each schedule (a constant Adam learning rate
from the first step, or the same peak reached by a linear warmup) it trains the
same model on the same batches and records the loss at every step.

    KERAS_BACKEND=jax python examples/warmup_experiment.py            # ~8 min on 2 CPU cores
    KERAS_BACKEND=jax python examples/warmup_experiment.py --smoke    # seconds: checks it runs
    python examples/warmup_experiment.py --depths 6 12 24 --steps 2000 --d-model 128   # larger (hours on a CPU)

It writes the curves to docs/figures/warmup_experiment.png (or `--output`) and
the numbers behind them to a JSON file next to it, and prints a summary table.
Needs matplotlib.
"""

import argparse
import json
import os
import platform
import time

import keras
import numpy as np

import keras_transformer as kt

PAD, SEP, FIRST_SYMBOL = 0, 1, 2
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUTPUT = os.path.join(HERE, "..", "docs", "figures", "warmup_experiment.png")


def reversal_batch(rng, batch_size, length, vocab_size):
    """`(inputs, labels)` for "read x1..xn SEP, then write xn..x1".

    The sequence is `x1..xn SEP xn..x1`; inputs are all but its last token and
    labels all but its first. Labels before the separator are `PAD`, so the
    loss (which ignores `PAD`) counts only the n reversed symbols.
    """
    symbols = rng.integers(FIRST_SYMBOL, vocab_size, size=(batch_size, length))
    separator = np.full((batch_size, 1), SEP)
    sequence = np.concatenate([symbols, separator, symbols[:, ::-1]], axis=1)
    inputs, labels = sequence[:, :-1], sequence[:, 1:].copy()
    labels[:, : length] = PAD
    return inputs, labels


@keras.saving.register_keras_serializable(package="warmup_experiment")
class LinearWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * min(1, step / warmup_steps)` with steps counted from 1; flat after."""

    def __init__(self, peak, warmup_steps):
        self.peak, self.warmup_steps = float(peak), int(warmup_steps)

    def __call__(self, iterations):
        step = keras.ops.cast(iterations, "float32") + 1.0
        return self.peak * keras.ops.minimum(1.0, step / self.warmup_steps)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps}


def train_one(args, ln_position, depth, warmup_steps):
    """Loss at every step (NaN after a divergence) and held-out accuracy."""
    keras.utils.set_random_seed(args.seed)  # same initial weights for both schedules
    rng = np.random.default_rng(args.seed)  # same batches for every run
    model = kt.DecoderOnly(
        vocab_size=args.vocab_size,
        num_layers=depth,
        d_model=args.d_model,
        num_heads=args.num_heads,
        d_ff=4 * args.d_model,
        max_length=2 * args.length,
        ln_position=ln_position,
        dropout=0.0,
    )
    rate = LinearWarmup(args.learning_rate, warmup_steps) if warmup_steps else args.learning_rate
    model.compile(
        optimizer=keras.optimizers.Adam(rate, beta_1=0.9, beta_2=0.98, epsilon=1e-9),
        loss=kt.training.LabelSmoothedCrossEntropy(label_smoothing=0.0, pad_id=PAD),
        metrics=[kt.training.MaskedAccuracy(pad_id=PAD)],
    )
    losses = []
    for _ in range(args.steps):
        x, y = reversal_batch(rng, args.batch_size, args.length, args.vocab_size)
        loss = float(model.train_on_batch(x, y, return_dict=True)["loss"])
        losses.append(loss)
        if not np.isfinite(loss):
            losses += [float("nan")] * (args.steps - len(losses))
            break
    x, y = reversal_batch(np.random.default_rng(args.seed + 1), 512, args.length, args.vocab_size)
    predicted = np.argmax(keras.ops.convert_to_numpy(model(x, training=False)), axis=-1)
    scored = y != PAD
    accuracy = float(np.mean(predicted[scored] == y[scored]))
    return losses, (accuracy if np.isfinite(losses[-1]) else float("nan"))


def smooth(values, window):
    """Trailing moving average (NaNs stay NaN)."""
    values = np.asarray(values, dtype="float64")
    out = np.full_like(values, np.nan)
    for i in range(len(values)):
        out[i] = np.mean(values[max(0, i - window + 1): i + 1])
    return out


def plot(results, args, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    schedules = [("constant", "constant learning rate (no warmup)"),
                 ("warmup", f"linear warmup over {args.warmup_steps} steps")]
    colors = dict(zip(args.depths, plt.cm.viridis(np.linspace(0.0, 0.85, len(args.depths)))))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    chance = np.log(args.vocab_size - FIRST_SYMBOL)
    for axis, (schedule, title) in zip(axes, schedules):
        for run in results:
            if run["schedule"] != schedule:
                continue
            style = "-" if run["ln_position"] == "pre" else "--"
            label = f"{run['ln_position']}-LN, {run['depth']} layers"
            axis.plot(smooth(run["losses"], args.smooth), style, color=colors[run["depth"]],
                      label=label, linewidth=1.6)
        axis.axhline(chance, color="grey", linewidth=0.8, linestyle=":")
        axis.text(0, chance, " chance", va="bottom", color="grey", fontsize=8)
        axis.set_title(title, fontsize=10)
        axis.set_xlabel("step")
        axis.set_yscale("log")
    axes[0].set_ylabel(f"training loss ({args.smooth}-step mean)")
    axes[1].legend(fontsize=8, ncol=2)
    fig.suptitle(
        f"Reverse {args.length} symbols: d_model {args.d_model}, Adam peak lr "
        f"{args.learning_rate:g}, batch {args.batch_size}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 6, 12])
    parser.add_argument("--ln-positions", nargs="+", default=["post", "pre"],
                        choices=["post", "pre"])
    parser.add_argument("--schedules", nargs="+", default=["constant", "warmup"],
                        choices=["constant", "warmup"])
    parser.add_argument("--steps", type=int, default=250)
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=1.5e-3)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--length", type=int, default=8, help="symbols to reverse")
    parser.add_argument("--vocab-size", type=int, default=18)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smooth", type=int, default=10, help="moving-average window of the plot")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="PNG path; the JSON goes next to it")
    parser.add_argument("--smoke", action="store_true", help="a seconds-long run that checks the script")
    args = parser.parse_args()
    if args.smoke:
        args.depths, args.steps, args.warmup_steps = [1], 6, 3
        args.d_model, args.batch_size, args.smooth = 16, 8, 2

    started = time.time()
    results = []
    print(f"backend={keras.backend.backend()} machine={platform.machine()} cpus={os.cpu_count()}")
    print(f"{'LN':>4} {'layers':>6} {'schedule':>9} {'loss@25%':>9} {'loss@end':>9} "
          f"{'accuracy':>8} {'seconds':>7}")
    for depth in args.depths:
        for ln_position in args.ln_positions:
            for schedule in args.schedules:
                warmup = args.warmup_steps if schedule == "warmup" else 0
                run_start = time.time()
                losses, accuracy = train_one(args, ln_position, depth, warmup)
                seconds = time.time() - run_start
                results.append(dict(ln_position=ln_position, depth=depth, schedule=schedule,
                                    losses=losses, accuracy=accuracy, seconds=seconds))
                quarter = float(np.nanmean(losses[len(losses) // 4 - 5: len(losses) // 4 + 5]))
                end = float(np.mean(losses[-10:]))
                print(f"{ln_position:>4} {depth:>6} {schedule:>9} {quarter:>9.4f} {end:>9.4f} "
                      f"{accuracy:>8.1%} {seconds:>7.1f}", flush=True)
    wall = time.time() - started
    print(f"total wall time {wall:.0f} s")

    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    plot(results, args, args.output)
    settings = {k: v for k, v in vars(args).items() if k != "output"}
    with open(os.path.splitext(args.output)[0] + ".json", "w", encoding="utf-8") as file:
        json.dump(dict(settings=settings, backend=keras.backend.backend(),
                       wall_seconds=round(wall, 1), runs=results), file)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
