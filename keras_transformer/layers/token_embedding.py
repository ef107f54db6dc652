"""Token embedding that can also serve as the (tied) pre-softmax projection."""

import math

import keras
from keras import ops

from keras_transformer import validation


@keras.saving.register_keras_serializable(package="keras_transformer")
class TokenEmbedding(keras.layers.Layer):
    """Token ids to vectors, optionally scaled, reversible into logits.

    The 2017 Transformer multiplies embeddings by `sqrt(d_model)` so that they
    are not drowned by the unit-scale sinusoids, and shares one matrix between
    the source embedding, the target embedding and the pre-softmax projection.
    GPT-2 ties the output projection to the token embedding but does not scale.

    Args:
        vocab_size: number of rows (token ids `0 .. vocab_size - 1`).
        d_model: width of each embedding vector.
        scale: multiply embeddings by `sqrt(d_model)` (paper: True, GPT-2: False).
        initializer: initializer of the table (default normal, stddev 0.02).
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        ids: int tensor `(batch, T)`.

    Returns:
        `(batch, T, d_model)` embeddings. `project(hidden)` maps hidden states
        `(batch, T, d_model)` back to logits `(batch, T, vocab_size)` with the
        same matrix (`hidden @ table^T`).

    Example:
    >>> import numpy as np
    >>> embedding = TokenEmbedding(vocab_size=100, d_model=16, scale=True)
    >>> hidden = embedding(np.array([[1, 2, 3]]))
    >>> tuple(hidden.shape), tuple(embedding.project(hidden).shape)
    ((1, 3, 16), (1, 3, 100))
    """

    def __init__(self, vocab_size, d_model, scale=False, initializer=None, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = validation.check_int("vocab_size", vocab_size)
        self.d_model = validation.check_int("d_model", d_model)
        self.scale = bool(scale)
        self.initializer = keras.initializers.get(
            initializer or keras.initializers.RandomNormal(stddev=0.02)
        )

    def build(self, ids_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocab_size, self.d_model),
            initializer=self.initializer,
        )
        self.built = True

    def call(self, ids):
        validation.check_token_ids("ids", ids, self.vocab_size)
        hidden = ops.take(self.embeddings, ids, axis=0)  # (batch, T, d_model)
        hidden = ops.cast(hidden, self.compute_dtype)
        if self.scale:
            hidden = hidden * ops.cast(math.sqrt(self.d_model), self.compute_dtype)
        return hidden

    def project(self, hidden):
        """Logits `(batch, T, vocab_size)` from hidden states, with the tied matrix.

        Args:
            hidden: `(batch, T, d_model)` hidden states.
        """
        kernel = ops.cast(self.embeddings, self.compute_dtype)
        return ops.matmul(hidden, ops.transpose(kernel))

    def compute_output_shape(self, ids_shape):
        return tuple(ids_shape) + (self.d_model,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            d_model=self.d_model,
            scale=self.scale,
            initializer=keras.initializers.serialize(self.initializer),
        )
        return config
