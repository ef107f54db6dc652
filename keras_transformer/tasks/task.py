"""A model and its tokenizer as one Keras object: what `Translator` and `TextGenerator` share.

keras-hub's tasks (`CausalLM`, `Seq2SeqLM`) travel with their preprocessor;
ours travel with their tokenizer. The tokenizer is a keras-hub tokenizer layer
tracked by the task, so `task.save("x.keras")` writes its vocabulary into the
file as an asset and `keras.saving.load_model("x.keras")` (also with
`safe_mode=True`, under any backend) gives back model, weights and tokenizer.
"""

import keras
import numpy as np

from keras_transformer import validation
from keras_transformer.data.batches import token_ids
from keras_transformer.optional_dependencies import require


def _text(value):
    """A detokenized value as a Python string (keras-hub returns str, bytes or a tensor)."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.item()
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _check_unicode(name, text):
    """Refuses a string with lone surrogates: bytes that were never decoded (Python keeps
    undecodable command-line bytes so) reach no tokenizer as text."""
    found = validation.lone_surrogate(text)
    if found is not None:
        index, what = found
        code = f"U+{ord(text[index]):04X}"
        byte = f" ({what}, left undecoded)" if what != code else ""
        raise ValueError(
            f"{name} is not valid Unicode: character {index} is the lone surrogate "
            f"{code}{byte}; decode the text with its real encoding first."
        )


def texts_argument(name, texts):
    """`texts` as a list, and whether a single string was given.

    Args:
        name: the argument's name, for the error message.
        texts: a string or a list/tuple of strings.

    Raises:
        ValueError: `texts` is neither a string nor a list/tuple of strings,
            or a string holds lone surrogates (undecoded bytes).
    """
    if isinstance(texts, str):
        _check_unicode(f"`{name}`", texts)
        return [texts], True
    if isinstance(texts, (list, tuple)) and all(isinstance(t, str) for t in texts):
        for index, text in enumerate(texts):
            _check_unicode(f"`{name}[{index}]`", text)
        return list(texts), False
    raise ValueError(
        f"`{name}` must be a string or a list of strings; received {type(texts).__name__}"
        + (" holding non-strings." if isinstance(texts, (list, tuple)) else ".")
    )


class TextTask(keras.Model):
    """Base of the tasks: holds `model` and `tokenizer`, converts text to ids and back.

    Subclasses name the model family they accept in `model_class` and add
    their own arguments to `get_config`.

    Args:
        model: the trained model (an instance of `model_class`).
        tokenizer: a keras-hub tokenizer whose ids are the model's vocabulary.
        **kwargs: `keras.Model` arguments (`name`, ...).
    """

    model_class = None

    def __init__(self, model, tokenizer, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(model, self.model_class):
            raise ValueError(
                f"`model` must be a keras_transformer {self.model_class.__name__}; received "
                f"{type(model).__name__}."
            )
        if not (hasattr(tokenizer, "tokenize") and hasattr(tokenizer, "detokenize")
                and hasattr(tokenizer, "vocabulary_size")):
            raise ValueError(
                "`tokenizer` must be a keras-hub tokenizer (e.g. SentencePieceTokenizer, "
                f"GPT2Tokenizer, BytePairTokenizer); received {type(tokenizer).__name__}."
            )
        try:
            vocabulary = tokenizer.vocabulary_size()
        except ValueError:  # loading: the vocabulary is an asset, set after construction
            vocabulary = 0
        if vocabulary > model.config.vocab_size:
            raise ValueError(
                f"`tokenizer` has {vocabulary:,} tokens but the model's vocab_size is "
                f"{model.config.vocab_size:,}: its ids would not fit the embedding table."
            )
        self.model = model
        self.tokenizer = tokenizer
        self.built = True  # the model's weights exist from its construction

    def call(self, inputs, training=False):
        return self.model(inputs, training=training)

    def tokenize(self, texts):
        """Token ids of each text: a list of lists of ints (no special tokens).

        Args:
            texts: a list of strings.
        """
        return [ids.tolist() for ids in token_ids(texts, self.tokenizer)]

    def detokenize(self, rows):
        """The text of each row of ids.

        Args:
            rows: a list of lists of token ids.
        """
        return [_text(self.tokenizer.detokenize(np.asarray(row, dtype="int32"))) for row in rows]

    def token_id(self, token):
        """The id of a vocabulary entry, or None when the tokenizer lacks it.

        Args:
            token: a vocabulary entry (a piece or a special token such as `"<unk>"`).
        """
        try:
            found = int(self.tokenizer.token_to_id(token))
        except (KeyError, ValueError):
            return None
        return found if self.tokenizer.id_to_token(found) == token else None

    def get_config(self):
        config = super().get_config()
        config.update(
            model=keras.saving.serialize_keras_object(self.model),
            tokenizer=keras.saving.serialize_keras_object(self.tokenizer),
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        module = str(config["tokenizer"].get("module", "")) if isinstance(
            config["tokenizer"], dict) else ""
        if module.startswith("keras_hub"):  # its classes register when keras-hub is imported
            require("keras_hub", f"loading a {cls.__name__} (its keras-hub tokenizer)")
        for key in ("model", "tokenizer"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)
