"""Sharded training, layouts and generation on 8 devices, checked against one device.

Run by tests/test_distribution.py in its own process, with `KERAS_BACKEND=jax`
and `XLA_FLAGS=--xla_force_host_platform_device_count=8` set before JAX starts:

    python tests/distribution_checks.py [--wrong-layout]

Prints one JSON line mapping each check to the list of its failures (empty
when it passes). `--wrong-layout` runs the sharding check alone, with Q/K/V
split by rows instead of columns, and must report failures.

`expected_axes` states the layout the issue asks for independently of
`keras_transformer.distribution`, so the test does not grade the module
against itself.
"""

import argparse
import json
import math

import keras
import numpy as np

import keras_transformer as kt
from keras_transformer import distribution

DEVICES = 8
MODEL_SIZE = 4  # a 2 x 4 (batch, model) mesh
TOLERANCE = 1e-5
COLUMN_PARALLEL = (
    "self_attention/qkv", "cross_attention/query", "cross_attention/key_value",
    "feed_forward/inner",
)
ROW_PARALLEL = ("self_attention/output", "cross_attention/output", "feed_forward/outer")


def expected_axes(path, shape, dtype=None, embedding="vocab"):
    """The model-parallel layout of the weight at `path`: one mesh axis or None per dim."""
    ndim = len(shape)
    layer, weight = path.rsplit("/", 1)
    if layer.endswith(COLUMN_PARALLEL):
        return (None, "model") if weight == "kernel" else ("model",)
    if layer.endswith(ROW_PARALLEL) and weight == "kernel":
        return ("model", None)
    vocab_rows = embedding == "vocab"
    if path.endswith("/token_embedding/embeddings"):
        return ("model", None) if vocab_rows else (None, "model")
    if path.endswith("/output_projection/kernel"):
        return (None, "model") if vocab_rows else ("model", None)
    return (None,) * ndim


def replicated_axes(path, shape, dtype=None):
    return (None,) * len(shape)


def fully_sharded_axes(batch_size, model_size):
    """Sharded weights: the model-parallel layout (on a model axis of one device: none), plus
    the batch axis on the largest float dimension left unsplit that `batch_size` divides
    (replicated where none does)."""

    def axes_of(path, shape, dtype):
        axes = expected_axes(path, shape) if model_size > 1 else (None,) * len(shape)
        if not keras.backend.is_float_dtype(dtype):
            return axes
        free = [i for i, axis in enumerate(axes) if axis is None and shape[i] % batch_size == 0]
        if free:
            widest = max(free, key=lambda i: (shape[i], -i))
            axes = axes[:widest] + ("batch",) + axes[widest + 1 :]
        return axes

    return axes_of


MODELS = {
    # Untied, so the output projection's layout is checked too.
    "decoder_only": lambda: kt.DecoderOnly.from_preset(
        "gpt2_tiny", num_layers=1, dropout=0.0, tie_embeddings=False
    ),
    # Tied; has cross-attention.
    "encoder_decoder": lambda: kt.EncoderDecoder.from_preset(
        "transformer_tiny", num_layers=1, dropout=0.0
    ),
}


def build(family):
    """A model compiled with plain SGD + momentum: updates are linear in the gradient."""
    model = MODELS[family]()
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1, momentum=0.9))
    return model


def batch(family, rng):
    """8 examples (divisible by both meshes' batch axes), a few of them padded."""
    ids = rng.integers(3, 128, size=(3, DEVICES, 8)).astype("int32")
    ids[:, :2, -3:] = 0
    if family == "decoder_only":
        return ids[0], ids[1]
    return {"source": ids[0], "target": ids[1]}, ids[2]


def generate(model, family, rng):
    if family == "decoder_only":
        prompts = rng.integers(3, 128, size=(2, 5)).astype("int32")
        prompts[1, 3:] = 0  # right padding
        return model.generate(prompts, max_new_tokens=6)
    sources = rng.integers(3, 128, size=(2, 6)).astype("int32")
    sources[0, 4:] = 0
    return model.generate(sources, start_id=1, beam_size=None, max_length=6)


def train(model, data, steps=2):
    x, y = data
    return [float(model.train_on_batch(x, y, return_dict=True)["loss"]) for _ in range(steps)]


