"""benchmarks/beam_search_bleu.py: a tiny run on catalogs and a translator the test writes."""

import os
import sys

import numpy as np
import pytest

import keras_transformer as kt

sacrebleu = pytest.importorskip("sacrebleu")  # the examples extra

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import beam_search_bleu  # noqa: E402


def write_catalogs(folder):
    for program in ("grep", "make", "sed", "tar"):
        entries = "".join(
            f'msgid "{program} cannot open file {i}"\nmsgstr "{program} kann Datei {i} nicht '
            f'öffnen"\n\n' for i in range(40)
        )
        (folder / f"{program}.po").write_text(entries + 'msgid "Quit"\nmsgstr "Beenden"\n',
                                              encoding="utf-8")


@pytest.mark.slow  # saves, loads and decodes a translator three ways
def test_figures_are_those_of_the_translators_own_outputs_on_the_demo_splits(tmp_path, capsys):
    write_catalogs(tmp_path)
    splits, _ = kt.data.gettext_splits(paths=[tmp_path])
    texts = [text for pairs in splits.values() for pair in pairs for text in pair]
    tokenizer = kt.data.train_sentencepiece(texts * 5, vocab_size=80,
                                            placeholder_slots=True)
    model = kt.EncoderDecoder(vocab_size=tokenizer.vocabulary_size(), num_layers=1, d_model=16,
                              num_heads=2, d_ff=32, dropout=0.0)
    translator = kt.Translator(model, tokenizer, target_language="de")
    translator.save(str(tmp_path / "translator.keras"))

    results = beam_search_bleu.main(
        ["--run", str(tmp_path), "--catalogs", str(tmp_path), "--searches", "greedy", "2",
         "--eval-max-length", "48", "--batch-size", "8"]
    )
    assert set(results) == {"test", "new_programs"}
    for name, result in results.items():
        pairs = beam_search_bleu.kept_pairs(translator, splits[name], 48)
        assert result["pairs"] == len(pairs) > 0
        sources, references = [s for s, _ in pairs], [t for _, t in pairs]
        for search, beam in (("greedy", None), ("beam 2", 2)):
            outputs = translator.translate(sources, beam_size=beam, progress=False)
            figures = result["searches"][search]
            assert figures["bleu"] == pytest.approx(
                sacrebleu.corpus_bleu(outputs, [references]).score)
            assert figures["mean_characters"] == pytest.approx(
                np.mean([len(text) for text in outputs]))
            bleu = sacrebleu.corpus_bleu(outputs, [references])
            assert figures["length_ratio"] == pytest.approx(bleu.sys_len / bleu.ref_len)
    printed = capsys.readouterr().out
    assert "beam 2 - greedy:" in printed and "copy-the-source BLEU" in printed
