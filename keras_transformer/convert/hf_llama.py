"""Hugging Face Llama checkpoints (`LlamaForCausalLM`) <-> `DecoderOnly`, both directions.

A Llama block is our pre-LN block with `norm="rms"`, `feed_forward="swiglu"`,
`position="rotary"` and `use_bias=False`; grouped-query attention is
`num_kv_heads`. Every Llama projection is a `torch.nn.Linear`, whose weight is
`(out, in)`: the transpose of our `Dense` kernel `(in, out)`, so every matrix
is transposed. Llama's separate `q_proj`, `k_proj` and `v_proj` fill the
columns `[q | k | v]` of our fused `qkv` kernel (`(d, d + 2 H_kv d_head)`),
each split into heads in the same row-major order; query head h reads
key/value head `h // (H / H_kv)` in both. RoPE is the "rotate half" layout in
both libraries. The full table is in docs/conversion.md.

Padding: Hugging Face masks padding with an `attention_mask`; pass the same
booleans as our `padding_mask`. A plain Hugging Face forward numbers positions
`0..T-1` whatever the mask, as we do; `generate` numbers a left-padded row
from its first real token instead. RoPE scores depend on `p - s` only, so the
logits at real positions are the same either way.

Neither torch nor transformers is imported: a state dict is any mapping of
name -> array-like, torch tensors included, and files are read with
`safetensors.numpy`.
"""

import re

from keras_transformer.convert import _common
from keras_transformer.models.decoder_only import DecoderOnly

_FROM_CONFIG = "config"  # `pad_id`/`end_id` default: the config's token id

# Hugging Face's `hidden_act` names of the gate's activation we have: SiLU (SwiGLU).
_ACTIVATIONS = ("silu", "swish")
# Tensors older Llama checkpoints carry that are not weights (RoPE frequency buffers).
_BUFFERS = (r"(model\.)?layers\.\d+\.self_attn\.rotary_emb\.inv_freq",)
_WHAT = "Hugging Face Llama checkpoint"
_HF_DEFAULTS = dict(rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=2048)


def _name_table(model, prefix):
    """(Hugging Face name, our variable, transpose?, our columns) for every Llama weight."""
    p = prefix
    attention = model.blocks[0].self_attention
    d, kv = model.config.d_model, attention.kv_heads * attention.d_head
    columns = {"q": (0, d), "k": (d, d + kv), "v": (d + kv, d + 2 * kv)}
    table = [(f"{p}embed_tokens.weight", model.token_embedding.embeddings, False)]
    for i, block in enumerate(model.blocks):
        h = f"{p}layers.{i}."
        qkv = block.self_attention.qkv_projection
        output = block.self_attention.output_projection
        feed_forward = block.feed_forward
        mlp = (("gate_proj", feed_forward.gate), ("up_proj", feed_forward.inner),
               ("down_proj", feed_forward.outer))
        table.append((h + "input_layernorm.weight", block.self_attention_norm.scale, False))
        table += [(f"{h}self_attn.{x}_proj.weight", qkv.kernel, True, columns[x]) for x in "qkv"]
        table.append((h + "self_attn.o_proj.weight", output.kernel, True))
        table.append((h + "post_attention_layernorm.weight", block.feed_forward_norm.scale, False))
        table += [(f"{h}mlp.{name}.weight", layer.kernel, True) for name, layer in mlp]
        if model.config.block.use_bias:
            table += [(f"{h}self_attn.{x}_proj.bias", qkv.bias, False, columns[x]) for x in "qkv"]
            table.append((h + "self_attn.o_proj.bias", output.bias, False))
            table += [(f"{h}mlp.{name}.bias", layer.bias, False) for name, layer in mlp]
    table.append((f"{p}norm.weight", model.final_norm.scale, False))
    if not model.config.tie_embeddings:
        table.append(("lm_head.weight", model.output_projection.kernel, True))
    return table


# --- reading ------------------------------------------------------------------


def _rope_type(parameters):
    return parameters.get("rope_type", parameters.get("type", "default"))


def _rope_base(config):
    """RoPE's theta, from transformers 5's `rope_parameters` or 4's `rope_theta`/`rope_scaling`."""
    scaling = config.get("rope_scaling")
    if scaling is not None and _rope_type(scaling) != "default":
        raise ValueError(
            f"Llama config has rope_scaling={scaling!r}: scaled RoPE, which DecoderOnly "
            f"cannot express (it has the default RoPE only)."
        )
    parameters = config.get("rope_parameters")
    if parameters is None:
        return float(config.get("rope_theta", _HF_DEFAULTS["rope_theta"]))
    if "rope_theta" not in parameters and any(isinstance(v, dict) for v in parameters.values()):
        raise ValueError(
            f"Llama config has rope_parameters={parameters!r}, one RoPE per layer type; "
            f"DecoderOnly has the same RoPE in every layer."
        )
    if _rope_type(parameters) != "default":
        raise ValueError(
            f"Llama config has rope_parameters with rope_type={_rope_type(parameters)!r} "
            f"(scaled RoPE); DecoderOnly supports only rope_type='default'."
        )
    return float(parameters.get("rope_theta", config.get("rope_theta",
                                                         _HF_DEFAULTS["rope_theta"])))


