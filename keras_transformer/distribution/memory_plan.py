"""Will it fit? Per-device memory and FLOPs of a training step, from the config alone.

`plan(config, mesh, batch_size, length, layout=...)` lists every weight of
the model the config builds (`weight_shapes`: the paths and shapes
`model.weights` has, enumerated without building anything), gives each the
layout the distribution would give it (`layouts.megatron_axes` on the model
axis, then `sharded_weights.sharded_axes` on the batch axis for
`"fully_sharded"`: the functions `model_parallel` and `fully_sharded` use),
and adds up what one device holds during a training step:

* **weights**: each weight's shard, in the parameter dtype;
* **gradients**: one per weight, laid out like it (XLA's reduce-scatter
  leaves each device its slice under `"fully_sharded"`), in the parameter
  dtype;
* **optimizer state**: Adam's two moments per weight (one for SGD with
  momentum, none for plain SGD), laid out like the weight, in
  `optimizer_dtype` (Keras creates them in the weight's dtype);
* **activations**: what the backward pass keeps (below), for this device's
  rows of the batch, divided over the model axis where Megatron's split
  divides them.

The step's peak (`MemoryPlan.total`) is the weights and the optimizer
state (the step's arguments, updated in place), plus the larger of the two
ends of the backward pass, as XLA's buffer assignment of the compiled step
shows them (its `live-range` dump lists what is live at its peak):

* the top (`activations`): every activation the backward pass keeps, and
  the head's working set, before any block's gradient exists;
* the end (`gradients + reduction`): every gradient, before the optimizer
  uses them. A tied embedding has two gradient terms there (the output
  projection's and the lookup's, each reduced over the batch axis before
  XLA adds them). And where the batch axis has more than one device, the
  all-reduce of the gradients over it writes into a new buffer on XLA:CPU,
  so the summed gradients and the device's own are both live: a second
  copy of every gradient (`in_place_all_reduce=False`). XLA:GPU's
  all-reduce shares its input's buffer (its compiler lets NCCL run it in
  place), the default.

In between, the backward pass frees a block's kept activations as it writes
that block's gradients, so what is live moves from one end to the other
block by block, and the larger end is the peak. Few rows per device make
it the end: benchmarks/sharded_memory.py's 29.5M-weight model with one row
of 128 tokens per device peaks at weights, moments and two copies of the
gradients on XLA:CPU (594.3 MiB; the plan is 5 kB short).

Under `"fully_sharded"` the plan is ZeRO-3's: each device gathers one block's
weights whole over the batch axis at a time and reduce-scatters that block's
gradients as they are made. `gathered` adds that block's gathered weights,
its gradients before the reduce-scatter, and the output projection's
gathered matrix to both ends; the end's gradients are the device's slices.
XLA does not run Keras' `fully_sharded` step that way (below).

What the backward pass keeps, per token and block, counted for this
library's layers as XLA compiles them (the live buffers at the peak of
XLA's buffer assignment, `memory-usage-report` and `live-range` dumps of
the compiled train step on CPU), in the compute dtype unless said:

* each norm: 3 tensors of `d_model` for LayerNorm (the centred input, the
  normalized input and the output), 2 for RMSNorm, plus its per-token
  float32 statistics (3 or 2 numbers); XLA:CPU keeps 2 more per LayerNorm
  once its tensors reach a few MB (8 MB per device: a plan of 0.88 of XLA's
  figure for a one-device batch of 32 x 256 x 256);
* each residual sub-layer: the sum it adds into (`d_model`), replicated over
  the model axis, as are the norms;
* self-attention: the queries, keys and values (`d_model + 2 kv_width`) and
  the heads' output before the output projection (`d_model`); with
  `qk_norm`, also the fused projection's output (`d_model + 2 kv_width`) and
  2 tensors per normalized query and key feature;
* the scores: JAX's attention (`jax.nn.dot_product_attention`'s XLA path)
  keeps three float32 `(heads, T, keys)` tensors per row (the shifted
  exponentials, the probabilities, and a second copy of them in the layout
  of the value product's backward; XLA:CPU drops that copy for per-device
  batches of 1 or 2 rows); attention-probability dropout takes the explicit
  path: the probabilities, their 2 random 32-bit words and the dropped
  probabilities (16 bytes per score). With `flash_attention=True` (cuDNN on
  GPU) nothing of size `T x keys` is kept. Causal layers keep the full
  `T x T` (the XLA path masks, it does not skip), a banded layer its blocks
  of `2 window` keys, cross-attention `T x S` plus the memory's keys and
  values (`2 kv_width` per source token);
* the feed-forward: 2 tensors of `d_ff` for ReLU (pre-activation, output),
  3 for the tanh GELU and SiLU, 4 for the exact GELU, 5 for SwiGLU, 6 for
  GEGLU, split over the model axis;
* dropout: its mask as the 2 random 32-bit words JAX's generator drew per
  element (8 bytes per element) for each residual dropout, and for the
  embedding dropout also the dropped embeddings;
* outside the blocks: the embedded input (`d_model`) and the final norm of a
  pre-LN stack per token, the gradient of the logits (float32, `vocab`
  per token, split over the model axis with `embedding="vocab"`; a
  compute-dtype copy of the logits under bfloat16), the head's gradient
  buffers (the output projection's gradient with its transposed copy and the
  embedding's scatter buffer: 3 matrices of `vocab x d_model`, 4 untied),
  and the input and label ids.

With `remat` (the config's per-block rematerialization) a block keeps only
its input (`d_model` per token) and the backward pass recomputes one block
at a time: the blocks' inputs plus one block's full working set. XLA:CPU
keeps remat only in a process started with
`XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`; otherwise its
common-subexpression pass merges the recomputation back into the forward
pass and the step is the one without remat (docs/training.md,
"Rematerialization").

Checked against XLA's own buffer assignment for the compiled Keras train
step (`step_memory`) on 8 virtual CPU devices, with that flag and
`in_place_all_reduce=False` (tests/distribution/plan_checks.py): for
`"data_parallel"` and `"model_parallel"` within 15% (1.00 to 1.08), for
configs whose peak is the top of the backward pass (4 sequences per
batch-axis device) and the end (1 sequence of 64 tokens per batch-axis
device, the weights larger than the kept activations), and with remat;
in float32 (XLA:CPU runs bfloat16 through float32 converts, so bfloat16
figures are the count above at 2 bytes, not a CPU measurement).

Not for `"fully_sharded"`. There the plan is ZeRO-3's figure, and XLA's SPMD
partitioner (GSPMD), which lays out Keras' step, chooses for each matmul
whether to gather the weight or to move the batch's activations instead,
and XLA:CPU keeps some gathered weights from the forward pass to the
backward. Where a weight's batch-axis split is on the matmul's output
dimension, GSPMD gathers the rows of the batch (smaller than the weight)
and leaves the weight split: tensor parallelism over the batch axis (the
feed-forward, and the vocabulary projection, on an `(8, 1)` mesh), which
holds less than ZeRO-3; where the split is on the contracted dimension, it moves
every row of the batch to each device, split over the features (`(2, 4)`),
which holds more. Which it does depends on the shapes, not on anything the
plan sees. Measured: XLA's peak 0.44 to 1.25 times the plan (plan / XLA 0.80
to 2.27), nearest where the kept activations make the peak (0.98 for the
LLaMA-style config, 4 sequences of 512 tokens per batch-axis device),
farthest with one sequence per device; the checks hold XLA's peak within
0.4 to 1.3 times the plan.

Left out: allocator fragmentation (XLA's temporary buffer is a few percent
above the live bytes, a fifth with remat), collectives' staging buffers,
the framework's own memory (CUDA context, XLA's workspace, the compiled
program), and, beyond ZeRO-3's, GSPMD's choices under `"fully_sharded"`.

FLOPs (`MemoryPlan.flops`) are model FLOPs per step, the numerator of MFU:
`2 x` the multiply-adds of every matmul (each kernel, the tied or untied
output projection, `Q K^T` and `P V` over `T` keys per query, a banded
layer's `window`, cross-attention's `S`) for the forward pass, three times
that for forward and backward (Kaplan et al.'s `6 N` per token plus
attention's `12 L d T`). Remat's recomputation (one more forward pass of
the blocks) is not model FLOPs.
"""

