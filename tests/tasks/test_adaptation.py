"""`adapt_translator`: LoRA fine-tuning of a Translator on existing translations."""

import math
import warnings

import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.messages.training_pairs import translation_pairs
from keras_transformer.models import lora

PAIRS = [  # messages of the `make_translator` fixture's vocabulary (conftest.CORPUS)
    ("Open the file", "Datei öffnen"), ("Close the window", "Fenster schließen"),
    ("Cannot open %s: %s", "Kann %s nicht öffnen: %s"), ("Copy {0} to {1}?", "{0} nach {1} kopieren?"),
    ("def parse(text):", "    return text.split()"), ("Save all files", "Alle Dateien speichern"),
]


def _values(variables):
    return {v.path: keras.ops.convert_to_numpy(v).copy() for v in variables}


def _batches(translator):
    pieces = translation_pairs(PAIRS)
    return kt.data.TranslationBatches(pieces, translator.tokenizer, tokens_per_batch=256,
                                      max_length=32, shuffle=False)


def test_only_the_adapters_train_and_the_loss_on_the_pairs_falls(make_translator):
    translator = make_translator(seed=1)
    model = translator.model
    model.compile()
    before = _values(model.weights)
    loss_before = model.evaluate(_batches(translator), verbose=0)[0]

    result = kt.tasks.adapt_translator(translator, PAIRS, rank=2, epochs=20,
                                       learning_rate=1e-2)

    # Every weight the model had is where it was; only the new adapters moved.
    after = _values(model.weights)
    assert all(np.array_equal(after[path], value) for path, value in before.items())
    adapters = {path for path in after if path not in before}
    assert adapters and all(path.endswith(("lora_kernel_a", "lora_kernel_b"))
                            for path in adapters)
    assert {v.path for v in model.trainable_weights} == adapters
    expected = sum(2 * (layer.kernel.shape[0] + layer.kernel.shape[-1])
                   for layer in lora.lora_layers(model))
    assert result.trainable_weights == expected
    assert {layer.name for layer in lora.lora_layers(model)} == set(
        model.default_lora_layer_names())

    # The counts are the data's: every piece, every batch of every epoch.
    batches = kt.data.TranslationBatches(
        translation_pairs(PAIRS), translator.tokenizer,
        tokens_per_batch=1024, max_length=64, drop_remainder=False)
    assert (result.pairs, result.pieces) == (len(PAIRS), len(batches.sources))
    assert result.epochs == 20 and result.steps == 20 * len(batches)
    assert len(result.losses) == 20 and result.losses[-1] < result.losses[0]
    assert "adapted on 6 translations (6 pieces): " in result.summary()

    model.compile()  # the recipe's loss, as before
    assert model.evaluate(_batches(translator), verbose=0)[0] < loss_before - 0.5


def test_the_merged_translator_computes_what_the_adapted_one_does_and_reloads(
        make_translator, tmp_path):
    translator = make_translator(seed=2)
    kt.tasks.adapt_translator(translator, PAIRS, rank=2, epochs=3, learning_rate=1e-2)
    merged = kt.tasks.merged_translator(translator)

    assert lora.lora_layers(merged.model) == []
    assert len(merged.model.trainable_weights) == len(merged.model.weights)
    assert (merged.source_language, merged.target_language) == ("en", "de")
    ids = np.array([[5, 9, 12, 3], [7, 8, 3, 0]], "int32")
    inputs = {"source": ids, "target": ids}
    adapted_logits = keras.ops.convert_to_numpy(translator.model(inputs))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(merged.model(inputs)),
                               adapted_logits, atol=1e-5)

    path = str(tmp_path / "adapted.keras")
    merged.save(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.saving.load_model(path, safe_mode=True)
    assert not [w for w in caught if "Skipping variable loading" in str(w.message)]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded.model(inputs)),
                               adapted_logits, atol=1e-5)
    texts = ["Open the file", "Cannot open %s: %s"]
    assert loaded.translate(texts, beam_size=None) == translator.translate(texts, beam_size=None)


def test_a_time_limit_stops_after_the_first_step(make_translator):
    result = kt.tasks.adapt_translator(make_translator(), PAIRS, rank=1, epochs=50,
                                       seconds=1e-3)
    assert (result.epochs, result.steps) == (1, 1)


@pytest.mark.parametrize("arguments, named", [
    (dict(rank=0), "rank"), (dict(rank=1.5), "rank"), (dict(epochs=0), "epochs"),
    (dict(learning_rate=-1.0), "learning_rate"), (dict(learning_rate=math.nan), "learning_rate"),
    (dict(learning_rate="1e-3"), "learning_rate"), (dict(seconds=0), "seconds"),
    (dict(tokens_per_batch=0), "tokens_per_batch"), (dict(tokens_per_batch=10), "tokens_per_batch"),
    (dict(pairs=[]), "pairs"), (dict(pairs=[("Open the file " * 30, "Datei öffnen " * 30)]), "pairs"),
    (dict(pairs=[("Open",)]), "pairs"), (dict(pairs=[("Open", 3)]), "pairs"),
    (dict(pairs=[("", "Öffnen"), ("Open", "")]), "pairs"),
    (dict(target_layer_names=["nonexistent"]), "target_layer_names"),
])
def test_bad_arguments_name_the_argument_and_leave_the_model_alone(
        make_translator, arguments, named):
    translator = make_translator()
    arguments = dict(dict(pairs=PAIRS), **arguments)
    with pytest.raises(ValueError, match=f"`{named}`"):
        kt.tasks.adapt_translator(translator, **arguments)
    assert lora.lora_layers(translator.model) == []


def test_a_translator_is_adapted_once_and_only_a_translator(make_translator):
    translator = make_translator()
    kt.tasks.adapt_translator(translator, PAIRS, rank=1, epochs=1)
    with pytest.raises(ValueError, match="already enabled"):
        kt.tasks.adapt_translator(translator, PAIRS, rank=1, epochs=1)
    with pytest.raises(ValueError, match="`translator` must be a keras_transformer Translator"):
        kt.tasks.adapt_translator(translator.model, PAIRS)
    with pytest.raises(ValueError, match="no LoRA adapters"):
        kt.tasks.merged_translator(make_translator())
