"""Data and Megatron-style model parallelism through `keras.distribution`.

Nothing here runs a collective by hand: these functions describe where each
weight lives on a device mesh, and Keras (JAX backend) hands those shardings
to XLA, whose GSPMD partitioner inserts the communication the layouts imply.
`keras.distribution` is implemented for JAX; the TensorFlow and PyTorch
backends ignore it (see docs/scaling_out.md for what they offer instead).

The model-parallel layout is Megatron-LM's (Shoeybi et al., 2019). Each
sub-layer is a pair of matrices around something that works per column:

* attention: Q/K/V projection -> per-head attention -> output projection;
* feed-forward: inner matrix -> elementwise activation -> outer matrix.

The first matrix of a pair is split by output columns over the model axis:
every device multiplies the full (replicated) input by its own columns, with
no communication, and holds a slice of the hidden features. The activation
(or each head's attention) acts on that slice alone. The second matrix is
split by input rows, matching that slice, so every device computes a partial
product of the full output; one all-reduce (a sum over the model axis) makes
it whole before the replicated bias, residual and LayerNorm. Splitting the
first matrix by rows instead would need an all-reduce before the
non-linearity as well: column-then-row is what keeps it to one all-reduce
per sub-layer in the forward pass (and one in the backward pass).

Rules of `layout_map` (any other weight is replicated on every device):

* column-parallel, kernel `(None, model)` and bias `(model,)`:
  `self_attention/qkv`, `cross_attention/query`, `cross_attention/key_value`,
  `feed_forward/inner`, `feed_forward/gate` (gated feed-forwards);
* row-parallel, kernel `(model, None)`, bias replicated:
  `self_attention/output`, `cross_attention/output`, `feed_forward/outer`;
* `token_embedding/embeddings` `(vocab, d_model)`: `(model, None)` with
  `embedding="vocab"`, `(None, model)` with `embedding="model"`; an untied
  `output_projection/kernel` `(d_model, vocab)` is split over the same
  dimension (`(None, model)`, resp. `(model, None)`).

The fused Q/K/V kernel `(d_model, 3 d_model)` keeps its column order
`[q | k | v]` (GPT-2's `c_attn` layout, which the weight converters copy as
is) and is split into contiguous column blocks, as is the fused
cross-attention `key_value` kernel `[k | v]`. A device's block is therefore
not, in general, the Q, K and V of a whole set of heads (with 4 devices,
device 0 holds the first three quarters of Q): XLA re-lays the projection out
before attention, an extra all-to-all per attention layer. Results are exact
either way; head-local shards would need a head-major kernel layout, which
we chose not to impose on checkpoints. The cross-attention `query` kernel
and the feed-forward matrices have no such issue (with `num_heads` divisible
by the model axis, a `query` shard is a whole set of heads).

Every split dimension must be divisible by the model axis size: `d_model`,
`d_ff`, and `vocab_size` with `embedding="vocab"` (pass `config` to check
this up front; GPT-2's 50,257 tokens need `embedding="model"` or a padded
vocabulary).
"""

import re

import keras

from keras_transformer import validation
from keras_transformer.models.config import TransformerConfig

BATCH_AXIS = "batch"
MODEL_AXIS = "model"
EMBEDDING_SPLITS = ("vocab", "model")

__all__ = [
    "check_batch_axis", "check_split", "data_parallel", "layout_map", "make_mesh",
    "megatron_axes", "model_parallel",
]

# Variable paths of both model families, e.g.
# "decoder_only/block_0/self_attention/qkv/kernel" or
# "encoder_decoder/decoder_block_1/cross_attention/key_value/bias".
_COLUMN_PARALLEL = (
    r".*/(?:self_attention/qkv|cross_attention/query|cross_attention/key_value"
    r"|feed_forward/inner|feed_forward/gate)"
)
_ROW_PARALLEL = r".*/(?:self_attention/output|cross_attention/output|feed_forward/outer)"
_TOKEN_EMBEDDING = r".*/token_embedding/embeddings"
_OUTPUT_PROJECTION = r".*/output_projection/kernel"


def _all_devices(name):
    """Every device `keras.distribution` sees, or a ValueError naming `name`."""
    if keras.backend.backend() != "jax":
        raise ValueError(
            f"`{name}` must be given on the {keras.backend.backend()} backend: "
            "keras.distribution lists and shards over devices on the JAX backend."
        )
    return keras.distribution.list_devices()


def _check_devices(name, devices):
    """`devices` as a non-empty list (default: every device)."""
    devices = _all_devices(name) if devices is None else list(devices)
    if not devices:
        raise ValueError(f"`{name}` must name at least one device; received {devices!r}.")
    return devices


