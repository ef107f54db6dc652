import json

import numpy as np

import keras
import pytest

import keras_transformer as kt

PROMPTS = ["def parse(", "", "    return text.split() and more words"]


@pytest.fixture
def generator(message_tokenizer):
    model = kt.DecoderOnly(vocab_size=message_tokenizer.vocabulary_size(), num_layers=1,
                           d_model=16, num_heads=2, d_ff=32, dropout=0.0, pad_id=0, end_id=3)
    return kt.TextGenerator(model, message_tokenizer)


@pytest.fixture(scope="module")
def byte_level_files(tmp_path_factory):
    """GPT-2's byte-level BPE files for a tiny vocabulary: every byte, a few merges."""
    from keras_hub.src.tokenizers.byte_pair_tokenizer import bytes_to_unicode

    _, characters = bytes_to_unicode()
    vocabulary = {c: i for i, c in enumerate(characters)}
    merges = ["d e", "de f", "Ġ p", "Ġp a", "r s", "Ġpa rs", "Ġpars e"]
    for merge in merges:
        vocabulary.setdefault(merge.replace(" ", ""), len(vocabulary))
    vocabulary["<|endoftext|>"] = len(vocabulary)
    folder = tmp_path_factory.mktemp("bpe")
    (folder / "vocab.json").write_text(json.dumps(vocabulary))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    return str(folder / "vocab.json"), str(folder / "merges.txt"), len(vocabulary)


def test_each_prompt_is_kept_and_continued_as_it_would_be_alone(generator):
    together = generator.generate(PROMPTS, max_new_tokens=5)
    alone = [generator.generate(prompt, max_new_tokens=5) for prompt in PROMPTS]
    assert together == alone
    for prompt, text in zip(PROMPTS, together):
        assert text.startswith(prompt)
    assert len(together[0]) > len(PROMPTS[0])


def test_a_stop_id_ends_the_continuation_before_it(generator):
    prompt_ids = generator.tokenize(["def parse("])[0]
    generated = generator.model.generate(np.array([prompt_ids]), max_new_tokens=3)
    first, second = (int(t) for t in generated[0, len(prompt_ids):len(prompt_ids) + 2])
    # The greedy model's first new token stops it at once: nothing is added.
    assert generator.generate("def parse(", max_new_tokens=6, stop_ids=(first,)) == "def parse("
    if second != first:  # stopping at the second token keeps the first
        expected = generator.detokenize([prompt_ids + [first]])[0]
        got = generator.generate("def parse(", max_new_tokens=6, stop_ids=(second,))
        assert got == "def parse(" + expected[len(generator.detokenize([prompt_ids])[0]):]


def test_an_empty_prompt_needs_a_first_token(message_tokenizer):
    model = kt.DecoderOnly(vocab_size=message_tokenizer.vocabulary_size(), num_layers=1,
                           d_model=16, num_heads=2, d_ff=32)  # no end_id, no start_id
    generator = kt.TextGenerator(model, message_tokenizer)
    assert generator.generate("def", max_new_tokens=2).startswith("def")
    with pytest.raises(ValueError, match="`prompts` holds an empty prompt"):
        generator.generate("", max_new_tokens=2)


def test_saved_generator_loads_in_safe_mode_with_the_same_texts(generator, tmp_path):
    expected = generator.generate(PROMPTS, max_new_tokens=4)
    path = str(tmp_path / "gpt.keras")
    generator.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded, kt.TextGenerator)
    assert loaded.generate(PROMPTS, max_new_tokens=4) == expected


def test_gpt2_byte_level_bpe_generates_and_survives_saving(byte_level_files, tmp_path):
    from keras_hub.tokenizers import GPT2Tokenizer

    vocabulary, merges, size = byte_level_files
    tokenizer = GPT2Tokenizer(vocabulary=vocabulary, merges=merges)
    model = kt.DecoderOnly.from_preset("gpt2_tiny", vocab_size=size)  # no end_id, like a
    generator = kt.TextGenerator(model, tokenizer)  # converted checkpoint: the tokenizer's
    assert generator.end_id == tokenizer.token_to_id("<|endoftext|>") == size - 1
    texts = generator.generate(["def parse", "x = 1 # é"], max_new_tokens=4)
    assert texts[0].startswith("def parse") and texts[1].startswith("x = 1 # é")
    assert generator.generate("", max_new_tokens=3) == generator.generate("", max_new_tokens=3)
    path = str(tmp_path / "bpe.keras")
    generator.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert loaded.generate(["def parse", "x = 1 # é"], max_new_tokens=4) == texts


@pytest.mark.parametrize(
    "call,words",
    [
        (lambda g: g.generate(7), ["`prompts`", "string or a list of strings"]),
        (lambda g: g.generate("a", max_new_tokens=0), ["`max_new_tokens`", ">= 1"]),
    ],
)
def test_bad_arguments_raise_naming_them(generator, call, words):
    with pytest.raises(ValueError) as info:
        call(generator)
    for word in words:
        assert word in str(info.value)


def test_a_translator_model_is_refused(message_tokenizer):
    model = kt.EncoderDecoder(vocab_size=message_tokenizer.vocabulary_size(), num_layers=1,
                              d_model=16, num_heads=2, d_ff=32)
    with pytest.raises(ValueError, match="`model` must be a keras_transformer DecoderOnly"):
        kt.TextGenerator(model, message_tokenizer)


def test_no_prompts_give_no_texts_as_translate_does(generator):
    assert generator.generate([], max_new_tokens=2) == [] and generator.generate((), max_new_tokens=2) == []
