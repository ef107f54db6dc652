"""A catalogue of malformed inputs and arguments (one parametrized test).

Every case must raise at the call that caused it, with a message that names
the argument and states the expectation; nothing may be silently clipped,
cast or broadcast. Inputs are eager NumPy arrays, so every backend sees
concrete values.
"""

import re

import numpy as np
import pytest

import keras_transformer as kt
from keras_transformer import layers
from keras_transformer.generation import Sampler
from keras_transformer.messages import PluralRule
from keras_transformer.messages import PoSyntaxError
from keras_transformer.messages import find_placeholders
from keras_transformer.messages import parse_po
from keras_transformer.messages import translate_catalog
from keras_transformer.messages import write_catalog

VOCAB, BATCH, LENGTH, WIDTH = 32, 2, 5, 8
SMALL = dict(vocab_size=VOCAB, num_layers=1, d_model=WIDTH, num_heads=2, d_ff=16,
             max_length=LENGTH + 1, dropout=0.0)


def gpt(**overrides):
    return kt.DecoderOnly(**dict(SMALL, **overrides))


def transformer(**overrides):
    return kt.EncoderDecoder(**dict(SMALL, **overrides))


def ids(shape=(BATCH, LENGTH), value=1, dtype="int32"):
    return np.full(shape, value, dtype)


def hidden(shape=(BATCH, LENGTH, WIDTH)):
    return np.ones(shape, "float32")


def prompt(value=1, dtype="int32"):
    return np.full((1, 2), value, dtype)


def _compiled(model):
    model.compile()
    return model


_HEADER = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'


class _NoTranslator:
    """Stands for a translator where the catalog is refused before any translation."""

    target_language = "de"

    def translations(self, *args, **kwargs):
        raise AssertionError("translations was called")


def _text_generator():
    tokenizer = kt.data.train_sentencepiece(["open the file"] * 20, 30)
    return kt.TextGenerator(gpt(vocab_size=tokenizer.vocabulary_size()), tokenizer)


def pair(source=None, target=None):
    return {"source": ids() if source is None else source,
            "target": ids() if target is None else target}


