"""Adapting a trained `Translator` to a program's own translations with LoRA.

A program's catalog often holds translations already: the part a translator
has done, or an earlier release's. They show the program's words (its
commands, its menu names, its tone) better than any general training data.
`adapt_translator` fine-tunes a translator on such pairs the way keras-hub
fine-tunes its backbones on one GPU: every weight of the model is frozen, and
low-rank adapters (`TransformerModel.enable_lora`, by default on the attention
projections) are trained on the pairs, cut and protected as `translate` sees
them (`keras_transformer.messages.training_pairs`). The adapters start at
zero, so training starts from the translator as it was; they are a fraction
of a percent of its weights, so a few minutes of CPU suffice.

`merged_translator(translator)` then gives the adapted translator with the
adapters merged into its kernels, a plain `Translator` to save and serve
(`translate`, `translate-po`) as any other; `translator.model.save_lora_weights`
keeps the adapters alone (kilobytes) for the same base translator.
"""

import dataclasses
import time

import keras
import numpy as np

from keras_transformer import validation
from keras_transformer.data.batches import TranslationBatches
from keras_transformer.messages.training_pairs import translation_pairs
from keras_transformer.training.time_limit import TimeLimit

_LONGEST_PIECE = 64
"""Tokens (end token included) of the longest source or translation piece trained on: a
catalog's pieces are sentences; a longer one is left out."""


@dataclasses.dataclass(frozen=True)
class Adaptation:
    """What `adapt_translator` did.

    Args:
        pairs: the `(message, translation)` pairs given (a plural entry gives
            two: its singular and its plural).
        pieces: the distinct protected pieces they gave, and that fit the
            model's `max_length` (what was trained on).
        epochs: passes made over the pieces.
        steps: optimizer steps taken.
        trainable_weights: numbers trained (the adapters').
        seconds: training time, compilation included.
        losses: the training loss of each epoch, first to last.

    Example:
    >>> Adaptation(pairs=2, pieces=2, epochs=3, steps=3, trainable_weights=512, seconds=4.0,
    ...            losses=(5.1, 4.2, 3.9)).summary()
    'adapted on 2 translations (2 pieces): 3 steps in 3 epochs, 4 s, 512 weights trained (LoRA), training loss 5.100 -> 3.900'
    """

    pairs: int
    pieces: int
    epochs: int
    steps: int
    trainable_weights: int
    seconds: float
    losses: tuple

    def summary(self):
        """One line: what was trained on, for how long, and the loss before and after."""
        return (f"adapted on {self.pairs:,} translations ({self.pieces:,} pieces): "
                f"{self.steps:,} steps in {self.epochs} epochs, {self.seconds:.0f} s, "
                f"{self.trainable_weights:,} weights trained (LoRA), training loss "
                f"{self.losses[0]:.3f} -> {self.losses[-1]:.3f}")


