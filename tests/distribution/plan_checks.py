"""`plan` against XLA's buffer assignment on 8 virtual devices, for 4 configs and their layouts.

Run by tests/distribution/test_plan.py in its own process, with
`KERAS_BACKEND=jax` and `XLA_FLAGS=--xla_force_host_platform_device_count=8
--xla_disable_hlo_passes=cse_barrier_expander` set before JAX starts (the
second flag keeps remat on XLA:CPU; it changes nothing without remat):

    python tests/distribution/plan_checks.py [case ...]

Prints one JSON line: for each case (`config/layout`, all by default), the
measured per-device peak (`step_memory(...).peak`: XLA's memory analysis of
the compiled Keras train step), the plan's total and its parts (planned with
`in_place_all_reduce=False`, as XLA:CPU reduces), and the bytes of weights
and optimizer variables device 0 holds against the plan's. The configs are
small but not trivial: with 4 sequences per batch-axis device the kept
activations make the peak, with one sequence of "wide" the gradients do.
"""

import json
import sys

import keras
import numpy as np

import keras_transformer as kt
from keras_transformer import distribution

CONFIGS = {
    # GPT-2's toggles (pre-LN, learned positions, tanh GELU, tied, dropout 0.1).
    "gpt": dict(family="DecoderOnly", length=256, arguments=dict(
        vocab_size=2048, num_layers=4, d_model=256, num_heads=4, d_ff=1024, max_length=256)),
    # LLaMA's (RMSNorm, SwiGLU, rotary, 2 key/value heads, untied, no biases, no dropout).
    "llama": dict(family="DecoderOnly", length=512, arguments=dict(
        vocab_size=1024, num_layers=2, d_model=256, num_heads=8, num_kv_heads=2, d_ff=768,
        max_length=512, ln_position="pre", position="rotary", norm="rms",
        feed_forward="swiglu", activation="silu", use_bias=False, tie_embeddings=False,
        dropout=0.0)),
    # The 2017 paper's (post-LN, sinusoids, ReLU, tied, padding masks, dropout 0.1).
    "transformer": dict(family="EncoderDecoder", length=128, arguments=dict(
        vocab_size=1024, num_layers=2, d_model=256, num_heads=4, d_ff=1024)),
    # Weights over activations, as benchmarks/sharded_memory.py's model with one row per
    # device: the gradients, not the kept activations, make the peak.
    "wide": dict(family="DecoderOnly", length=64, arguments=dict(
        vocab_size=4096, num_layers=2, d_model=256, num_heads=4, d_ff=1024, max_length=64,
        dropout=0.0)),
}
# (name, config, layout, model axis size, global batch, remat): a (8, 1) or (2, 4) mesh of
# (batch, model), 4 sequences per device row, or 1 for "wide" (nothing runs: XLA's analysis
# of the compiled step is all).
CASES = [
    ("gpt/data_parallel", "gpt", "data_parallel", 1, 32, False),
    ("gpt/data_parallel/remat", "gpt", "data_parallel", 1, 32, True),
    ("gpt/model_parallel", "gpt", "model_parallel", 4, 8, False),
    ("llama/model_parallel", "llama", "model_parallel", 4, 8, False),
    ("transformer/data_parallel", "transformer", "data_parallel", 1, 32, False),
    ("wide/data_parallel", "wide", "data_parallel", 1, 8, False),
    ("wide/model_parallel", "wide", "model_parallel", 4, 2, False),
    ("llama/fully_sharded", "llama", "fully_sharded", 4, 8, False),
    ("wide/fully_sharded (8, 1)", "wide", "fully_sharded", 1, 8, False),
    ("wide/fully_sharded (2, 4)", "wide", "fully_sharded", 4, 2, False),
]


def batch(family, batch_size, length, vocab_size, rng):
    ids = rng.integers(4, vocab_size, size=(3, batch_size, length)).astype("int32")
    if family == "DecoderOnly":
        return ids[0], ids[1]
    ids[:, :2, -length // 4:] = 0  # some padding
    return {"source": ids[0], "target": ids[1]}, ids[2]


def held_bytes(variables):
    """Bytes of `variables` device 0 holds."""
    return sum(v.value.addressable_shards[0].data.nbytes for v in variables)


def measure(name, layout, model_size, batch_size, remat):
    spec = CONFIGS[name]
    mesh = distribution.make_mesh(model_size)
    dist = {
        "data_parallel": distribution.data_parallel,
        "model_parallel": lambda: distribution.model_parallel(mesh),
        "fully_sharded": lambda: distribution.fully_sharded(mesh),
    }[layout]()
    family = getattr(kt, spec["family"])
    with dist.scope():
        model = family(**spec["arguments"], remat=remat)
        model.compile(optimizer=keras.optimizers.AdamW(1e-3))
        x, y = batch(spec["family"], batch_size, spec["length"],
                     spec["arguments"]["vocab_size"], np.random.default_rng(0))
        measured = distribution.step_memory(model, x, y)
        weights = held_bytes(model.weights)
        optimizer_state = held_bytes(model.optimizer.variables)
    # XLA:CPU's all-reduce writes a new buffer; the remat default is the config's.
    planned = distribution.plan(model.config, mesh, batch_size, spec["length"],
                                layout=layout, in_place_all_reduce=False)
    return {
        "measured": measured.peak, "planned": planned.total,
        "arguments": measured.arguments, "temporaries": measured.temporaries,
        "weights": weights, "planned_weights": planned.weights,
        "optimizer_state": optimizer_state, "planned_optimizer_state": planned.optimizer_state,
        "planned_activations": planned.activations, "planned_gathered": planned.gathered,
        "planned_reduction": planned.reduction, "planned_gradients": planned.gradients,
    }


def main():
    devices = keras.distribution.list_devices()
    if len(devices) != 8:
        raise SystemExit(f"expected 8 devices, found {devices}")
    chosen = sys.argv[1:] or [case[0] for case in CASES]
    results = {case[0]: measure(*case[1:]) for case in CASES if case[0] in chosen}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
