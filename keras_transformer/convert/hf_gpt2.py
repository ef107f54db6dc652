"""Hugging Face GPT-2 checkpoints <-> `DecoderOnly`, both directions.

Hugging Face's GPT-2 stores its projections as `Conv1D` layers whose weights
are `(in, out)`: the transpose of a `torch.nn.Linear` weight, and exactly the
layout of a Keras `Dense` kernel. So every GPT-2 matrix is copied as is; only
an untied `lm_head` (a real `nn.Linear`, `(vocab, d)`) is transposed. GPT-2's
fused `c_attn` is `[q | k | v]` along its output axis, each split into
`(heads, d_head)`: our `qkv` layout. The full table is in docs/conversion.md.

Padding: GPT-2 has no padding token. Hugging Face masks padding with an
`attention_mask` argument; our `DecoderOnly` takes the same mask, as
bools, as `padding_mask=`, or else masks every key whose id is `pad_id`. Conversions
default to `pad_id=None` (no id is padding), which is exact for right-padded
batches (the causal mask already hides later pad positions from every real
one); for left-padded batches pass `padding_mask`, or `pad_id` for an id you
use only as padding.

Neither torch nor transformers is imported: a state dict is any mapping of
name -> array-like, torch tensors included, and files are read with
`safetensors.numpy`.
"""

import re

from keras_transformer.convert import _common
from keras_transformer.models.decoder_only import DecoderOnly

# Hugging Face `activation_function` -> our `activation`. GPT-2's "gelu_new" is
# the tanh approximation (our "gelu"); Hugging Face's "gelu" is the erf form.
HF_TO_OURS_ACTIVATION = {
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu": "gelu_exact",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}
OURS_TO_HF_ACTIVATION = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "silu": "silu"}

# Tensors some GPT-2 checkpoints carry that are not weights (causal-mask buffers).
_BUFFERS = (r"(transformer\.)?h\.\d+\.attn\.bias", r"(transformer\.)?h\.\d+\.attn\.masked_bias")
_WHAT = "Hugging Face GPT-2 checkpoint"


def _name_table(model, prefix):
    """(Hugging Face name, our variable, transpose?) for every weight of a GPT-2-shaped model."""
    p = prefix
    table = [
        (f"{p}wte.weight", model.token_embedding.embeddings, False),
        (f"{p}wpe.weight", model.position_embedding.table, False),
    ]
    for i, block in enumerate(model.blocks):
        h = f"{p}h.{i}."
        attention, feed_forward = block.self_attention, block.feed_forward
        table += [
            (h + "ln_1.weight", block.self_attention_norm.gamma, False),
            (h + "ln_1.bias", block.self_attention_norm.beta, False),
            (h + "attn.c_attn.weight", attention.qkv_projection.kernel, False),
            (h + "attn.c_attn.bias", attention.qkv_projection.bias, False),
            (h + "attn.c_proj.weight", attention.output_projection.kernel, False),
            (h + "attn.c_proj.bias", attention.output_projection.bias, False),
            (h + "ln_2.weight", block.feed_forward_norm.gamma, False),
            (h + "ln_2.bias", block.feed_forward_norm.beta, False),
            (h + "mlp.c_fc.weight", feed_forward.inner.kernel, False),
            (h + "mlp.c_fc.bias", feed_forward.inner.bias, False),
            (h + "mlp.c_proj.weight", feed_forward.outer.kernel, False),
            (h + "mlp.c_proj.bias", feed_forward.outer.bias, False),
        ]
    table += [
        (f"{p}ln_f.weight", model.final_norm.gamma, False),
        (f"{p}ln_f.bias", model.final_norm.beta, False),
    ]
    if not model.config.tie_embeddings:
        table.append(("lm_head.weight", model.output_projection.kernel, True))
    return table


# --- reading ------------------------------------------------------------------


def _check_config(config):
    """Raises for GPT-2 options our DecoderOnly cannot express."""
    if config.get("model_type", "gpt2") != "gpt2":
        raise ValueError(
            f"Expected a GPT-2 config (model_type 'gpt2'); received {config['model_type']!r}."
        )
    unsupported = {
        "scale_attn_weights": (False, "unscaled attention scores"),
        "scale_attn_by_inverse_layer_idx": (True, "scores scaled by 1 / (layer index + 1)"),
        "add_cross_attention": (True, "cross-attention in a decoder-only model"),
    }
    for key, (bad, meaning) in unsupported.items():
        if config.get(key, not bad) == bad:
            raise ValueError(
                f"GPT-2 config has {key}={bad} ({meaning}); DecoderOnly cannot express it."
            )
    activation = config.get("activation_function", "gelu_new")
    if activation not in HF_TO_OURS_ACTIVATION:
        raise ValueError(
            f"GPT-2 config has activation_function={activation!r}; DecoderOnly supports "
            f"{', '.join(repr(a) for a in HF_TO_OURS_ACTIVATION)}."
        )


