"""Writes the documentation's figures from real computations with the library.

    KERAS_BACKEND=jax python docs/figures/make_figures.py            # all figures
    KERAS_BACKEND=jax python docs/figures/make_figures.py masks lr   # some of them

Every number drawn comes from `keras_transformer` itself: the sinusoids from
`layers.SinusoidalEmbedding`, the masks from `keras_transformer.masks`, the
learning rates from `training.InverseSqrtSchedule` and
`training.WarmupCosineSchedule`, and the length-extrapolation curves from four
small `DecoderOnly` models trained here (sinusoidal, learned, rotary and ALiBi
positions). The post-LN/pre-LN warmup figure has
its own script, examples/warmup_experiment.py. Needs matplotlib.
"""

import argparse
import os

import keras
import matplotlib
import numpy as np
from keras import ops

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

import keras_transformer as kt  # noqa: E402
from keras_transformer import masks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DPI = 100
OUTPUT = {"dir": HERE}  # --output-dir


def save(fig, name):
    path = os.path.join(OUTPUT["dir"], name)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print(f"wrote {os.path.relpath(path)}")


def sinusoid_table(length, d_model, layout="interleaved"):
    """`PE` rows 0..length-1 as NumPy, from the layer the models use."""
    layer = kt.layers.SinusoidalEmbedding(layout=layout)
    return ops.convert_to_numpy(layer(np.zeros((1, length, d_model), "float32")))[0]


