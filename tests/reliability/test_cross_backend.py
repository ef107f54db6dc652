"""What this backend saves, the two others load in safe mode and run to the same outputs.

Twenty `.keras` files travel: both model families compiled with each recipe (the paper's Adam,
GPT's AdamW) after a step of `fit`, whose optimizer and its state must load too; both model
families twice (logits to 1e-5, with padding): the
2017 and GPT-3 toggles, then LLaMA's (rotary positions, RMSNorm, SwiGLU, no biases,
grouped-query attention, pre-LN) and a post-LN encoder-decoder with the other new toggles
(ALiBi, RMSNorm, GEGLU, no biases, multi-query attention, qk-norm); both model families
quantized in each mode Keras 3.15 offers, int8, int4, float8, GPTQ and AWQ (ten files); and both
tasks (the same strings from beam search and from greedy generation).

The quantized models are the LLaMA-toggle `DecoderOnly` (int8 and int4 quantize its token
embedding too; GPTQ's 4-bit weights with zero points and group indices go through
grouped-query attention's fused `qkv` and SwiGLU) and the post-LN `EncoderDecoder` (the tied
embedding, hence the output projection, in int8 and int4; AWQ and GPTQ calibrate the decoder's
cross-attention on the encoder's output; float8 casts source, target and the encoder's memory),
of tests/calibrated_zoo.py: width 16, one block a stack, d_ff 16 (JAX compiles each eager step
of GPTQ's column loop: 16 columns, not 32). Their weights are a seeded NumPy draw (`_drawn`),
the same under every backend: Keras' initial weights make the untrained `EncoderDecoder` emit
one token over and over, whatever the source, and a check of generated ids would check
nothing. Each file's item carries the saving model's quantized layers
(`calibrated_zoo.quantized_layers`), checked here to be some and all of the item's mode (Keras'
`quantize` turns a layer's `NotImplementedError` into a warning: a mode that quantized nothing
would leave a float model) and checked equal in the loaded model. The loader then compares
every weight to the saved model's, exactly (quantized and packed kernels, scales, zero points,
amax histories), the logits to 1e-5 of the quantized model's own largest logit (or 1e-5 where
that is below 1: JAX's compiled and eager logits of the GPTQ `EncoderDecoder`, largest 5.44,
differ by 3.2e-5 on one backend, the attention's large scores amplifying float32 rounding),
and beam search's two best
hypotheses (`beam_size=2`, `num_return=2`): the same ids, scores to 1e-5; the best hypotheses
here must differ between prompts, and one row at least must hold two different tokens (not
degenerate).
Both float8 models train two steps of `fit` after `quantize`: Keras updates the scales and amax
histories only in training (the second step's scales from the first step's histories), and this
test checks that every scale left 1 and is positive, so the file carries values a load could
not make up (the loaders compare the amax histories too); the LLaMA model's untied output
projection among them (on JAX it once got scales of 0: `logits` did not pass `training` to it,
see `TransformerModel.logits`). A file compiled on JAX saves `jit_compile="auto"`, which torch
resolves to eager (Keras saved JAX's True, and torch's `generate` tried to compile the float8
layers). GPTQ and AWQ calibrate on 8 windows of ids in groups of 8 weights, two a row of width
16: groups that small have weights all of one sign by chance (with 1/128 of probability each,
several in these models), which Keras' grid gives a zero point that does not fit its `uint8`
and which `calibration_stages.zero_points_in_range` repairs, so the files carry repaired zero
points (larger groups made them rare).

Each other backend loads all of them in one subprocess (`cross_backend_loader.py`, run by
path, from which this test imports the functions that compute what it expects), started
before anything is saved: it imports its framework, then loads each file as the manifest lists
it (a JSON line a file, then `null`) while this process quantizes, trains and saves the next
ones. So each run of the suite pays two interpreter starts, not twenty, mostly while it saves.
A loader exits when this process dies and fails after 300 s without a new manifest line; both
share one deadline here. On JAX, the logits (here and in a loader) come from `predict`, one
compiled forward pass, not from an eager call, which compiles each op. Every backend both saves
(its own run) and loads (the two other runs); all differences are collected, then reported
together.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
from keras import ops

import keras_transformer as kt
from calibrated_zoo import calibrate
from calibrated_zoo import quantized_layers
from calibrated_zoo import tiny_llama
from calibrated_zoo import tiny_translator
from cross_backend_loader import hypotheses
from cross_backend_loader import logits as _logits
from cross_backend_loader import weights

LOADER = Path(__file__).with_name("cross_backend_loader.py")
DEADLINE = 600  # seconds, for both loaders together, after the last file is saved
SEED = 0  # of the quantized models' weights: beam search is not degenerate for any of them

BACKENDS = ("tensorflow", "jax", "torch")
CORPUS = ["Open the file", "Datei öffnen", "Cannot open %s: %s", "Kann %s nicht öffnen: %s",
          "def parse(text):", "    return text.split()", "Save all files", "Alle Dateien"]
MESSAGES = ["Open the file", "  Cannot open %s: %s\n", "\tCopy {0} to {1}?\n\n", ""]
PROMPTS = ["def parse(", "", "    return text.split() and more words"]


def _padded_ids(rng, shape, vocab):
    ids = rng.integers(1, vocab, size=shape).astype("int32")
    for row in range(shape[0]):
        ids[row, shape[1] - row :] = 0  # rows of different real lengths, padded on the right
    return ids


def _saved_models(folder, models):
    """Saves each model and the arrays its loader reads: its inputs and logits.

    Args:
        folder: where the files go.
        models: `{name: (model, inputs)}`.

    Yields:
        `(manifest item, None)`.
    """
    for name, (model, inputs) in models.items():
        path, arrays = str(folder / f"{name}.keras"), str(folder / f"{name}.npz")
        model.save(path)
        named = dict(inputs) if isinstance(inputs, dict) else {"__ids__": inputs}
        np.savez(arrays, __expected__=_logits(model, inputs), **named)
        yield dict(name=name, cls=type(model).__name__, path=path, arrays=arrays), None


def _drawn(model, seed, gain, embedding_std):
    """`model` with weights drawn in NumPy from `seed`, the same under every backend: normal,
    of standard deviation `embedding_std` for the token embedding and `gain` / sqrt(inputs) for
    a kernel (norms and biases keep their ones and zeros). With Keras' initial weights the
    residual stream carries the input token to the tied output projection, and the untrained
    `EncoderDecoder` emits the token it read over and over, whatever the source: its kernels
    get a gain of 3, the LLaMA model's 1 (larger activations there put float32 rounding of the
    logits above 1e-5 between backends)."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        if len(variable.shape) >= 2:
            std = (embedding_std if variable.path.endswith("embeddings")
                   else gain / variable.shape[0] ** 0.5)
            variable.assign(rng.normal(scale=std, size=variable.shape).astype(variable.dtype))
    return model


