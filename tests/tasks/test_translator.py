import keras
import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.messages import find_placeholders
from keras_transformer.messages import placeholders
from keras_transformer.messages import matches
from keras_transformer.messages import outer_whitespace
from keras_transformer.tasks import translator as translator_module

MESSAGES = [
    "Open the file",
    "  Cannot open %s: %s\n",
    "\tCopy {0} to {1}?\n\n",
    "  -a, --all       save all files\n  -q              close the window\n",
    "%(count)d files, %-10lu bytes, %%",
    "   ",
    "",
]


def test_a_string_gives_a_string_and_a_list_a_list(translator):
    one = translator.translate("Open the file", beam_size=2)
    assert isinstance(one, str)
    assert translator.translate(["Open the file"], beam_size=2) == [one]


def test_layout_and_placeholders_survive_whatever_the_model_writes(translator):
    # An untrained model writes arbitrary tokens: the guarantee does not depend on it.
    for source, text in zip(MESSAGES, translator.translate(MESSAGES, beam_size=2)):
        assert outer_whitespace(text) == outer_whitespace(source), (source, text)
        assert text.count("\n") == source.count("\n"), (source, text)
        assert matches(source, text), (source, text)
    assert translator.translate(["   ", ""]) == ["   ", ""]


def test_a_list_translates_as_each_text_alone(translator):
    together = translator.translate(MESSAGES[:4], beam_size=2, batch_size=3)
    alone = [translator.translate(text, beam_size=2, batch_size=1) for text in MESSAGES[:4]]
    assert together == alone


def test_n_best_are_distinct_sorted_and_start_with_the_best(make_translator):
    # Weights under which the 4 beams find at least 3 different texts on every backend.
    translator = make_translator(seed=1)
    found = translator.translations(["Open the file", "Save all files"], beam_size=4,
                                    num_return=3)
    assert [len(options) for options in found] == [3, 3]
    for options in found:
        scores = [option.score for option in options]
        assert scores == sorted(scores, reverse=True)
        assert len({option.text for option in options}) == 3
    assert [options[0].text for options in found] == translator.translate(
        ["Open the file", "Save all files"], beam_size=4)


def test_greedy_translation_is_the_models_greedy_output_with_the_layout_kept(translator):
    text = "Open the file"
    config = translator.model.config
    source = np.array([translator.tokenize([text])[0] + [config.end_id]], dtype="int32")
    ids = translator.model.generate(source, beam_size=None)[0].tolist()
    ids = ids[:ids.index(config.end_id)] if config.end_id in ids else ids
    expected = translator.detokenize([[t for t in ids if t != config.pad_id]])[0]
    ((decoded, score),) = translator._decode([source[0].tolist()], dict(beam_size=None), 1)[0]
    assert decoded == expected and np.isnan(score)
    # The translator puts placeholders back where their slot symbols are and drops the
    # slots the source has none for (this source has none): what it then keeps or repairs.
    expected = placeholders.restore(expected, placeholders.protect(text).slots)
    (found,) = translator.translations([text], beam_size=None)
    assert len(found) == 1 and np.isnan(found[0].score)  # also when kept or repaired
    if expected.strip() and matches(text, expected):
        assert (found[0].text, found[0].notes) == (expected, ())
    else:  # the untrained model wrote no text or a stray directive: kept or repaired, and said
        assert found[0].notes in ((translator_module.EMPTY,), (translator_module.REPAIRED,))
    for source_text, output in zip(MESSAGES, translator.translate(MESSAGES, beam_size=None)):
        assert outer_whitespace(output) == outer_whitespace(source_text), (source_text, output)
        assert matches(source_text, output), (source_text, output)


def test_hypotheses_that_read_the_same_are_returned_once():
    # Two beams that differed only in a stray slot symbol restore to one text.
    chosen = translator_module._select("Open the file", [
        ("Datei öffnen", -1.0), ("Datei öffnen", -1.5), ("Öffne die Datei", -2.0)], 2)
    assert [(option.text, option.score) for option in chosen] == [
        ("Datei öffnen", -1.0), ("Öffne die Datei", -2.0)]
    repeated = translator_module._select("Open the file", [("Datei", -1.0), ("Datei", -2.0)], 2)
    assert [option.text for option in repeated] == ["Datei", "Datei"]  # fewer found: repeated


def test_a_hypothesis_with_wrong_placeholders_is_never_returned_unmarked():
    source = "Copy %s to %d"
    candidates = [("kopiere %d nach %s", -1.0),  # reordered: printf arguments swapped
                  ("kopiere nach", -2.0),  # lost both
                  ("kopiere %s nach %d", -3.0)]  # right
    best = translator_module._select(source, candidates, 1)[0]
    assert best.text == "kopiere %s nach %d" and best.clean
    chosen = translator_module._select(source, candidates[:2], 2)
    assert all(matches(source, option.text) for option in chosen)
    assert all(option.notes == (translator_module.REPAIRED,) for option in chosen)
    empty = translator_module._select(source, [("", -1.0)], 1)[0]
    assert empty.text == source and empty.notes == (translator_module.EMPTY,)


