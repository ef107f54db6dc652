"""The examples' --smoke runs: the whole job (data, tokenizer, fit, decode, save) in seconds."""

import importlib.util
import json
import math
import os
import subprocess

import keras
import polib
import pytest

import keras_transformer as kt
from keras_transformer import cli

pytest.importorskip("tensorflow")
pytest.importorskip("sacrebleu")
pytest.importorskip("matplotlib")

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # a script in a subprocess: once is enough (its library is tested everywhere)
def test_translate_smoke_writes_translator_template_heatmap_and_scores(tmp_path):
    results = load_example("translate").main(["--smoke", "--output", str(tmp_path)])
    for name in ("translator.keras", "tokenizer.spm", "cross_attention.png", "results.json"):
        assert (tmp_path / name).stat().st_size > 0
    saved = json.loads((tmp_path / "results.json").read_text())
    for split in ("test", "new_programs"):
        figures = results[split]
        assert saved[split]["bleu"] == figures["bleu"]
        assert 0 <= figures["bleu"] <= 100 and 0 < figures["copy_bleu"] <= 100
        assert figures["pairs"] > 0
        # Whatever a smoke-trained model writes, placeholders and outer white space survive.
        assert figures["placeholder_messages"] > 0 and figures["whitespace_messages"] > 0
        assert figures["placeholders_kept"]["ours"] == 1.0
        assert figures["whitespace_kept"]["ours"] == 1.0
    assert results["steps"] > 0
    translator = keras.saving.load_model(str(tmp_path / "translator.keras"), safe_mode=True)
    assert isinstance(translator, kt.Translator) and translator.target_language == "de"
    text = translator.translate("  Cannot open %s\n", beam_size=2)
    assert text.startswith("  ") and text.endswith("\n") and "%s" in text

    # The held-out program's empty catalog, filled by the command line, compiles.
    template = results["template"]
    output = str(tmp_path / "filled.po")
    assert cli.main(["translate-po", template, "--model", str(tmp_path / "translator.keras"),
                     "-o", output, "--beam-size", "2"]) == 0
    check = subprocess.run(["msgfmt", "--check-format", "--use-fuzzy", "-o", os.devnull, output],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    filled = polib.pofile(output)
    assert len(filled) == len(polib.pofile(template)) > 0
    assert all(entry.translated() or "fuzzy" in entry.flags for entry in filled)


@pytest.mark.slow  # a script in a subprocess: once is enough (its library is tested everywhere)
def test_gpt_smoke_reports_perplexity_and_samples(tmp_path):
    results = load_example("gpt").main(["--smoke", "--output", str(tmp_path)])
    assert math.isfinite(results["perplexity"]) and results["perplexity"] > 1
    for name in ("gpt.keras", "tokenizer.spm", "results.json"):
        assert (tmp_path / name).stat().st_size > 0
    generator = keras.saving.load_model(str(tmp_path / "gpt.keras"), safe_mode=True)
    assert isinstance(generator, kt.TextGenerator)
    assert generator.model.config.max_length == 32
    assert generator.generate("def ", max_new_tokens=4).startswith("def ")