def sharding_failures(model, axes_of, sizes=None):
    """Each weight's sharding spec and per-device shard shape against `axes_of`.

    `sizes` maps each mesh axis to its number of devices (default: the 2 x 4 mesh).
    """
    sizes = sizes or {"batch": DEVICES // MODEL_SIZE, "model": MODEL_SIZE}
    failures = []
    for variable in model.weights:
        want = axes_of(variable.path, tuple(variable.shape), variable.dtype)
        failures += _variable_failures(variable, want, sizes)
    return failures


def _variable_failures(variable, want, sizes):
    value = variable.value
    spec = tuple(value.sharding.spec)
    spec += (None,) * (len(variable.shape) - len(spec))
    shard = tuple(size // sizes.get(axis, 1) for size, axis in zip(variable.shape, want))
    shapes = {tuple(s.data.shape) for s in value.addressable_shards}
    copies = len({str(s.index) for s in value.addressable_shards})
    failures = []
    if spec != want:
        failures.append(f"{variable.path}: spec {spec}, expected {want}")
    if shapes != {shard} or len(value.addressable_shards) != DEVICES:
        failures.append(f"{variable.path}: shard shapes {shapes}, expected {shard}")
    if copies != math.prod(sizes.get(axis, 1) for axis in want):
        failures.append(f"{variable.path}: {copies} distinct shards")
    return failures


def optimizer_failures(model):
    """SGD momenta must be laid out like the weights they belong to."""
    pairs = zip(model.trainable_variables, model.optimizer.momentums)
    return [
        f"{m.path}: {m.value.sharding.spec} vs {v.value.sharding.spec}"
        for v, m in pairs
        if m.value.sharding.spec != v.value.sharding.spec
    ]


def bytes_per_device(model):
    """Bytes of the weights and optimizer variables that device 0 holds."""
    return sum(
        variable.value.addressable_shards[0].data.nbytes
        for variable in model.weights + model.optimizer.variables
    )


def max_difference(a, b):
    return max(float(np.max(np.abs(np.asarray(p) - np.asarray(q)))) for p, q in zip(a, b))


def check_family(family, distributions, results):
    """Reference on one device, then the same weights and data under each distribution."""
    rng = np.random.default_rng(0)
    reference = build(family)
    weights = reference.get_weights()
    tokens = generate(reference, family, np.random.default_rng(1))
    data = batch(family, rng)
    losses = train(reference, data)
    trained = reference.get_weights()
    moved = max_difference(weights, trained)
    results[f"{family}/step_moves_weights"] = (
        [] if moved > 100 * TOLERANCE else [f"largest update {moved}"]
    )
    held = {}  # bytes of weights and optimizer state on device 0, per distribution
    for name, (dist, axes_of, sizes) in distributions.items():
        with dist.scope():
            model = build(family)
            model.set_weights(weights)
            results[f"{family}/{name}/sharding"] = sharding_failures(model, axes_of, sizes)
            got = generate(model, family, np.random.default_rng(1))
            results[f"{family}/{name}/generation"] = (
                [] if np.array_equal(got, tokens) else [f"{got.tolist()} != {tokens.tolist()}"]
            )
            got_losses = train(model, data)
            results[f"{family}/{name}/optimizer_sharding"] = optimizer_failures(model)
            held[name] = bytes_per_device(model)
        loss_gap = max(abs(a - b) for a, b in zip(got_losses, losses))
        weight_gap = max_difference(model.get_weights(), trained)
        results[f"{family}/{name}/training"] = [
            f"{what} differ by {gap}"
            for what, gap in (("losses", loss_gap), ("weights", weight_gap))
            if not gap <= TOLERANCE
        ]
    # Every matrix is split 8 ways, and with it its optimizer moments. Vectors split less:
    # on the (2, 4) mesh a column-parallel bias is split over the model axis alone and a norm
    # over the batch axis alone; a tiny model has proportionally many of them.
    for name, bound in (("fully_sharded", 1.2 / 8), ("fully_sharded_model_parallel", 1.4 / 8)):
        ratio = held[name] / held["data_parallel"]
        results[f"{family}/{name}/memory"] = (
            [] if ratio <= bound else [f"{held[name]} of {held['data_parallel']} bytes"]
        )


def wrong_layout():
    """`layout_map` with column-parallel kernels split by rows: the sharding check must object."""
    mesh = distribution.make_mesh(MODEL_SIZE)
    layouts = keras.distribution.LayoutMap(mesh)
    for key, layout in distribution.layout_map(mesh).items():
        swap = "qkv" in key and layout.axes == (None, "model")
        layouts[key] = tuple(reversed(layout.axes)) if swap else layout.axes
    dist = keras.distribution.ModelParallel(layout_map=layouts, batch_dim_name="batch")
    with dist.scope():
        model = MODELS["decoder_only"]()
    return {"decoder_only/model_parallel/sharding": sharding_failures(model, expected_axes)}


def embedding_split_by_model():
    """`embedding="model"` splits the embedding's and the untied projection's d_model."""
    dist = distribution.model_parallel(distribution.make_mesh(MODEL_SIZE), embedding="model")
    with dist.scope():
        model = MODELS["decoder_only"]()
    return sharding_failures(
        model, lambda path, shape, dtype: expected_axes(path, shape, embedding="model")
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--wrong-layout", action="store_true")
    args = parser.parse_args()
    devices = keras.distribution.list_devices()
    if len(devices) != DEVICES:
        raise SystemExit(f"expected {DEVICES} devices, found {devices}")
    if args.wrong_layout:
        print(json.dumps(wrong_layout()))
        return
    distributions = {
        "data_parallel": (distribution.data_parallel(), replicated_axes, None),
        "model_parallel": (
            distribution.model_parallel(distribution.make_mesh(MODEL_SIZE)), expected_axes, None
        ),
        # ZeRO-3 alone on an (8, 1) mesh, then combined with the model axis on (2, 4).
        "fully_sharded": (
            distribution.fully_sharded(distribution.make_mesh(1)),
            fully_sharded_axes(DEVICES, 1), {"batch": DEVICES, "model": 1},
        ),
        "fully_sharded_model_parallel": (
            distribution.fully_sharded(distribution.make_mesh(MODEL_SIZE)),
            fully_sharded_axes(DEVICES // MODEL_SIZE, MODEL_SIZE), None,
        ),
    }
    results = {"decoder_only/embedding_model/sharding": embedding_split_by_model()}
    for family in MODELS:
        check_family(family, distributions, results)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