def _check_config(config):
    """Raises, naming the field, for Llama options our DecoderOnly cannot express."""
    if config.get("model_type", "llama") != "llama":
        raise ValueError(
            f"Expected a Llama config (model_type 'llama'); received {config['model_type']!r}."
        )
    activation = config.get("hidden_act", "silu")
    if activation not in _ACTIVATIONS:
        raise ValueError(
            f"Llama config has hidden_act={activation!r}; DecoderOnly's SwiGLU gate is "
            f"'silu' only."
        )
    attention_bias = bool(config.get("attention_bias", False))
    mlp_bias = bool(config.get("mlp_bias", False))
    if attention_bias != mlp_bias:
        raise ValueError(
            f"Llama config has attention_bias={attention_bias} but mlp_bias={mlp_bias}; "
            f"DecoderOnly has one `use_bias` for both."
        )
    _rope_base(config)


def _token_id(config, field, vocab_size, argument):
    """Our id for a config token field: the argument unless `"config"`; a list's first id.

    A negative id (some configs' "none") is None.
    """
    if argument != _FROM_CONFIG:
        return argument
    value = config.get(field)
    if isinstance(value, (list, tuple)):  # Llama 3 lists several end ids
        value = value[0] if value else None
    if value is None or value < 0:
        return None
    if value >= vocab_size:
        raise ValueError(
            f"Llama config has {field}={value}, outside the vocabulary of {vocab_size} ids."
        )
    return int(value)


def _matrix(state, name):
    if name not in state:
        raise ValueError(f"{_WHAT} is missing {name!r}; is it a Llama checkpoint?")
    array = _common.to_numpy(state[name], name)
    if array.ndim != 2:
        raise ValueError(f"{_WHAT}: {name!r} must be a matrix; received shape {array.shape}.")
    return array


