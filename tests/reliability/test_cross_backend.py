"""What this backend saves, the two others load in safe mode and run to the same outputs.

Fifteen `.keras` files travel: both model families compiled with each recipe (the paper's Adam,
GPT's AdamW) after a step of `fit`, whose optimizer and its state must load too; both model
families twice (logits to 1e-5, with padding): the
2017 and GPT-3 toggles, then LLaMA's (rotary positions, RMSNorm, SwiGLU, no biases,
grouped-query attention, pre-LN) and a post-LN encoder-decoder with the other new toggles
(ALiBi, RMSNorm, GEGLU, no biases, multi-query attention, qk-norm); a model quantized in each
mode Keras 3.15 offers, int8, int4, float8, GPTQ and AWQ (logits to 1e-5 of the quantized
model's own, and the same token ids from greedy `generate`); and both tasks (the same strings
from beam search and from greedy generation).

The quantized models are of width 16 with one block a stack (tests/calibrated_zoo.py's; GPTQ
and AWQ calibrated on 8 windows of ids, in groups of 8 weights) and split the modes so that each
family has a mode that quantizes weights and inputs at every call and one that Keras calibrates
on data: the LLaMA-toggle `DecoderOnly` in int8 (its token embedding too) and in GPTQ (4-bit
weights with zero points and group indices, through grouped-query attention's fused `qkv` and
SwiGLU); the `EncoderDecoder` in int4 (packed 4-bit weights; the tied embedding, hence the
output projection, too), in AWQ (4-bit weights with per-input scales, the decoder's
cross-attention calibrated on the encoder's output) and in float8. Float8 keeps a float kernel
with scales and amax histories and casts inputs and kernel to each backend's own
`float8_e4m3fn` at every call; it goes on the encoder-decoder, whose blocks cast the most kinds
of input (source, target, and the encoder's memory in cross-attention).

Each other backend loads all of them in one subprocess, started before anything is saved: it
imports its framework, then loads each file as the manifest lists it (a JSON line a file, then
`null`) while this process quantizes, trains and saves the next ones. So each run of the suite
pays two interpreter starts, not fifteen, mostly while it saves. On JAX, the logits (here and in
a loader) come from `predict`, one compiled forward pass, not from an eager call, which
compiles each op. Every backend both saves (its own run) and loads (the two other runs).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
from keras import ops

import keras_transformer as kt
from calibrated_zoo import calibrate
from calibrated_zoo import tiny_llama
from calibrated_zoo import tiny_translator

BACKENDS = ("tensorflow", "jax", "torch")
CORPUS = ["Open the file", "Datei öffnen", "Cannot open %s: %s", "Kann %s nicht öffnen: %s",
          "def parse(text):", "    return text.split()", "Save all files", "Alle Dateien"]
MESSAGES = ["Open the file", "  Cannot open %s: %s\n", "\tCopy {0} to {1}?\n\n", ""]
PROMPTS = ["def parse(", "", "    return text.split() and more words"]

_LOAD_SCRIPT = """
import json, sys, time
import numpy as np
import keras
from keras import ops
import keras_transformer  # registers the classes; no custom_objects below
assert keras.backend.backend() == sys.argv[1], keras.backend.backend()


def logits(model, inputs):  # as _logits below
    if keras.backend.backend() == "jax":
        return model.predict(inputs, verbose=0)
    return ops.convert_to_numpy(model(inputs))


def manifest(path):
    # The items as the saving process appends them, a JSON line each, then `null`.
    deadline, pending = time.monotonic() + 1800, ""
    with open(path) as lines:
        while time.monotonic() < deadline:
            pending += lines.readline()
            if not pending.endswith("\\n"):  # the saving process has not written it yet
                time.sleep(0.05)
                continue
            item, pending = json.loads(pending), ""
            if item is None:
                return
            yield item
    raise TimeoutError("the manifest did not end")


results = {}
for item in manifest(sys.argv[2]):
    try:  # each file on its own: one failure does not hide the others
        loaded = keras.saving.load_model(item["path"], safe_mode=True)
        if "optimizer" in item:  # a compiled model: its optimizer and state came along
            with np.load(item["optimizer"]) as saved:
                expected = [saved[f"arr_{i}"] for i in range(len(saved.files))]
            state = [ops.convert_to_numpy(v) for v in loaded.optimizer.variables]
            assert type(loaded.optimizer).__name__ == item["optimizer_cls"], loaded.optimizer
            assert len(state) == len(expected), (len(state), len(expected))
            got = max(float(np.abs(a - b).max()) for a, b in zip(state, expected))
        elif "arrays" in item:
            arrays = dict(np.load(item["arrays"]))
            expected = arrays.pop("__expected__")
            prompt = arrays.pop("__prompt__", None)
            inputs = arrays.pop("__ids__") if "__ids__" in arrays else arrays
            got = logits(loaded, inputs)
            assert got.shape == expected.shape, (got.shape, expected.shape)
            got = float(np.abs(got - expected).max())
            if prompt is not None:  # and its greedy ids
                got = [got, np.asarray(loaded.generate(prompt, **item["generate"])).tolist()]
        else:
            got = getattr(loaded, item["method"])(*item["args"], **item["kwargs"])
        results[item["name"]] = [type(loaded).__name__, got]
    except Exception as error:
        results[item["name"]] = ["error", repr(error)]
