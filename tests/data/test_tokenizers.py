"""SentencePiece vocabularies: special ids, whitespace handling, save/load."""

import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer.data import END_ID
from keras_transformer.data import PAD_ID
from keras_transformer.data import START_ID
from keras_transformer.data import UNK_ID

pytest.importorskip("tensorflow")

SENTENCES = [
    "Open the file", "Close the file", "Save the file as", "Could not open %s",
    "Datei öffnen", "Datei schließen", "Datei speichern unter", "Konnte %s nicht öffnen",
] * 10
CODE = [
    "def f(x):\n    if x:\n        return 1\n\treturn  2\n",
    "class A:\n    def g(self):\n        pass\n",
] * 20


def as_list(ids):
    return np.asarray(ids).tolist()


@pytest.fixture(scope="module")
def tokenizer():
    return kt.data.train_sentencepiece(SENTENCES, vocab_size=64)


def test_special_ids_are_the_models_defaults(tokenizer):
    assert [tokenizer.id_to_token(i) for i in (PAD_ID, UNK_ID, START_ID, END_ID)] == [
        "<pad>", "<unk>", "<s>", "</s>"
    ]
    ids = [i for sentence in SENTENCES for i in as_list(tokenizer.tokenize(sentence))]
    assert min(ids) > END_ID  # plain text never produces a special id
    assert kt.EncoderDecoder(vocab_size=64, num_layers=1, d_model=8, num_heads=2,
                             d_ff=8).config.pad_id == PAD_ID


def test_natural_text_round_trips(tokenizer):
    for sentence in ("Open the file", "Datei öffnen"):
        assert tokenizer.detokenize(tokenizer.tokenize(sentence)) == sentence


def test_keep_whitespace_round_trips_code_exactly():
    code_tokenizer = kt.data.train_sentencepiece(CODE, vocab_size=300, keep_whitespace=True)
    source = "class B:\n    def h(self, y):\n        return  y\n\tpass\n"
    assert code_tokenizer.detokenize(code_tokenizer.tokenize(source)) == source
    plain = kt.data.train_sentencepiece(CODE, vocab_size=60)
    assert plain.detokenize(plain.tokenize(source)) != source  # whitespace collapsed


def test_save_and_load_give_the_same_ids(tokenizer, tmp_path):
    path = kt.data.save_tokenizer(tokenizer, str(tmp_path))
    for location in (path, str(tmp_path)):
        loaded = kt.data.load_tokenizer(location)
        assert as_list(loaded.tokenize("Save the file as")) == as_list(
            tokenizer.tokenize("Save the file as")
        )
    with pytest.raises(FileNotFoundError, match="SentencePiece"):
        kt.data.load_tokenizer(str(tmp_path / "missing"))


@pytest.mark.parametrize("arguments, name", [
    (dict(vocab_size=4), "vocab_size"),
    (dict(vocab_size=64, model_type="word"), "model_type"),
    (dict(vocab_size=64, keep_whitespace=1), "keep_whitespace"),
])
def test_arguments_are_validated(arguments, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        kt.data.train_sentencepiece(SENTENCES, **arguments)


@pytest.mark.parametrize("keep_whitespace", [False, True])
def test_a_vocabulary_below_the_texts_characters_names_the_real_floor(keep_whitespace):
    texts = ["open the file"] * 10  # o p e n t h f i l and the word boundary: 10 characters
    reserved = 4 + (2 + 256 if keep_whitespace else 0)  # specials, \n \t and the bytes
    floor = reserved + 10
    with pytest.raises(ValueError, match=rf"`vocab_size` must be at least {floor} for these "
                                         rf"texts: each of their 10 distinct characters needs "
                                         rf"a piece, beside the {reserved} reserved ones; "
                                         rf"received {floor - 2}\."):
        kt.data.train_sentencepiece(texts, vocab_size=floor - 2,
                                    keep_whitespace=keep_whitespace)
    tokenizer = kt.data.train_sentencepiece(texts, vocab_size=floor,
                                            keep_whitespace=keep_whitespace)
    assert tokenizer.vocabulary_size() == floor