def adapt_translator(translator, pairs, rank=8, epochs=12, learning_rate=2e-3,
                     target_layer_names=None, tokens_per_batch=1024, seconds=None, seed=0,
                     verbose=0):
    """Fine-tunes `translator` in place on `(message, translation)` pairs with LoRA.

    The translator's model gets rank-`rank` adapters (`enable_lora`) and is
    compiled with Adam at a constant `learning_rate` and the model's own loss
    (the paper's label-smoothed cross-entropy), then trained for `epochs`
    passes over the pairs' pieces (or until `seconds` have passed).

    Args:
        translator: a `keras_transformer.tasks.Translator` whose model has no
            LoRA yet.
        pairs: `(English message, translation)` pairs, e.g. the translated
            entries of a catalog (`keras_transformer.data.read_catalog(path)`,
            then each message's `pairs()`).
        rank: the adapters' rank (>= 1).
        epochs: passes over the pieces (>= 1).
        learning_rate: Adam's learning rate, constant (> 0).
        target_layer_names: the layers to adapt; None for the model's
            `default_lora_layer_names()` (the attention projections).
        tokens_per_batch: padded source tokens per batch.
        seconds: a training time limit in seconds, or None for none.
        seed: shuffling seed.
        verbose: `fit`'s verbosity (0: silent).

    Returns:
        An `Adaptation`.

    Raises:
        ValueError: an argument is invalid, no pair fits the model, or LoRA is
            already enabled on the model.

    Example:
    >>> import keras_transformer as kt
    >>> pairs = [("Open the file", "Datei öffnen"), ("Close the file", "Datei schließen")]
    >>> tokenizer = kt.data.train_sentencepiece([t for p in pairs for t in p] * 10, 60,
    ...                                         placeholder_slots=True)
    >>> model = kt.EncoderDecoder.from_preset(
    ...     "transformer_tiny", vocab_size=tokenizer.vocabulary_size())
    >>> translator = kt.Translator(model, tokenizer, target_language="de")
    >>> result = adapt_translator(translator, pairs, rank=2, epochs=2)
    >>> result.pieces, result.epochs, result.trainable_weights > 0
    (2, 2, True)
    """
    from keras_transformer.tasks.translator import Translator  # the module imports this one

    if not isinstance(translator, Translator):
        raise ValueError("`translator` must be a keras_transformer Translator; received "
                         f"{type(translator).__name__}.")
    validation.check_int("epochs", epochs)
    validation.check_int("seed", seed, minimum=0)
    validation.check_int("tokens_per_batch", tokens_per_batch)
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)) or not (
            learning_rate > 0 and np.isfinite(learning_rate)):
        raise ValueError(f"`learning_rate` must be a number > 0; received {learning_rate!r}.")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                                or not seconds > 0):
        raise ValueError(f"`seconds` must be None or a number > 0; received {seconds!r}.")
    pairs = list(pairs)
    if not all(isinstance(pair, (tuple, list)) and len(pair) == 2
               and all(isinstance(text, str) for text in pair) for pair in pairs):
        raise ValueError("`pairs` must be (message, translation) pairs of strings.")
    pieces = translation_pairs(pairs)
    if not pieces:
        raise ValueError(f"`pairs` holds no translated text to adapt to ({len(pairs)} pairs, "
                         "none with both sides non-empty).")
    model = translator.model
    max_length = min(_LONGEST_PIECE, model.config.max_length)
    if tokens_per_batch < max_length:
        raise ValueError(f"`tokens_per_batch` ({tokens_per_batch}) must be at least "
                         f"{max_length}, the longest piece trained on.")
    try:
        data = TranslationBatches(pieces, translator.tokenizer,
                                  tokens_per_batch=tokens_per_batch, max_length=max_length,
                                  shuffle=True, seed=seed,
                                  drop_remainder=False)  # a catalog's few pieces: keep all
    except ValueError:  # the arguments are checked: no piece fits
        raise ValueError(f"`pairs`: none of their {len(pieces)} pieces is at most "
                         f"{max_length} tokens long (the longest trained on, end token "
                         "included); adapt on shorter messages.") from None
    names = model.default_lora_layer_names() if target_layer_names is None else target_layer_names
    model.enable_lora(rank, target_layer_names=names)  # refuses a bad rank, or a second time
    model.compile(optimizer=keras.optimizers.Adam(learning_rate))
    callbacks = [TimeLimit(seconds)] if seconds is not None else []
    start = time.perf_counter()
    history = model.fit(data, epochs=epochs, shuffle=False, callbacks=callbacks,
                        verbose=verbose)
    losses = tuple(float(loss) for loss in history.history["loss"])
    return Adaptation(
        pairs=len(pairs), pieces=len(data.sources), epochs=len(losses),
        steps=int(keras.ops.convert_to_numpy(model.optimizer.iterations)),
        trainable_weights=int(sum(np.prod(w.shape) for w in model.trainable_weights)),
        seconds=time.perf_counter() - start, losses=losses,
    )


def merged_translator(translator):
    """The adapted `translator` as a plain `Translator`: its model's adapters merged into the
    kernels, no LoRA, not compiled (a saved file holds no optimizer state).

    Args:
        translator: a `Translator` whose model has LoRA enabled (`adapt_translator`).

    Returns:
        A new `Translator` with the same tokenizer and languages.

    Raises:
        ValueError: the model has no LoRA adapters.

    Example:
    >>> import keras_transformer as kt
    >>> pairs = [("Open the file", "Datei öffnen")]
    >>> tokenizer = kt.data.train_sentencepiece([t for p in pairs for t in p] * 10, 50,
    ...                                         placeholder_slots=True)
    >>> model = kt.EncoderDecoder.from_preset(
    ...     "transformer_tiny", vocab_size=tokenizer.vocabulary_size())
    >>> translator = kt.Translator(model, tokenizer, target_language="de")
    >>> _ = adapt_translator(translator, pairs, rank=2, epochs=1)
    >>> served = merged_translator(translator)
    >>> served.model.trainable_weights == served.model.weights  # no LoRA: all of it trains
    True
    """
    return type(translator)(translator.model.merge_lora(), translator.tokenizer,
                            source_language=translator.source_language,
                            target_language=translator.target_language)