import dataclasses
import math
import re
from collections.abc import Mapping

from keras_transformer import validation
from keras_transformer.distribution import layouts
from keras_transformer.distribution.sharded_weights import sharded_axes
from keras_transformer.models.config import TransformerConfig

LAYOUTS = ("data_parallel", "model_parallel", "fully_sharded")
"""The layouts `plan` knows: `data_parallel`, `model_parallel` and `fully_sharded`'s."""
OPTIMIZER_MOMENTS = {"adamw": 2, "adam": 2, "momentum": 1, "sgd": 0}
"""Optimizer variables per weight: Adam(W)'s two moments, SGD's momentum or nothing."""

DTYPES = {  # dtype policy -> (parameter dtype, compute dtype)
    "float32": ("float32", "float32"),
    "mixed_bfloat16": ("float32", "bfloat16"),
    "bfloat16": ("bfloat16", "bfloat16"),
    "mixed_float16": ("float32", "float16"),
    "float16": ("float16", "float16"),
}
_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
_FLOAT32 = 4
_RANDOM_WORDS = 8  # two 32-bit words per dropped element
_SCORE_COPIES = 3  # float32 (heads, T, keys) tensors the XLA attention keeps
_DROPOUT_SCORE_BYTES = 16  # probabilities, 2 random words, dropped probabilities
_NORM_TENSORS = {"layer": 3, "rms": 2}
_NORM_STATISTICS = {"layer": 3, "rms": 2}
_FEED_FORWARD_TENSORS = {"relu": 2, "gelu": 3, "silu": 3, "gelu_exact": 4,
                         "swiglu": 5, "geglu": 6}