def _quantized_models(seed=SEED):
    """Yields `(name, model, mode, inputs, prompt, generate's arguments)` for each mode and
    family, quantized (and the float8 ones trained two steps): beam search from prompts without
    padding (these LLaMA models have no pad_id) or from padded sources."""
    rng = np.random.default_rng(1)
    decoder_ids, decode = _padded_ids(rng, (4, 8), 64), dict(max_new_tokens=4)
    translator_ids = {"source": _padded_ids(rng, (4, 7), 64),
                      "target": _padded_ids(rng, (4, 6), 64)}
    translate = dict(max_length=5)
    prompt, source_prompt = rng.integers(1, 64, size=(3, 3)), translator_ids["source"][:3]
    for mode in ("int8", "int4", "float8", "gptq", "awq"):
        norm = "rms" if mode == "int4" else "layer"  # RMSNorm in one translator
        families = {  # name -> (model, its weights' gain and embedding_std, inputs, ...)
            "LlamaDecoderOnly": (tiny_llama(num_layers=1, d_ff=16), (1, 0.25), decoder_ids,
                                 prompt, decode),
            "EncoderDecoder": (tiny_translator(d_ff=16, norm=norm), (3, 0.5), translator_ids,
                               source_prompt, translate),
        }
        for family, (model, draw, inputs, family_prompt, arguments) in families.items():
            name = f"{mode.capitalize()}{family}"
            model = _drawn(model, seed, *draw)
            if mode in kt.models.calibration_stages.CALIBRATED_MODES:
                calibrate(model, mode, group_size=8)  # the same windows in every process
            else:
                model.quantize(mode)
            if mode == "float8":  # see the module's docstring
                stale = _trained_float8_steps(model, inputs)
                assert not stale, f"{name}: float8 variables kept their initial values: {stale}"
            yield (name, model, mode, inputs, family_prompt,
                   dict(arguments, beam_size=2, num_return=2))


