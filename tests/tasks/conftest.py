import keras
import pytest

import keras_transformer as kt

CORPUS = [
    "Open the file", "Datei öffnen", "Close the window", "Fenster schließen",
    "Cannot open %s: %s", "Kann %s nicht öffnen: %s", "Copy {0} to {1}?", "{0} nach {1} kopieren?",
    "def parse(text):", "    return text.split()", "Save all files", "Alle Dateien speichern",
]


@pytest.fixture(scope="session")
def message_tokenizer():
    """A SentencePiece vocabulary with the placeholder slot symbols."""
    return kt.data.train_sentencepiece(CORPUS * 10, vocab_size=120, placeholder_slots=True)


@pytest.fixture
def make_translator(message_tokenizer):
    """An untrained one-layer translator, its weights drawn under `seed` if given."""
    def make(seed=None):
        if seed is not None:
            keras.utils.set_random_seed(seed)
        model = kt.EncoderDecoder(vocab_size=message_tokenizer.vocabulary_size(), num_layers=1,
                                  d_model=16, num_heads=2, d_ff=32, dropout=0.0)
        return kt.Translator(model, message_tokenizer, target_language="de")
    return make


@pytest.fixture
def translator(make_translator):
    return make_translator()
