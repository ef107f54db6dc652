"""Token embedding that can also serve as the (tied) pre-softmax projection."""

import math

import keras
from keras import ops

from keras_transformer import validation
from keras_transformer.layers.decode_context import context_or_default


_KERAS_ONLY = ("input_dim", "output_dim", "embeddings_initializer")  # ReversibleEmbedding's names


@keras.saving.register_keras_serializable(package="keras_transformer")
class TokenEmbedding(keras.layers.ReversibleEmbedding):
    """Token ids to vectors, optionally scaled, reversible into logits.

    The 2017 Transformer multiplies embeddings by `sqrt(d_model)` so that they
    are not drowned by the unit-scale sinusoids, and shares one matrix between
    the source embedding, the target embedding and the pre-softmax projection.
    GPT-2 ties the output projection to the token embedding but does not scale.

    It is Keras' `ReversibleEmbedding` with tied weights (one matrix,
    `embeddings`), so `quantize("int8")` or `"int4"` quantizes the table and
    the tied projection. Logits come in the compute dtype unless
    `reverse_dtype` asks for another (`"float32"` under a mixed policy).

    Args:
        vocab_size: number of rows (token ids `0 .. vocab_size - 1`).
        d_model: width of each embedding vector.
        scale: multiply embeddings by `sqrt(d_model)` (paper: True, GPT-2: False).
        initializer: initializer of the table (default normal, stddev 0.02).
        **kwargs: base `keras.layers.Layer` arguments, and `ReversibleEmbedding`'s
            `reverse_dtype` and `logit_soft_cap`.

    Call arguments:
        ids: int tensor `(batch, T)`; with `reverse=True`, hidden states
            `(batch, T, d_model)`.
        reverse: project hidden states to logits with the same matrix
            (`hidden @ table^T`) instead of looking ids up.

    Returns:
        `(batch, T, d_model)` embeddings, or `(batch, T, vocab_size)` logits
        with `reverse=True` (`project(hidden)` does the same).

    Example:
    >>> import numpy as np
    >>> embedding = TokenEmbedding(vocab_size=100, d_model=16, scale=True)
    >>> hidden = embedding(np.array([[1, 2, 3]]))
    >>> tuple(hidden.shape), tuple(embedding.project(hidden).shape)
    ((1, 3, 16), (1, 3, 100))
    """

    def __init__(self, vocab_size, d_model, scale=False, initializer=None, **kwargs):
        vocab_size = validation.check_int("vocab_size", vocab_size)
        d_model = validation.check_int("d_model", d_model)
        if not kwargs.pop("tie_weights", True):
            raise ValueError("`tie_weights` must be True: a TokenEmbedding is its own output "
                             "projection (an untied model has an output_projection layer).")
        for keras_only in _KERAS_ONLY:
            kwargs.pop(keras_only, None)  # ReversibleEmbedding's names of our arguments
        super().__init__(
            vocab_size,
            d_model,
            tie_weights=True,
            embeddings_initializer=keras.initializers.get(
                initializer or keras.initializers.RandomNormal(stddev=0.02)
            ),
            **kwargs,
        )
        self.vocab_size, self.d_model = vocab_size, d_model
        self.scale = bool(scale)

    @property
    def initializer(self):
        return self.embeddings_initializer

    @property
    def reverse_dtype(self):
        """The dtype of the projection to logits: the given one, else the compute dtype (Keras
        keeps the table out of autocasting, which would give float32 logits under a mixed
        policy; `reverse_dtype="float32"` asks for them)."""
        return self._reverse_dtype or self.compute_dtype

    @reverse_dtype.setter
    def reverse_dtype(self, value):
        self._reverse_dtype = value

    def call(self, ids, reverse=False):
        return self._embed_or_project(super().call, ids, reverse)

    def quantized_call(self, ids, reverse=False):
        # Keras sends a quantized layer's calls here rather than to `call`: the same id check
        # and scaling apply around its integer lookup.
        return self._embed_or_project(super().quantized_call, ids, reverse)

    def _embed_or_project(self, lookup, ids, reverse):
        if reverse:
            logits = lookup(ids, reverse=True)  # (batch, T, vocab_size)
            return logits if self._reverse_dtype else ops.cast(logits, self.compute_dtype)
        validation.check_token_ids("ids", ids, self.vocab_size)
        hidden = ops.cast(lookup(ids), self.compute_dtype)  # (batch, T, d_model)
        if self.scale:
            hidden = hidden * ops.cast(math.sqrt(self.d_model), self.compute_dtype)
        return hidden

    def project(self, hidden, context=None):
        """Logits `(batch, T, vocab_size)` from hidden states, with the tied matrix.

        Args:
            hidden: `(batch, T, d_model)` hidden states.
            context: a `DecodeContext` (how this layer is called); None:
                `DEFAULT_CONTEXT`.
        """
        return context_or_default(context).call(self, hidden, reverse=True)

    def quantize(self, mode=None, type_check=True, config=None):
        if type_check and type(self) is not TokenEmbedding:
            raise self._not_implemented_error(self.quantize)
        super().quantize(mode, type_check=False, config=config)

    def _int4_build(self, embeddings_shape, config=None):
        super()._int4_build(embeddings_shape, config)
        # Keras' ReversibleEmbedding quantizes the projection's inputs when it is rebuilt
        # without a config (from a saved model's dtype policies), but `quantize("int4")` does
        # not (Int4QuantizationConfig's default, as for Dense): without a config, take that
        # default, so that a reloaded model computes what the saved one did.
        self.inputs_quantizer = config.activation_quantizer if config is not None else None

    def get_config(self):
        config = super().get_config()
        for keras_only in _KERAS_ONLY + ("tie_weights",):
            config.pop(keras_only, None)
        config.update(
            reverse_dtype=self._reverse_dtype,
            vocab_size=self.vocab_size,
            d_model=self.d_model,
            scale=self.scale,
            initializer=keras.initializers.serialize(self.embeddings_initializer),
        )
        return config