def _trained_float8_steps(model, inputs):
    """Two steps of `fit`: Keras updates float8 scales and amax histories only in training,
    the second step's scales from the amax histories of the first.

    Returns:
        The paths of the float8 scales that kept their initial value, 1, or are not positive:
        none, when training filled the amax histories and computed scales from them.
    """
    model.compile(optimizer=keras.optimizers.SGD(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    labels = inputs["target"] if isinstance(inputs, dict) else inputs
    model.fit(inputs, np.roll(labels, -1, axis=1), batch_size=len(labels) // 2, epochs=1,
              verbose=0, shuffle=False)
    return [variable.path for layer in model._flatten_layers()
            if layer.quantization_mode == "float8" for variable in layer.weights
            if variable.name.endswith("_scale")
            and (np.all(ops.convert_to_numpy(variable) == 1)
                 or not np.all(ops.convert_to_numpy(variable) > 0))]


def _degenerate(ids, width):
    """Whether the best hypotheses' generated tokens (the last `width` of each row) are the
    same for every prompt or one token repeated in every row."""
    best = [tuple(row[-width:]) for row in np.asarray(ids)[:, 0]]
    return not (len(set(best)) > 1 and any(len(set(row)) > 1 for row in best))


def _saved_quantized(folder, name, model, mode, inputs, prompt, arguments):
    """Saves a quantized model and what its loader reads: its inputs, logits, prompt, its
    weights, and its quantized layers in the manifest item.

    Yields:
        `(manifest item, beam search's hypotheses as `cross_backend_loader.hypotheses` gives
        them)`.
    """
    quantized = quantized_layers(model)
    assert quantized and set(quantized.values()) == {mode}, (name, quantized)
    path, arrays = str(folder / f"{name}.keras"), str(folder / f"{name}.npz")
    model.save(path)
    named = dict(inputs) if isinstance(inputs, dict) else {"__ids__": inputs}
    prompt = np.asarray(prompt, "int32")
    np.savez(arrays, __expected__=_logits(model, inputs), __prompt__=prompt, **named)
    saved = weights(model)
    np.savez(str(folder / f"{name}.weights.npz"), *saved.values())
    expected = hypotheses(model, prompt, arguments)
    width = arguments.get("max_new_tokens") or arguments["max_length"]
    assert not _degenerate(expected["ids"], width), (name, expected["ids"])
    yield dict(name=name, cls=type(model).__name__, path=path, arrays=arrays, mode=mode,
               quantized=quantized, weights=str(folder / f"{name}.weights.npz"),
               weight_paths=list(saved), generate=arguments), expected


def _artifacts(folder):
    """Yields `(manifest item, expected output)` for each file as it is saved here."""
    rng = np.random.default_rng(0)
    tokenizer = kt.data.train_sentencepiece(CORPUS * 10, vocab_size=120,
                                            placeholder_slots=True)
    vocab = tokenizer.vocabulary_size()
    tiny = dict(vocab_size=vocab, num_layers=1, d_model=16, num_heads=2, d_ff=32, dropout=0.0)
    encoder_decoder = kt.EncoderDecoder.from_preset("transformer_tiny", dropout=0.0)
    source = _padded_ids(rng, (4, 7), encoder_decoder.config.vocab_size)
    source[3] = 0  # a row with no real source token at all
    target = _padded_ids(rng, (4, 6), encoder_decoder.config.vocab_size)
    decoder_only = kt.DecoderOnly.from_preset("gpt3_tiny", dropout=0.0)  # dense and banded layers
    llama = kt.DecoderOnly.from_preset("llama_tiny")  # no pad_id: the zeros are tokens too
    toggled = kt.EncoderDecoder.from_preset(
        "transformer_tiny", dropout=0.0, position="alibi", norm="rms", feed_forward="geglu",
        use_bias=False, num_kv_heads=1, qk_norm=True)
    models = {  # name -> (model, its inputs)
        "EncoderDecoder": (encoder_decoder, {"source": source, "target": target}),
        "DecoderOnly": (decoder_only, _padded_ids(rng, (4, 8), decoder_only.config.vocab_size)),
        "LlamaDecoderOnly": (llama, _padded_ids(rng, (4, 8), llama.config.vocab_size)),
        "ToggledEncoderDecoder": (toggled, {"source": source, "target": target}),
    }
    yield from _saved_models(folder, models)
    # Quantized in each mode (see the module's docstring), those quick to quantize first.
    for name, *quantized in _quantized_models():
        yield from _saved_quantized(folder, name, *quantized)
    # Compiled with each recipe and trained a step: the file carries the optimizer's state.
    recipes = {"paper": kt.training.paper_recipe, "gpt": kt.training.gpt_recipe}
    for family, inputs in ((kt.EncoderDecoder, {"source": source, "target": target}),
                           (kt.DecoderOnly, _padded_ids(rng, (4, 8), 128))):
        for recipe_name, recipe in recipes.items():
            name = f"{family.__name__}_{recipe_name}_recipe"
            model = family(**dict(tiny, vocab_size=128), pad_id=0)
            model.compile(**recipe(model.config))
            labels = inputs["target"] if isinstance(inputs, dict) else inputs
            model.fit(inputs, np.roll(labels, -1, axis=1), batch_size=4, epochs=1, verbose=0)
            path, state = str(folder / f"{name}.keras"), str(folder / f"{name}.npz")
            model.save(path)
            np.savez(state, *[ops.convert_to_numpy(v) for v in model.optimizer.variables])
            yield (dict(name=name, cls=family.__name__, path=path, optimizer=state,
                        optimizer_cls=type(model.optimizer).__name__), 0.0)
    calls = {
        "Translator": (kt.Translator(kt.EncoderDecoder(**tiny), tokenizer, target_language="de"),
                       "translate", [MESSAGES], {"beam_size": 2}),
        "TextGenerator": (kt.TextGenerator(kt.DecoderOnly(**tiny, pad_id=0, end_id=3), tokenizer),
                          "generate", [PROMPTS], {"max_new_tokens": 4}),
    }
    for name, (task, method, args, kwargs) in calls.items():
        path = str(folder / f"{name}.keras")
        task.save(path)
        expected = getattr(task, method)(*args, **kwargs)
        yield dict(name=name, cls=name, path=path, method=method, args=args,
                   kwargs=kwargs), expected


def _start_loader(backend, manifest, folder):
    """The loader of `backend`, reading `manifest`; its output goes to `folder`/backend.out
    and .err (files, not pipes: nothing reads them until it ends)."""
    with (folder / f"{backend}.out").open("w") as out, (folder / f"{backend}.err").open("w") as err:
        return subprocess.Popen(
            [sys.executable, str(LOADER), backend, str(manifest), str(os.getpid())],
            env=dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
                     OMP_NUM_THREADS="1"),
            stdout=out, stderr=err, text=True,
        )


def _differences(here, backend, items, results):
    """What the loader of `backend` got that differs from what this backend expected."""
    failures = []
    for item, expected in items:
        name, where = item["name"], f"{here} -> {backend}: {item['name']}"
        loaded_as, got = results.get(name, ["missing", "no result"])
        if loaded_as != item["cls"]:
            failures.append(f"{where} loaded as {loaded_as}: {got}")
            continue
        jit_compile = got.get("jit_compile") if isinstance(got, dict) else None
        if jit_compile and jit_compile[0] != jit_compile[1]:  # compiled with the default
            failures.append(f"{where} loads with jit_compile={jit_compile[0]}, not what "
                            f"'auto' gives there ({jit_compile[1]})")
        if "optimizer" in item:
            if got["state"] > 1e-6:
                failures.append(f"{where} optimizer state differs by {got['state']}")
        elif "arrays" not in item:
            if got != expected:
                failures.append(f"{where} gives {got}, not {expected}")
        else:
            if "mode" not in item:
                if got["logits"] > 1e-5:
                    failures.append(f"{where} logits differ by {got['logits']}")
                continue
            with np.load(item["arrays"]) as arrays:
                tolerance = 1e-5 * max(1.0, float(np.abs(arrays["__expected__"]).max()))
            if got["logits"] > tolerance:
                failures.append(f"{where} logits differ by {got['logits']} (> {tolerance})")
            if got["quantized"] != item["quantized"]:
                failures.append(f"{where} quantized layers {got['quantized']}, saved "
                                f"{item['quantized']}")
            if got["weights_differ"]:
                failures.append(f"{where} weights differ: {got['weights_differ']}")
            generated = got["generated"]
            if generated["ids"] != expected["ids"]:
                failures.append(f"{where} generates {generated['ids']}, not {expected['ids']}")
            scores = np.abs(np.subtract(generated["scores"], expected["scores"])).max()
            if not scores <= 1e-5:
                failures.append(f"{where} scores differ by {scores}: {generated['scores']}, "
                                f"not {expected['scores']}")
    return failures


def test_files_saved_here_give_the_same_outputs_under_the_other_backends(tmp_path):
    manifest = tmp_path / "manifest.jsonl"
    manifest.touch()
    here = keras.backend.backend()
    # The loaders start first and load each file as it is listed: their imports and loads run
    # while this process quantizes, trains and saves.
    running = {backend: _start_loader(backend, manifest, tmp_path)
               for backend in BACKENDS if backend != here}
    items, timed_out = [], []
    try:
        with manifest.open("a") as lines:
            for item, expected in _artifacts(tmp_path):
                lines.write(json.dumps(item) + "\n")
                lines.flush()
                items.append((item, expected))
            lines.write("null\n")
        deadline = time.monotonic() + DEADLINE  # one for both loaders
        for backend, process in running.items():
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                timed_out.append(backend)
    finally:  # a failure here leaves no loader waiting for the rest of the manifest
        for process in running.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    failures = []
    for backend, process in running.items():
        stdout, stderr = ((tmp_path / f"{backend}.{end}").read_text() for end in ("out", "err"))
        if backend in timed_out:
            failures.append(f"{here} -> {backend}: no result within {DEADLINE} s; its stderr "
                            f"ends:\n{stderr[-3000:]}")
            continue
        if process.returncode != 0:
            failures.append(f"{here} -> {backend} exited with {process.returncode}:\n"
                            f"{stderr[-3000:]}")
            continue
        lines = [x for x in stdout.splitlines() if x.startswith("RESULT ")]
        if not lines:
            failures.append(f"{here} -> {backend} printed no RESULT line; its stdout ends:\n"
                            f"{stdout[-3000:]}\nits stderr ends:\n{stderr[-3000:]}")
            continue
        results = json.loads(lines[-1][len("RESULT "):])
        failures += _differences(here, backend, items, results)
    assert not failures, "\n".join(failures)
