"""`Translator`: an `EncoderDecoder` and its shared tokenizer, text in and text out."""

import math
import os
import re

import keras
import numpy as np

from keras_transformer import validation
from keras_transformer.generation.logits import NEG_INF
from keras_transformer.messages import placeholders
from keras_transformer.messages.segments import split_message
from keras_transformer.models.encoder_decoder import EncoderDecoder
from keras_transformer.tasks.task import TextTask
from keras_transformer.tasks.task import texts_argument
from keras_transformer.tasks.translation import Translation

REPAIRED = "placeholders repaired"
"""Note on a translation whose placeholders were fixed after decoding."""
EMPTY = "no translation: source kept"
"""Note on a piece the model translated to nothing."""
TOO_LONG = "too long for the model: source kept"
"""Note on a piece longer than `longest_piece` tokens: kept as it is rather than decoded
for minutes into nonsense."""
LONGEST_PIECE = 256
"""Tokens of the longest piece (its end token included) a model without a position table
translates: program messages are cut at their layout, so their pieces are sentences, far
shorter; a longer one (a whole file on one line) would take minutes and memory that
grows with its square."""
UNKNOWN_CHARACTERS = "characters outside the vocabulary left out"
"""Note on a translation whose source has characters the tokenizer cannot represent
(emoji, a script it never saw): the model saw an unknown token there."""
_UNKNOWN_SURFACE = "\u2047"  # "⁇": what SentencePiece writes for an unknown token
_MEMORY_SHARE = 0.5  # of the machine's memory that a decoding's beams may take
COVERAGE_BETA = 0.4
"""`translate`'s default coverage penalty weight (GNMT's beta). Without it, beam
search on a briefly trained translator prefers outputs that stop before the
source is translated (shorter than greedy search's); 0.4 is the smallest of 0,
0.2, 0.4 and 0.7 whose beams were not shorter than greedy search's on the demo
translator's validation split (`docs/benchmarks.md` has the figures)."""


def _select(source, candidates, count, format_flag="any"):
    """The `count` best candidates whose placeholders match `source`, repaired ones after.

    `candidates` are `(text, score)`, best first. A candidate that fails
    `placeholders.matches` is only used, repaired, when fewer than `count` match.
    Hypotheses that read the same once detokenized and restored (they differed
    only in slot symbols the source has no placeholder for) count once, at
    their best score.
    """
    best_score = candidates[0][1] if candidates else 0.0
    candidates = [(text, score) for text, score in candidates if text.strip()]
    matching, repaired = [], []
    for text, score in candidates:
        if placeholders.matches(source, text, format_flag):
            matching.append(Translation(text, score))
        else:
            repaired.append(Translation(placeholders.repair(source, text, format_flag), score,
                                        (REPAIRED,)))
    distinct = {}
    for option in matching + repaired:  # best first within each group: the first stays
        distinct.setdefault(option.text, option)
    chosen = list(distinct.values())[:count]
    if not chosen:  # every candidate was empty
        chosen = [Translation(source, best_score, (EMPTY,))]
    return chosen + [chosen[-1]] * (count - len(chosen))


def _format_flags_argument(format_flags, count):
    if format_flags is None:
        return ["any"] * count
    if not isinstance(format_flags, (list, tuple)) or len(format_flags) != count:
        raise ValueError(f"`format_flags` must be None or a list with one flag per text "
                         f"({count}); received {format_flags!r:.80}.")
    for flag in format_flags:
        if flag not in placeholders.FORMAT_FLAGS:
            raise ValueError(f"`format_flags` holds {flag!r}; each must be one of "
                             f"{', '.join(map(repr, placeholders.FORMAT_FLAGS))}.")
    return list(format_flags)


def _without_unknown(text, source):
    """The text without the unknown-token marks the source lacks, each with the space it brought."""
    if _UNKNOWN_SURFACE in source or _UNKNOWN_SURFACE not in text:
        return text
    return re.sub(f" *{_UNKNOWN_SURFACE}[ {_UNKNOWN_SURFACE}]*", " ", text).strip(" ")


def _until_end(ids, config):
    """A generated row's tokens before its end id, without padding."""
    if config.end_id in ids:
        ids = ids[:ids.index(config.end_id)]
    return [t for t in ids if t != config.pad_id]


def _combine(source, layout, pieces, format_flag="any"):
    """One translation of a whole text from one translation of each of its pieces.

    Pieces that each keep their placeholders can still form a new one where
    they are joined (`"50%"` and `"fertig"` across two spaces read `%  f`), so
    the whole text is checked again.
    """
    notes = tuple(dict.fromkeys(note for piece in pieces for note in piece.notes))
    text = layout.rebuild([piece.text for piece in pieces])
    if not placeholders.matches(source, text, format_flag):
        text = placeholders.repair(source, text, format_flag)
        notes = tuple(dict.fromkeys(notes + (REPAIRED,)))
    return Translation(text, float(sum(piece.score for piece in pieces)), notes)


