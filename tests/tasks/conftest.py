import os
import subprocess
import sys

import keras
import pytest

import keras_transformer as kt

BACKENDS = ("tensorflow", "jax", "torch")

CORPUS = [
    "Open the file", "Datei öffnen", "Close the window", "Fenster schließen",
    "Cannot open %s: %s", "Kann %s nicht öffnen: %s", "Copy {0} to {1}?", "{0} nach {1} kopieren?",
    "def parse(text):", "    return text.split()", "Save all files", "Alle Dateien speichern",
]


@pytest.fixture(scope="session")
def message_tokenizer():
    """A SentencePiece vocabulary with the placeholder slot symbols."""
    return kt.data.train_sentencepiece(CORPUS * 10, vocabulary_size=120, placeholder_slots=True)


@pytest.fixture
def translator(message_tokenizer):
    model = kt.EncoderDecoder(vocab_size=message_tokenizer.vocabulary_size(), num_layers=1,
                              d_model=16, num_heads=2, d_ff=32, dropout=0.0)
    return kt.Translator(model, message_tokenizer, target_language="de")


_LOAD_SCRIPT = """
import json, sys
import keras
import keras_transformer  # registers the classes; no custom_objects below
assert keras.backend.backend() == sys.argv[1], keras.backend.backend()
task = keras.saving.load_model(sys.argv[2], safe_mode=True)
call = json.loads(sys.argv[3])
got = getattr(task, call["method"])(*call["args"], **call["kwargs"])
print("RESULT " + json.dumps([type(task).__name__, got]))
"""


@pytest.fixture
def outputs_under_other_backends(tmp_path):
    """Saves `task`, loads it under the two other backends (safe mode), returns each's output
    of `task.<method>(*args, **kwargs)` (JSON-able), keyed by backend."""
    import json

    def run(task, method, *args, **kwargs):
        path = str(tmp_path / "task.keras")
        task.save(path)
        call = json.dumps(dict(method=method, args=args, kwargs=kwargs))
        here = keras.backend.backend()
        running = {
            backend: subprocess.Popen(
                [sys.executable, "-c", _LOAD_SCRIPT, backend, path, call],
                env=dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="3",
                         OMP_NUM_THREADS="1"),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            for backend in BACKENDS if backend != here
        }
        results = {}
        for backend, process in running.items():
            stdout, stderr = process.communicate(timeout=300)
            assert process.returncode == 0, f"{here} -> {backend}:\n{stderr[-3000:]}"
            line = [x for x in stdout.splitlines() if x.startswith("RESULT ")][-1]
            name, results[backend] = json.loads(line[len("RESULT "):])
            assert name == type(task).__name__
        return results

    return run
