"""The examples' --smoke runs: the whole job (data, tokenizer, fit, decode, save) in seconds."""

import importlib.util
import json
import math
import os

import keras
import numpy as np
import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("sacrebleu")
pytest.importorskip("matplotlib")

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_translate_smoke_writes_model_tokenizer_heatmap_and_scores(tmp_path):
    results = load_example("translate").main(["--smoke", "--output", str(tmp_path)])
    for name in ("translator.keras", "tokenizer.spm", "cross_attention.png", "results.json"):
        assert (tmp_path / name).stat().st_size > 0
    assert json.loads((tmp_path / "results.json").read_text())["bleu"] == results["bleu"]
    assert 0 <= results["bleu"] <= 100 and 0 < results["copy_bleu"] <= 100
    assert results["test_pairs"] > 0 and results["steps"] > 0
    model = keras.saving.load_model(str(tmp_path / "translator.keras"), safe_mode=True)
    source = np.array([[10, 11, 12, 3]], dtype="int32")
    assert model.generate(source, start_id=2, stop_ids=(3,), max_length=5).shape == (1, 5)


def test_gpt_smoke_reports_perplexity_and_samples(tmp_path):
    results = load_example("gpt").main(["--smoke", "--output", str(tmp_path)])
    assert math.isfinite(results["perplexity"]) and results["perplexity"] > 1
    for name in ("gpt.keras", "tokenizer.spm", "results.json"):
        assert (tmp_path / name).stat().st_size > 0
    model = keras.saving.load_model(str(tmp_path / "gpt.keras"), safe_mode=True)
    assert model.config.max_length == 32
