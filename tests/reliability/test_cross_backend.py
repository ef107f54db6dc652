"""What this backend saves, the two others load in safe mode and run to the same outputs.

Twelve `.keras` files travel: both model families compiled with each recipe (the paper's Adam,
GPT's AdamW) after a step of `fit`, whose optimizer and its state must load too; both model
families twice (logits to 1e-5, with padding): the
2017 and GPT-3 toggles, then LLaMA's (rotary positions, RMSNorm, SwiGLU, no biases,
grouped-query attention, pre-LN) and a post-LN encoder-decoder with the other new toggles
(ALiBi, RMSNorm, GEGLU, no biases, multi-query attention, qk-norm); LLaMA's quantized to
int8 and an encoder-decoder to int4 (logits to 1e-5 of the quantized model's); and both tasks (the same
strings from beam search and from greedy generation). Each other backend loads all of them in
one subprocess, so each run of the suite pays two interpreter starts, not twelve. Every
backend both saves (its own run) and loads (the two other runs).
"""

import json
import os
import subprocess
import sys

import keras
import numpy as np
from keras import ops

import keras_transformer as kt

BACKENDS = ("tensorflow", "jax", "torch")
CORPUS = ["Open the file", "Datei öffnen", "Cannot open %s: %s", "Kann %s nicht öffnen: %s",
          "def parse(text):", "    return text.split()", "Save all files", "Alle Dateien"]
MESSAGES = ["Open the file", "  Cannot open %s: %s\n", "\tCopy {0} to {1}?\n\n", ""]
PROMPTS = ["def parse(", "", "    return text.split() and more words"]

_LOAD_SCRIPT = """
import json, sys
import numpy as np
import keras
from keras import ops
import keras_transformer  # registers the classes; no custom_objects below
assert keras.backend.backend() == sys.argv[1], keras.backend.backend()
results = {}
for item in json.load(open(sys.argv[2])):
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
            inputs = arrays.pop("__ids__") if "__ids__" in arrays else arrays
            got = ops.convert_to_numpy(loaded(inputs))
            assert got.shape == expected.shape, (got.shape, expected.shape)
            got = float(np.abs(got - expected).max())
        else:
            got = getattr(loaded, item["method"])(*item["args"], **item["kwargs"])
        results[item["name"]] = [type(loaded).__name__, got]
    except Exception as error:
        results[item["name"]] = ["error", repr(error)]
print("RESULT " + json.dumps(results))
"""


def _padded_ids(rng, shape, vocab):
    ids = rng.integers(1, vocab, size=shape).astype("int32")
    for row in range(shape[0]):
        ids[row, shape[1] - row :] = 0  # rows of different real lengths, padded on the right
    return ids


def _artifacts(folder):
    """`(manifest item, expected output)` for each file saved here."""
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
    llama_int8 = kt.DecoderOnly.from_preset("llama_tiny")
    llama_int8.quantize("int8")
    toggled_int4 = kt.EncoderDecoder.from_preset("transformer_tiny", dropout=0.0, norm="rms")
    toggled_int4.quantize("int4")
    models = {  # name -> (model, its inputs)
        "EncoderDecoder": (encoder_decoder, {"source": source, "target": target}),
        "DecoderOnly": (decoder_only, _padded_ids(rng, (4, 8), decoder_only.config.vocab_size)),
        "LlamaDecoderOnly": (llama, _padded_ids(rng, (4, 8), llama.config.vocab_size)),
        "ToggledEncoderDecoder": (toggled, {"source": source, "target": target}),
        "Int8LlamaDecoderOnly": (llama_int8, _padded_ids(rng, (4, 8), llama.config.vocab_size)),
        "Int4EncoderDecoder": (toggled_int4, {"source": source, "target": target}),
    }
    calls = {
        "Translator": (kt.Translator(kt.EncoderDecoder(**tiny), tokenizer, target_language="de"),
                       "translate", [MESSAGES], {"beam_size": 2}),
        "TextGenerator": (kt.TextGenerator(kt.DecoderOnly(**tiny, pad_id=0, end_id=3), tokenizer),
                          "generate", [PROMPTS], {"max_new_tokens": 4}),
    }
    items = []
    for name, (model, inputs) in models.items():
        path, arrays = str(folder / f"{name}.keras"), str(folder / f"{name}.npz")
        model.save(path)
        expected = ops.convert_to_numpy(model(inputs))
        named = dict(inputs) if isinstance(inputs, dict) else {"__ids__": inputs}
        np.savez(arrays, __expected__=expected, **named)
        items.append((dict(name=name, cls=type(model).__name__, path=path, arrays=arrays), 0.0))
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
            items.append((dict(name=name, cls=family.__name__, path=path, optimizer=state,
                               optimizer_cls=type(model.optimizer).__name__), 0.0))
    for name, (task, method, args, kwargs) in calls.items():
        path = str(folder / f"{name}.keras")
        task.save(path)
        expected = getattr(task, method)(*args, **kwargs)
        items.append((dict(name=name, cls=name, path=path, method=method, args=args,
                           kwargs=kwargs), expected))
    return items


def test_files_saved_here_give_the_same_outputs_under_the_other_backends(tmp_path):
    items = _artifacts(tmp_path)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps([item for item, _ in items]))
    here = keras.backend.backend()
    running = {
        backend: subprocess.Popen(
            [sys.executable, "-c", _LOAD_SCRIPT, backend, str(manifest)],
            env=dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
                     OMP_NUM_THREADS="1"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for backend in BACKENDS if backend != here  # both at once: much of their time is imports
    }
    for backend, process in running.items():
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, f"{here} -> {backend}:\n{stderr[-3000:]}"
        line = [x for x in stdout.splitlines() if x.startswith("RESULT ")][-1]
        results = json.loads(line[len("RESULT "):])
        for item, expected in items:
            name = item["name"]
            loaded_as, got = results[name]
            assert loaded_as == item["cls"], (here, backend, name, got)
            if "arrays" in item:
                assert got <= 1e-5, f"{here} -> {backend}: {name} logits differ by {got}"
            elif "optimizer" in item:
                assert got <= 1e-6, f"{here} -> {backend}: {name} optimizer state differs by {got}"
            else:
                assert got == expected, (here, backend, name)