def from_hf_llama(
    source, config=None, *, num_heads=None, pad_id="config", end_id="config",
    dropout=0.0, dtype=None, name=None,
):
    """Builds a `DecoderOnly` holding a Hugging Face Llama checkpoint's weights.

    The sizes are read from tensor shapes (vocabulary, width, layers,
    feed-forward width, key/value heads once the heads are known); the
    number of heads, RMSNorm epsilon, RoPE base, context length, weight tying
    and token ids come from the config when there is one (`config.json` next
    to the file, the model object's `.config`, or `config`). Without a
    config, pass `num_heads`; the rest take `LlamaConfig`'s defaults
    (epsilon 1e-6, RoPE base 10,000, 2048 positions, no token ids). For a
    folder written by `LlamaForCausalLM.save_pretrained("llama_dir")`,
    `from_hf_llama("llama_dir")(ids, padding_mask=mask)` equals
    `LlamaForCausalLM.from_pretrained("llama_dir")(ids, attention_mask=mask).logits`
    at every real position.

    Args:
        source: a `model.safetensors` path, a `save_pretrained` folder (one
            file, or shards and an index), a state dict (mapping of Llama
            names, with or without the `model.` prefix, to arrays or torch
            tensors), or a `LlamaForCausalLM`/`LlamaModel` object (read via
            `state_dict()` and `.config`).
        config: Llama config as a dict, a `LlamaConfig`, or a path to
            `config.json`; overrides the one found with `source`.
        num_heads: query heads; required when there is no config.
        pad_id: our padding id: `"config"` (default) takes the config's
            `pad_token_id`; or an id, or None. Without a `padding_mask`, our
            model masks every key with this id, while Hugging Face masks only
            what `attention_mask` says: pass `padding_mask` to be sure.
        end_id: `generate`'s default stop id: `"config"` (default) takes
            the config's `eos_token_id` (the first of a list); or an id, or
            None.
        dropout: our residual/embedding dropout (Llama has none: 0.0).
        dtype: Keras dtype policy of the new model (default: the global one).
        name: Keras name of the new model.

    Returns:
        A `DecoderOnly` (pre-LN, RMSNorm, SwiGLU, RoPE, no biases unless the
        checkpoint has them) with Llama's weights.

    Raises:
        ValueError: missing or unexpected tensors, a shape mismatch (naming the
            tensor), or a config our model cannot express (naming the field:
            `hidden_act` other than SiLU, scaled RoPE in `rope_scaling` or
            `rope_parameters`, `head_dim` other than `hidden_size /
            num_attention_heads`, `attention_bias` unlike `mlp_bias`).

    Example:
    >>> import numpy as np
    >>> from keras import ops
    >>> import keras_transformer as kt
    >>> llama = kt.DecoderOnly.from_preset("llama_tiny")
    >>> state = hf_llama_state_dict(llama)  # a Llama state dict: name -> array or tensor
    >>> ours = from_hf_llama(state, hf_llama_config(llama))
    >>> ids = np.array([[5, 6, 7]])
    >>> float(np.max(np.abs(ops.convert_to_numpy(ours(ids) - llama(ids))))) < 1e-5
    True
    >>> from_hf_llama(state, num_heads=4).config.block.num_kv_heads  # no config: from k_proj
    2
    """
    state, found_config = _common.resolve_hf_source(source, "LlamaConfig")
    config = _common.hf_config_dict(config, "LlamaConfig") if config is not None else found_config
    config = config or {}
    _check_config(config)
    prefix = "model." if any(k.startswith("model.") for k in state) else ""
    embedding = _matrix(state, f"{prefix}embed_tokens.weight")
    k_proj = _matrix(state, f"{prefix}layers.0.self_attn.k_proj.weight")
    gate = _matrix(state, f"{prefix}layers.0.mlp.gate_proj.weight")
    vocab_size, d_model = embedding.shape
    num_layers = _common.layer_count(state, re.escape(prefix) + r"layers\.(\d+)\.", _WHAT)
    for key, value in (("vocab_size", vocab_size), ("hidden_size", d_model),
                       ("num_hidden_layers", num_layers), ("intermediate_size", gate.shape[0])):
        if config.get(key) is not None and config[key] != value:
            raise ValueError(f"Llama config has {key}={config[key]} but the tensors give {value}.")
    num_heads = _common.agree("num_heads", config.get("num_attention_heads"), num_heads)
    if num_heads is None:
        raise ValueError(
            "The number of heads cannot be read from tensor shapes: pass `num_heads` "
            "or a `config` (Llama 2 7B has 32)."
        )
    if d_model % num_heads:
        raise ValueError(f"`num_heads`={num_heads} does not divide the width {d_model}.")
    d_head = d_model // num_heads
    if config.get("head_dim") is not None and config["head_dim"] != d_head:
        raise ValueError(
            f"Llama config has head_dim={config['head_dim']}, not hidden_size / "
            f"num_attention_heads = {d_head}; DecoderOnly's heads are d_model / num_heads wide."
        )
    if k_proj.shape[0] % d_head:
        raise ValueError(
            f"{_WHAT}: k_proj has {k_proj.shape[0]} rows, not a multiple of the head width "
            f"{d_head}."
        )
    num_kv_heads = k_proj.shape[0] // d_head
    if config.get("num_key_value_heads") not in (None, num_kv_heads):
        raise ValueError(
            f"Llama config has num_key_value_heads={config['num_key_value_heads']} but the "
            f"tensors give {num_kv_heads}."
        )
    if "attention_bias" in config:
        use_bias = bool(config["attention_bias"])
    else:  # no config: biases if stored (both kinds, or an error names the odd ones out)
        use_bias = f"{prefix}layers.0.self_attn.q_proj.bias" in state
    reader = _common.StateReader(state, _WHAT, ignore=_BUFFERS)
    tie = _common.tied_embeddings(config, state, "lm_head.weight", embedding, reader)
    model = DecoderOnly(
        vocab_size=int(vocab_size),
        num_layers=num_layers,
        d_model=int(d_model),
        num_heads=int(num_heads),
        d_ff=int(gate.shape[0]),
        max_length=int(config.get("max_position_embeddings")
                       or _HF_DEFAULTS["max_position_embeddings"]),
        ln_position="pre",
        position="rotary",
        norm="rms",
        feed_forward="swiglu",
        activation="silu",  # the gate's: what the llama presets say too
        use_bias=use_bias,
        num_kv_heads=int(num_kv_heads),
        rotary_base=_rope_base(config),
        dropout=float(dropout),
        attention_dropout=float(config.get("attention_dropout") or 0.0),
        tie_embeddings=tie,
        scale_embeddings=False,
        pad_id=_token_id(config, "pad_token_id", vocab_size, pad_id),
        end_id=_token_id(config, "eos_token_id", vocab_size, end_id),
        layer_norm_epsilon=float(config.get("rms_norm_eps", _HF_DEFAULTS["rms_norm_eps"])),
        **_common.model_kwargs(dtype, name),
    )
    _common.assign_table(_name_table(model, prefix), reader, _WHAT)
    return model


# --- writing ------------------------------------------------------------------