print("RESULT " + json.dumps(results))
"""


def _logits(model, inputs):
    """The model's logits: on JAX through `predict`, which compiles the forward pass once (JAX
    compiles each eager op on first use: four times as long for these models)."""
    if keras.backend.backend() == "jax":
        return model.predict(inputs, verbose=0)
    return ops.convert_to_numpy(model(inputs))


def _padded_ids(rng, shape, vocab):
    ids = rng.integers(1, vocab, size=shape).astype("int32")
    for row in range(shape[0]):
        ids[row, shape[1] - row :] = 0  # rows of different real lengths, padded on the right
    return ids


def _saved_models(folder, models):
    """Saves each model and the arrays its loader reads: inputs, logits, and a prompt.

    Args:
        folder: where the files go.
        models: `{name: (model, inputs)}` or `{name: (model, inputs, prompt, generate's
            keyword arguments)}`.

    Yields:
        `(manifest item, expected output)`: the generated ids where there is a prompt.
    """
    for name, (model, inputs, *generation) in models.items():
        path, arrays = str(folder / f"{name}.keras"), str(folder / f"{name}.npz")
        model.save(path)
        named = dict(inputs) if isinstance(inputs, dict) else {"__ids__": inputs}
        item, expected = dict(name=name, cls=type(model).__name__, path=path, arrays=arrays), 0.0
        if generation:  # the loaded model generates from the prompt too: the same ids
            prompt, item["generate"] = generation
            named["__prompt__"] = np.asarray(prompt, "int32")
            expected = np.asarray(model.generate(named["__prompt__"], **item["generate"])).tolist()
        np.savez(arrays, __expected__=_logits(model, inputs), **named)
        yield item, expected


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
    # Quantized in each mode (see the module's docstring), those quick to quantize first:
    # logits, then greedy ids from prompts without padding (these LLaMA models have no pad_id)
    # or from padded sources. Width 16, d_ff 16 (JAX compiles each eager step of GPTQ's column
    # loop: 16 columns, not 32), one block (a stack of each); groups of 8 weights, two a row.
    decoder_ids, decode = _padded_ids(rng, (4, 8), 64), {"max_new_tokens": 4}
    translator_ids = {"source": _padded_ids(rng, (4, 7), 64),
                      "target": _padded_ids(rng, (4, 6), 64)}
    translate = {"beam_size": None, "max_length": 5}
    prompt, source_prompt = rng.integers(1, 64, size=(2, 3)), translator_ids["source"][:3]
    quantized = [  # (name, model, mode, inputs, prompt, generate's arguments)
        ("Int8LlamaDecoderOnly", tiny_llama(num_layers=1, d_ff=16), "int8", decoder_ids, prompt,
         decode),
        ("Int4EncoderDecoder", tiny_translator(norm="rms", d_ff=16), "int4", translator_ids,
         source_prompt, translate),
        ("Float8EncoderDecoder", tiny_translator(d_ff=16), "float8", translator_ids,
         source_prompt, translate),
        ("GptqLlamaDecoderOnly", tiny_llama(num_layers=1, d_ff=16), "gptq", decoder_ids, prompt,
         decode),
        ("AwqEncoderDecoder", tiny_translator(d_ff=16), "awq", translator_ids, source_prompt,
         translate),
    ]
    for name, model, mode, *arrays_and_generation in quantized:
        if mode in kt.models.calibration_stages.CALIBRATED_MODES:
            calibrate(model, mode, group_size=8)
        else:
            model.quantize(mode)
        yield from _saved_models(folder, {name: (model, *arrays_and_generation)})
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
            [sys.executable, "-c", _LOAD_SCRIPT, backend, str(manifest)],
            env=dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
                     OMP_NUM_THREADS="1"),
            stdout=out, stderr=err, text=True,
        )


def test_files_saved_here_give_the_same_outputs_under_the_other_backends(tmp_path):
    manifest = tmp_path / "manifest.jsonl"
    manifest.touch()
    here = keras.backend.backend()
    # The loaders start first and load each file as it is listed: their imports and loads run
    # while this process quantizes, trains and saves.
    running = {backend: _start_loader(backend, manifest, tmp_path)
               for backend in BACKENDS if backend != here}
    items = []
    try:
        with manifest.open("a") as lines:
            for item, expected in _artifacts(tmp_path):
                lines.write(json.dumps(item) + "\n")
                lines.flush()
                items.append((item, expected))
            lines.write("null\n")
        for process in running.values():
            process.wait(timeout=600)
    finally:  # a failure here leaves no loader waiting for the rest of the manifest
        for process in running.values():
            if process.poll() is None:
                process.kill()
    for backend, process in running.items():
        stdout, stderr = ((tmp_path / f"{backend}.{end}").read_text() for end in ("out", "err"))
        assert process.returncode == 0, f"{here} -> {backend}:\n{stderr[-3000:]}"
        line = [x for x in stdout.splitlines() if x.startswith("RESULT ")][-1]
        results = json.loads(line[len("RESULT "):])
        for item, expected in items:
            name = item["name"]
            loaded_as, got = results[name]
            assert loaded_as == item["cls"], (here, backend, name, got)
            if "generate" in item:
                got, generated = got
                assert generated == expected, f"{here} -> {backend}: {name} generates {generated}"
            if "arrays" in item:
                assert got <= 1e-5, f"{here} -> {backend}: {name} logits differ by {got}"
            elif "optimizer" in item:
                assert got <= 1e-6, f"{here} -> {backend}: {name} optimizer state differs by {got}"
            else:
                assert got == expected, (here, backend, name)