def sinusoids():
    """Heatmap of the table, and the rotation property it was chosen for."""
    d_model, length = 128, 100
    table = sinusoid_table(length, d_model)
    fig, axis = plt.subplots(figsize=(9, 3.6))
    image = axis.imshow(table.T, aspect="auto", cmap="RdBu", vmin=-1, vmax=1,
                        interpolation="nearest")
    axis.set_xlabel("position")
    axis.set_ylabel("dimension (2i: sin, 2i+1: cos)")
    axis.set_title(f"SinusoidalEmbedding, d_model={d_model}: PE[pos, 2i] = sin(pos / 10000^(2i/d)),"
                   " PE[pos, 2i+1] = cos(...)", fontsize=9)
    fig.colorbar(image, ax=axis, fraction=0.03)
    save(fig, "sinusoids.png")

    # Rotation: PE[pos + k] is PE[pos] with each (sin, cos) pair rotated by k * w_i.
    d_model, length, shift = 64, 200, 7
    table = sinusoid_table(length + shift, d_model)
    frequencies = 10000.0 ** (-2.0 * np.arange(d_model // 2) / d_model)
    pairs = table.reshape(length + shift, d_model // 2, 2)  # (pos, i, [sin, cos])
    angle = shift * frequencies  # (i,)
    cos, sin = np.cos(angle), np.sin(angle)
    # [sin(a + b), cos(a + b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a]
    rotated = np.stack([cos * pairs[:length, :, 0] + sin * pairs[:length, :, 1],
                        -sin * pairs[:length, :, 0] + cos * pairs[:length, :, 1]], axis=-1)
    error = np.max(np.abs(rotated - pairs[shift:]))

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    similarity = table[:length] @ table[:length].T
    image = left.imshow(similarity, cmap="viridis", interpolation="nearest")
    left.set_title("PE[p] . PE[q] depends only on p - q", fontsize=10)
    left.set_xlabel("position q")
    left.set_ylabel("position p")
    fig.colorbar(image, ax=left, fraction=0.046)
    i = 6  # one pair of moderate frequency
    circle = np.linspace(0, 2 * np.pi, 200)
    right.plot(np.sin(circle), np.cos(circle), color="lightgrey", linewidth=1)
    right.plot(pairs[:60, i, 0], pairs[:60, i, 1], ".", color="tab:blue", label="positions 0..59")
    for start in (0, 20, 40):
        a, b = pairs[start, i], pairs[start + shift, i]
        right.annotate("", xy=(b[0], b[1]), xytext=(a[0], a[1]),
                       arrowprops=dict(arrowstyle="->", color="tab:red"))
        right.text(a[0] * 1.12, a[1] * 1.12, str(start), fontsize=8, ha="center")
    right.set_aspect("equal")
    right.set_xlabel(f"PE[pos, {2 * i}] (sin)")
    right.set_ylabel(f"PE[pos, {2 * i + 1}] (cos)")
    right.set_title(f"pair i={i}: pos -> pos+{shift} is one rotation by {shift} w_i\n"
                    f"(all {d_model // 2} pairs, {length} positions: max error {error:.1e})",
                    fontsize=10)
    right.legend(fontsize=8, loc="lower left")
    save(fig, "sinusoid_rotation.png")


def mask_figure():
    """Each attention mode's mask, from the functions the layers call."""
    source = np.array([[5, 6, 7, 8, 0, 0]])  # 4 real tokens, 2 pads
    target = np.array([[1, 9, 9, 9, 9, 0, 0]])  # 5 real tokens, 2 pads
    pad = masks.padding_mask
    to_attention = masks.key_mask_to_attention_mask
    panels = [
        ("encoder self-attention\n(bidirectional + source padding)",
         masks.merge_masks(to_attention(pad(source))), "key (source)", "query (source)", 6),
        ("decoder self-attention\n(causal)", masks.causal_mask(7), "key", "query", 7),
        ("decoder self-attention\n(causal + target padding)",
         masks.merge_masks(masks.causal_mask(7), to_attention(pad(target))), "key", "query", 7),
        ("GPT-3 banded layer\n(causal, window=3)", masks.banded_mask(7, window=3), "key", "query", 7),
        ("cross-attention 7 x 6\n(source padding)",
         masks.merge_masks(to_attention(pad(source))), "key (source)", "query (target)", (7, 6)),
        ("one cached decoding step\n(query at position 4, cache of 7)",
         masks.causal_mask(1, 7, offset=4), "key (cache slot)", "query", (1, 7)),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 3.5))
    for axis, (title, mask, xlabel, ylabel, shape) in zip(axes, panels):
        rows, cols = (shape, shape) if isinstance(shape, int) else shape
        matrix = np.broadcast_to(ops.convert_to_numpy(mask)[0], (rows, cols)).astype(int)
        axis.imshow(matrix, cmap="Blues", vmin=0, vmax=1.4, interpolation="nearest")
        for r in range(rows):
            for c in range(cols):
                axis.text(c, r, matrix[r, c], ha="center", va="center", fontsize=7,
                          color="white" if matrix[r, c] else "grey")
        axis.set_title(title, fontsize=9)
        axis.set_xlabel(xlabel, fontsize=8)
        axis.set_ylabel(ylabel, fontsize=8)
        axis.set_xticks(range(cols))
        axis.set_yticks(range(rows))
        axis.tick_params(labelsize=7)
    save(fig, "masks.png")


def learning_rates():
    """The paper's inverse-sqrt schedule and GPT's warmup + cosine, step by step."""
    steps = np.arange(0, 100_000, 50)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for d_model, warmup in ((512, 4000), (1024, 4000), (512, 8000)):
        schedule = kt.training.InverseSqrtSchedule(d_model=d_model, warmup_steps=warmup)
        rates = ops.convert_to_numpy(schedule(steps))
        left.plot(steps, rates, label=f"d_model={d_model}, warmup={warmup}")
    left.set_title("InverseSqrtSchedule: d^-0.5 min(step^-0.5, step warmup^-1.5)", fontsize=9)
    left.set_xlabel("step")
    left.set_ylabel("learning rate")
    left.legend(fontsize=8)
    schedule = kt.training.WarmupCosineSchedule(6e-4, warmup_steps=2000, total_steps=100_000)
    right.plot(steps, ops.convert_to_numpy(schedule(steps)), color="tab:green")
    right.set_title("WarmupCosineSchedule(6e-4, warmup 2000, total 100k): floor 10%", fontsize=9)
    right.set_xlabel("step")
    save(fig, "learning_rates.png")


def lag_copy_data(rng, count, length, vocab_size, lag):
    """Random symbols; the label at position t is the symbol at t - lag (PAD before)."""
    ids = rng.integers(2, vocab_size, size=(count, length))
    labels = np.zeros_like(ids)
    labels[:, lag:] = ids[:, :-lag]
    return ids, labels


def length_extrapolation(train_length=32, test_length=128, lag=3, epochs=18):
    """Train on `train_length` tokens, test on `test_length`, one model per `position`.

    Sinusoidal and learned positions are added to the embeddings; rotary and
    ALiBi ones are made by every self-attention layer. The models differ in
    `position` only.
    """
    rng = np.random.default_rng(0)
    x, y = lag_copy_data(rng, 8192, train_length, 32, lag)
    test_x, test_y = lag_copy_data(np.random.default_rng(1), 512, test_length, 32, lag)
    fig, axis = plt.subplots(figsize=(9, 3.8))
    for position, color in (("sinusoidal", "tab:blue"), ("learned", "tab:orange"),
                            ("rotary", "tab:green"), ("alibi", "tab:red")):
        keras.utils.set_random_seed(0)
        # pad_id=0: the first `lag` labels are PAD (nothing to copy yet), which the loss
        # and the metrics skip.
        model = kt.DecoderOnly(vocab_size=32, num_layers=2, d_model=64, num_heads=4, d_ff=256,
                               max_length=test_length, position=position, dropout=0.0, pad_id=0)
        model.compile(optimizer=keras.optimizers.Adam(1e-3))  # recipe loss and metrics
        history = model.fit(x, y, batch_size=64, epochs=epochs, verbose=0).history
        predicted = np.argmax(ops.convert_to_numpy(model.predict(test_x, verbose=0)), axis=-1)
        per_position = np.mean(predicted == test_y, axis=0)
        per_position[:lag] = np.nan
        inside = np.nanmean(per_position[:train_length])
        outside = np.nanmean(per_position[train_length:])
        per_epoch = ", ".join(f"{a:.0%}" for a in history["masked_accuracy"])
        print(f"{position:>10}: accuracy {inside:.1%} on positions < {train_length}, "
              f"{outside:.1%} beyond (training accuracy by epoch: {per_epoch})", flush=True)
        axis.plot(per_position, color=color,
                  label=f"{position}: {inside:.0%} within, {outside:.0%} beyond")
    axis.axvline(train_length - 0.5, color="grey", linestyle=":")
    axis.text(train_length, 0.5, " longest training sequence", color="grey", fontsize=8)
    axis.axhline(1 / 30, color="lightgrey", linewidth=0.8)
    axis.set_ylim(0, 1.05)
    axis.set_xlabel("position in the test sequence")
    axis.set_ylabel("accuracy")
    axis.set_title(f"Copy the token {lag} positions back: trained on {train_length} tokens, "
                   f"tested on {test_length} (2-layer DecoderOnly, d_model 64)", fontsize=9)
    axis.legend(fontsize=8, loc="lower left")
    save(fig, "length_extrapolation.png")


FIGURES = {
    "sinusoids": sinusoids,
    "masks": mask_figure,
    "lr": learning_rates,
    "extrapolation": length_extrapolation,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("figures", nargs="*", help=f"which (default all): {', '.join(FIGURES)}")
    parser.add_argument("--output-dir", default=HERE, help="where the PNGs go (default: here)")
    args = parser.parse_args()
    OUTPUT["dir"] = args.output_dir
    names = args.figures or list(FIGURES)
    unknown = sorted(set(names) - set(FIGURES))
    if unknown:
        parser.error(f"unknown figure(s) {unknown}; choose from {', '.join(FIGURES)}")
    print(f"backend={keras.backend.backend()}")
    for name in names:
        FIGURES[name]()


if __name__ == "__main__":
    main()