def _check_exportable(model):
    if not isinstance(model, DecoderOnly):
        raise ValueError(f"Only a DecoderOnly exports to Llama; received {type(model).__name__}.")
    _common.check_exportable(
        model.config, "Llama",
        required=dict(position="rotary", scale_embeddings=False, attention_window=None,
                      ln_position="pre", norm="rms", feed_forward="swiglu",
                      rotary_fraction=1.0),
        # Written; or generation and training settings (the ids, residual dropout, remat);
        # or settings the required toggles rule out (the gate names its own activation).
        handled=("num_heads", "num_kv_heads", "d_ff", "layer_norm_epsilon", "use_bias",
                 "attention_dropout", "rotary_base", "max_length", "tie_embeddings", "pad_id",
                 "start_id", "end_id", "dropout", "remat", "activation", "banded_layers",
                 "position_layout"),
    )


def hf_llama_config(model):
    """The Hugging Face `LlamaConfig` fields (a dict) of a Llama-shaped `DecoderOnly`.

    `eos_token_id` is our `end_id` and `pad_token_id` our `pad_id`;
    `bos_token_id` is None (our model has no start id). The RoPE base is
    written both as transformers 5's `rope_parameters` and as transformers
    4's `rope_theta`. Our residual dropout has no Llama field and is not
    written (it matters in training only).

    Args:
        model: a `DecoderOnly` with pre-LN, RMSNorm, SwiGLU, rotary positions
            over the whole head, no embedding scaling, no qk-norm and no
            banded layers (`llama_tiny`'s toggles).

    Returns:
        A JSON-serialisable dict; `LlamaConfig(**hf_llama_config(model))`
        describes the same architecture.

    Example:
    >>> import keras_transformer as kt
    >>> config = hf_llama_config(kt.DecoderOnly.from_preset("llama_tiny"))
    >>> config["num_hidden_layers"], config["num_key_value_heads"], config["hidden_act"]
    (2, 2, 'silu')
    """
    _check_exportable(model)
    c = model.config
    attention = model.blocks[0].self_attention
    return {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "vocab_size": c.vocab_size,
        "hidden_size": c.d_model,
        "intermediate_size": c.block.d_ff,
        "num_hidden_layers": c.num_decoder_layers,
        "num_attention_heads": c.block.num_heads,
        "num_key_value_heads": attention.kv_heads,
        "head_dim": attention.d_head,
        "hidden_act": "silu",
        "max_position_embeddings": c.max_length,
        "rms_norm_eps": c.block.layer_norm_epsilon,
        "rope_parameters": {"rope_type": "default", "rope_theta": c.block.rotary_base},
        "rope_theta": c.block.rotary_base,
        "attention_bias": c.block.use_bias,
        "mlp_bias": c.block.use_bias,
        "attention_dropout": c.block.attention_dropout,
        "tie_word_embeddings": c.tie_embeddings,
        "initializer_range": 0.02,
        "pretraining_tp": 1,
        "use_cache": True,
        "bos_token_id": None,
        "eos_token_id": c.end_id,
        "pad_token_id": c.pad_id,
    }


def hf_llama_state_dict(model):
    """Our weights under `LlamaForCausalLM`'s names, as float32 NumPy arrays.

    Args:
        model: an exportable `DecoderOnly` (see `hf_llama_config`).

    Returns:
        A dict `name -> np.ndarray`, names prefixed `model.`; `lm_head.weight`
        only when the output projection is untied. Matrices are `(out, in)`,
        as `torch.nn.Linear` stores them.

    Example:
    >>> import keras_transformer as kt
    >>> state = hf_llama_state_dict(kt.DecoderOnly.from_preset("llama_tiny"))
    >>> state["model.layers.0.self_attn.k_proj.weight"].shape  # 2 KV heads of 8
    (16, 32)
    """
    _check_exportable(model)
    return _common.export_table(_name_table(model, "model."))


def save_hf_llama(model, directory):
    """Writes `model.safetensors` and `config.json` that `LlamaForCausalLM.from_pretrained` loads.

    Args:
        model: an exportable `DecoderOnly` (see `hf_llama_config`).
        directory: folder to write (created if needed).

    Returns:
        The path of the written `model.safetensors`. Hugging Face loads the
        folder with `transformers.LlamaForCausalLM.from_pretrained(directory)`.

    Example:
    >>> import os, tempfile
    >>> import keras_transformer as kt
    >>> llama = kt.DecoderOnly.from_preset("llama_tiny")
    >>> directory = tempfile.mkdtemp()
    >>> path = save_hf_llama(llama, directory)
    >>> sorted(os.listdir(directory))
    ['config.json', 'model.safetensors']
    >>> from_hf_llama(directory).count_params() == llama.count_params()  # reads config.json
    True
    """
    return _common.save_hf_folder(
        hf_llama_state_dict(model), hf_llama_config(model), directory, "save_hf_llama"
    )