def from_hf_gpt2(
    source, config=None, *, num_heads=None, pad_id=None, dropout=None, dtype=None, name=None
):
    """Builds a `DecoderOnly` holding a Hugging Face GPT-2 checkpoint's weights.

    Everything but the number of heads is read from tensor shapes (vocabulary,
    width, positions, layers, feed-forward width); the heads, LayerNorm epsilon,
    activation, dropout rates and weight tying come from the config when there
    is one (`config.json` next to the file, the model object's `.config`, or
    `config`). Without a config, pass `num_heads`; the rest take GPT-2's values.
    For a checkpoint written by `GPT2LMHeadModel.save_pretrained("gpt2_dir")`,
    `from_hf_gpt2("gpt2_dir/model.safetensors")(ids)` equals
    `GPT2LMHeadModel.from_pretrained("gpt2_dir")(ids).logits`.

    Args:
        source: a `model.safetensors` path, a `save_pretrained` folder, a
            state dict (mapping of GPT-2 names, with or without the
            `transformer.` prefix, to arrays or torch tensors), or a
            `GPT2LMHeadModel`/`GPT2Model` object (read via `state_dict()`).
        config: GPT-2 config as a dict, a `GPT2Config`, or a path to
            `config.json`; overrides the one found with `source`.
        num_heads: attention heads; required when there is no config.
        pad_id: id our model masks as padding (keys), or None (default: GPT-2
            has no padding token; right padding needs no mask under causality).
        dropout: our residual/embedding dropout; default the config's
            `resid_pdrop`, else 0.1.
        dtype: Keras dtype policy of the new model (default: the global one).
        name: Keras name of the new model.

    Returns:
        A `DecoderOnly` (pre-LN, learned positions) with GPT-2's weights; its
        logits equal `GPT2LMHeadModel`'s at every non-padding position.

    Raises:
        ValueError: missing or unexpected tensors, a shape mismatch (naming the
            tensor), or a config our model cannot express.

    Example:
    >>> import numpy as np
    >>> from keras import ops
    >>> import keras_transformer as kt
    >>> gpt = kt.DecoderOnly.from_preset("gpt2_tiny")
    >>> state = hf_gpt2_state_dict(gpt)  # a GPT-2 state dict: name -> array or tensor
    >>> ours = from_hf_gpt2(state, num_heads=4)  # no config given: name the heads
    >>> ids = np.array([[5, 6, 7]])
    >>> float(np.max(np.abs(ops.convert_to_numpy(ours(ids) - gpt(ids))))) < 1e-5
    True
    """
    state, found_config = _common.resolve_hf_source(source, "GPT2Config")
    config = _common.hf_config_dict(config, "GPT2Config") if config is not None else found_config
    if config is not None:
        _check_config(config)
    prefix = "transformer." if any(k.startswith("transformer.") for k in state) else ""
    reader = _common.StateReader(state, _WHAT, ignore=_BUFFERS)
    for key in (f"{prefix}wte.weight", f"{prefix}wpe.weight", f"{prefix}h.0.mlp.c_fc.weight"):
        if key not in state:
            raise ValueError(f"{_WHAT} is missing {key!r}; is it a GPT-2 checkpoint?")
    wte = _common.to_numpy(state[f"{prefix}wte.weight"], "wte.weight")
    wpe = _common.to_numpy(state[f"{prefix}wpe.weight"], "wpe.weight")
    c_fc = _common.to_numpy(state[f"{prefix}h.0.mlp.c_fc.weight"], "h.0.mlp.c_fc.weight")
    if wte.ndim != 2 or wpe.ndim != 2 or c_fc.ndim != 2:
        raise ValueError(f"{_WHAT}: wte, wpe and c_fc weights must be matrices.")
    vocab_size, d_model = wte.shape
    num_layers = _common.layer_count(state, re.escape(prefix) + r"h\.(\d+)\.", _WHAT)
    config = config or {}
    for key, value in (("vocab_size", vocab_size), ("n_embd", d_model),
                       ("n_positions", wpe.shape[0]), ("n_layer", num_layers),
                       ("n_inner", c_fc.shape[1])):
        if config.get(key) is not None and config[key] != value:
            raise ValueError(
                f"GPT-2 config has {key}={config[key]} but the tensors give {value}."
            )
    num_heads = _common.agree("num_heads", config.get("n_head"), num_heads)
    if num_heads is None:
        raise ValueError(
            "The number of heads cannot be read from tensor shapes: pass `num_heads` "
            "or a `config` (GPT-2 small has 12)."
        )
    tie = _common.tied_embeddings(config, state, "lm_head.weight", wte, reader)
    model = DecoderOnly(
        vocab_size=int(vocab_size),
        num_layers=num_layers,
        d_model=int(d_model),
        num_heads=int(num_heads),
        d_ff=int(c_fc.shape[1]),
        max_length=int(wpe.shape[0]),
        ln_position="pre",
        position="learned",
        activation=HF_TO_OURS_ACTIVATION[config.get("activation_function", "gelu_new")],
        dropout=float(config.get("resid_pdrop", 0.1) if dropout is None else dropout),
        attention_dropout=float(config.get("attn_pdrop", 0.0)),
        tie_embeddings=tie,
        scale_embeddings=False,
        pad_id=pad_id,
        layer_norm_epsilon=float(config.get("layer_norm_epsilon", 1e-5)),
        **_common.model_kwargs(dtype, name),
    )
    _common.assign_table(_name_table(model, prefix), reader, _WHAT)
    return model