@keras.saving.register_keras_serializable(package="keras_transformer")
class Translator(TextTask):
    """A trained `EncoderDecoder` with its shared tokenizer: translates strings.

    `translate` takes what a program or a catalog holds and returns what can
    go back into it. Each text is cut at its layout (outer whitespace,
    newlines, tabs, column gaps: `keras_transformer.messages.segments`), each
    piece is translated with its placeholders (`%s`, `%(name)s`, `{0}`,
    `$HOME`...) replaced by slot symbols when the tokenizer has them
    (`keras_transformer.messages.placeholders`), and the layout is rebuilt
    byte for byte. Whatever the model writes, a returned translation has the
    source's placeholders, in number and, where the argument order matters,
    in order: the best beam-search hypothesis that has them is taken, else the
    best one is repaired and its `Translation.notes` say so. Identical pieces
    are translated once; pieces are batched by length.

    Saved with `save("translator.keras")`, the file holds model, weights and
    the tokenizer's vocabulary; `keras.saving.load_model` returns a
    `Translator` under any backend.

    Args:
        model: a trained `EncoderDecoder` whose `start_id` and `end_id` are set.
        tokenizer: the shared keras-hub tokenizer it was trained with (e.g.
            from `keras_transformer.data.train_sentencepiece`).
        source_language: language code of the inputs (metadata, e.g. "en").
        target_language: language code of the outputs (e.g. "de"), or None
            when unknown; `translate-po` checks it against a catalog's.
        **kwargs: `keras.Model` arguments (`name`, ...).

    Example:
    >>> import keras_transformer as kt
    >>> tokenizer = kt.data.train_sentencepiece(["open the file", "Datei öffnen"] * 20, 40)
    >>> model = kt.EncoderDecoder.from_preset(
    ...     "transformer_tiny", vocab_size=tokenizer.vocabulary_size())
    >>> translator = kt.Translator(model, tokenizer, target_language="de")
    >>> text = translator.translate("  open %s\\n")  # untrained: any words, same layout
    >>> text.startswith("  ") and text.endswith("\\n") and "%s" in text
    True
    """

    model_class = EncoderDecoder

    def __init__(self, model, tokenizer, source_language="en", target_language=None, **kwargs):
        super().__init__(model, tokenizer, **kwargs)
        for name, value in (("source_language", source_language),
                            ("target_language", target_language)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(
                    f"`{name}` must be a language code such as 'de' or None; received "
                    f"{value!r}."
                )
        config = model.config
        for name, why in (("pad_id", "padding of short sources"),
                          ("start_id", "the decoder's first input"),
                          ("end_id", "the token that ends a source and a translation")):
            if getattr(config, name) is None:
                raise ValueError(
                    f"`model` needs `{name}` ({why}); build the EncoderDecoder with it."
                )
        self.source_language = source_language
        self.target_language = target_language

    @property
    def longest_piece(self):
        """Tokens of the longest piece `translate` decodes (its end token included); a longer
        one is kept with the note `TOO_LONG`. With a learned position table, the source and
        its translation (the source + 50 tokens) must fit its `max_length` rows; otherwise
        `LONGEST_PIECE`."""
        config = self.model.config
        if config.position == "learned":
            return config.max_length - 51
        return LONGEST_PIECE

    @property
    def protects_placeholders(self):
        """Whether placeholders reach the model as slot symbols: the tokenizer has them
        (`train_sentencepiece(..., placeholder_slots=True)`). Without them the
        placeholders are still checked and repaired after decoding."""
        return all(self.token_id(symbol) is not None for symbol in placeholders.SLOT_SYMBOLS)

    def translate(self, texts, beam_size=4, alpha=0.6, beta=COVERAGE_BETA, batch_size=64,
                  progress="auto"):
        """Translations of a string (a string) or a list of strings (a list).

        Args:
            texts: a string or a list of strings.
            beam_size: beam width, or None for greedy search (faster; no
                score).
            alpha: GNMT length penalty exponent (beam search).
            beta: GNMT coverage penalty weight (beam search; 0: off), see
                `EncoderDecoder.generate`. Like `alpha`, unused with
                `beam_size=None`.
            batch_size: pieces decoded together.
            progress: True for a progress bar, False for none, "auto" for
                one when there is more than one batch.

        Returns:
            The best translation of each text: a string for a string, a list
            of strings for a list. `translations` also returns scores, the
            n best and what was repaired.

        Example:
        >>> import keras_transformer as kt
        >>> tokenizer = kt.data.train_sentencepiece(["open the file"] * 20, 30)
        >>> model = kt.EncoderDecoder.from_preset(
        ...     "transformer_tiny", vocab_size=tokenizer.vocabulary_size())
        >>> texts = kt.Translator(model, tokenizer).translate(["Quit", "  Open %s"])
        >>> len(texts), texts[1][:2], "%s" in texts[1]
        (2, '  ', True)
        """
        texts, single = texts_argument("texts", texts)
        best = [found[0].text for found in self.translations(
            texts, beam_size=beam_size, alpha=alpha, beta=beta, batch_size=batch_size,
            progress=progress)]
        return best[0] if single else best

    def translations(self, texts, beam_size=4, num_return=1, alpha=0.6, beta=COVERAGE_BETA,
                     batch_size=64, progress="auto", format_flags=None):
        """The `num_return` best translations of each text, as `Translation`s.

        Args:
            texts: a string or a list of strings.
            beam_size: beam width, or None for greedy search (one
                translation per text, whose score is NaN: greedy search
                does not score).
            num_return: translations per text, best first (<= beam_size;
                1 with greedy search).
            alpha: GNMT length penalty exponent (beam search).
            beta: GNMT coverage penalty weight (beam search; 0: off).
            batch_size: pieces decoded together.
            progress: True, False or "auto" (a bar when there is more than one batch).
            format_flags: the format language of each text, as gettext flags it
                (`"c-format"`, `"python-format"`, `"python-brace-format"`,
                `"sh-format"`, `"none"`; see `keras_transformer.messages.placeholders`):
                a list as long as `texts`, or None for `"any"` (every kind of
                placeholder) for all.

        Returns:
            A list with, per text, a list of `num_return` `Translation`s
            (text, score summed over the text's pieces, notes). A text of
            several pieces combines the i-th translation of each piece. The
            hypotheses that keep their placeholders come first, by score, then
            repaired ones; when the search finds fewer than `num_return`
            distinct ones, the last is repeated. A piece longer than
            `longest_piece` tokens is kept untranslated with score `-inf`
            and the note `TOO_LONG`; characters the tokenizer cannot represent
            are left out, with the note `UNKNOWN_CHARACTERS`.

        Raises:
            ValueError: an argument out of range; `beam_size` wider than the
                vocabulary, or whose beams would need more than half the
                machine's memory (the message gives the widest that fits).

        Example:
        >>> import keras_transformer as kt
        >>> tokenizer = kt.data.train_sentencepiece(["open the file"] * 20, 30)
        >>> model = kt.EncoderDecoder.from_preset(
        ...     "transformer_tiny", vocab_size=tokenizer.vocabulary_size())
        >>> best = kt.Translator(model, tokenizer).translations(["Open %s"], num_return=2)
        >>> len(best[0]), "%s" in best[0][0].text, best[0][0].score >= best[0][1].score
        (2, True, True)
        """
        texts, _ = texts_argument("texts", texts)
        beam_size = validation.check_int("beam_size", beam_size, allow_none=True)
        num_return = validation.check_int("num_return", num_return)
        if num_return > (beam_size or 1):
            raise ValueError(
                f"`num_return` must be <= beam_size={beam_size} (1 for greedy search); "
                f"received {num_return}."
            )
        batch_size = validation.check_int("batch_size", batch_size)
        if progress not in (True, False, "auto"):
            raise ValueError(f"`progress` must be True, False or 'auto'; received {progress!r}.")
        flags = _format_flags_argument(format_flags, len(texts))
        vocabulary = self.model.config.vocab_size
        if beam_size is not None and beam_size > vocabulary:
            raise ValueError(f"`beam_size` must be at most the vocabulary size, {vocabulary} "
                             f"(a wider beam has nothing to hold); received {beam_size}.")
        layouts = [split_message(text) for text in texts]
        keys = list(dict.fromkeys((piece, flag) for layout, flag in zip(layouts, flags)
                                  for piece in layout.pieces))
        # What `generate` is called with: greedy search takes no length or coverage weights.
        search = dict(beam_size=None) if beam_size is None else dict(
            beam_size=beam_size, alpha=alpha, beta=beta)
        found = self._translate_pieces(keys, search, num_return, batch_size, progress)
        return [[_combine(text, layout, [found[piece, flag][i] for piece in layout.pieces], flag)
                 for i in range(num_return)]
                for text, layout, flag in zip(texts, layouts, flags)]

    def _unknown_characters(self, pieces, sources):
        """For each piece, the characters its tokenization turned into the unknown token."""
        unknown_id = self.token_id("<unk>")
        suspects = [i for i, ids in enumerate(sources) if unknown_id is not None and unknown_id in ids]
        characters = sorted({c for i in suspects for c in pieces[i] if not c.isspace()})
        ids = dict(zip(characters, self.tokenize(characters))) if characters else {}
        unknown = {c for c in characters if unknown_id in ids[c]}
        return [sorted(set(pieces[i]) & unknown, key=pieces[i].index) if i in suspects else []
                for i in range(len(pieces))]

    def _check_memory(self, beam_size, rows, length):
        """Refuses a beam whose decoding state would take more than half the machine's memory."""
        if not beam_size:
            return
        config = self.model.config
        # Per beam: each decoder layer's self-attention cache (keys and values over the
        # target) and cross-attention keys and values (over the source), and the scores
        # of the whole vocabulary, all float32.
        per_beam = 4 * (config.num_decoder_layers * 2 * config.d_model * (2 * length + 50)
                        + 3 * config.vocab_size)
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (AttributeError, ValueError, OSError):  # no sysconf: nothing to compare with
            return
        allowed = memory * _MEMORY_SHARE
        if rows * beam_size * per_beam > allowed:
            widest = max(1, int(allowed // (rows * per_beam)))
            raise ValueError(
                f"`beam_size` {beam_size} would need about "
                f"{rows * beam_size * per_beam / 2**30:.0f} GiB for {rows} pieces of up to "
                f"{length} tokens decoded together, more than half of this machine's "
                f"{memory / 2**30:.0f} GiB; use a beam_size of at most {widest}, or a smaller "
                "batch_size.")

    def _translate_pieces(self, keys, search, num_return, batch_size, progress):
        """`{(piece, format flag): [Translation] * num_return}` for pieces without layout
        whitespace."""
        pieces = [piece for piece, _ in keys]
        protects = self.protects_placeholders
        protected = [placeholders.protect(piece, flag) if protects
                     else placeholders.Protected(piece, ()) for piece, flag in keys]
        config = self.model.config
        sources = [ids + [config.end_id] for ids in self.tokenize([p.text for p in protected])]
        unknown = self._unknown_characters(pieces, sources)
        limit = self.longest_piece
        found = {}
        fits = []
        for i, source in enumerate(sources):
            if len(source) > limit:
                found[keys[i]] = [Translation(pieces[i], -math.inf, (TOO_LONG,))] * num_return
            else:
                fits.append(i)
        order = sorted(fits, key=lambda i: len(sources[i]))
        batch_size = min(batch_size, max(1, len(order)))  # one short call: no filler rows
        if order:
            self._check_memory(search["beam_size"], batch_size, len(sources[order[-1]]))
        batches = [order[begin:begin + batch_size] for begin in range(0, len(order), batch_size)]
        bar = None
        if progress is True or (progress == "auto" and len(batches) > 1):
            bar = keras.utils.Progbar(len(order), unit_name="piece")
        for batch in batches:
            candidates = self._decode([sources[i] for i in batch], search, batch_size)
            for i, hypotheses in zip(batch, candidates):
                restored = [(placeholders.restore(text, protected[i].slots), score)
                            for text, score in hypotheses]
                if unknown[i]:
                    restored = [(_without_unknown(text, pieces[i]), score) for text, score in restored]
                chosen = _select(pieces[i], restored, num_return, keys[i][1])
                if unknown[i]:
                    note = f"{UNKNOWN_CHARACTERS}: {' '.join(unknown[i])}"
                    chosen = [Translation(t.text, t.score, t.notes + (note,)) for t in chosen]
                found[keys[i]] = chosen
            if bar is not None:
                bar.add(len(batch))
        return found

    def _decode(self, sources, search, batch_size):
        """Decodes id lists with `generate(**search)`; per source, `(text, score)` of every
        finished beam (beam search) or of the greedy output (score NaN)."""
        config = self.model.config
        width = max(len(source) for source in sources)
        batch = np.full((batch_size, width), config.pad_id, dtype="int32")
        for row, source in enumerate(sources):
            batch[row, :len(source)] = source
        batch[len(sources):, 0] = config.end_id  # filler rows keep one compiled batch size
        if search["beam_size"] is None:
            rows = [_until_end(ids.tolist(), config) for ids in self.model.generate(
                batch, **search)[:len(sources)]]
            return [[(text, math.nan)] for text in self.detokenize(rows)]
        best = self.model.generate(batch, num_return=search["beam_size"], **search)
        results = []
        for row in range(len(sources)):
            rows, scores = [], []
            for ids, score, length in zip(best.ids[row], best.scores[row], best.lengths[row]):
                if score <= NEG_INF / 2:  # a slot no hypothesis filled
                    continue
                rows.append(_until_end(ids[:int(length)].tolist(), config))
                scores.append(float(score))
            results.append(list(zip(self.detokenize(rows), scores)))
        return results

    def get_config(self):
        config = super().get_config()
        config.update(source_language=self.source_language,
                      target_language=self.target_language)
        return config
