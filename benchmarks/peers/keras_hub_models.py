"""keras-hub peers: its GPT-2 backbone and an encoder-decoder from its layers.

What a Keras user would build with keras-hub for the same work, trained with
`model.fit` like ours. keras-hub ties attention-probability dropout to the
model's dropout rate; any rate above 0 therefore leaves the fused kernel.
"""

import math

import keras
import keras_hub
import numpy as np


def gpt2(workload, length, dropout):
    """GPT-2 backbone plus its tied (reversed) token embedding as the head."""
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=workload["vocab"], num_layers=workload["layers"],
        num_heads=workload["heads"], hidden_dim=workload["d_model"],
        intermediate_dim=4 * workload["d_model"],
        max_sequence_length=max(length, workload["max_length"]), dropout=dropout,
    )
    logits = backbone.token_embedding(backbone(backbone.input), reverse=True)
    return keras.Model(backbone.input, logits), backbone.count_params()


def gpt2_inputs(ids):
    return {"token_ids": ids, "padding_mask": np.ones(ids.shape, "bool")}


def transformer(workload, length, dropout):
    """2017 Transformer from keras-hub layers: post-LN, ReLU, sinusoids, tied embedding."""
    d_model = workload["d_model"]
    embedding = keras_hub.layers.ReversibleEmbedding(workload["vocab"], d_model, name="embedding")
    positions = keras_hub.layers.SinePositionEncoding()

    def embed(ids):
        x = embedding(ids) * math.sqrt(d_model)
        return x + positions(x)

    layer = dict(intermediate_dim=workload["d_ff"], num_heads=workload["heads"],
                 dropout=dropout, activation="relu", normalize_first=False)
    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    memory = embed(source)
    for _ in range(workload["layers"]):
        memory = keras_hub.layers.TransformerEncoder(**layer)(memory)
    hidden = embed(target)
    for _ in range(workload["layers"]):
        hidden = keras_hub.layers.TransformerDecoder(**layer)(hidden, memory)
    model = keras.Model({"source": source, "target": target}, embedding(hidden, reverse=True))
    return model, model.count_params()


def compile_model(model, jit_compile):
    """AdamW and sparse cross-entropy from logits (keras-hub's own recipe has no smoothing)."""
    model.compile(
        optimizer=keras.optimizers.AdamW(3e-4),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit_compile,
    )
