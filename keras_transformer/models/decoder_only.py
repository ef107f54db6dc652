"""GPT-2/GPT-3 style decoder-only language model."""

import dataclasses
import math

import keras
from keras import ops

from keras_transformer import masks
from keras_transformer import validation
from keras_transformer.generation import decoding
from keras_transformer.generation.families import DecoderOnlyAdapter
from keras_transformer.models.config import TransformerConfig
from keras_transformer.models.initialization import gpt2_initialization
from keras_transformer.training.recipes import gpt_recipe
from keras_transformer.models.transformer_model import TransformerModel
from keras_transformer.models.transformer_model import constructor_arguments


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecoderOnly(TransformerModel):
    """A stack of causal Transformer blocks over a token sequence (GPT).

    Defaults are GPT-2's toggles (pre-LN with a final LayerNorm, learned
    positions, GELU, dropout 0.1, output projection tied to the token
    embedding, no embedding scaling). Flip any of them to get the 2017
    decoder's behaviour; set `attention_window` for GPT-3's alternating dense
    and banded layers.

    The blocks' toggles (heads, widths, norm and its place, feed-forward,
    attention) are the fields of `keras_transformer.layers.BlockConfig`: pass
    one as `block`, or its fields as keywords (`num_heads=12, d_ff=3072`),
    which start from GPT-2's (`BLOCK_DEFAULTS`: `ln_position="pre"`,
    `activation="gelu"`, `dropout=0.1`; the rest are `BlockConfig`'s).

    Args:
        vocab_size: number of token ids.
        num_layers: number of blocks (GPT-2 small: 12).
        d_model: width of the residual stream (768).
        block: the `BlockConfig` of every block (taken as it is), a dict of
            some of its fields, or None (the fields as keywords).
        max_length: rows of the learned position table (1024).
        position: `"learned"` (GPT-2), `"sinusoidal"` (2017 paper),
            `"rotary"` (LLaMA) or `"alibi"`; the blocks' `position` follows.
        tie_embeddings: reuse the token embedding as the output projection.
        scale_embeddings: multiply token embeddings by `sqrt(d_model)`.
        pad_id: the padding token id (masked as a key, ignored by the loss,
            never generated), or None (GPT-2: every id is a real token).
        attention_window: if set, banded layers look at most this far back.
        banded_layers: `"alternate"` (GPT-3: every second layer) or `"all"`.
        position_layout: sinusoid layout, `"interleaved"` or `"concatenated"`.
        end_id: the token that ends a text (GPT-2's `<|endoftext|>`, 50256):
            `generate` stops a row on it by default; None: no default stop.
        remat: recompute every block's activations in the backward pass
            instead of storing them (`TransformerConfig.remat`).
        **kwargs: fields of `BlockConfig` (`num_heads`, `d_ff`, `norm`, ...;
            the block's `dropout` is also the embedding dropout), and the base
            `keras.Model` arguments (`name`, `dtype`).

    Call arguments:
        ids: int token ids `(batch, T)`.
        training: whether dropout is active.
        padding_mask: bool `(batch, T)`, `True` at real tokens, for rows
            padded on either side; default: every id other than `pad_id`
            (every id, without a `pad_id`).

    Returns:
        Logits `(batch, T, vocab_size)`.

    Example:
    >>> import numpy as np
    >>> from keras_transformer.layers import BlockConfig
    >>> block = BlockConfig(num_heads=4, d_ff=64, ln_position="pre", activation="gelu",
    ...                     dropout=0.1)
    >>> model = DecoderOnly(vocab_size=100, num_layers=2, d_model=32, block=block,
    ...                     max_length=16)
    >>> tuple(model(np.array([[5, 6, 7]])).shape)
    (1, 3, 100)
    >>> same = DecoderOnly(vocab_size=100, num_layers=2, d_model=32, num_heads=4, d_ff=64,
    ...                    max_length=16)  # keywords start from GPT-2's block
    >>> same.config == model.config
    True
    """

    BLOCK_DEFAULTS = dict(ln_position="pre", activation="gelu", dropout=0.1)  # GPT-2's

    def __init__(
        self,
        vocab_size,
        num_layers,
        d_model,
        block=None,
        max_length=1024,
        position="learned",
        tie_embeddings=True,
        scale_embeddings=False,
        pad_id=None,
        attention_window=None,
        banded_layers="alternate",
        position_layout="interleaved",
        end_id=None,
        remat=False,
        **kwargs,
    ):
        super().__init__(constructor_arguments(locals()), **kwargs)
        c = self.config
        self.blocks = [
            self._block(f"block_{i}", self_attention=c.decoder_attention_mode(i))
            for i in range(c.num_decoder_layers)
        ]
        self.final_norm = self._final_norm("final_norm")
        self.build((None, None))

    @staticmethod
    def family_config(block, num_layers, **arguments):
        # Checked here so that the error names the argument the user passed.
        validation.check_int("num_layers", num_layers)
        return TransformerConfig(num_decoder_layers=num_layers, num_encoder_layers=0,
                                 block=block, **arguments)

    def get_config(self):
        c = self.config
        return {
            **super().get_config(),
            "vocab_size": c.vocab_size,
            "num_layers": c.num_decoder_layers,
            "d_model": c.d_model,
            "block": dataclasses.asdict(c.block),
            "max_length": c.max_length,
            "position": c.position,
            "tie_embeddings": c.tie_embeddings,
            "scale_embeddings": c.scale_embeddings,
            "pad_id": c.pad_id,
            "attention_window": c.attention_window,
            "banded_layers": c.banded_layers,
            "position_layout": c.position_layout,
            "end_id": c.end_id,
            "remat": c.remat,
        }

    def initialization(self):
        return gpt2_initialization(self.config.num_decoder_layers)

    def training_recipe(self):
        return gpt_recipe(self.config)

    def build(self, ids_shape):
        self._build_shared()
        self._build_stack(self.blocks, self.final_norm)
        self._settle_sublayers()
        self.built = True

    def call(self, ids, training=None, padding_mask=None):
        return self._forward(ids, training=training, padding_mask=padding_mask)

    def call_with_cache(self, ids, caches, cache_index, keep_until=None, context=None):
        """One cached decoding step: logits for `ids` at positions `cache_index..`.

        Args:
            ids: `(batch, T)` token ids at absolute positions
                `cache_index .. cache_index + T - 1` (T = the prompt for the
                first call, then 1).
            caches: `empty_cache(...)`, or the caches the previous step returned.
            cache_index: absolute position of `ids[:, 0]` (int or scalar tensor).
            keep_until: for a caller that will feed positions from here on
                again (the decode loop, after prefilling prompts of several
                lengths): banded layers' ring caches keep only the positions
                before it. Default: keep all.
            context: a `DecodeContext` (how sublayers are called and caches
                written: `generate`'s torch loop makes its own); None:
                `DEFAULT_CONTEXT`.

        Returns:
            `(logits (batch, T, vocab), updated caches)`. No padding mask is
            applied: every cached position before the query is a real token.
        """
        return self._forward(ids, caches=caches, cache_index=cache_index, keep_until=keep_until,
                             context=context)

    def empty_cache(self, batch_size, max_length):
        """One `BlockCache` per block, of zeros, for decoding up to `max_length` positions.

        Args:
            batch_size: rows of the batch to decode.
            max_length: positions each cache holds (prompt plus new tokens).
        """
        return [block.empty_cache(batch_size, max_length) for block in self.blocks]

    def cache_bytes(self, batch_size, max_length):
        """Bytes the decode caches of `empty_cache(batch_size, max_length)` take.

        Dense layers hold every position; GPT-3's banded layers hold a ring of
        their `attention_window` last positions, so with long outputs a
        GPT-3-style model's cache is dominated by its dense layers.

        Args:
            batch_size: rows of the batch to decode.
            max_length: positions to decode (prompt plus new tokens).

        Example:
        >>> gpt = DecoderOnly(vocab_size=50, num_layers=2, d_model=16, num_heads=2,
        ...                   d_ff=32, max_length=256)
        >>> banded = DecoderOnly(vocab_size=50, num_layers=2, d_model=16, num_heads=2,
        ...                      d_ff=32, max_length=256, attention_window=16)
        >>> gpt.cache_bytes(1, 256), banded.cache_bytes(1, 256)  # float32
        (65536, 34816)
        """
        itemsize = int("".join(c for c in self.compute_dtype if c.isdigit())) // 8  # bfloat16: 2
        return sum(
            math.prod(block.self_cache_shape(batch_size, max_length)) * itemsize
            for block in self.blocks
        )

    def generate(
        self, prompt_ids, max_new_tokens=32, sampler=None, stop_ids=None, beam_size=None,
        alpha=0.6, num_return=None, padding_mask=None,
    ):
        """Continues each prompt, decoding with the key/value cache.

        Args:
            prompt_ids: int `(batch, P)` prompts. Rows may be padded before
                or after their tokens: say which positions are real with
                `padding_mask`, else every id other than `pad_id` is real
                (every id, when `pad_id` is None).
            max_new_tokens: tokens to add after the longest prompt (>= 1);
                every row is filled to `P + max_new_tokens`, so a shorter
                prompt gets more.
            sampler: a `keras_transformer.generation.Sampler` (default greedy).
            stop_ids: token ids that end a row; default `(end_id,)` (none
                when the model has no `end_id`). A stopped row is filled with
                `pad_id` (without one, with `stop_ids[0]`).
            beam_size: None for sampling/greedy, or the beam width.
            alpha: GNMT length penalty exponent for beam search (>= 0).
            num_return: with beam search, return this many best hypotheses
                per row (<= beam_size) with their scores.
            padding_mask: bool `(batch, P)`, True at each prompt's tokens.

        Returns:
            NumPy int32 `(batch, P + max_new_tokens)`: each prompt (moved to
            the start of its row) followed by its continuation; with
            `num_return`, a `keras_transformer.generation.Hypotheses` of ids
            `(batch, num_return, P + max_new_tokens)`, scores and lengths,
            best first. The loop is compiled on first use (XLA on JAX and
            TensorFlow) and reused for every seed and every prompt width that
            rounds up to the same bucket.

        Example:
        >>> import numpy as np
        >>> model = DecoderOnly(vocab_size=50, num_layers=1, d_model=16, num_heads=2,
        ...                     d_ff=32, max_length=16)
        >>> model.generate(np.array([[5, 6, 7]]), max_new_tokens=4).shape
        (1, 7)
        """
        inputs = dict(prompt_ids=prompt_ids, max_new_tokens=max_new_tokens,
                      padding_mask=padding_mask)
        return decoding.generate(
            DecoderOnlyAdapter(self), inputs, sampler=sampler, stop_ids=stop_ids,
            beam_size=beam_size, alpha=alpha, num_return=num_return,
        )

    def _forward(self, ids, caches=None, cache_index=None, training=None, keep_until=None,
                 padding_mask=None, context=None):
        """The one forward pass, full (`caches=None`) or cached."""
        start = 0 if caches is None else cache_index
        hidden = self.embed(ids, start_index=start, training=training,
                            context=context)  # (batch, T, d)
        padding = None
        if caches is None:
            if padding_mask is None:
                padding = masks.padding_mask(ids, self.config.pad_id)
            else:
                padding = ops.convert_to_tensor(padding_mask)  # the blocks check it is bool
        out = self.run_stack(
            self.blocks, self.final_norm, hidden, padding, training,
            caches=caches, cache_index=cache_index, keep_until=keep_until, context=context,
        )
        if caches is None:
            return self.logits(out, training=training)  # (batch, T, vocab)
        hidden, caches = out
        return self.logits(hidden, context, training=training), caches

    def input_signature(self):
        """`InputSpec((None, None), "int32")`: token ids of any batch size and length."""
        return keras.InputSpec(shape=(None, None), dtype="int32", name="ids")

    def compute_output_shape(self, ids_shape):
        return tuple(ids_shape) + (self.config.vocab_size,)