def test_placeholders_reach_the_model_as_one_slot_token_each(translator):
    assert translator.protects_placeholders
    seen = []
    original = translator.model.generate

    def recording(source_ids, **kwargs):
        seen.append(np.asarray(source_ids))
        return original(source_ids, **kwargs)

    translator.model.generate = recording
    translator.translate("Cannot open %s: %(name)s", beam_size=1)
    slots = [translator.token_id(symbol) for symbol in kt.messages.SLOT_SYMBOLS[:2]]
    ids = seen[0][0].tolist()
    assert ids.count(slots[0]) == 1 and ids.count(slots[1]) == 1
    assert find_placeholders(translator.detokenize([ids])[0]) == []


def test_identical_pieces_are_decoded_once(translator):
    rows = []
    original = translator.model.generate

    def recording(source_ids, **kwargs):
        rows.append(len(source_ids))
        return original(source_ids, **kwargs)

    translator.model.generate = recording
    texts = ["Open the file", "  Open the file\n", "Open the file\nSave all files"]
    translator.translate(texts, beam_size=1)  # one batch: its rows are the distinct pieces
    assert rows == [2]


def test_saved_translator_loads_in_safe_mode_with_the_same_strings(translator, tmp_path):
    expected = translator.translate(MESSAGES, beam_size=2)
    path = str(tmp_path / "translator.keras")
    translator.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded, kt.Translator)
    assert (loaded.source_language, loaded.target_language) == ("en", "de")
    assert loaded.translate(MESSAGES, beam_size=2) == expected


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda t: t.translate(3), ["`texts`", "string or a list of strings"]),
        (lambda t: t.translate(["a", None]), ["`texts`", "non-strings"]),
        (lambda t: t.translate("a", beam_size=0), ["`beam_size`", ">= 1"]),
        (lambda t: t.translations("a", beam_size=2, num_return=3), ["`num_return`", "<= beam_size"]),
        (lambda t: t.translations("a", beam_size=None, num_return=2),
         ["`num_return`", "greedy search"]),
        (lambda t: t.translate("a", batch_size=0), ["`batch_size`", ">= 1"]),
        (lambda t: t.translate("a", progress="yes"), ["`progress`", "'auto'"]),
        (lambda t: t.translate("Caf\udce9"), ["`texts`", "not valid Unicode", "0xE9"]),
        (lambda t: t.translate(["a", "Caf\udce9"]), ["`texts[1]`", "not valid Unicode"]),
        (lambda t: t.translate("a", beam_size=10**6), ["`beam_size`", "vocabulary size"]),
        (lambda t: t.translations(["a"], format_flags=["c"]), ["`format_flags`", "'c-format'"]),
        (lambda t: t.translations(["a", "b"], format_flags=["none"]), ["`format_flags`", "one flag per text"]),
    ],
)
def test_bad_call_arguments_raise_naming_them(translator, call, words):
    with pytest.raises(ValueError) as info:
        call(translator)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_bad_constructor_arguments_raise_naming_them(message_tokenizer):
    vocabulary = message_tokenizer.vocabulary_size()
    small = kt.EncoderDecoder(vocab_size=vocabulary - 1, num_layers=1, d_model=16,
                              num_heads=2, d_ff=32)
    model = kt.EncoderDecoder(vocab_size=vocabulary, num_layers=1, d_model=16, num_heads=2,
                              d_ff=32)
    gpt = kt.DecoderOnly(vocab_size=vocabulary, num_layers=1, d_model=16, num_heads=2, d_ff=32)
    cases = [
        (lambda: kt.Translator(gpt, message_tokenizer), ["`model`", "EncoderDecoder"]),
        (lambda: kt.Translator(model, "vocab.spm"), ["`tokenizer`", "keras-hub"]),
        (lambda: kt.Translator(small, message_tokenizer), ["`tokenizer`", "vocab_size"]),
        (lambda: kt.Translator(model, message_tokenizer, target_language=""),
         ["`target_language`", "language code"]),
        (lambda: kt.Translator(kt.EncoderDecoder(vocab_size=vocabulary, num_layers=1,
                                                 d_model=16, num_heads=2, d_ff=32, end_id=None),
                               message_tokenizer), ["`end_id`"]),
    ]
    for make, words in cases:
        with pytest.raises(ValueError) as info:
            make()
        for word in words:
            assert word in str(info.value), (word, str(info.value))


