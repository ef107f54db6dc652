"""Subword vocabularies: SentencePiece trained on the training split.

A shared vocabulary (one table for source and target, as the paper's shared
BPE) is trained with SentencePiece and used through keras-hub's
`SentencePieceTokenizer`, a Keras layer that runs inside `tf.data`. The ids
follow keras-hub's layout (`keras_transformer.special_tokens`), which is what
`EncoderDecoder`'s `pad_id`, `start_id` and `end_id` default to: padding 0,
unknown 1, start 2, end 3.

This module needs TensorFlow (keras-hub's tokenizers are TensorFlow ops); it
imports it only when called, so models still build and train without it.
"""

import io
import re
import os

from keras_transformer import validation
from keras_transformer.optional_dependencies import require
from keras_transformer.special_tokens import END_ID  # noqa: F401 (re-exported)
from keras_transformer.special_tokens import PAD_ID
from keras_transformer.special_tokens import START_ID
from keras_transformer.special_tokens import UNK_ID

TOKENIZER_FILENAME = "tokenizer.spm"
"""File name `save_tokenizer` writes the vocabulary to inside a folder."""


def train_sentencepiece(texts, vocab_size, model_type="unigram", keep_whitespace=False,
                        placeholder_slots=False):
    """Trains a SentencePiece vocabulary on `texts` and returns its tokenizer.

    Args:
        texts: an iterable of strings (e.g. the training split's sources and
            targets, for a shared vocabulary).
        vocab_size: number of pieces, special tokens included (the model's
            `vocab_size`; at least the special, slot and byte pieces asked for, + 1).
        model_type: `"unigram"` (SentencePiece's default) or `"bpe"`.
        keep_whitespace: False normalizes text with NFKC and collapses runs of
            spaces (natural language); True keeps every character as is,
            including indentation and newlines (source code), and falls back to
            bytes for characters outside the vocabulary (its 256 byte pieces
            count in `vocab_size`).
        placeholder_slots: True adds the 32 slot symbols of
            `keras_transformer.messages.placeholders.SLOT_SYMBOLS` as single
            pieces, so a `Translator` can replace a message's `%s`, `{0}` or
            `$HOME` by a symbol the model learns to copy (train on pairs
            protected with `placeholders.protect_pair`).

    Returns:
        A `keras_hub.tokenizers.SentencePieceTokenizer` whose ids follow the
        table above. Save it with `save_tokenizer`.

    Example:
    >>> words = ["the cat sat", "the dog ran", "a cat ran"] * 20
    >>> tokenizer = train_sentencepiece(words, vocab_size=20)
    >>> tokenizer.vocabulary_size() <= 20  # a tiny corpus may not fill it
    True
    >>> tokenizer.detokenize(tokenizer.tokenize("the cat ran"))
    'the cat ran'

    """
    validation.check_int("vocab_size", vocab_size, minimum=1)
    validation.check_choice("model_type", model_type, ("unigram", "bpe"))
    validation.check_bool("keep_whitespace", keep_whitespace)
    validation.check_bool("placeholder_slots", placeholder_slots)

    options = dict(
        model_type=model_type,
        vocab_size=vocab_size,
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=START_ID,
        eos_id=END_ID,
        hard_vocab_limit=False,  # a small corpus may not fill the vocabulary
        minloglevel=2,
    )
    if keep_whitespace:
        options.update(
            normalization_rule_name="identity",
            remove_extra_whitespaces=False,
            allow_whitespace_only_pieces=True,
            split_by_whitespace=False,
            byte_fallback=True,
            user_defined_symbols=["\n", "\t"],
            max_sentence_length=1 << 16,
        )
    symbols = list(options.pop("user_defined_symbols", []))
    if placeholder_slots:
        from keras_transformer.messages.placeholders import SLOT_SYMBOLS

        symbols += SLOT_SYMBOLS
    if symbols:
        options["user_defined_symbols"] = symbols
    reserved = 4 + len(symbols) + (256 if options.get("byte_fallback") else 0)  # + specials
    if vocab_size <= reserved:
        raise ValueError(
            f"`vocab_size` must be more than the {reserved} pieces these options reserve "
            "(4 special ids" + (f", {len(symbols)} symbols" if symbols else "")
            + (", 256 bytes for keep_whitespace" if options.get("byte_fallback") else "")
            + f"); received {vocab_size}."
        )
    sentencepiece = require("sentencepiece", "train_sentencepiece")
    tokenizers = require("keras_hub.tokenizers", "train_sentencepiece")
    writer = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(list(texts)), model_writer=writer, **options
        )
    except RuntimeError as error:  # SentencePiece's own check, e.g. too few pieces
        reason = " ".join(str(error).split()).split(") ", 1)[-1]
        floor = re.search(r"smaller than required_chars\. \d+ vs (\d+)", reason)
        if floor:  # every character of the texts needs a piece of its own
            needed = int(floor.group(1))
            raise ValueError(
                f"`vocab_size` must be at least {needed} for these texts: each of their "
                f"{needed - reserved} distinct characters needs a piece, beside the {reserved} "
                f"reserved ones; received {vocab_size}."
            ) from error
        raise ValueError(
            f"SentencePiece cannot train a vocabulary of vocab_size={vocab_size} on these "
            f"texts: {reason}"
        ) from error
    return tokenizers.SentencePieceTokenizer(proto=writer.getvalue())


def save_tokenizer(tokenizer, folder):
    """Writes the tokenizer's SentencePiece model to `folder/tokenizer.spm`.

    Saved next to a model, it is all a user needs to turn text into the
    model's ids again (`load_tokenizer`).

    Args:
        tokenizer: a keras-hub `SentencePieceTokenizer` (e.g. from
            `train_sentencepiece`).
        folder: the folder to write into (created if missing).

    Returns:
        The path written.

    Example:
    >>> import tempfile
    >>> tokenizer = train_sentencepiece(["open the file", "close it"] * 10, 16)
    >>> folder = tempfile.mkdtemp()
    >>> save_tokenizer(tokenizer, folder).endswith("tokenizer.spm")
    True
    >>> load_tokenizer(folder).tokenize("open it").tolist() == (
    ...     tokenizer.tokenize("open it").tolist())
    True
    """
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, TOKENIZER_FILENAME)
    with open(path, "wb") as f:
        f.write(tokenizer.proto)
    return path


def load_tokenizer(path):
    """A `SentencePieceTokenizer` from a `.spm` file or a folder holding `tokenizer.spm`.

    Args:
        path: the `.spm` file `save_tokenizer` wrote, or its folder.

    Returns:
        A keras-hub `SentencePieceTokenizer`.

    Raises:
        FileNotFoundError: no SentencePiece model at `path`.

    Example:
    >>> load_tokenizer("/nonexistent")
    Traceback (most recent call last):
    ...
    FileNotFoundError: No SentencePiece model at '/nonexistent'.
    """
    tokenizers = require("keras_hub.tokenizers", "load_tokenizer")
    if os.path.isdir(path):
        path = os.path.join(path, TOKENIZER_FILENAME)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No SentencePiece model at {path!r}.")
    with open(path, "rb") as f:
        return tokenizers.SentencePieceTokenizer(proto=f.read())
