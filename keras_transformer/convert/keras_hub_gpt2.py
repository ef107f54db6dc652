"""keras-hub `GPT2Backbone` -> `DecoderOnly`.

keras-hub's GPT-2 is the same pre-LN network; its weights differ only in
layout. Its attention is Keras' `MultiHeadAttention`, with separate `query`,
`key` and `value` `EinsumDense` kernels `(d, heads, d_head)` (biases
`(heads, d_head)`) and an `attention_output` kernel `(heads, d_head, d)`; ours
fuses the three input projections into one `qkv` Dense `(d, 3d)` =
`[q | k | v]`. Flattening `(heads, d_head)` row-major is exactly our split of
each third into heads, so the conversion is reshape + concatenate. The full
table is in docs/conversion.md.

Padding: keras-hub takes a separate `padding_mask` input; our `DecoderOnly`
masks keys whose id is `pad_id`. The default `pad_id=None` masks nothing,
which is exact at every real position of a right-padded batch (causality
already hides later positions); pass `pad_id` to reproduce
`padding_mask = ids != pad_id` for any padding.

keras-hub is imported inside the functions only.
"""

import os

import numpy as np

from keras_transformer.convert import _common
from keras_transformer.optional_dependencies import require
from keras_transformer.models.decoder_only import DecoderOnly

_WHAT = "keras-hub GPT2Backbone"


def _backbone(source):
    keras_hub = require("keras_hub", "from_keras_hub_gpt2")

    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.isdir(path):
            raise ValueError(
                f"{path!r} is not a local keras-hub preset folder (one written by "
                "`save_to_preset`). For a Kaggle/Hugging Face handle, load it yourself "
                "with `keras_hub.models.GPT2Backbone.from_preset(...)` and pass the backbone."
            )
        source = keras_hub.models.Backbone.from_preset(path)
    if not isinstance(source, keras_hub.models.Backbone) and hasattr(source, "backbone"):
        source = source.backbone  # a task such as GPT2CausalLM
    if not isinstance(source, keras_hub.models.GPT2Backbone):
        raise ValueError(
            f"Expected a keras-hub GPT2Backbone (or a preset folder of one); received "
            f"{type(source).__name__}."
        )
    return source


def _weights_by_path(backbone):
    """Backbone variables by path, without any enclosing model prefix."""
    weights = {w.path: w for w in backbone.weights}
    anchor = "token_embedding/embeddings"
    if anchor not in weights:
        prefixed = [p for p in weights if p.endswith("/" + anchor)]
        if len(prefixed) != 1:
            raise ValueError(f"{_WHAT}: cannot find {anchor!r} among its weights.")
        cut = len(prefixed[0]) - len(anchor)
        weights = {p[cut:]: w for p, w in weights.items()}
    return weights


