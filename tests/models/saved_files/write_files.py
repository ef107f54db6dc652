"""Writes the saved-file fixtures: small `.keras` models and the logits they gave.

Run once, at the commit named in `manifest.json`, to freeze what a model saved
by that version of the library computes:

    KERAS_BACKEND=jax python tests/models/saved_files/write_files.py --all

A toggle added later gets a file of its own, written at the commit that added it
and appended to the manifest under that commit, the older files left as they are:

    KERAS_BACKEND=jax python tests/models/saved_files/write_files.py NAME ...

`tests/models/test_saved_files.py` loads every file with the library as it is
now and checks the logits, so that a change of the layers' structure, names or
configs that breaks users' saved models fails a test. The models cover both
families and every architecture toggle (each in at least one file); each is
trained for a few SGD steps so that no weight keeps its initial value; two are then
quantized to int8 (the layer paths a `DTypePolicyMap` names must keep working).
"""

import json
import os
import subprocess
import sys

import numpy as np

import keras
import keras_transformer as kt

HERE = os.path.dirname(os.path.abspath(__file__))

# (file name, family, constructor arguments): every toggle appears at least once.
MODELS = [
    ("gpt2", "DecoderOnly", dict()),
    ("gpt3_banded", "DecoderOnly", dict(attention_window=4, banded_layers="alternate")),
    ("llama", "DecoderOnly", dict(
        ln_position="pre", norm="rms", feed_forward="swiglu", use_bias=False,
        position="rotary", num_kv_heads=2, rotary_base=500.0, tie_embeddings=False,
        layer_norm_epsilon=1e-6)),
    ("neox_alibi_qk", "DecoderOnly", dict(
        position="alibi", qk_norm=True, attention_window=4, banded_layers="all",
        feed_forward="geglu", num_kv_heads=1, pad_id=0)),
    ("rotary_fraction", "DecoderOnly", dict(
        position="rotary", rotary_fraction=0.5, ln_position="post", activation="relu",
        scale_embeddings=True, position_layout="concatenated")),
    ("transformer_2017", "EncoderDecoder", dict(
        ln_position="post", position="sinusoidal", activation="relu", scale_embeddings=True,
        start_id=1, end_id=2)),
    ("encoder_decoder_modern", "EncoderDecoder", dict(
        ln_position="pre", norm="rms", feed_forward="swiglu", use_bias=False,
        position="rotary", num_kv_heads=2, qk_norm=True, start_id=1, end_id=2)),
    ("encoder_decoder_learned", "EncoderDecoder", dict(
        position="learned", tie_embeddings=False, attention_dropout=0.1, start_id=1)),
    ("encoder_decoder_alibi", "EncoderDecoder", dict(
        position="alibi", ln_position="pre", activation="gelu", start_id=1, end_id=2)),
    ("llama_int8", "DecoderOnly", dict(
        ln_position="pre", norm="rms", feed_forward="swiglu", use_bias=False,
        position="rotary", num_kv_heads=2, quantize="int8")),
    ("encoder_decoder_int8", "EncoderDecoder", dict(
        ln_position="pre", position="rotary", start_id=1, quantize="int8")),
    # Added after the redesign of issue 35 (their own commit in the manifest).
    ("gptj_parallel_softcap", "DecoderOnly", dict(
        ln_position="pre", position="rotary", rotary_fraction=0.5, parallel_block=True,
        attention_softcap=1.0, attention_window=4, scale_attention=8.0)),
]
SIZE = dict(vocab_size=32, d_model=16, num_heads=4, d_ff=32, max_length=16, dropout=0.1)
DEPTH = {"DecoderOnly": dict(num_layers=2), "EncoderDecoder": dict(num_layers=2)}
LENGTH = 7


def inputs(family, rng):
    """The ids the fixtures' logits are computed on (the same for training)."""
    ids = rng.integers(3, SIZE["vocab_size"], size=(2, LENGTH)).astype("int32")
    if family == "DecoderOnly":
        return ids
    source = rng.integers(3, SIZE["vocab_size"], size=(2, LENGTH + 2)).astype("int32")
    source[1, -3:] = 0  # padding in the source
    return {"source": source, "target": ids}


def main(names):
    """Writes the models `names` (appended under this commit), or with `["--all"]` every model
    and a fresh manifest (which rewrites the older files: only to start a new set)."""
    if not names:
        raise SystemExit("name the models to write, or --all (rewrites every file)")
    if names == ["--all"]:
        names = []
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True,
                            text=True, check=True).stdout.strip()
    manifest = {"commit": commit, "backend": keras.backend.backend(),
                "keras": keras.__version__, "models": []}
    chosen = MODELS
    if names:
        unknown = sorted(set(names) - {name for name, _, _ in MODELS})
        if unknown:
            raise SystemExit(f"no model named {unknown}")
        with open(os.path.join(HERE, "manifest.json")) as f:
            manifest = json.load(f)
        manifest["models"] = [item for item in manifest["models"] if item["name"] not in names]
        chosen = [model for model in MODELS if model[0] in names]
    for name, family, arguments in chosen:
        arguments = dict(arguments)
        mode = arguments.pop("quantize", None)
        # Query/key kernels scaled up after training, so that the scores are large enough
        # for a toggle that acts on them (a cap) to show in the logits.
        scale_attention = arguments.pop("scale_attention", None)
        model = getattr(kt, family)(**SIZE, **DEPTH[family], **arguments)
        x = inputs(family, rng)
        labels = rng.integers(0, SIZE["vocab_size"], size=(2, LENGTH)).astype("int32")
        model.compile(optimizer=keras.optimizers.SGD(0.5),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, labels, epochs=3, batch_size=2, verbose=0)
        if scale_attention is not None:
            for weight in model.weights:
                if weight.path.endswith("qkv/kernel"):
                    weight.assign(weight * scale_attention)
        if mode is not None:
            model.quantize(mode)
        logits = np.asarray(model.predict(x, verbose=0))
        model.save(os.path.join(HERE, f"{name}.keras"))
        arrays = dict(x) if isinstance(x, dict) else {"ids": x}
        np.savez(os.path.join(HERE, f"{name}.npz"), logits=logits, **arrays)
        if arguments.get("attention_softcap"):  # the file must tell a capped model apart
            uncapped = getattr(kt, family).from_config(
                dict(model.get_config(), block=dict(model.get_config()["block"],
                                                     attention_softcap=None)))
            uncapped.set_weights(model.get_weights())
            moved = np.abs(np.asarray(uncapped.predict(x, verbose=0)) - logits).max()
            assert moved > 1e-3, f"{name}: the cap moves the logits by {moved} only"
        item = {"name": name, "family": family, "arguments": arguments, "quantize": mode}
        if names:
            item.update(commit=commit, backend=keras.backend.backend(), keras=keras.__version__)
        manifest["models"].append(item)
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"wrote {len(chosen)} models at {commit[:10]} ({keras.backend.backend()})",
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
