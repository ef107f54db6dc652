"""`torch.nn.TransformerEncoder` + `TransformerDecoder` stacks -> `EncoderDecoder`.

Three differences of convention, all handled here:

* torch `Linear` weights are `(out, in)`; our `Dense` kernels are `(in, out)`:
  every matrix is transposed.
* torch's `MultiheadAttention` fuses its input projections into one
  `in_proj_weight` `(3d, d)` = rows `[q; k; v]`. Transposed, that is our
  self-attention `qkv` kernel `(d, 3d)` = `[q | k | v]`; for cross-attention
  the first d rows become our `query` kernel and the last 2d our `key_value`
  kernel `[k | v]`. Both split each part into heads the same way.
* torch's masks say `True` = blocked (`src_key_padding_mask`,
  `memory_key_padding_mask`, a bool `tgt_mask`); ours say `True` = real / may
  attend, and `EncoderDecoder` derives them from `pad_id` itself.
  `torch_key_padding_mask` and `torch_causal_mask` build torch's masks for
  the same ids, to run a torch model on the batch you give ours.

torch's stacks take no embedding: pass the shared `(vocab, d)` matrix, which
becomes our tied source/target embedding and pre-softmax projection. Our model
multiplies embeddings by `sqrt(d_model)` and adds sinusoids (interleaved
layout unless told otherwise), so the torch model it matches must do the same.
torch is never imported: modules are read through `state_dict()` and a few
attributes, tensors through `.detach().cpu().numpy()`.
"""

import numpy as np

from keras_transformer.convert import _common
from keras_transformer.models.encoder_decoder import EncoderDecoder

_ENCODER = "torch TransformerEncoder state dict"
_DECODER = "torch TransformerDecoder state dict"
_UNKNOWN = object()  # an activation we cannot name from a module


def torch_key_padding_mask(ids, pad_id=0):
    """torch's `*_key_padding_mask` for token ids: `True` where the id is `pad_id` (blocked).

    Ours is the opposite (`keras_transformer.masks.padding_mask`: `True` = real).

    Args:
        ids: int array `(batch, length)`.
        pad_id: the padding id.

    Returns:
        bool NumPy array `(batch, length)`; pass it through `torch.from_numpy`.

    Example:
    >>> torch_key_padding_mask([[5, 6, 0]], pad_id=0)
    array([[False, False,  True]])
    """
    return np.asarray(_common.to_numpy(ids, "ids")) == pad_id


def torch_causal_mask(length):
    """torch's boolean causal `tgt_mask` `(length, length)`: `True` above the diagonal (blocked).

    The same mask as `nn.Transformer.generate_square_subsequent_mask(length) != 0`.

    Args:
        length: target length.

    Returns:
        bool NumPy array `(length, length)`.

    Example:
    >>> torch_causal_mask(3).astype(int)
    array([[0, 1, 1],
           [0, 0, 1],
           [0, 0, 0]])
    """
    return np.triu(np.ones((length, length), dtype=bool), k=1)


def _module_settings(stack):
    """Settings a torch stack module reveals (heads, epsilon, norm_first, activation, dropout)."""
    layers = getattr(stack, "layers", None)
    if layers is None or not callable(getattr(stack, "state_dict", None)) or not len(layers):
        return {}
    first = layers[0]
    settings = {}
    attention = getattr(first, "self_attn", None)
    if hasattr(attention, "num_heads"):
        settings["num_heads"] = int(attention.num_heads)
    if hasattr(getattr(first, "norm1", None), "eps"):
        settings["layer_norm_epsilon"] = float(first.norm1.eps)
    if hasattr(first, "norm_first"):
        settings["ln_position"] = "pre" if first.norm_first else "post"
    if hasattr(first, "activation"):
        settings["activation"] = _activation_name(first)
    if hasattr(getattr(first, "dropout", None), "p"):
        settings["dropout"] = float(first.dropout.p)
    return settings