_HEAD_BUFFERS = {True: 3, False: 4}  # vocab x d_model matrices, tied or not

__all__ = ["LAYOUTS", "OPTIMIZER_MOMENTS", "MemoryPlan", "plan", "weight_shapes"]


def _norm_shapes(kind, width, prefix):
    names = ("scale",) if kind == "rms" else ("gamma", "beta")
    return [(f"{prefix}/{name}", (width,)) for name in names]


def _dense_shapes(prefix, fan_in, units, use_bias):
    shapes = [(f"{prefix}/kernel", (fan_in, units))]
    return shapes + ([(f"{prefix}/bias", (units,))] if use_bias else [])


def _attention_shapes(config, prefix, cross):
    d, block = config.d_model, config.block
    d_head = d // block.num_heads
    kv_width = block.kv_heads * d_head
    if cross:
        shapes = (_dense_shapes(f"{prefix}/query", d, d, block.use_bias)
                  + _dense_shapes(f"{prefix}/key_value", d, 2 * kv_width, block.use_bias))
    else:
        shapes = _dense_shapes(f"{prefix}/qkv", d, d + 2 * kv_width, block.use_bias)
    if block.qk_norm:
        shapes += _norm_shapes(block.norm, d_head, f"{prefix}/query_norm")
        shapes += _norm_shapes(block.norm, d_head, f"{prefix}/key_norm")
    return shapes + _dense_shapes(f"{prefix}/output", d, d, block.use_bias)


def _block_shapes(config, prefix, cross):
    d, block = config.d_model, config.block
    norms = block.norm_names(cross)
    shapes = _attention_shapes(config, f"{prefix}/self_attention", cross=False)
    shapes += _norm_shapes(block.norm, d, f"{prefix}/self_attention_norm")
    if cross:
        shapes += _attention_shapes(config, f"{prefix}/cross_attention", cross=True)
        shapes += _norm_shapes(block.norm, d, f"{prefix}/cross_attention_norm")
    feed_forward = f"{prefix}/feed_forward"
    shapes += _dense_shapes(f"{feed_forward}/inner", d, block.d_ff, block.use_bias)
    if block.feed_forward != "mlp":
        shapes += _dense_shapes(f"{feed_forward}/gate", d, block.d_ff, block.use_bias)
    shapes += _dense_shapes(f"{feed_forward}/outer", block.d_ff, d, block.use_bias)
    if "feed_forward_norm" in norms:
        shapes += _norm_shapes(block.norm, d, f"{prefix}/feed_forward_norm")
    return shapes


def _check_config(config):
    if not isinstance(config, TransformerConfig):
        raise ValueError(
            "`config` must be a TransformerConfig (`model.config` or "
            "`keras_transformer.models.preset_config(name)`); received "
            f"{type(config).__name__}."
        )
    return config