def make_mesh(model_size, devices=None, batch_axis=BATCH_AXIS, model_axis=MODEL_AXIS):
    """A 2-D `(batch, model)` device mesh: data parallel by model parallel.

    Args:
        model_size: devices each model replica is split over (the model axis);
            must divide the number of devices. 1 is pure data parallelism.
        devices: device names such as `"gpu:0"` (default: every device of
            the default type, `keras.distribution.list_devices()`, JAX only).
        batch_axis: name of the data-parallel axis.
        model_axis: name of the model-parallel axis.

    Returns:
        A `keras.distribution.DeviceMesh` of shape
        `(len(devices) // model_size, model_size)`.

    Example:
    >>> mesh = make_mesh(4, devices=[f"cpu:{i}" for i in range(8)])
    >>> mesh.shape, mesh.axis_names
    ((2, 4), ('batch', 'model'))
    """
    devices = _check_devices("devices", devices)
    model_size = validation.check_int("model_size", model_size)
    validation.check_divisible("len(devices)", len(devices), "model_size", model_size)
    if batch_axis == model_axis:
        raise ValueError(
            f"`batch_axis` and `model_axis` must differ; both are {batch_axis!r}."
        )
    shape = (len(devices) // model_size, model_size)
    return keras.distribution.DeviceMesh(shape, (batch_axis, model_axis), devices=devices)


def _check_mesh(mesh, model_axis):
    """The model axis size, after checking `mesh` and `model_axis`."""
    if not isinstance(mesh, keras.distribution.DeviceMesh):
        raise ValueError(
            "`mesh` must be a keras.distribution.DeviceMesh (see make_mesh); received "
            f"{type(mesh).__name__}."
        )
    if model_axis not in mesh.axis_names:
        raise ValueError(
            f"`model_axis` must be one of the mesh's axis names {tuple(mesh.axis_names)}; "
            f"received {model_axis!r}."
        )
    return mesh.shape[list(mesh.axis_names).index(model_axis)]


def check_split(config, embedding, model_size):
    """Every dimension the layout splits must divide evenly over the model axis.

    Args:
        config: a `TransformerConfig`, or None to check nothing.
        embedding: `"vocab"` or `"model"`; see `layout_map`.
        model_size: devices of the model axis.

    Raises:
        ValueError: naming the first dimension that does not divide.
    """
    if config is None:
        return
    if not isinstance(config, TransformerConfig):
        raise ValueError(
            "`config` must be None or a TransformerConfig (e.g. `model.config` or "
            f"`keras_transformer.models.preset_config(name)`); received "
            f"{type(config).__name__}."
        )
    kv_width = config.block.kv_heads * (config.d_model // config.block.num_heads)
    split = {"d_model": config.d_model, "d_ff": config.block.d_ff,
             "num_kv_heads x d_head (key and value columns)": kv_width}
    if embedding == "vocab":
        split["vocab_size"] = config.vocab_size
    for name, size in split.items():
        if size % model_size:
            hint = " (or pass embedding='model')" if name == "vocab_size" else ""
            raise ValueError(
                f"`{name}` ({size}) must be divisible by the model axis size "
                f"({model_size}) to split it over the mesh{hint}."
            )


def _embedding_layouts(embedding, model_axis):
    """(token embedding `(vocab, d)`, untied output projection `(d, vocab)`) layouts."""
    if embedding == "vocab":
        return (model_axis, None), (None, model_axis)
    return (None, model_axis), (model_axis, None)


def megatron_axes(path, ndim, model_axis=MODEL_AXIS, embedding="vocab"):
    """The model-parallel axes of the weight at `path`: `layout_map`'s rule, without a mesh.

    Args:
        path: a variable path such as `"gpt/block_0/self_attention/qkv/kernel"`.
        ndim: the weight's rank (a replicated weight gets `ndim` Nones).
        model_axis: the name of the model axis.
        embedding: `"vocab"` or `"model"`; see `layout_map`.

    Returns:
        A tuple of one mesh axis name or None per dimension.

    Example:
    >>> megatron_axes("gpt/block_0/feed_forward/outer/kernel", 2)
    ('model', None)
    >>> megatron_axes("gpt/final_norm/gamma", 1)
    (None,)
    """
    for pattern, axes in _megatron_rules(model_axis, embedding).items():
        if re.fullmatch(pattern, path):  # as keras.distribution.LayoutMap matches
            return axes
    return (None,) * ndim


def _megatron_rules(model_axis, embedding):
    """`{path pattern: axes}` of the model-parallel layout (module docstring)."""
    token_embedding, output_projection = _embedding_layouts(embedding, model_axis)
    return {
        _COLUMN_PARALLEL + "/kernel": (None, model_axis),
        _COLUMN_PARALLEL + "/bias": (model_axis,),
        _ROW_PARALLEL + "/kernel": (model_axis, None),
        _TOKEN_EMBEDDING: token_embedding,
        _OUTPUT_PROJECTION: output_projection,
    }


def layout_map(mesh, model_axis=MODEL_AXIS, embedding="vocab", config=None):
    """Megatron-style `keras.distribution.LayoutMap` for our models on `mesh`.

    Q/K/V and the first feed-forward matrix are split by output columns over
    `model_axis`, the attention output and the second feed-forward matrix by
    input rows, the token embedding (and an untied output projection) over
    the vocabulary or the model dimension; everything else is replicated.
    The module docstring explains the split and the fused Q/K/V choice. The
    keys are regular expressions matching `variable.path` in both
    `DecoderOnly` and `EncoderDecoder`, whatever the model's name.

    Args:
        mesh: a `keras.distribution.DeviceMesh` (e.g. from `make_mesh`).
        model_axis: the mesh axis weights are split over.
        embedding: `"vocab"` (split the token embedding by vocabulary rows,
            Megatron's choice: the tied logits come out split by vocabulary
            too) or `"model"` (split it by `d_model` columns).
        config: optional `TransformerConfig` to check that every split
            dimension divides evenly over the model axis.

    Returns:
        A `keras.distribution.LayoutMap`; pass it to
        `keras.distribution.ModelParallel` (or use `model_parallel`).

    Example:
    >>> mesh = make_mesh(4, devices=[f"cpu:{i}" for i in range(8)])
    >>> layouts = layout_map(mesh)
    >>> layouts["decoder_only/block_0/self_attention/qkv/kernel"].axes
    (None, 'model')
    >>> layouts["encoder_decoder/decoder_block_0/feed_forward/outer/kernel"].axes
    ('model', None)
    >>> layouts["decoder_only/token_embedding/embeddings"].axes
    ('model', None)
    >>> layouts["decoder_only/final_norm/gamma"] is None  # replicated
    True
    """
    model_size = _check_mesh(mesh, model_axis)
    embedding = validation.check_choice("embedding", embedding, EMBEDDING_SPLITS)
    check_split(config, embedding, model_size)
    layouts = keras.distribution.LayoutMap(mesh)
    for pattern, axes in _megatron_rules(model_axis, embedding).items():
        layouts[pattern] = axes
    return layouts


def model_parallel(
    mesh, batch_axis=BATCH_AXIS, model_axis=MODEL_AXIS, embedding="vocab", config=None,
    auto_shard_dataset=True,
):
    """`keras.distribution.ModelParallel` with `layout_map`'s layouts.

    Batches are split over `batch_axis`, weights over `model_axis`. Create
    the model (and compile it) inside `distribution.scope()`, or after
    `keras.distribution.set_distribution(distribution)`.

    Args:
        mesh: a `keras.distribution.DeviceMesh` (e.g. from `make_mesh`).
        batch_axis: the mesh axis the batch is split over.
        model_axis: the mesh axis weights are split over.
        embedding: `"vocab"` or `"model"`; see `layout_map`.
        config: optional `TransformerConfig` to check divisibility.
        auto_shard_dataset: with several processes (hosts), let Keras give
            each one its share of a `tf.data.Dataset` batched at the global
            batch size; False if each process already reads its own data.

    Returns:
        A `keras.distribution.ModelParallel`.

    Example:
    >>> mesh = make_mesh(2, devices=["cpu:0", "cpu:1"])
    >>> model_parallel(mesh).batch_dim_name
    'batch'
    """
    layouts = layout_map(mesh, model_axis=model_axis, embedding=embedding, config=config)
    auto_shard_dataset = validation.check_bool("auto_shard_dataset", auto_shard_dataset)
    check_batch_axis(mesh, batch_axis, model_axis)
    return keras.distribution.ModelParallel(
        layout_map=layouts, batch_dim_name=batch_axis, auto_shard_dataset=auto_shard_dataset
    )


def check_batch_axis(mesh, batch_axis, model_axis):
    """`batch_axis` must name a mesh axis other than `model_axis`."""
    if batch_axis not in mesh.axis_names or batch_axis == model_axis:
        raise ValueError(
            f"`batch_axis` must be a mesh axis other than `model_axis` ({model_axis!r}), "
            f"one of {tuple(mesh.axis_names)}; received {batch_axis!r}."
        )


def data_parallel(devices=None, auto_shard_dataset=True):
    """`keras.distribution.DataParallel`: every weight on every device, batches split.

    Args:
        devices: device names such as `"gpu:0"` (default: every device of
            the default type, JAX only).
        auto_shard_dataset: as in `model_parallel`.

    Returns:
        A `keras.distribution.DataParallel` over a 1-D `"batch"` mesh.

    Example:
    >>> data_parallel(devices=["cpu:0", "cpu:1"]).device_mesh.shape
    (2,)
    """
    devices = _check_devices("devices", devices)
    auto_shard_dataset = validation.check_bool("auto_shard_dataset", auto_shard_dataset)
    return keras.distribution.DataParallel(
        devices=devices, auto_shard_dataset=auto_shard_dataset
    )