def _activation_name(layer):
    """Our name for a torch layer's activation, or `_UNKNOWN`."""
    # Not `activation_relu_or_gelu`: torch sets it to 2 for nn.GELU(approximate="tanh") too.
    function = layer.activation
    kind = getattr(function, "__name__", type(function).__name__).lower()
    if kind == "relu":  # F.relu or nn.ReLU
        return "relu"
    if kind == "gelu":  # F.gelu (erf) or nn.GELU(approximate=...)
        return "gelu" if getattr(function, "approximate", "none") == "tanh" else "gelu_exact"
    return _UNKNOWN


def _setting(name, explicit, inferred, default):
    """The argument if given, else what the modules say (they must agree), else the default."""
    found = {where: s[name] for where, s in inferred.items() if name in s}
    values = set(v for v in found.values() if v is not _UNKNOWN)
    if explicit is not None:
        for where, value in found.items():
            if value is not _UNKNOWN and value != explicit:
                raise ValueError(
                    f"`{name}`={explicit!r} contradicts the torch {where} ({value!r})."
                )
        return explicit
    if any(v is _UNKNOWN for v in found.values()):
        raise ValueError(
            f"Cannot tell the torch stacks' {name} (a custom callable); pass `{name}`."
        )
    if len(values) > 1:
        raise ValueError(
            f"The torch encoder and decoder differ in {name} ({found}); our EncoderDecoder "
            "uses one value for both."
        )
    return values.pop() if values else default


def _embedding_matrix(embedding):
    if hasattr(embedding, "weight"):  # an nn.Embedding
        embedding = embedding.weight
    elif isinstance(embedding, dict) and "weight" in embedding:
        embedding = embedding["weight"]
    matrix = _common.to_numpy(embedding, "embedding")
    if matrix.ndim != 2:
        raise ValueError(
            f"`embedding` must be a (vocab_size, d_model) matrix; received shape {matrix.shape}."
        )
    return matrix


def _final_norm_check(state, ln_position, what):
    has_norm = "norm.weight" in state or "norm.bias" in state
    if ln_position == "post" and has_norm:
        raise ValueError(
            f"{what} has a final LayerNorm (`norm.*`) after post-LN layers; our post-LN "
            "EncoderDecoder ends each stack with its last block's LayerNorm and has no "
            "extra one (nn.Transformer adds it by default: build TransformerEncoder/"
            "TransformerDecoder with norm=None)."
        )
    if ln_position == "pre" and not has_norm:
        raise ValueError(
            f"{what} has no final LayerNorm (`norm.*`); our pre-LN EncoderDecoder ends each "
            "stack with one (build the torch stacks with norm=nn.LayerNorm(d_model))."
        )


def _write_attention(writer, reader, prefix, attention, cross, d_model):
    weight = reader.get(prefix + "in_proj_weight")  # (3d, d) = [q; k; v], (out, in)
    bias = reader.get(prefix + "in_proj_bias")
    if weight is not None and weight.shape != (3 * d_model, d_model):
        raise ValueError(
            f"{reader.what}: tensor {prefix + 'in_proj_weight'!r} has shape {weight.shape}; "
            f"expected {(3 * d_model, d_model)} (3 d_model, d_model)."
        )
    if bias is not None and bias.shape != (3 * d_model,):
        raise ValueError(
            f"{reader.what}: tensor {prefix + 'in_proj_bias'!r} has shape {bias.shape}; "
            f"expected {(3 * d_model,)}."
        )
    if cross:
        if weight is not None:
            writer.add(attention.query_projection.kernel, weight[:d_model].T,
                       prefix + "in_proj_weight[:d]")
            writer.add(attention.key_value_projection.kernel, weight[d_model:].T,
                       prefix + "in_proj_weight[d:]")
        if bias is not None:
            writer.add(attention.query_projection.bias, bias[:d_model], prefix + "in_proj_bias[:d]")
            writer.add(attention.key_value_projection.bias, bias[d_model:],
                       prefix + "in_proj_bias[d:]")
    else:
        if weight is not None:
            writer.add(attention.qkv_projection.kernel, weight.T, prefix + "in_proj_weight",
                       weight.shape)
        writer.add(attention.qkv_projection.bias, bias, prefix + "in_proj_bias")
    _write_linear(writer, reader, prefix + "out_proj.", attention.output_projection)