# --- writing ------------------------------------------------------------------


def _check_exportable(model):
    if not isinstance(model, DecoderOnly):
        raise ValueError(f"Only a DecoderOnly exports to GPT-2; received {type(model).__name__}.")
    c = model.config
    _common.check_exportable(
        c, "GPT-2",
        required=dict(position="learned", scale_embeddings=False, attention_window=None,
                      ln_position="pre", norm="layer", feed_forward="mlp", use_bias=True,
                      num_kv_heads=c.block.num_heads if c.block.num_kv_heads else None),
        # Written; or generation and training settings (the ids, remat); or settings of
        # toggles `required` rules out (RoPE's, the band's, the sinusoids' layout).
        handled=("num_heads", "d_ff", "activation", "layer_norm_epsilon", "dropout",
                 "attention_dropout", "max_length", "tie_embeddings", "pad_id", "start_id",
                 "end_id", "remat", "rotary_base", "rotary_fraction", "banded_layers",
                 "position_layout"),
    )
    if c.block.activation not in OURS_TO_HF_ACTIVATION:
        raise ValueError(
            f"GPT-2 cannot express activation={c.block.activation!r}; exportable: "
            f"{', '.join(repr(a) for a in OURS_TO_HF_ACTIVATION)}."
        )


def hf_gpt2_config(model):
    """The Hugging Face `GPT2Config` fields (a dict) of a GPT-2-shaped `DecoderOnly`.

    `bos_token_id`/`eos_token_id` are set to the last id (GPT-2's
    `<|endoftext|>` is its last id, 50256) and `pad_token_id` to our `pad_id`.

    Args:
        model: a `DecoderOnly` with pre-LN, learned positions, no embedding
            scaling and no banded layers.

    Returns:
        A JSON-serialisable dict; `GPT2Config(**hf_gpt2_config(model))`
        describes the same architecture.

    Example:
    >>> import keras_transformer as kt
    >>> config = hf_gpt2_config(kt.DecoderOnly.from_preset("gpt2_tiny"))
    >>> config["n_layer"], config["n_embd"], config["activation_function"]
    (2, 32, 'gelu_new')
    """
    _check_exportable(model)
    c = model.config
    return {
        "model_type": "gpt2",
        "architectures": ["GPT2LMHeadModel"],
        "vocab_size": c.vocab_size,
        "n_positions": c.max_length,
        "n_embd": c.d_model,
        "n_layer": c.num_decoder_layers,
        "n_head": c.block.num_heads,
        "n_inner": c.block.d_ff,
        "activation_function": OURS_TO_HF_ACTIVATION[c.block.activation],
        "resid_pdrop": c.block.dropout,
        "embd_pdrop": c.block.dropout,
        "attn_pdrop": c.block.attention_dropout,
        "layer_norm_epsilon": c.block.layer_norm_epsilon,
        "initializer_range": 0.02,
        "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False,
        "reorder_and_upcast_attn": False,
        "tie_word_embeddings": c.tie_embeddings,
        "bos_token_id": c.vocab_size - 1,
        "eos_token_id": c.vocab_size - 1,
        "pad_token_id": c.pad_id,
    }


def hf_gpt2_state_dict(model):
    """Our weights under `GPT2LMHeadModel`'s names, as float32 NumPy arrays.

    Args:
        model: an exportable `DecoderOnly` (see `hf_gpt2_config`).

    Returns:
        A dict `name -> np.ndarray`, names prefixed `transformer.`;
        `lm_head.weight` only when the output projection is untied.

    Example:
    >>> import keras_transformer as kt
    >>> state = hf_gpt2_state_dict(kt.DecoderOnly.from_preset("gpt2_tiny"))
    >>> state["transformer.h.0.attn.c_attn.weight"].shape
    (32, 96)
    """
    _check_exportable(model)
    return _common.export_table(_name_table(model, "transformer."))


def save_hf_gpt2(model, directory):
    """Writes `model.safetensors` and `config.json` that `GPT2LMHeadModel.from_pretrained` loads.

    Args:
        model: an exportable `DecoderOnly` (see `hf_gpt2_config`).
        directory: folder to write (created if needed).

    Returns:
        The path of the written `model.safetensors`. Hugging Face loads the
        folder with `transformers.GPT2LMHeadModel.from_pretrained(directory)`.

    Example:
    >>> import os, tempfile
    >>> import keras_transformer as kt
    >>> gpt = kt.DecoderOnly.from_preset("gpt2_tiny")
    >>> directory = tempfile.mkdtemp()
    >>> path = save_hf_gpt2(gpt, directory)
    >>> sorted(os.listdir(directory))
    ['config.json', 'model.safetensors']
    >>> from_hf_gpt2(path).count_params() == gpt.count_params()  # reads config.json too
    True
    """
    return _common.save_hf_folder(
        hf_gpt2_state_dict(model), hf_gpt2_config(model), directory, "save_hf_gpt2"
    )
