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


def smoke_splits(language="de"):
    """The splits `translate.py --smoke` trains and evaluates on, and its held-out catalogs."""
    splits, held_out = kt.data.gettext_splits(language)
    return {name: items[:400 if name == "train" else 40] for name, items in splits.items()}, \
        held_out


@pytest.mark.slow  # a script in a subprocess: once is enough (its library is tested everywhere)
def test_translate_smoke_writes_translator_template_heatmap_and_scores(tmp_path, capsys):
    import sacrebleu

    from keras_transformer.messages.fidelity import fidelity
    from keras_transformer.messages.training_pairs import translation_pairs

    results = load_example("translate").main(["--smoke", "--output", str(tmp_path)])
    printed = capsys.readouterr().out
    for name in ("translator.keras", "tokenizer.spm", "cross_attention.png", "results.json"):
        assert (tmp_path / name).stat().st_size > 0
    # results.json holds what main returned, every figure of it.
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved == json.loads(json.dumps(results, default=str))

    # The counts are those of the data: the smoke run's slices of the gettext splits,
    # every piece of the training messages, every batch of both epochs.
    splits, held_out = smoke_splits()
    assert results["pairs"] == {name: len(items) for name, items in splits.items()}
    train_pairs = translation_pairs(splits["train"])
    assert results["training_pieces"] == len(train_pairs)
    translator = keras.saving.load_model(str(tmp_path / "translator.keras"), safe_mode=True)
    assert isinstance(translator, kt.Translator) and translator.target_language == "de"
    batches = kt.data.TranslationBatches(train_pairs, translator.tokenizer, tokens_per_batch=256,
                                         max_length=32, bucket_width=16, seed=0)
    assert results["epochs"] == 2 and results["steps"] == 2 * len(batches) > 0

    # Every figure is what sacreBLEU and the fidelity counts give for the saved
    # translator's own translations (beam 2, batch 16, as the smoke run decodes) of
    # the split's messages within 32 tokens, against their references. The smoke model
    # is too small to beat copying the source, so the two BLEUs are not compared.
    for split in ("test", "new_programs"):
        figures = results[split]
        pairs = splits[split]
        lengths = zip(translator.tokenize([s for s, _ in pairs]),
                      translator.tokenize([t for _, t in pairs]))
        kept = [pair for pair, (s_ids, t_ids) in zip(pairs, lengths)
                if max(len(s_ids), len(t_ids)) < 32]
        sources, references = [s for s, _ in kept], [t for _, t in kept]
        assert figures["pairs"] == len(kept) > 0
        hypotheses = translator.translate(sources, beam_size=2, batch_size=16)
        assert len(hypotheses) == len(sources)
        assert figures["bleu"] == sacrebleu.corpus_bleu(hypotheses, [references]).score
        assert figures["copy_bleu"] == sacrebleu.corpus_bleu(sources, [references]).score > 0
        ours, theirs = fidelity(sources, hypotheses), fidelity(sources, references)
        assert figures["placeholder_messages"] == ours.placeholder_messages > 0
        assert figures["whitespace_messages"] == ours.whitespace_messages > 0
        assert figures["placeholders_kept"] == dict(ours=ours.placeholder_rate,
                                                    references=theirs.placeholder_rate)
        assert figures["whitespace_kept"] == dict(ours=ours.whitespace_rate,
                                                  references=theirs.whitespace_rate)
        # Whatever a smoke-trained model writes, placeholders and outer white space survive.
        assert figures["placeholders_kept"]["ours"] == 1.0
        assert figures["whitespace_kept"]["ours"] == 1.0
        # ... and the report printed says the same.
        assert f"  sacreBLEU, model:                  {figures['bleu']:6.2f}" in printed
        assert f"  sacreBLEU, copying the source:     {figures['copy_bleu']:6.2f}" in printed
    assert printed.count("sacreBLEU, model:") == 2

    text = translator.translate("  Cannot open %s\n", beam_size=2)
    assert text.startswith("  ") and text.endswith("\n") and "%s" in text

    # The held-out program's empty catalog, filled by the command line, compiles.
    template = results["template"]
    assert os.path.basename(template) in {kt.data.catalog_domain(path) + ".pot"
                                          for path in held_out}
    output = str(tmp_path / "filled.po")
    assert cli.main(["translate-po", template, "--model", str(tmp_path / "translator.keras"),
                     "-o", output, "--beam-size", "2"]) == 0
    check = subprocess.run(["msgfmt", "--check-format", "--use-fuzzy", "-o", os.devnull, output],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    filled = polib.pofile(output)
    assert len(filled) == len(polib.pofile(template)) > 0
    assert all(entry.translated() or "fuzzy" in entry.flags for entry in filled)

    # The adaptation example on the same run: half the catalog kept, the other half filled
    # before and after adapt-po; its BLEUs are those of the files it wrote.
    adaptation = load_example("adapt_catalog")
    figures = adaptation.main(["--run", str(tmp_path), "--epochs", "2", "--beam-size", "2"])
    name = lambda suffix: str(tmp_path / (figures["program"] + suffix))  # noqa: E731
    human = adaptation.keyed_pairs(figures["catalog"])
    kept = adaptation.keyed_pairs(name(".half.po"))
    assert kept and all(human[key] == text for key, text in kept.items())
    references = {key: text for key, text in human.items() if key not in kept}
    assert (figures["translated_half"], figures["filled_half"]) == (len(kept), len(references))
    assert figures["filled_half"] > 0
    for stage in ("before", "after"):
        found = adaptation.keyed_pairs(name(f".{stage}.po"))
        assert {key: found[key] for key in kept} == kept  # translate-po keeps what exists
        keys = sorted(references, key=str)
        assert figures["bleu"][stage] == sacrebleu.corpus_bleu(
            [found[key] for key in keys], [[references[key] for key in keys]]).score
        assert figures["msgfmt_accepts"][stage] is True
    adapted = keras.saving.load_model(name(".adapted.keras"), safe_mode=True)
    assert isinstance(adapted, kt.Translator) and adapted.target_language == "de"


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