# (id, callable, exception type, regex naming the argument and the expectation)
CASES = [
    # --- token ids -----------------------------------------------------------
    ("float-ids", lambda: gpt()(ids(dtype="float32")), ValueError,
     r"`ids` must hold integer token ids; received dtype float32"),
    ("bool-ids", lambda: gpt()(ids(dtype="bool")), ValueError,
     r"`ids` must hold integer token ids; received dtype bool"),
    ("negative-ids", lambda: gpt()(np.array([[1, -2, 3]], "int32")), ValueError,
     r"`ids` must lie in \[0, vocab_size=32\); received ids from -2 to 3"),
    ("ids-equal-vocab", lambda: gpt()(np.array([[1, VOCAB, 3]], "int32")), ValueError,
     r"`ids` must lie in \[0, vocab_size=32\); received ids from 1 to 32"),
    ("ids-far-above-vocab", lambda: gpt()(np.array([[1, 10 * VOCAB]], "int32")), ValueError,
     r"`ids` must lie in \[0, vocab_size=32\); received ids from 1 to 320"),
    ("1-D-ids", lambda: gpt()(ids((LENGTH,))), ValueError,
     r"`ids` must have shape \(batch, length\); received shape \(5,\)"),
    ("3-D-ids", lambda: gpt()(ids((BATCH, LENGTH, 1))), ValueError,
     r"`ids` must have shape \(batch, length\); received shape \(2, 5, 1\)"),
    ("empty-sequence", lambda: gpt()(ids((BATCH, 0))), ValueError,
     r"`ids` must hold at least one position \(length >= 1\); received shape \(2, 0\)"),
    ("beyond-learned-table", lambda: gpt()(ids((BATCH, LENGTH + 2))), ValueError,
     r"length 7 .* needs 7 positions, but the learned position table has max_length=6"),
    # --- encoder-decoder inputs ------------------------------------------------
    ("mismatched-source-target-batch",
     lambda: transformer()(pair(source=ids((BATCH + 1, LENGTH)))), ValueError,
     r"'source' and 'target' must have the same batch size; received 3 and 2"),
    ("missing-target-key", lambda: transformer()({"source": ids()}), ValueError,
     r"exactly the keys 'source' \(batch, S\) and 'target' \(batch, T\); received \['source'\]"),
    ("extra-key", lambda: transformer()(dict(pair(), mask=ids())), ValueError,
     r"exactly the keys 'source' .* received \['mask', 'source', 'target'\]"),
    ("empty-source", lambda: transformer()(pair(source=ids((BATCH, 0)))), ValueError,
     r"'source' must hold at least one position \(length >= 1\); received shape \(2, 0\)"),
    ("3-D-target", lambda: transformer()(pair(target=ids((BATCH, LENGTH, 1)))), ValueError,
     r"'target' must have shape \(batch, length\); received shape \(2, 5, 1\)"),
    ("source-ids-beyond-vocab", lambda: transformer()(pair(source=ids(value=VOCAB))),
     ValueError, r"`ids` must lie in \[0, vocab_size=32\)"),
    # --- masks and memory at the layer level -------------------------------------
    ("key-mask-wrong-length",
     lambda: layers.MultiHeadAttention(num_heads=2)(hidden(), key_mask=np.ones((BATCH, LENGTH - 1), bool)),
     ValueError, r"`key_mask` must have shape \(batch, key_length\) = \(2, 5\); "
                 r"received shape \(2, 4\)"),
    ("key-mask-batch-1-not-broadcast",
     lambda: layers.MultiHeadAttention(num_heads=2)(hidden(), key_mask=np.ones((1, LENGTH), bool)),
     ValueError, r"`key_mask` must have shape \(batch, key_length\) = \(2, 5\); "
                 r"received shape \(1, 5\)"),
    ("key-mask-3-D",
     lambda: layers.MultiHeadAttention(num_heads=2, mode="causal")(
         hidden(), key_mask=np.ones((BATCH, LENGTH, LENGTH), bool)),
     ValueError, r"`key_mask` must have shape \(batch, key_length\) = \(2, 5\); "
                 r"received shape \(2, 5, 5\)"),
    ("key-mask-float-not-cast",
     lambda: layers.MultiHeadAttention(num_heads=2)(hidden(), key_mask=np.full((BATCH, LENGTH), 0.5, "float32")),
     ValueError, r"`key_mask` must be a bool mask \(True = real token\); received dtype float32"),
    ("padding-mask-wrong-length",
     lambda: layers.TransformerBlock(num_heads=2, d_ff=16)(
         hidden(), padding_mask=np.ones((BATCH, 3), bool)),
     ValueError, r"`padding_mask` must have shape \(batch, key_length\) = \(2, 5\); "
                 r"received shape \(2, 3\)"),
    ("memory-mask-wrong-length",
     lambda: layers.TransformerBlock(num_heads=2, d_ff=16, self_attention="causal",
                                     cross_attention=True)(
         hidden(), memory=hidden((BATCH, 4, WIDTH)), memory_mask=np.ones((BATCH, 5), bool)),
     ValueError, r"`memory_mask` must have shape \(batch, key_length\) = \(2, 4\); "
                 r"received shape \(2, 5\)"),
    ("decoder-padding-mask-wrong-length",
     lambda: gpt()(ids(), padding_mask=np.ones((BATCH, LENGTH - 1), bool)), ValueError,
     r"`padding_mask` must have shape \(batch, key_length\) = \(2, 5\); "
     r"received shape \(2, 4\)"),
    ("decoder-padding-mask-batch-1-not-broadcast",
     lambda: gpt()(ids(), padding_mask=np.ones((1, LENGTH), bool)), ValueError,
     r"`padding_mask` must have shape \(batch, key_length\) = \(2, 5\); "
     r"received shape \(1, 5\)"),
    ("memory-batch-not-broadcast",
     lambda: layers.CrossAttention(num_heads=2)(hidden(), memory=hidden((1, 4, WIDTH))),
     ValueError, r"`memory` must have the batch size of `query` \(2\); "
                 r"received memory of shape \(1, 4, 8\)"),
    ("negative-start-index",
     lambda: layers.LearnedPositionEmbedding(8)(hidden((1, 4, WIDTH)), start_index=-1),
     ValueError, r"`start_index` must be >= 0 \(a position in the table\); received -1"),
    # --- constructor arguments, presets and dtypes ---------------------------------
    ("preset-bad-override-value",
     lambda: kt.DecoderOnly.from_preset("gpt2_tiny", ln_position="middle"), ValueError,
     r"`ln_position` must be one of 'post', 'pre'; received 'middle'"),
    ("preset-unknown-override",
     lambda: kt.DecoderOnly.from_preset("gpt2_tiny", n_layers=3), ValueError,
     r"Unknown override\(s\) \['n_layers'\] for preset 'gpt2_tiny'; DecoderOnly takes: "
     r"vocab_size, num_layers"),
    ("preset-override-bad-rate",
     lambda: kt.EncoderDecoder.from_preset("transformer_tiny", dropout=1.0), ValueError,
     r"`dropout` must be a float in \[0, 1\); received 1.0"),
    ("float-vocab-size", lambda: gpt(vocab_size=32.0), ValueError,
     r"`vocab_size` must be an integer >= 1; received 32.0"),
    ("string-tie-embeddings", lambda: gpt(tie_embeddings="no"), ValueError,
     r"`tie_embeddings` must be True or False; received 'no'"),
    ("int-scale-embeddings", lambda: transformer(scale_embeddings=2), ValueError,
     r"`scale_embeddings` must be True or False; received 2"),
    ("integer-dtype-policy", lambda: gpt(dtype="int32"), ValueError,
     r"`dtype` must be a floating-point dtype policy .*; received compute dtype int32"),
    ("bad-activation", lambda: gpt(activation="tanh"), ValueError,
     r"`activation` must be one of 'relu', 'gelu', .*; received 'tanh'"),
    ("zero-attention-window", lambda: gpt(attention_window=0), ValueError,
     r"`attention_window` must be an integer >= 1; received 0"),
    ("heads-do-not-divide-d-model", lambda: gpt(num_heads=3), ValueError,
     r"`d_model` \(8\) must be divisible by `num_heads` \(3\)"),
    # --- architecture toggles (BlockConfig, and the attention layer's own checks) -------
    ("kv-heads-do-not-divide-heads", lambda: gpt(num_heads=4, num_kv_heads=3), ValueError,
     r"`num_heads` \(4\) must be divisible by `num_kv_heads` \(3\)"),
    ("zero-kv-heads", lambda: transformer(num_kv_heads=0), ValueError,
     r"`num_kv_heads` must be an integer >= 1; received 0"),
    ("rotary-odd-head-width", lambda: gpt(d_model=6, num_heads=2, position="rotary"),
     ValueError, r"Rotary positions turn pairs of features: the head width "
                 r"\(`?d_model / num_heads`? = 3\) must be even"),
    ("rotary-fraction-zero", lambda: gpt(position="rotary", rotary_fraction=0), ValueError,
     r"`rotary_fraction` must be a float in \(0, 1\]; received 0"),
    ("rotary-fraction-above-one",
     lambda: transformer(position="rotary", rotary_fraction=1.5), ValueError,
     r"`rotary_fraction` must be a float in \(0, 1\]; received 1.5"),
    ("rotary-fraction-turns-no-pair",
     lambda: gpt(position="rotary", rotary_fraction=0.2), ValueError,
     r"head width \(`?d_model / num_heads`? = 4\) must be even and `rotary_fraction` "
     r"\(0.2\) must leave at least 2 of them rotating"),
    ("zero-rotary-base", lambda: gpt(position="rotary", rotary_base=0), ValueError,
     r"`rotary_base` must be a number > 0; received 0"),
    ("position-rope", lambda: gpt(position="rope"), ValueError,
     r"`position` must be one of 'sinusoidal', 'learned', 'rotary', 'alibi'; "
     r"received 'rope'"),
    ("batch-norm", lambda: transformer(norm="batch"), ValueError,
     r"`norm` must be one of 'layer', 'rms'; received 'batch'"),
    ("glu-feed-forward", lambda: gpt(feed_forward="glu"), ValueError,
     r"`feed_forward` must be one of 'mlp', 'swiglu', 'geglu'; received 'glu'"),
    ("string-use-bias", lambda: transformer(use_bias="yes"), ValueError,
     r"`use_bias` must be True or False; received 'yes'"),
    ("int-qk-norm", lambda: gpt(qk_norm=1), ValueError,
     r"`qk_norm` must be True or False; received 1"),
    ("attention-kv-heads-do-not-divide-heads",
     lambda: layers.MultiHeadAttention(num_heads=4, num_kv_heads=3), ValueError,
     r"`num_heads` \(4\) must be divisible by `num_kv_heads` \(3\)"),
    ("attention-qk-norm-a-bool", lambda: layers.MultiHeadAttention(num_heads=2, qk_norm="rms"),
     ValueError, r"`qk_norm` must be True or False; received 'rms'"),
    ("attention-config-not-a-config", lambda: layers.MultiHeadAttention(2), ValueError,
     r"`config` must be an AttentionConfig or BlockConfig, its dict or None"),
    ("attention-old-dropout-name", lambda: layers.MultiHeadAttention(num_heads=2, dropout=0.1),
     ValueError, r"`dropout` is not an argument of MultiHeadAttention: .* use `attention_dropout`"),
    ("attention-cross-mode", lambda: layers.MultiHeadAttention(num_heads=2, mode="cross"),
     ValueError, r"`mode` must be one of .*use keras_transformer.layers.CrossAttention"),
    ("cross-attention-with-rotary",
     lambda: layers.CrossAttention(num_heads=2, position="rotary"), ValueError,
     r"`position` is for self-attention: .* received position='rotary' for CrossAttention"),
    ("attention-rotary-odd-head-width",
     lambda: layers.MultiHeadAttention(num_heads=2, mode="causal", position="rotary")(
         hidden((BATCH, LENGTH, 6))), ValueError,
     r"Rotary positions turn pairs of features: the head width \(d_model / num_heads = 3\) "
     r"must be even"),
    ("pad-id-beyond-vocab", lambda: gpt(pad_id=VOCAB), ValueError,
     r"`pad_id` must be None or a token id in \[0, vocab_size=32\); received 32"),
    ("end-id-negative", lambda: gpt(end_id=-1), ValueError,
     r"`end_id` must be None or a token id in \[0, vocab_size=32\); received -1"),
    ("start-id-equals-pad-id", lambda: transformer(start_id=0, pad_id=0), ValueError,
     r"`start_id` must differ from `pad_id` .*; received both 0"),
    # --- generate ------------------------------------------------------------------
    ("generate-float-prompt", lambda: gpt().generate(prompt(dtype="float32")), ValueError,
     r"`prompt_ids` must hold integer token ids; received dtype float32"),
    ("generate-prompt-beyond-vocab", lambda: gpt().generate(prompt(VOCAB)), ValueError,
     r"`prompt_ids` must lie in \[0, vocab_size=32\); received ids from 32 to 32"),
    ("generate-1-D-prompt", lambda: gpt().generate(np.ones(3, "int32")), ValueError,
     r"`prompt_ids` must have shape \(batch, length\); received shape \(3,\)"),
    ("generate-negative-source", lambda: transformer().generate(prompt(-1)), ValueError,
     r"`source_ids` must lie in \[0, vocab_size=32\); received ids from -1 to -1"),
    ("generate-start-id-beyond-vocab",
     lambda: transformer().generate(prompt(5), start_id=VOCAB), ValueError,
     r"`start_id` must be a token id in \[0, vocab_size=32\); received 32"),
    ("generate-no-start-id",
     lambda: transformer(start_id=None).generate(prompt(5)), ValueError,
     r"`start_id` is needed: pass it, or build the model with `start_id`"),
    ("generate-stop-ids-an-int", lambda: gpt().generate(prompt(), 2, stop_ids=3), ValueError,
     r"`stop_ids` must be a list or tuple of token ids \(e.g. \(end_id,\)\); received 3"),
    ("generate-stop-id-beyond-vocab",
     lambda: gpt().generate(prompt(), 2, stop_ids=(3, VOCAB)), ValueError,
     r"`stop_ids` must be a token id in \[0, vocab_size=32\); received 32"),
    ("generate-max-new-tokens-negative", lambda: gpt().generate(prompt(), -1), ValueError,
     r"`max_new_tokens` must be an integer >= 1; received -1"),
    ("generate-max-new-tokens-zero", lambda: gpt().generate(prompt(), 0), ValueError,
     r"`max_new_tokens` must be an integer >= 1; received 0"),
    ("generate-max-length-zero",
     lambda: transformer().generate(prompt(5), max_length=0), ValueError,
     r"`max_length` must be an integer >= 1; received 0"),
    ("generate-alpha-none", lambda: transformer().generate(prompt(5), alpha=None), ValueError,
     r"`alpha` must be a finite number >= 0; received None"),
    ("generate-alpha-negative",
     lambda: gpt().generate(prompt(), 2, beam_size=2, alpha=-0.5), ValueError,
     r"`alpha` must be a finite number >= 0; received -0.5"),
    ("generate-alpha-infinite",
     lambda: transformer().generate(prompt(5), alpha=float("inf")), ValueError,
     r"`alpha` must be a finite number >= 0; received inf"),
    ("generate-beta-negative",
     lambda: transformer().generate(prompt(5), beta=-0.2), ValueError,
     r"`beta` must be a finite number >= 0; received -0.2"),
    ("generate-beta-string",
     lambda: transformer().generate(prompt(5), beta="0.2"), ValueError,
     r"`beta` must be a finite number >= 0; received '0.2'"),
    ("generate-beta-without-beam",
     lambda: transformer().generate(prompt(5), beam_size=None, beta=0.2), ValueError,
     r"`beta` \(the coverage penalty\) ranks beam search's hypotheses: it needs a beam_size"),
    ("generate-empty-batch", lambda: gpt().generate(np.ones((0, 2), "int32")), ValueError,
     r"`prompt_ids` must hold at least one row \(batch >= 1\); received shape \(0, 2\)"),
    ("generate-empty-list", lambda: gpt().generate([]), ValueError,
     r"`prompt_ids` must hold at least one row \(batch >= 1\); received shape \(0,\)"),
    ("generate-empty-rows", lambda: transformer().generate([[]]), ValueError,
     r"`source_ids` rows must hold at least one token id \(length >= 1\); received shape "
     r"\(1, 0\)"),
    ("fit-keras-hub-dict",
     lambda: gpt().fit({"token_ids": ids((2, 4), 5), "padding_mask": np.ones((2, 4), bool)},
                       ids((2, 4), 5), verbose=0), ValueError,
     r"`x` must be one array of token ids \(batch, length\) for a DecoderOnly; received a "
     r"dict with keys \['padding_mask', 'token_ids'\]. For keras-hub style inputs pass "
     r"x\['token_ids'\]"),
    ("fit-keras-hub-dict-to-encoder-decoder",
     lambda: _compiled(transformer()).fit({"token_ids": ids((2, 4), 5)}, ids((2, 4), 5), verbose=0),
     ValueError, r"`x` must be a dict \{'source': ids, 'target': ids\} of token id arrays "
     r"\(batch, length\) for an EncoderDecoder; received a dict with keys \['token_ids'\]"),
    ("generate-start-id-is-padding",
     lambda: transformer().generate(prompt(5), start_id=0), ValueError,
     r"`start_id` must differ from `pad_id` .*; received both 0"),
    ("generate-source-beyond-learned-table",
     lambda: transformer(position="learned").generate(ids((1, LENGTH + 2), 5), max_length=2),
     ValueError, r"`source_ids` has 7 positions but the learned position table has "
                 r"max_length=6 rows"),
    ("generate-default-length-beyond-learned-table",
     lambda: transformer(position="learned").generate(prompt(5)), ValueError,
     r"Decoding needs 53 positions but the learned position table has max_length=6 rows; "
     r"pass a smaller `max_length`"),
    ("generate-beam-size-zero", lambda: gpt().generate(prompt(), 2, beam_size=0), ValueError,
     r"`beam_size` must be an integer >= 1; received 0"),
    ("generate-num-return-above-beam",
     lambda: transformer().generate(prompt(5), beam_size=2, num_return=3), ValueError,
     r"`num_return` must be <= beam_size=2 .*; received 3"),
    ("generate-num-return-without-beam",
     lambda: gpt().generate(prompt(), 2, num_return=2), ValueError,
     r"`num_return` needs beam search .*; received num_return=2 with beam_size=None"),
    ("generate-sampler-with-beam",
     lambda: gpt().generate(prompt(), 2, beam_size=2, sampler=Sampler(top_k=3)), ValueError,
     r"Beam search is deterministic: pass a `sampler` only with beam_size=None"),
    ("generate-sampler-not-a-sampler",
     lambda: gpt().generate(prompt(), 2, sampler="greedy"), ValueError,
     r"`sampler` must be a keras_transformer.generation.Sampler or None; received 'greedy'"),
    ("generate-padding-mask-wrong-shape",
     lambda: gpt().generate(prompt(), 2, padding_mask=np.ones((1, 3), bool)), ValueError,
     r"`padding_mask` must be a bool array of the prompts' shape \(1, 2\)"),
    ("generate-padding-mask-int",
     lambda: gpt().generate(prompt(), 2, padding_mask=np.ones((1, 2), "int32")), ValueError,
     r"`padding_mask` must be a bool array .*; received int32 of shape \(1, 2\)"),
    ("generate-pad-inside-prompt",
     lambda: gpt(pad_id=0).generate(np.array([[4, 0, 5]]), 2), ValueError,
     r"rows \[0\] have padding \(pad_id=0\) between tokens. Pass `padding_mask`"),
    ("generate-prompt-all-padding",
     lambda: gpt().generate(prompt(), 2, padding_mask=np.zeros((1, 2), bool)), ValueError,
     r"Every prompt needs at least one real token; rows \[0\] have none"),
    ("generate-beyond-learned-table", lambda: gpt().generate(prompt(), LENGTH), ValueError,
     r"Decoding needs 7 positions but the learned position table has max_length=6"),
    # --- what newcomers try first ------------------------------------------------
    ("generate-text", lambda: gpt().generate("hello", 2), ValueError,
     r"`prompt_ids` must be token ids \(integers\), not text; kt.TextGenerator\(model, "
     r"tokenizer\).generate\(texts\) takes text"),
    ("generate-list-of-texts", lambda: gpt().generate(["hello", "hi"], 2), ValueError,
     r"`prompt_ids` must be token ids \(integers\), not text"),
    ("translate-text", lambda: transformer().generate(["hello"]), ValueError,
     r"`source_ids` must be token ids \(integers\), not text; kt.Translator"),
    ("generate-numpy-text", lambda: gpt().generate(np.array([["a", "b"]]), 2), ValueError,
     r"`prompt_ids` must hold integer token ids; received a NumPy array of text"),
    ("generate-keras-hub-dict",
     lambda: gpt().generate({"token_ids": prompt(), "padding_mask": np.ones((1, 2), bool)}, 2),
     ValueError,
     r"`prompt_ids` must be an array of token ids \(batch, length\); received a dict with "
     r"keys \['padding_mask', 'token_ids'\]. For keras-hub style inputs: "
     r"generate\(x\['token_ids'\], padding_mask=x\['padding_mask'\]\)"),
    ("generate-ragged-rows", lambda: gpt().generate([[1, 2, 3], [4]], 2), ValueError,
     r"`prompt_ids` rows must all have one length; received rows of lengths \[1, 3\]. "
     r"Pad them to one length with the model's pad_id or pass `padding_mask`"),
    ("fit-labels-one-shorter",
     lambda: _compiled(gpt()).fit(ids(), ids((BATCH, LENGTH - 1)), verbose=0), ValueError,
     r"`y` must have the shape of x, \(2, 5\): one label per input position .*received "
     r"shape \(2, 4\)"),
    ("fit-target-labels-one-shorter",
     lambda: _compiled(transformer()).fit(pair(), ids((BATCH, LENGTH - 1)), verbose=0),
     ValueError, r"`y` must have the shape of x\['target'\], \(2, 5\)"),
    ("fit-ids-outside-vocab",
     lambda: _compiled(gpt()).fit(ids(value=VOCAB), ids(), verbose=0), ValueError,
     r"`x` must lie in \[0, vocab_size=32\); received ids from 32 to 32"),
    ("fit-source-outside-vocab",
     lambda: _compiled(transformer()).fit(pair(source=ids(value=-1)), ids(), verbose=0),
     ValueError, r"`x\['source'\]` must lie in \[0, vocab_size=32\); received ids from -1"),
    ("fit-labels-outside-vocab",
     lambda: _compiled(gpt()).fit(ids(), ids(value=VOCAB + 5), verbose=0), ValueError,
     r"`y` must lie in \[0, vocab_size=32\); received ids from 37 to 37"),
    ("evaluate-labels-outside-vocab",
     lambda: _compiled(gpt()).evaluate(ids(), ids(value=-3), verbose=0), ValueError,
     r"`y` must lie in \[0, vocab_size=32\); received ids from -3 to -3"),
    ("predict-ids-outside-vocab",
     lambda: _compiled(gpt()).predict(ids(value=VOCAB), verbose=0), ValueError,
     r"`x` must lie in \[0, vocab_size=32\); received ids from 32 to 32"),
    ("sampler-seed-2-to-the-31", lambda: Sampler(seed=2**31), ValueError,
     r"`seed` must be an integer in \[0, 2\*\*31 - 1\]; received 2147483648"),
    ("sampler-seed-negative", lambda: Sampler(seed=-1), ValueError,
     r"`seed` must be an integer >= 0; received -1"),
    ("sampler-top-p-string", lambda: Sampler(top_p="0.9"), ValueError,
     r"`top_p` must be a number in \(0, 1\]; received '0.9'"),
    # --- gettext catalogs (each accepted before po_file) ---------------------
    ("po-unterminated-string", lambda: parse_po('msgid "Quit\nmsgstr ""\n', "de.po"),
     PoSyntaxError, r"^de\.po:1:7: end-of-line within string$"),
    ("po-duplicate-msgid",
     lambda: parse_po(_HEADER + 'msgid "A"\nmsgstr ""\n\nmsgid "A"\nmsgstr ""\n', "de.po"),
     PoSyntaxError, r"^de\.po:8: duplicate message definition \(first defined on line 6\)$"),
    ("po-invalid-escape", lambda: parse_po(_HEADER + 'msgid "\\q"\nmsgstr ""\n', "de.po"),
     PoSyntaxError, r"^de\.po:5:9: invalid control sequence \\q$"),
    ("po-half-obsolete", lambda: parse_po(_HEADER + 'msgid "A"\n#~ msgstr ""\n', "de.po"),
     PoSyntaxError, r"^de\.po:6: inconsistent use of #~$"),
    ("po-byte-order-mark", lambda: parse_po(b"\xef\xbb\xbf" + _HEADER.encode(), "de.po"),
     PoSyntaxError, r"^de\.po:1:1: syntax error: a byte-order mark"),
    ("po-not-its-charset", lambda: parse_po(_HEADER.encode() + b'msgid "\xff"\nmsgstr ""\n', "de.po"),
     PoSyntaxError, r"^de\.po:5:8: invalid multibyte sequence \(the file is not utf-8"),
    ("po-not-its-charset-iconv",  # a charset Python lacks, read with glibc's iconv as msgfmt does
     lambda: parse_po(_HEADER.replace("UTF-8", "EUC-TW").encode() + b'msgid "a"\nmsgstr "\xc4"\n',
                      "de.po"),
     PoSyntaxError, r"^de\.po:6:9: invalid multibyte sequence \(the file is not EUC-TW"),
    ("po-translation-lacks-a-directive",
     lambda: translate_catalog(parse_po(_HEADER + '#, c-format\nmsgid "%d files in %s"\n'
                                        'msgstr "%d Dateien"\n', "de.po"), _NoTranslator()),
     PoSyntaxError, r"^de\.po:7: number of format specifications in 'msgid' and 'msgstr' does "
                    r"not match \(msgfmt --check refuses that\)"),
    ("po-translation-loses-the-newline",
     lambda: translate_catalog(parse_po(_HEADER + 'msgid "Done.\\n"\nmsgstr "Fertig."\n', "de.po"),
                               _NoTranslator()),
     PoSyntaxError, r"^de\.po:6: 'msgid' and 'msgstr' entries do not both end with '\\n'"),
    ("plural-rule-divides-by-zero", lambda: PluralRule.parse("nplurals=2; plural=n/(n-1);"),
     ValueError, r"divides by zero for n = 1"),
    ("plural-rule-form-out-of-range", lambda: PluralRule.parse("nplurals=2; plural=n;"),
     ValueError, r"gives form 2 for n = 2, but nplurals=2 allows 0 to 1"),
    ("unknown-format-flag", lambda: find_placeholders("%s", "perl"), ValueError,
     r"format_flag must be one of 'any', 'c-format'.*got 'perl'"),
    ("write-catalog-over-a-device", lambda: write_catalog(parse_po(_HEADER), "/dev/null"),
     ValueError, r"/dev/null exists and is not a regular file"),
    ("generate-undecoded-bytes", lambda: _text_generator().generate("Caf\udce9"), ValueError,
     r"`prompts` is not valid Unicode: character 3 is the lone surrogate U\+DCE9 \(the byte 0xE9"),
]
assert len(CASES) >= 20


@pytest.mark.parametrize(
    "call,error,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_malformed_input_raises_naming_the_argument(call, error, pattern):
    with pytest.raises(error) as info:
        call()
    # Keras wraps errors raised inside `call` with the call's arguments; the
    # library's own sentence must be in there, unchanged.
    message = re.sub(r"\x1b\[[0-9;]*m", "", str(info.value))
    assert re.search(pattern, message, flags=re.DOTALL), message
    # Raised by keras_transformer itself (the innermost frame), not by a backend kernel.
    frames = [str(f.path) for f in info.traceback]
    assert "keras_transformer" in frames[-1], frames