def from_keras_hub_gpt2(source, *, pad_id=None, dropout=None, dtype=None, name=None):
    """Builds a `DecoderOnly` holding a keras-hub GPT-2 backbone's weights.

    The config is the backbone's: `vocabulary_size`, `num_layers`,
    `num_heads`, `hidden_dim`, `intermediate_dim`, `max_sequence_length`;
    keras-hub's GPT-2 uses LayerNorm epsilon 1e-5 and the tanh GELU (our
    `"gelu"`), pre-LN with a final LayerNorm, and ties its output projection.

    Args:
        source: a `keras_hub.models.GPT2Backbone`, a task holding one (e.g.
            `GPT2CausalLM`, via `.backbone`), or the path of a local preset
            folder written by `save_to_preset` (nothing is downloaded).
        pad_id: id our model masks as padding, or None (default: GPT-2 has
            no padding token; see the module docstring).
        dropout: our dropout rate; default the backbone's `dropout`.
        dtype: Keras dtype policy of the new model (default: the global one).
        name: Keras name of the new model.

    Returns:
        A `DecoderOnly` whose logits equal
        `backbone.token_embedding(backbone(inputs), reverse=True)` at every
        non-padding position.

    Raises:
        ValueError: not a GPT-2 backbone, missing weights or a shape mismatch.

    Example:
    >>> import keras_hub
    >>> backbone = keras_hub.models.GPT2Backbone(vocabulary_size=128, num_layers=2,
    ...     num_heads=4, hidden_dim=32, intermediate_dim=128, max_sequence_length=64)
    >>> ours = from_keras_hub_gpt2(backbone)  # or the folder of backbone.save_to_preset(...)
    >>> ours.config.num_decoder_layers, ours.config.d_model, ours.config.block.ln_position
    (2, 32, 'pre')
    """
    backbone = _backbone(source)
    d_model, num_heads = int(backbone.hidden_dim), int(backbone.num_heads)
    model = DecoderOnly(
        vocab_size=int(backbone.vocabulary_size),
        num_layers=int(backbone.num_layers),
        d_model=d_model,
        num_heads=num_heads,
        d_ff=int(backbone.intermediate_dim),
        max_length=int(backbone.max_sequence_length),
        ln_position="pre",
        position="learned",
        activation="gelu",
        dropout=float(backbone.dropout if dropout is None else dropout),
        tie_embeddings=True,
        scale_embeddings=False,
        pad_id=pad_id,
        layer_norm_epsilon=float(backbone.layer_norm.epsilon),
        **_common.model_kwargs(dtype, name),
    )
    reader = _common.StateReader(_weights_by_path(backbone), _WHAT)
    writer = _common.WeightWriter(_WHAT)

    def copy(their, variable):
        writer.add(variable, reader.get(their), their)

    def flat(their, shape):
        array = reader.get(their)
        if array is not None and array.size != int(np.prod(shape)):
            raise ValueError(
                f"{_WHAT}: tensor {their!r} has shape {array.shape}; expected "
                f"{int(np.prod(shape))} values to reshape to {shape}."
            )
        return None if array is None else array.reshape(shape)

    copy("token_embedding/embeddings", model.token_embedding.embeddings)
    copy("position_embedding/embeddings", model.position_embedding.table)
    for i, block in enumerate(model.blocks):
        t = f"transformer_layer_{i}/"
        a = t + "self_attention/"
        parts = ("query", "key", "value")
        kernels = [flat(a + part + "/kernel", (d_model, d_model)) for part in parts]
        biases = [flat(a + part + "/bias", (d_model,)) for part in parts]
        attention = block.self_attention
        if all(k is not None for k in kernels):
            writer.add(attention.qkv_projection.kernel, np.concatenate(kernels, axis=1),
                       a + "{query,key,value}/kernel")
        if all(b is not None for b in biases):
            writer.add(attention.qkv_projection.bias, np.concatenate(biases),
                       a + "{query,key,value}/bias")
        writer.add(attention.output_projection.kernel,
                   flat(a + "attention_output/kernel", (d_model, d_model)),
                   a + "attention_output/kernel")
        copy(a + "attention_output/bias", attention.output_projection.bias)
        copy(t + "self_attention_layer_norm/gamma", block.self_attention_norm.gamma)
        copy(t + "self_attention_layer_norm/beta", block.self_attention_norm.beta)
        copy(t + "feedforward_intermediate_dense/kernel", block.feed_forward.inner.kernel)
        copy(t + "feedforward_intermediate_dense/bias", block.feed_forward.inner.bias)
        copy(t + "feedforward_output_dense/kernel", block.feed_forward.outer.kernel)
        copy(t + "feedforward_output_dense/bias", block.feed_forward.outer.bias)
        copy(t + "feedforward_layer_norm/gamma", block.feed_forward_norm.gamma)
        copy(t + "feedforward_layer_norm/beta", block.feed_forward_norm.beta)
    copy("layer_norm/gamma", model.final_norm.gamma)
    copy("layer_norm/beta", model.final_norm.beta)
    reader.check()
    writer.apply()
    return model