def test_hostile_model_output_is_repaired_or_refused_never_passed_as_good(translator):
    """Whatever the search returns, a translation comes back faithful or marked."""
    hostile = {
        "Progress: 50%": [("Fortschritt: 50%", -1.0)],  # with the next piece: `%  f`
        "done": [("fertig", -1.0)],
        "Quit": [("   ", -0.5), ("", -0.7)],  # white space only: nothing translated
        "Done \ue000": [("Fertig \ue000 zu 100%", -1.0)],  # a stray % msgfmt rejects
        "Copy \ue000 to \ue001": [("\ue001 \ue000 \ue005 kopieren", -1.0)],  # swapped, invented
    }
    seen = []  # what reaches the model: the protected pieces, one fake id each

    def tokenize(texts):
        seen.extend(texts)
        return [[len(seen) - len(texts) + i] for i in range(len(texts))]

    def decode(sources, search, batch_size):
        return [hostile[seen[ids[0]]] for ids in sources]

    translator.tokenize, translator._decode = tokenize, decode
    sources = ["Progress: 50%  done", "  Quit\n", "Done %d", "Copy %s to %d"]
    found = [options[0] for options in translator.translations(sources, beam_size=2)]
    for source, translation in zip(sources, found):
        assert matches(source, translation.text), (source, translation)
        assert outer_whitespace(translation.text) == outer_whitespace(source)
        assert not translation.clean, translation
    assert found[1].text == "  Quit\n" and found[1].notes == (translator_module.EMPTY,)
    assert found[2].text == "Fertig %d zu 100"
    assert found[3].text == "%s %d kopieren"


def _source_rows(translator, call):
    """The id rows `generate` is called with while `call` runs."""
    seen = []
    original = translator.model.generate

    def recording(source_ids, **kwargs):
        seen.extend(np.asarray(source_ids).tolist())
        return original(source_ids, **kwargs)

    translator.model.generate = recording
    call()
    translator.model.generate = original
    return seen


def test_the_format_flag_decides_what_reaches_the_model_as_a_slot(translator):
    slot = translator.token_id(kt.messages.SLOT_SYMBOLS[0])
    text = "Done: 100% of the files"
    as_any = _source_rows(translator, lambda: translator.translations([text], beam_size=1))
    as_text = _source_rows(translator, lambda: translator.translations(
        [text], beam_size=1, format_flags=["none"]))
    assert slot in as_any[0] and slot not in as_text[0]  # "% o" is a directive only to printf


def test_c_format_sends_wide_directives_as_slots(translator):
    slots = [translator.token_id(symbol) for symbol in kt.messages.SLOT_SYMBOLS[:2]]
    rows = _source_rows(translator, lambda: translator.translations(
        ["Copy %S to %C"], beam_size=1, format_flags=["c-format"]))
    assert rows[0].count(slots[0]) == 1 and rows[0].count(slots[1]) == 1


def test_characters_outside_the_vocabulary_are_left_out_with_a_note(translator):
    found = translator.translations(["Open 😀 file ½"], beam_size=2)[0][0]
    assert "\u2047" not in found.text and not found.clean
    assert f"{translator_module.UNKNOWN_CHARACTERS}: 😀 ½" in found.notes
    assert translator.translations(["Open the file"], beam_size=2)[0][0].notes == ()


def test_a_piece_too_long_for_the_model_is_kept_without_decoding(translator):
    long = "open the file " * 400  # about 1,600 tokens, beyond LONGEST_PIECE
    assert translator.longest_piece == translator_module.LONGEST_PIECE
    rows = _source_rows(translator, lambda: translator.translations([long.strip(), "Open"], beam_size=2))
    found = translator.translations([long.strip()], beam_size=2)[0][0]
    assert found.text == long.strip() and found.notes == (translator_module.TOO_LONG,)
    assert found.score == -np.inf and len(rows) == 1  # only "Open" was decoded


@pytest.mark.parametrize("position, decoded", [("sinusoidal", True), ("learned", False)])
def test_only_a_position_table_limits_a_piece_to_max_length(message_tokenizer, position, decoded):
    # max_length is the rows of a learned table; sinusoids take any length, so a piece of
    # 20-odd tokens is translated by a sinusoidal model whose max_length is 64 (64 - 51 = 13
    # would leave it out), and kept by a learned table of 64 rows.
    model = kt.EncoderDecoder(vocab_size=message_tokenizer.vocabulary_size(), num_layers=1,
                              d_model=16, num_heads=2, d_ff=32, max_length=64, position=position)
    translator = kt.Translator(model, message_tokenizer, target_language="de")
    text = "open the file and close the window"
    assert 13 < len(translator.tokenize([text.strip()])[0]) < 64
    found = translator.translations([text.strip()], beam_size=1)[0][0]
    assert (translator_module.TOO_LONG in found.notes) is not decoded


def test_a_beam_that_would_exhaust_memory_is_refused_with_the_widest_that_fits(translator, monkeypatch):
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 16}  # a 64 KiB machine
    monkeypatch.setattr(translator_module.os, "sysconf", lambda name: pages[name])
    with pytest.raises(ValueError, match=r"`beam_size` 8 would need about .* use a beam_size of "
                                         r"at most \d+, or a smaller batch_size"):
        translator.translations(["Open the file"], beam_size=8)
