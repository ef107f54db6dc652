"""`TextGenerator`: a `DecoderOnly` and its tokenizer, a prompt in and text out."""

import keras
import numpy as np

from keras_transformer import validation
from keras_transformer.generation.settings import check_stop_ids
from keras_transformer.models.decoder_only import DecoderOnly
from keras_transformer.tasks.task import TextTask
from keras_transformer.tasks.task import texts_argument


@keras.saving.register_keras_serializable(package="keras_transformer")
class TextGenerator(TextTask):
    """A trained `DecoderOnly` with its tokenizer: continues text prompts.

    Works with our SentencePiece vocabularies
    (`keras_transformer.data.train_sentencepiece`) and with GPT-2's
    byte-level BPE (keras-hub's `GPT2Tokenizer`, or a `BytePairTokenizer`
    built from a `vocab.json` and `merges.txt`), so a converted GPT-2
    checkpoint generates text. Prompts of different lengths go in one call;
    each keeps its own text exactly and gets at most `max_new_tokens` new
    tokens, ending early at the end id (the model's `end_id`, else the
    tokenizer's end token: GPT-2's `<|endoftext|>`).
    Saved with `save("gpt.keras")`, the file holds model, weights and the
    tokenizer's vocabulary; `keras.saving.load_model` returns a
    `TextGenerator` under any backend.

    Args:
        model: a trained `DecoderOnly`.
        tokenizer: the keras-hub tokenizer whose ids the model was trained on.
        **kwargs: `keras.Model` arguments (`name`, ...).

    Example:
    >>> import keras_transformer as kt
    >>> tokenizer = kt.data.train_sentencepiece(["def parse(text):", "return x"] * 20, 40)
    >>> model = kt.DecoderOnly.from_preset(
    ...     "gpt2_tiny", vocab_size=tokenizer.vocabulary_size())
    >>> generator = kt.TextGenerator(model, tokenizer)
    >>> text = generator.generate("def parse(", max_new_tokens=4)  # untrained: any tokens
    >>> text.startswith("def parse(")
    True
    """

    model_class = DecoderOnly

    def generate(self, prompts, max_new_tokens=64, sampler=None, stop_ids=None):
        """Each prompt followed by its continuation.

        Args:
            prompts: a string or a list of strings. An empty prompt starts
                from the end id (GPT-2's convention for "a new document"),
                else the model's `start_id`.
            max_new_tokens: tokens to add to each prompt at most.
            sampler: a `keras_transformer.generation.Sampler` (default greedy).
            stop_ids: token ids that end a continuation (not included in the
                text); default `(end_id,)` when there is an end id.

        Returns:
            A string for a string, a list of strings for a list: the prompt,
            unchanged, followed by the generated text.

        Example:
        >>> import keras_transformer as kt
        >>> tokenizer = kt.data.train_sentencepiece(["import os", "def f():"] * 20, 30)
        >>> model = kt.DecoderOnly.from_preset(
        ...     "gpt2_tiny", vocab_size=tokenizer.vocabulary_size())
        >>> texts = kt.TextGenerator(model, tokenizer).generate(["import", "def f"], 3)
        >>> [text[:len(prompt)] for text, prompt in zip(texts, ["import", "def f"])]
        ['import', 'def f']
        """
        prompts, single = texts_argument("prompts", prompts)
        max_new_tokens = validation.check_int("max_new_tokens", max_new_tokens)
        if stop_ids is None:
            stop_ids = () if self.end_id is None else (self.end_id,)
        stop_ids = check_stop_ids(stop_ids, self.model.config.vocab_size)
        if not prompts:  # as Translator.translate([]): nothing asked, nothing to generate
            return []
        rows = [self._prompt_ids(ids) for ids in self.tokenize(prompts)]
        lengths = [len(row) for row in rows]
        batch = np.zeros((len(rows), max(lengths)), dtype="int32")
        for i, row in enumerate(rows):
            batch[i, :len(row)] = row
        mask = np.arange(batch.shape[1]) < np.array(lengths)[:, None]  # (batch, P)
        generated = self.model.generate(batch, max_new_tokens=max_new_tokens, sampler=sampler,
                                        stop_ids=stop_ids, padding_mask=mask)
        texts = []
        for prompt, row, length, ids in zip(prompts, rows, lengths, generated):
            new = ids[length:length + max_new_tokens].tolist()
            for i, token in enumerate(new):
                if token in stop_ids:
                    new = new[:i]
                    break
            texts.append(self._continue(prompt, row if prompt else [], new))
        return texts[0] if single else texts

    @property
    def end_id(self):
        """The id that ends a text: the model's `end_id`, else the tokenizer's end token
        (a converted GPT-2 checkpoint with keras-hub's `GPT2Tokenizer`: `<|endoftext|>`)."""
        if self.model.config.end_id is not None:
            return self.model.config.end_id
        return getattr(self.tokenizer, "end_token_id", None)

    def _prompt_ids(self, ids):
        """The prompt's ids, or one start token for an empty prompt."""
        if ids:
            return ids
        first = self.end_id
        if first is None:
            first = self.model.config.start_id
        if first is None:
            raise ValueError(
                "`prompts` holds an empty prompt, which needs a first token: build the model "
                "with `end_id` or `start_id`, or give every prompt some text."
            )
        return [first]

    def _continue(self, prompt, prompt_ids, new_ids):
        """`prompt` followed by the text of `new_ids` as the tokenizer joins it to the prompt.

        Detokenizing the whole row keeps the space a SentencePiece or BPE token
        carries at a word start; the prompt's own text is then put back as given.
        """
        if not new_ids:
            return prompt
        whole, alone = self.detokenize([prompt_ids + new_ids, prompt_ids])
        if prompt_ids and whole.startswith(alone):
            return prompt + whole[len(alone):]
        return prompt + self.detokenize([new_ids])[0]
