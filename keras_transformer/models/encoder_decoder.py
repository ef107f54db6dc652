"""The 2017 Transformer: an encoder stack and a decoder stack with cross-attention."""

import dataclasses

import keras
from keras import ops

from keras_transformer import masks
from keras_transformer import validation
from keras_transformer.generation import decoding
from keras_transformer.generation.families import EncoderDecoderAdapter
from keras_transformer.special_tokens import END_ID
from keras_transformer.special_tokens import PAD_ID
from keras_transformer.special_tokens import START_ID
from keras_transformer.models.config import TransformerConfig
from keras_transformer.models.initialization import paper_initialization
from keras_transformer.training.recipes import paper_recipe
from keras_transformer.models.transformer_model import TransformerModel
from keras_transformer.models.transformer_model import constructor_arguments


@keras.saving.register_keras_serializable(package="keras_transformer")
class EncoderDecoder(TransformerModel):
    """Encoder-decoder Transformer ("Attention Is All You Need").

    Defaults are the paper's toggles: post-LN, sinusoidal positions, ReLU,
    dropout 0.1, embeddings scaled by `sqrt(d_model)` and one matrix shared
    by the source embedding, the target embedding and the pre-softmax
    projection.

    The blocks' toggles (heads, widths, norm and its place, feed-forward,
    attention) are the fields of `keras_transformer.layers.BlockConfig`: pass
    one as `block`, or its fields as keywords (`num_heads=8, d_ff=2048`),
    which start from the paper's (`BLOCK_DEFAULTS`: `dropout=0.1`; the rest,
    post-LN and ReLU among them, are `BlockConfig`'s).

    Args:
        vocab_size: size of the vocabulary shared by source and target.
        num_layers: blocks per stack (6), unless the two below are given.
        d_model: width of the residual stream (512).
        block: the `BlockConfig` of every block of both stacks (taken as it
            is), a dict of some of its fields, or None (the fields as
            keywords).
        max_length: rows of a learned position table (unused by sinusoids).
        num_encoder_layers: encoder blocks (default `num_layers`).
        num_decoder_layers: decoder blocks (default `num_layers`).
        position: `"sinusoidal"` (paper), `"learned"`, `"rotary"` or
            `"alibi"` (rotary and ALiBi act in self-attention only); the
            blocks' `position` follows.
        tie_embeddings: reuse the shared embedding as the output projection.
        scale_embeddings: multiply token embeddings by `sqrt(d_model)`.
        pad_id: the padding token id, masked in every attention, or None.
        position_layout: sinusoid layout, `"interleaved"` or `"concatenated"`.
        start_id: the token every target starts with (`generate`'s default);
            `kt.data`'s vocabularies put it at 2.
        end_id: the token that ends every source and target (`generate`'s
            default stop id); `kt.data`'s vocabularies put it at 3.
        remat: recompute every block's activations in the backward pass
            instead of storing them (`TransformerConfig.remat`).
        **kwargs: fields of `BlockConfig` (`num_heads`, `d_ff`, `norm`, ...;
            the block's `dropout` is also the embedding dropout), and the base
            `keras.Model` arguments (`name`, `dtype`).

    Call arguments:
        inputs: dict with `"source"` ids `(batch, S)` and `"target"` ids
            `(batch, T)` (the target shifted right, for teacher forcing).
        training: whether dropout is active.

    Returns:
        Logits `(batch, T, vocab_size)`.

    Example:
    >>> import numpy as np
    >>> model = EncoderDecoder(vocab_size=100, num_layers=2, d_model=32,
    ...                        num_heads=4, d_ff=64)
    >>> logits = model({"source": np.array([[5, 6, 7, 8, 0, 0]]),
    ...                 "target": np.array([[2, 9, 9, 9, 9, 9, 9]])})
    >>> tuple(logits.shape)
    (1, 7, 100)
    >>> from keras_transformer.layers import BlockConfig
    >>> model.config.block == BlockConfig(num_heads=4, d_ff=64, dropout=0.1)
    True
    """

    BLOCK_DEFAULTS = dict(dropout=0.1)  # the paper's; its post-LN and ReLU are BlockConfig's

    def __init__(
        self,
        vocab_size,
        num_layers,
        d_model,
        block=None,
        max_length=1024,
        num_encoder_layers=None,
        num_decoder_layers=None,
        position="sinusoidal",
        tie_embeddings=True,
        scale_embeddings=True,
        pad_id=PAD_ID,
        position_layout="interleaved",
        start_id=START_ID,
        end_id=END_ID,
        remat=False,
        **kwargs,
    ):
        super().__init__(constructor_arguments(locals()), **kwargs)
        c = self.config
        self.encoder_blocks = [
            self._block(f"encoder_block_{i}") for i in range(c.num_encoder_layers)
        ]
        self.encoder_norm = self._final_norm("encoder_norm")
        self.decoder_blocks = [
            self._block(f"decoder_block_{i}", self_attention="causal", cross_attention=True)
            for i in range(c.num_decoder_layers)
        ]
        self.decoder_norm = self._final_norm("decoder_norm")
        self.build({"source": (None, None), "target": (None, None)})

    @staticmethod
    def family_config(block, num_layers, num_encoder_layers=None, num_decoder_layers=None,
                      **arguments):
        # Checked here so that errors name the argument the user passed, and so
        # that no encoder-decoder has 0 encoder blocks: the config reads
        # `num_encoder_layers == 0` as decoder-only (no cross-attention).
        validation.check_int("num_layers", num_layers)
        if num_encoder_layers is not None:
            validation.check_int("num_encoder_layers", num_encoder_layers)
        if num_decoder_layers is not None:
            validation.check_int("num_decoder_layers", num_decoder_layers)
        return TransformerConfig(
            num_encoder_layers=num_layers if num_encoder_layers is None else num_encoder_layers,
            num_decoder_layers=num_layers if num_decoder_layers is None else num_decoder_layers,
            block=block,
            **arguments,
        )

    def get_config(self):
        c = self.config
        return {
            **super().get_config(),
            "vocab_size": c.vocab_size,
            "num_layers": c.num_decoder_layers,
            "d_model": c.d_model,
            "block": dataclasses.asdict(c.block),
            "max_length": c.max_length,
            "num_encoder_layers": c.num_encoder_layers,
            "num_decoder_layers": c.num_decoder_layers,
            "position": c.position,
            "tie_embeddings": c.tie_embeddings,
            "scale_embeddings": c.scale_embeddings,
            "pad_id": c.pad_id,
            "position_layout": c.position_layout,
            "start_id": c.start_id,
            "end_id": c.end_id,
            "remat": c.remat,
        }

    def initialization(self):
        return paper_initialization(self.config.d_model)

    def training_recipe(self):
        return paper_recipe(self.config)

    def build(self, inputs_shape):
        self._build_shared()
        self._build_stack(self.encoder_blocks, self.encoder_norm)
        memory_shape = (None, None, self.config.d_model)
        self._build_stack(self.decoder_blocks, self.decoder_norm, memory_shape=memory_shape)
        self._settle_sublayers()
        self.built = True

    def encode(self, source_ids, training=None, context=None):
        """Encoder output ("memory") `(batch, S, d_model)` for source ids `(batch, S)`.

        Args:
            source_ids: int `(batch, S)` source ids, padded with `pad_id`.
            training: whether dropout is active.
            context: a `DecodeContext` (a decode loop's); None: `DEFAULT_CONTEXT`.
        """
        hidden = self.embed(source_ids, training=training, context=context)
        padding = masks.padding_mask(source_ids, self.config.pad_id)  # (batch, S)
        return self.run_stack(
            self.encoder_blocks, self.encoder_norm, hidden, padding, training, context=context
        )

    def decode(
        self, target_ids, memory, memory_mask=None, caches=None, cache_index=None,
        training=None, context=None,
    ):
        """Logits `(batch, T, vocab)` for target ids given the encoder output.

        `memory_mask` is the source's key padding mask `(batch, S)`
        (`keras_transformer.masks.padding_mask(source_ids, pad_id)`).
        For cached decoding pass `caches` (from `empty_cache(memory, ...)`,
        which holds the cross-attention keys and values, so `memory` may be
        None) and `cache_index`, the position of `target_ids[:, 0]`; the
        result is then `(logits, updated caches)`.

        Args:
            target_ids: int `(batch, T)` decoder inputs (the target shifted right).
            memory: `(batch, S, d_model)` from `encode`, or None with `caches`.
            memory_mask: bool `(batch, S)`, `True` for real source tokens.
            caches: per-block caches from `empty_cache`, or None (full pass).
            cache_index: absolute position of `target_ids[:, 0]` (with `caches`).
            training: whether dropout is active.
            context: a `DecodeContext` (how sublayers are called and caches
                written: `generate`'s torch loop makes its own); None:
                `DEFAULT_CONTEXT`.
        """
        start = 0 if caches is None else cache_index
        hidden = self.embed(target_ids, start_index=start, training=training, context=context)
        padding = (
            None if caches is not None else masks.padding_mask(target_ids, self.config.pad_id)
        )
        out = self.run_stack(
            self.decoder_blocks,
            self.decoder_norm,
            hidden,
            padding,
            training,
            caches=caches,
            cache_index=cache_index,
            memory=memory,
            memory_mask=memory_mask,
            context=context,
        )
        if caches is None:
            return self.logits(out, training=training)
        hidden, caches = out
        return self.logits(hidden, context, training=training), caches

    def cross_attention_probabilities(self, source_ids, target_ids):
        """Each decoder layer's cross-attention weights, for inspection.

        Args:
            source_ids: int `(batch, S)` source ids.
            target_ids: int `(batch, T)` decoder inputs (start token first).

        Returns:
            A list with one float32 `(batch, heads, T, S)` tensor per decoder
            layer: how much each target position attends to each source token
            (padding gets 0; each row sums to 1).

        Example:
        >>> import numpy as np
        >>> model = EncoderDecoder(vocab_size=50, num_layers=2, d_model=16,
        ...                        num_heads=2, d_ff=32)
        >>> maps = model.cross_attention_probabilities(np.array([[5, 6, 7, 0]]),
        ...                                            np.array([[2, 8, 9]]))
        >>> len(maps), tuple(maps[0].shape)
        (2, (1, 2, 3, 4))
        """
        memory = self.encode(source_ids)
        memory_mask = masks.padding_mask(source_ids, self.config.pad_id)  # (batch, S)
        padding = masks.padding_mask(target_ids, self.config.pad_id)  # (batch, T)
        hidden = self.embed(target_ids)
        maps = []
        for block in self.decoder_blocks:
            maps.append(
                block.cross_attention_probabilities(hidden, memory, padding, memory_mask)
            )
            hidden = block(hidden, padding_mask=padding, memory=memory, memory_mask=memory_mask)
        return maps

    def empty_cache(self, memory, max_length, record_attention=False, context=None):
        """One `BlockCache` per decoder block: zero self-attention caches of
        `max_length` positions, and the cross-attention keys and values of
        `memory`, computed once.

        Args:
            memory: `(batch, S, d_model)` encoder output.
            max_length: target positions each self-attention cache holds.
            record_attention: whether the last decoder block records, in each
                cached call, the cross-attention each source position received
                (its cache's `source_attention` `(batch, S)`, mean over heads):
                what beam search's coverage penalty adds up.
            context: a `DecodeContext` (a decode loop's); None: `DEFAULT_CONTEXT`.
        """
        batch = ops.shape(memory)[0]
        last = len(self.decoder_blocks) - 1
        return [
            block.empty_cache(batch, max_length, memory,
                              record_attention=record_attention and i == last, context=context)
            for i, block in enumerate(self.decoder_blocks)
        ]

    def generate(
        self, source_ids, start_id=None, stop_ids=None, max_length=None, beam_size=4,
        alpha=0.6, sampler=None, num_return=None, beta=0.0,
    ):
        """Translates each source, decoding with the key/value cache.

        Defaults follow the paper: beam search with 4 beams, GNMT length
        penalty alpha 0.6, at most source length + 50 target tokens, no
        coverage penalty.

        Args:
            source_ids: int `(batch, S)` source ids, padded with `pad_id`.
            start_id: the decoder's first input; default the model's `start_id`.
            stop_ids: token ids that end a hypothesis; default `(end_id,)`.
            max_length: target tokens to produce at most; default each source's
                own length (its non-padding tokens) + 50, so a row decodes the
                same in any batch (the output is `S + 50` wide).
            beam_size: beam width, or None for greedy/sampled decoding.
            alpha: GNMT length penalty exponent (>= 0).
            sampler: with `beam_size=None`, a `Sampler` (default greedy).
            num_return: with beam search, return this many best hypotheses
                per source (<= beam_size) with their scores.
            beta: with beam search, GNMT's coverage penalty weight (>= 0):
                a finished hypothesis's score gains `beta * sum_s log(min(c_s,
                1))`, where `c_s` is the cross-attention (last decoder layer,
                mean over heads) source token s received over its steps, so
                that outputs which leave part of the source unread rank lower.

        Returns:
            NumPy int32 `(batch, max_length)`: target tokens (without the
            start token), `pad_id` after the stop token; with `num_return`, a
            `keras_transformer.generation.Hypotheses` of ids `(batch,
            num_return, max_length)`, scores and lengths, best first.

        Example:
        >>> import numpy as np
        >>> model = EncoderDecoder(vocab_size=50, num_layers=1, d_model=16,
        ...                        num_heads=2, d_ff=32)
        >>> model.generate(np.array([[5, 6, 7, 0]]), max_length=6).shape
        (1, 6)
        """
        inputs = dict(source_ids=source_ids, start_id=start_id, max_length=max_length)
        return decoding.generate(
            EncoderDecoderAdapter(self), inputs, sampler=sampler, stop_ids=stop_ids,
            beam_size=beam_size, alpha=alpha, num_return=num_return, beta=beta,
        )

    def call(self, inputs, training=None):
        source, target = _source_and_target(inputs)
        memory = self.encode(source, training=training)
        memory_mask = masks.padding_mask(source, self.config.pad_id)
        return self.decode(target, memory, memory_mask, training=training)

    def input_signature(self):
        """`{"source", "target"}` int32 ids, each of any batch size and length."""
        return {name: keras.InputSpec(shape=(None, None), dtype="int32", name=name)
                for name in ("source", "target")}

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape["target"]) + (self.config.vocab_size,)


def _source_and_target(inputs):
    if not isinstance(inputs, dict) or set(inputs) != {"source", "target"}:
        got = sorted(inputs) if isinstance(inputs, dict) else type(inputs).__name__
        raise ValueError(
            "EncoderDecoder takes a dict with exactly the keys 'source' (batch, S) "
            f"and 'target' (batch, T); received {got}."
        )
    source, target = inputs["source"], inputs["target"]
    for name, ids in (("source", source), ("target", target)):
        if len(ids.shape) != 2:  # before comparing batch sizes, which assumes rank 2
            raise ValueError(
                f"'{name}' must have shape (batch, length); received shape "
                f"{tuple(ids.shape)}."
            )
        if ids.shape[1] == 0:
            raise ValueError(
                f"'{name}' must hold at least one position (length >= 1); received "
                f"shape {tuple(ids.shape)}."
            )
    batch_source, batch_target = source.shape[0], target.shape[0]
    if batch_source is not None and batch_target is not None and batch_source != batch_target:
        raise ValueError(
            f"'source' and 'target' must have the same batch size; received "
            f"{batch_source} and {batch_target}."
        )
    return source, target