def _write_linear(writer, reader, prefix, dense):
    weight = reader.get(prefix + "weight")
    if weight is not None:  # torch Linear (out, in) -> Dense kernel (in, out)
        writer.add(dense.kernel, weight.T, prefix + "weight", weight.shape)
    writer.add(dense.bias, reader.get(prefix + "bias"), prefix + "bias")


def _write_norm(writer, reader, prefix, norm):
    writer.add(norm.gamma, reader.get(prefix + "weight"), prefix + "weight")
    writer.add(norm.beta, reader.get(prefix + "bias"), prefix + "bias")


def from_torch_transformer(
    encoder,
    decoder,
    embedding,
    *,
    num_heads=None,
    ln_position=None,
    activation=None,
    layer_norm_epsilon=None,
    pad_id=0,
    dropout=None,
    scale_embeddings=True,
    position_layout="interleaved",
    max_length=1024,
    dtype=None,
    name=None,
):
    """Builds an `EncoderDecoder` from torch encoder and decoder stacks and a shared embedding.

    Sizes (vocabulary, width, layers, feed-forward width) come from tensor
    shapes. Heads, LayerNorm epsilon, post/pre-LN, activation and dropout come
    from the modules when modules are given, else from the arguments, else the
    torch defaults (post-LN, ReLU, epsilon 1e-5; `num_heads` has no default).
    An argument that contradicts a module raises.

    Args:
        encoder: an `nn.TransformerEncoder` or its state dict (`layers.{i}.*`,
            plus `norm.*` for pre-LN).
        decoder: an `nn.TransformerDecoder` or its state dict.
        embedding: the shared `(vocab, d_model)` matrix: an array, a tensor or
            an `nn.Embedding`; it embeds source and target and projects logits.
        num_heads: attention heads (needed for state dicts).
        ln_position: `"post"` (torch's `norm_first=False`) or `"pre"`.
        activation: `"relu"`, or `"gelu_exact"` for torch's (erf) `"gelu"`.
        layer_norm_epsilon: LayerNorm epsilon (torch's default 1e-5).
        pad_id: the id our model treats as padding; give torch
            `torch_key_padding_mask(ids, pad_id)` for the same batch.
        dropout: our dropout rate (default the modules', else 0.1).
        scale_embeddings: multiply embeddings by `sqrt(d_model)` (ours, the
            paper's); False if your torch model does not.
        position_layout: sinusoid layout, `"interleaved"` (paper) or
            `"concatenated"`; the torch model must add the same.
        max_length: our `max_length` (unused by sinusoids).
        dtype: Keras dtype policy of the new model (default: the global one).
        name: Keras name of the new model.

    Returns:
        An `EncoderDecoder` with the stacks' weights. With the torch model
        embedding as described, its logits equal
        `decoder(tgt, encoder(src)) @ embedding.T` in eval mode.

    Raises:
        ValueError: missing or unexpected tensors (e.g. `add_bias_kv`), a shape
            mismatch naming the tensor, a final LayerNorm a post-LN model has no
            place for, or settings the encoder and decoder disagree on.

    Example:
    >>> from torch import nn
    >>> encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(
    ...     32, 4, 64, batch_first=True), num_layers=2, enable_nested_tensor=False)
    >>> decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(
    ...     32, 4, 64, batch_first=True), num_layers=2)
    >>> ours = from_torch_transformer(encoder, decoder, nn.Embedding(100, 32), pad_id=0)
    >>> ours.config.num_encoder_layers, ours.config.block.num_heads, ours.config.block.ln_position
    (2, 4, 'post')
    """
    inferred = {"encoder": _module_settings(encoder), "decoder": _module_settings(decoder)}
    num_heads = _setting("num_heads", num_heads, inferred, None)
    if num_heads is None:
        raise ValueError(
            "The number of heads cannot be read from torch state dicts: pass `num_heads`."
        )
    ln_position = _setting("ln_position", ln_position, inferred, "post")
    activation = _setting("activation", activation, inferred, "relu")
    epsilon = _setting("layer_norm_epsilon", layer_norm_epsilon, inferred, 1e-5)
    dropout = _setting("dropout", dropout, inferred, 0.1)

    encoder_state = _common.as_mapping(encoder, "`encoder`")
    decoder_state = _common.as_mapping(decoder, "`decoder`")
    matrix = _embedding_matrix(embedding)
    vocab_size, d_model = matrix.shape
    num_encoder_layers = _common.layer_count(encoder_state, r"layers\.(\d+)\.", _ENCODER)
    num_decoder_layers = _common.layer_count(decoder_state, r"layers\.(\d+)\.", _DECODER)
    if "layers.0.linear1.weight" not in encoder_state:
        raise ValueError(f"{_ENCODER} is missing 'layers.0.linear1.weight'.")
    d_ff = int(_common.to_numpy(encoder_state["layers.0.linear1.weight"]).shape[0])
    _final_norm_check(encoder_state, ln_position, _ENCODER)
    _final_norm_check(decoder_state, ln_position, _DECODER)

    model = EncoderDecoder(
        vocab_size=int(vocab_size),
        num_layers=num_encoder_layers,
        num_encoder_layers=num_encoder_layers,
        num_decoder_layers=num_decoder_layers,
        d_model=int(d_model),
        num_heads=int(num_heads),
        d_ff=d_ff,
        max_length=max_length,
        ln_position=ln_position,
        position="sinusoidal",
        position_layout=position_layout,
        activation=activation,
        dropout=dropout,
        tie_embeddings=True,
        scale_embeddings=scale_embeddings,
        pad_id=pad_id,
        layer_norm_epsilon=epsilon,
        **_common.model_kwargs(dtype, name),
    )
    writer = _common.WeightWriter("torch Transformer conversion")
    writer.add(model.token_embedding.embeddings, matrix, "embedding")

    encoder_reader = _common.StateReader(encoder_state, _ENCODER)
    for i, block in enumerate(model.encoder_blocks):
        p = f"layers.{i}."
        _write_attention(writer, encoder_reader, p + "self_attn.", block.self_attention,
                         False, d_model)
        _write_linear(writer, encoder_reader, p + "linear1.", block.feed_forward.inner)
        _write_linear(writer, encoder_reader, p + "linear2.", block.feed_forward.outer)
        _write_norm(writer, encoder_reader, p + "norm1.", block.self_attention_norm)
        _write_norm(writer, encoder_reader, p + "norm2.", block.feed_forward_norm)
    if model.encoder_norm is not None:
        _write_norm(writer, encoder_reader, "norm.", model.encoder_norm)

    decoder_reader = _common.StateReader(decoder_state, _DECODER)
    for i, block in enumerate(model.decoder_blocks):
        p = f"layers.{i}."
        _write_attention(writer, decoder_reader, p + "self_attn.", block.self_attention,
                         False, d_model)
        _write_attention(writer, decoder_reader, p + "multihead_attn.", block.cross_attention,
                         True, d_model)
        _write_linear(writer, decoder_reader, p + "linear1.", block.feed_forward.inner)
        _write_linear(writer, decoder_reader, p + "linear2.", block.feed_forward.outer)
        _write_norm(writer, decoder_reader, p + "norm1.", block.self_attention_norm)
        _write_norm(writer, decoder_reader, p + "norm2.", block.cross_attention_norm)
        _write_norm(writer, decoder_reader, p + "norm3.", block.feed_forward_norm)
    if model.decoder_norm is not None:
        _write_norm(writer, decoder_reader, "norm.", model.decoder_norm)

    encoder_reader.check()
    decoder_reader.check()
    writer.apply()
    return model