def weight_shapes(config, name=None):
    """`(path, shape)` of every weight the config's model has, in `model.weights` order.

    Enumerated from the config alone (no weight is created), for layouts
    and memory plans of models too large to build here.

    Args:
        config: a `TransformerConfig` (`model.config`, or
            `keras_transformer.models.preset_config(name)`).
        name: the model's name, the first part of each path; default the
            family's (`"decoder_only"` or `"encoder_decoder"`).

    Returns:
        A list of `(path, shape)` pairs, `path` a string and `shape` a tuple.

    Example:
    >>> from keras_transformer.models import preset_config
    >>> shapes = weight_shapes(preset_config("gpt2_small"))
    >>> shapes[0], shapes[2]
    (('decoder_only/token_embedding/embeddings', (50257, 768)), ('decoder_only/block_0/self_attention/qkv/kernel', (768, 2304)))
    >>> sum(math.prod(shape) for _, shape in shapes)
    124439808
    """
    config = _check_config(config)
    encoder_decoder = config.num_encoder_layers > 0
    if name is None:
        name = "encoder_decoder" if encoder_decoder else "decoder_only"
    if not isinstance(name, str) or not name:
        raise ValueError(f"`name` must be a non-empty string or None; received {name!r}.")
    d, pre = config.d_model, config.block.ln_position == "pre"
    shapes = [(f"{name}/token_embedding/embeddings", (config.vocab_size, d))]
    if config.position == "learned":
        shapes.append((f"{name}/position_embedding/table", (config.max_length, d)))
    if not config.tie_embeddings:
        shapes.append((f"{name}/output_projection/kernel", (d, config.vocab_size)))
    stacks = [("encoder_block", config.num_encoder_layers, False, "encoder_norm"),
              ("decoder_block", config.num_decoder_layers, True, "decoder_norm")]
    if not encoder_decoder:
        stacks = [("block", config.num_decoder_layers, False, "final_norm")]
    for block_name, count, cross, norm_name in stacks:
        for i in range(count):
            shapes += _block_shapes(config, f"{name}/{block_name}_{i}", cross)
        if pre:
            shapes += _norm_shapes(config.block.norm, d, f"{name}/{norm_name}")
    return shapes


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """What one device holds during a training step, in bytes, and the step's FLOPs.

    `plan(...)` makes these; the module docstring says what each field
    counts and what it leaves out.

    Args:
        layout: `"data_parallel"`, `"model_parallel"` or `"fully_sharded"`.
        mesh: `{axis name: devices}` of the mesh planned for.
        weights: bytes of weights on one device.
        gradients: bytes of gradients on one device.
        optimizer_state: bytes of optimizer variables on one device.
        activations: bytes the backward pass keeps on one device (with the
            head's working set): what is live at the top of the backward
            pass.
        remat: whether the blocks are rematerialized.
        flops: model FLOPs of one step, all devices together.
        tokens: tokens of one step (the batch's target positions).
        gathered: `"fully_sharded"` only: one block's weights gathered
            whole over the batch axis, its gradients before their
            reduce-scatter, and the output projection's gathered matrix,
            live throughout the backward pass; 0 for the other layouts.
        reduction: what the gradients' reduction over the batch axis adds
            at the end of the backward pass: a tied embedding's second
            gradient term, and, where the all-reduce is not in place
            (`in_place_all_reduce=False`, XLA:CPU), its output: a second
            copy of every gradient.

    Example:
    >>> from keras_transformer.models import preset_config
    >>> step = plan(preset_config("gpt2_small"), {"batch": 8}, batch_size=64, length=1024)
    >>> step.total == step.weights + step.optimizer_state + max(
    ...     step.activations, step.gradients + step.reduction)
    True
    >>> step.devices, step.tokens, step.gathered
    (8, 65536, 0)
    """

    layout: str
    mesh: Mapping
    weights: int
    gradients: int
    optimizer_state: int
    activations: int
    remat: bool
    flops: int
    tokens: int
    gathered: int = 0
    reduction: int = 0

    @property
    def devices(self):
        """Devices of the mesh."""
        return math.prod(self.mesh.values())

    @property
    def total(self):
        """Peak bytes per device: weights, optimizer state, `gathered`, and the larger of
        the top of the backward pass (activations) and its end (gradients and
        their reduction); the module docstring says why."""
        return (self.weights + self.optimizer_state + self.gathered
                + max(self.activations, self.gradients + self.reduction))

    def fits(self, device_bytes):
        """Whether the peak fits in `device_bytes` of device memory.

        Args:
            device_bytes: one device's memory (141e9 for an H200).
        """
        return self.total <= device_bytes

    def tokens_per_second(self, device_flops, utilization=0.4):
        """Tokens per second the step's FLOPs allow at `utilization` of the peak.

        Args:
            device_flops: one device's peak FLOP/s in the compute dtype
                (an H200's dense bfloat16: about 989e12).
            utilization: model FLOPs utilization (MFU) assumed.
        """
        return utilization * device_flops * self.devices * self.tokens / self.flops

    def __str__(self):
        mesh = " x ".join(f"{axis} {size}" for axis, size in self.mesh.items())
        rows = [("weights", self.weights), ("gradients", self.gradients),
                ("optimizer state", self.optimizer_state),
                ("activations" + (" (remat)" if self.remat else ""), self.activations),
                *([("gathered (one block)", self.gathered)] if self.gathered else []),
                *([("gradient reduction", self.reduction)] if self.reduction else []),
                ("total (peak)", self.total)]
        lines = [f"{self.layout} on {self.devices} devices ({mesh}), per device:"]
        lines += [f"  {label:<22}{format_bytes(size):>10}" for label, size in rows]
        lines.append(f"  {'step FLOPs (all)':<22}{self.flops:>10.3g}")
        return "\n".join(lines)


def format_bytes(size):
    """`size` bytes as decimal units: `format_bytes(1.5e9) == "1.50 GB"`."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1000


def _mesh_sizes(mesh):
    """`{axis name: size}` of a `DeviceMesh` or a mapping."""
    if isinstance(mesh, Mapping):
        sizes = dict(mesh)
    elif hasattr(mesh, "axis_names") and hasattr(mesh, "shape"):  # keras DeviceMesh
        sizes = dict(zip(mesh.axis_names, mesh.shape))
    else:
        raise ValueError(
            "`mesh` must be a keras.distribution.DeviceMesh or a mapping of axis names to "
            f"device counts such as {{'batch': 8, 'model': 1}}; received {type(mesh).__name__}."
        )
    if not sizes:
        raise ValueError("`mesh` must have at least one axis; received an empty mapping.")
    for axis, size in sizes.items():
        if not isinstance(axis, str):
            raise ValueError(f"`mesh` axis names must be strings; received {axis!r}.")
        validation.check_int(f"mesh[{axis!r}]", size)
    return sizes


class _Split:
    """How the layout divides weights and activations over the mesh."""

    def __init__(self, config, sizes, layout, batch_axis, model_axis, embedding):
        self.layout, self.embedding = layout, embedding
        self.batch_axis, self.model_axis = batch_axis, model_axis
        self.sizes = sizes
        if layout == "data_parallel":  # one axis of every device, as data_parallel() makes
            self.batch, self.model = math.prod(sizes.values()), 1
            return
        if batch_axis not in sizes:
            raise ValueError(f"`batch_axis` must be an axis of `mesh` {tuple(sizes)}; "
                             f"received {batch_axis!r}.")
        if layout == "model_parallel" and model_axis not in sizes:
            raise ValueError(f"`model_axis` must be an axis of `mesh` {tuple(sizes)} for "
                             f"layout='model_parallel'; received {model_axis!r}.")
        if model_axis == batch_axis:
            raise ValueError(f"`batch_axis` and `model_axis` must differ; both are {batch_axis!r}.")
        self.batch, self.model = sizes[batch_axis], sizes.get(model_axis, 1)
        if math.prod(sizes.values()) != self.batch * self.model:
            raise ValueError(
                f"`mesh` {sizes} has axes other than {batch_axis!r} and {model_axis!r} of more "
                "than one device; the layouts split over those two only."
            )
        layouts.check_split(config, embedding, self.model)

    def check_heads(self, config, flash_attention):
        """Attention scores kept for the backward pass need the heads to split evenly.

        Otherwise XLA pads or gathers the heads as it sees fit (measured: 0.5x to 3x
        of a per-head split), and a plan assuming either would be silently wrong.
        Flash attention keeps no scores (one float per head and token).
        """
        keeps_scores = not flash_attention or config.block.forms_scores
        if keeps_scores and config.block.num_heads % self.model:
            raise ValueError(
                f"`num_heads` ({config.block.num_heads}) must be divisible by the model axis size "
                f"({self.model}) to plan attention that keeps its scores: with heads split "
                "unevenly XLA lays them out in ways the plan does not model (or pass "
                "flash_attention=True)."
            )

    def shards(self, path, shape, gathered=False):
        """Devices one copy of the weight at `path` is split over.

        `gathered`: once `"fully_sharded"`'s batch-axis split is gathered
        (the model axis' split only).
        """
        if self.layout == "data_parallel":
            return 1
        axes = layouts.megatron_axes(path, len(shape), self.model_axis, self.embedding)
        if self.layout == "fully_sharded" and not gathered:
            axes = sharded_axes(axes, shape, self.batch_axis, self.sizes)
        return math.prod(self.sizes.get(axis, 1) for axis in axes if axis is not None)


def _block_tensors(config, keys, cross_keys, compute, flash):
    """Bytes one block keeps per token: `(replicated, split over the model axis)`.

    `keys`: keys per query of its self-attention; `cross_keys`: of its
    cross-attention (None: no cross-attention). The memory's keys and values
    (per source token) are added by the caller.
    """
    block, d = config.block, config.d_model
    kv_width = block.kv_heads * (d // block.num_heads)
    sublayers = 2 + (cross_keys is not None)
    norms = len(block.norm_names(cross_keys is not None))
    replicated = norms * ((_NORM_TENSORS[block.norm] + 1) * d * compute
                          + _NORM_STATISTICS[block.norm] * _FLOAT32)
    if block.dropout > 0:
        replicated += sublayers * d * _RANDOM_WORDS
    split = (2 * d + 2 * kv_width) * compute
    if block.qk_norm:
        split += ((d + 2 * kv_width) + 2 * (d + kv_width)) * compute
    kind = block.activation if block.feed_forward == "mlp" else block.feed_forward
    split += _FEED_FORWARD_TENSORS[kind] * block.d_ff * compute
    for attended in [keys] + ([cross_keys] if cross_keys is not None else []):
        split += block.num_heads * _FLOAT32  # softmax sums (or flash's log-sum-exp)
        if block.attention_dropout > 0:
            split += block.num_heads * attended * _DROPOUT_SCORE_BYTES
        elif not flash or block.forms_scores:  # a score transform keeps the scores too
            split += block.num_heads * attended * _SCORE_COPIES * _FLOAT32
    if cross_keys is not None:
        split += 2 * d * compute  # cross-attention's queries and output
    return replicated, split


def _self_keys(config, layer_index, length):
    """Keys each query's scores span in decoder layer `layer_index`'s self-attention."""
    if config.decoder_attention_mode(layer_index) != "banded":
        return length
    window = config.attention_window
    return length if length <= window else 2 * window  # blocks of window queries


def _stack_bytes(config, split, rows, length, sources, compute, flash, remat):
    """Activation bytes of the blocks (and their embeddings and final norms) on one device.

    `rows` sequences of `length` positions (and `sources` source positions).
    """
    d, block = config.d_model, config.block
    kv_width = block.kv_heads * (d // block.num_heads)
    stacks = []  # (per-block [(replicated, split) per token], positions, memory positions)
    encoder_decoder = config.num_encoder_layers > 0
    if encoder_decoder:
        stacks.append(([_block_tensors(config, sources, None, compute, flash)]
                       * config.num_encoder_layers, sources, 0))
    decoder = [
        _block_tensors(config, _self_keys(config, i, length),
                       sources if encoder_decoder else None, compute, flash)
        for i in range(config.num_decoder_layers)
    ]
    stacks.append((decoder, length, sources if encoder_decoder else 0))
    embedded = d * compute
    if config.block.dropout > 0:
        embedded += d * _RANDOM_WORDS + d * compute
    final_norm = 0
    if config.block.ln_position == "pre":
        final_norm = (_NORM_TENSORS[config.block.norm] * d * compute
                      + _NORM_STATISTICS[config.block.norm] * _FLOAT32)
    total, working = 0, 0
    for per_block, positions, memory in stacks:
        tokens = rows * positions
        memory_bytes = rows * memory * 2 * kv_width * compute / split.model  # cross keys, values
        total += tokens * (embedded + final_norm)
        for replicated, divided in per_block:
            kept = tokens * (replicated + divided / split.model) + memory_bytes
            working = max(working, kept)
            total += tokens * d * compute if remat else kept
    return total + (working if remat else 0)


def _head_bytes(config, split, tokens, sources, compute, param):
    """The loss and output projection's working set at the top of the backward pass."""
    vocab_split = split.model if split.embedding == "vocab" else 1
    logits = _FLOAT32 + (compute if compute != _FLOAT32 else 0)
    buffers = _HEAD_BUFFERS[config.tie_embeddings] * config.vocab_size * config.d_model
    ids = (2 * tokens + sources) * 4  # int32 inputs (targets, sources) and labels
    return tokens * config.vocab_size * logits / vocab_split + buffers * param / split.model + ids


def _gradient_terms(shapes, config, split, param, in_place_all_reduce):
    """`(gathered, reduction)` bytes: see `MemoryPlan`.

    `shapes`: `weight_shapes(config)`.
    """
    whole = {}  # weight path -> elements on one device once gathered over the batch axis
    for path, shape in shapes:
        whole[path] = math.prod(shape) / split.shards(path, shape, gathered=True)
    head = next(path for path, _ in shapes
                if path.endswith("/output_projection/kernel" if not config.tie_embeddings
                                 else "/token_embedding/embeddings"))
    if split.layout == "fully_sharded":
        blocks = {}
        for path, elements in whole.items():
            part = path.split("/")[1]
            if re.fullmatch(r"(encoder_|decoder_)?block_\d+", part):
                blocks[part] = blocks.get(part, 0) + elements
        # One block's weights gathered whole and its gradients before their reduce-scatter,
        # and the output projection's matrix gathered for the head (at the end of the
        # backward pass: the embedding's gradient before its reduce-scatter).
        return (2 * max(blocks.values()) + whole[head]) * param, 0
    embedding = next(path for path in whole if path.endswith("/token_embedding/embeddings"))
    # A tied embedding's gradient is two terms (the output projection's and the lookup's),
    # each reduced over the batch axis before XLA adds them.
    tied = whole[embedding] if config.tie_embeddings else 0
    # Where the all-reduce writes a new buffer, the device's own terms and their sums coexist.
    copy = sum(whole.values()) + tied if split.batch > 1 and not in_place_all_reduce else 0
    return 0, (tied + copy) * param


def _matmul_flops(config, length, sources):
    """Forward-pass FLOPs of one sequence: every matmul, attention's two products."""
    d, block = config.d_model, config.block
    kv_width = block.kv_heads * (d // block.num_heads)
    matrices = 3 if block.feed_forward != "mlp" else 2
    per_token = d * (d + 2 * kv_width) + d * d + matrices * d * block.d_ff  # one block
    flops = 0
    if config.num_encoder_layers:
        flops += config.num_encoder_layers * sources * (2 * per_token + 4 * d * sources)
    for i in range(config.num_decoder_layers):
        attended = length
        if config.decoder_attention_mode(i) == "banded":
            attended = min(length, config.attention_window)
        flops += length * (2 * per_token + 4 * d * attended)
        if config.num_encoder_layers:  # cross-attention: queries and output per target token,
            flops += length * (2 * 2 * d * d + 4 * d * sources)  # keys and values per source
            flops += sources * 2 * d * 2 * kv_width
    return flops + length * 2 * d * config.vocab_size  # the output projection


def plan(
    config, mesh, batch_size, length, layout="data_parallel", dtype="float32",
    optimizer="adamw", optimizer_dtype=None, remat=None, flash_attention=False,
    source_length=None, batch_axis=layouts.BATCH_AXIS, model_axis=layouts.MODEL_AXIS,
    embedding="vocab", in_place_all_reduce=True,
):
    """Per-device memory and FLOPs of one training step of `config` under `layout`.

    Nothing is built and no device is needed: `mesh` may be a plain shape
    such as `{"batch": 128, "model": 8}`. The module docstring says what is
    counted and what is left out; `step_memory` measures a built model.

    Args:
        config: a `TransformerConfig` (`model.config` or
            `keras_transformer.models.preset_config(name)`).
        mesh: a `keras.distribution.DeviceMesh`, or a mapping of axis names
            to device counts.
        batch_size: the global batch (sequences per step).
        length: positions per sequence (the target, for an encoder-decoder).
        layout: `"data_parallel"` (every weight on every device, the batch
            split over all of them), `"model_parallel"` (Megatron's split
            over `model_axis`, the batch over `batch_axis`) or
            `"fully_sharded"` (also every weight split over `batch_axis`;
            `model_axis` may be absent or 1).
        dtype: the model's dtype policy: `"float32"`, `"mixed_bfloat16"`,
            `"bfloat16"`, `"mixed_float16"` or `"float16"`.
        optimizer: `"adamw"` or `"adam"` (2 moments per weight),
            `"momentum"` (SGD with momentum: 1) or `"sgd"` (none).
        optimizer_dtype: the moments' dtype; None: the weights' (as Keras
            creates them).
        remat: whether every block is rematerialized; None: the config's
            `remat`.
        flash_attention: whether attention runs as a fused kernel that keeps
            no `T x keys` scores (cuDNN on GPU in bfloat16); False: JAX's
            XLA attention, as on CPU.
        source_length: source positions of an encoder-decoder (default
            `length`); unused by a decoder-only model.
        batch_axis: the mesh axis batches (and `"fully_sharded"` weights)
            are split over.
        model_axis: the mesh axis of Megatron's split.
        embedding: `"vocab"` or `"model"`: how the token embedding is split
            (see `layout_map`).
        in_place_all_reduce: whether the gradients' all-reduce over the
            batch axis writes into its input, as XLA:GPU's NCCL all-reduce
            does; False: into a new buffer, as XLA:CPU's does (the summed
            gradients and the device's own then coexist).

    Returns:
        A `MemoryPlan`.

    Example:
    >>> from keras_transformer.models import preset_config
    >>> config = preset_config("llama2_7b")
    >>> step = plan(config, {"batch": 8, "model": 8}, batch_size=64, length=4096,
    ...             layout="model_parallel", dtype="mixed_bfloat16", embedding="model",
    ...             remat=True)
    >>> step.fits(141e9), round(step.weights / (4 * config.count_params()), 2)
    (True, 0.13)
    """
    config = _check_config(config)
    sizes = _mesh_sizes(mesh)
    batch_size = validation.check_int("batch_size", batch_size)
    length = validation.check_int("length", length)
    layout = validation.check_choice("layout", layout, LAYOUTS)
    dtype = validation.check_choice("dtype", dtype, tuple(DTYPES))
    optimizer = validation.check_choice("optimizer", optimizer, tuple(OPTIMIZER_MOMENTS))
    param_dtype, compute_dtype = DTYPES[dtype]
    optimizer_dtype = validation.check_choice(
        "optimizer_dtype", param_dtype if optimizer_dtype is None else optimizer_dtype,
        tuple(_BYTES))
    remat = getattr(config, "remat", False) if remat is None else remat
    remat = validation.check_bool("remat", remat)
    flash_attention = validation.check_bool("flash_attention", flash_attention)
    embedding = validation.check_choice("embedding", embedding, layouts.EMBEDDING_SPLITS)
    in_place_all_reduce = validation.check_bool("in_place_all_reduce", in_place_all_reduce)
    sources = 0
    if config.num_encoder_layers:
        sources = validation.check_int(
            "source_length", length if source_length is None else source_length)
    if config.position == "learned" and max(length, sources) > config.max_length:
        raise ValueError(
            f"`length` and `source_length` must be at most the learned position table's "
            f"{config.max_length} rows (`max_length`); received {max(length, sources)}."
        )
    split = _Split(config, sizes, layout, batch_axis, model_axis, embedding)
    split.check_heads(config, flash_attention)
    if batch_size % split.batch:
        raise ValueError(
            f"`batch_size` ({batch_size}) must be divisible by the {split.batch} devices "
            f"layout={layout!r} splits the batch over."
        )
    param, compute = _BYTES[param_dtype], _BYTES[compute_dtype]
    shapes = weight_shapes(config)
    elements = sum(math.prod(shape) / split.shards(path, shape) for path, shape in shapes)
    gathered, reduction = _gradient_terms(shapes, config, split, param, in_place_all_reduce)
    rows = batch_size // split.batch
    activations = (_stack_bytes(config, split, rows, length, sources, compute,
                                flash_attention, remat)
                   + _head_bytes(config, split, rows * length, rows * sources, compute, param))
    return MemoryPlan(
        layout=layout, mesh=sizes, weights=round(elements * param),
        gradients=round(elements * param),
        optimizer_state=round(elements * OPTIMIZER_MOMENTS[optimizer] * _BYTES[optimizer_dtype]),
        activations=round(activations), remat=remat,
        flops=3 * batch_size * _matmul_flops(config, length, sources),
        tokens=batch_size * length, gathered=round(gathered), reduction=round(reduction),
    )
