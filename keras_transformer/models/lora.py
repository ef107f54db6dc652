"""Low-rank adapters (LoRA) on a model's projections, as keras-hub's backbones offer them.

`enable_lora(model, rank)` freezes every weight of the model and gives the target
layers (by default the attention projections) Keras' own LoRA: each target's
kernel `W` becomes `W + (alpha / rank) A B`, with `A` `(d_in, rank)` and `B`
`(rank, d_out)` the only new trainable weights (`B` starts at zero, so the model
starts where it was). Fine-tuning then trains `rank (d_in + d_out)` numbers per
target instead of `d_in d_out`, and the optimizer keeps state for those alone.

The adapters travel on their own (`save_lora_weights`, a `.lora.h5` file of a
few kilobytes, keyed by each layer's path in the model) and load onto a model
with the same base (`load_lora_weights`). `model.save(...)` writes the kernels
with the adapters merged in (Keras' Dense saves `W + (alpha / rank) A B`), so the
saved model serves without them and loads as a plain model.

Unlike keras-hub, the target layers' biases are frozen too: the adapters are then
all that fine-tuning changes, and all that `save_lora_weights` needs to carry.
"""

import os

import h5py
import keras
import numpy as np
from keras import ops


_SUFFIX = ".lora.h5"
LORA_QUANTIZATION_MODES = (None, "int8", "int4")
"""Quantization modes whose Keras layers take LoRA and merge it on save (None: not quantized);
float8, GPTQ and AWQ layers fail at `enable_lora` or at `save`."""


def _relative_path(model, layer):
    """A layer's path below the model (`block_0/self_attention/qkv`): the same in every
    model of the same shape, whatever the model's name."""
    return layer.path.split("/", 1)[1]


def _layers_by_path(model):
    return {_relative_path(model, layer): layer
            for layer in model._flatten_layers(include_self=False) if layer.path}


def lora_layers(model):
    """The layers LoRA is enabled on, in model order ([] before `enable_lora`)."""
    by_path = _layers_by_path(model)
    return [by_path[path] for path in getattr(model, "_lora_paths", ())]


def _takes_lora(layer):
    """The projections LoRA adapts here: Dense and EinsumDense (kernels `lora_kernel_a/b`)."""
    return isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense))


def _target_layers(model, names):
    return [layer for layer in model._flatten_layers(include_self=False)
            if layer.name in names and _takes_lora(layer)]


def _adapter_shapes(layer, rank):
    """The shapes of a projection's `lora_kernel_a` and `lora_kernel_b` at this rank."""
    d_in, d_out = layer.kernel.shape[0], layer.kernel.shape[-1]  # int4 kernels come unpacked
    return (int(d_in), rank), (rank, int(d_out))


def enable_lora(model, rank, target_layer_names):
    """Freezes the model and adds rank-`rank` adapters to the layers named
    `target_layer_names` (see `TransformerModel.enable_lora`)."""
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 1:
        raise ValueError(f"`rank` must be a whole number >= 1; received {rank!r}.")
    if not model.built:
        raise ValueError("enable_lora needs a built model; call the model on a batch first.")
    if lora_layers(model):
        raise ValueError(
            f"LoRA is already enabled on this model (rank {model._lora_rank}, layers "
            f"{sorted({layer.name for layer in lora_layers(model)})}); it can be enabled once. "
            "Save the adapters with save_lora_weights, or build a new model.")
    if isinstance(target_layer_names, str) or not all(
            isinstance(name, str) for name in target_layer_names):
        raise ValueError("`target_layer_names` must be a list of layer names; received "
                         f"{target_layer_names!r}.")
    targets = _target_layers(model, set(target_layer_names))
    if not targets:
        available = sorted({layer.name for layer in model._flatten_layers(include_self=False)
                            if _takes_lora(layer)})
        raise ValueError(f"`target_layer_names` {list(target_layer_names)} names no layer of "
                         f"this model that takes LoRA; its layers are named {available}.")
    unmergeable = sorted({layer.quantization_mode for layer in targets
                          if layer.quantization_mode not in LORA_QUANTIZATION_MODES})
    if unmergeable:
        raise ValueError(f"LoRA cannot adapt this model's {unmergeable[0]!r}-quantized layers: "
                         "Keras merges adapters into float32, int8 and int4 kernels only. "
                         "Enable LoRA before quantizing to int8 or int4, or on the float model.")
    smallest = min(min(_adapter_shapes(layer, 1)[0][0], _adapter_shapes(layer, 1)[1][1])
                   for layer in targets)
    if rank > smallest:
        raise ValueError(f"`rank` {rank} is more than the smallest dimension ({smallest}) of the "
                         "layers it adapts: adapters of that rank would be no smaller than the "
                         "weights they adapt; pass a rank of at most that.")
    model.trainable = True
    for layer in model._flatten_layers(include_self=False):
        layer.trainable = False
    for layer in targets:
        layer.trainable = True
        layer.enable_lora(int(rank))  # freezes the kernel
        if getattr(layer, "bias", None) is not None:
            layer.bias.trainable = False
    # Paths, not the layers: a built model takes no new tracked sublayers.
    model._lora_paths = tuple(_relative_path(model, layer) for layer in targets)
    model._lora_rank = int(rank)
    model.compiled_loops.clear()  # its decode loops captured the variables of before


def save_lora_weights(model, filepath):
    """Writes the adapters of a model with LoRA enabled to `filepath` (`.lora.h5`)."""
    layers = lora_layers(model)
    if not layers:
        raise ValueError("This model has no LoRA adapters to save; call enable_lora(rank) first.")
    filepath = os.fspath(filepath)
    if not filepath.endswith(_SUFFIX):
        raise ValueError(f"`filepath` must end in {_SUFFIX!r}; received {filepath!r}.")
    with h5py.File(filepath, "w") as file:
        file.attrs["rank"] = model._lora_rank
        file.attrs["model"] = type(model).__name__
        for layer in layers:
            group = file.create_group(_relative_path(model, layer))
            group.attrs["name"] = layer.name
            group.attrs["alpha"] = layer.lora_alpha
            group["lora_kernel_a"] = ops.convert_to_numpy(layer.lora_kernel_a)
            group["lora_kernel_b"] = ops.convert_to_numpy(layer.lora_kernel_b)


def _read(filepath):
    """(rank, model class name, {relative path: (name, alpha, a, b)}) of a `.lora.h5` file."""
    filepath = os.fspath(filepath)
    try:
        file = h5py.File(filepath, "r")
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot read LoRA weights from {filepath!r}: {error}") from None
    with file:
        try:
            rank, model_name = int(file.attrs["rank"]), str(file.attrs["model"])
            adapters = {}

            def visit(path, item):
                if isinstance(item, h5py.Group) and "lora_kernel_a" in item:
                    adapters[path] = (str(item.attrs["name"]), float(item.attrs["alpha"]),
                                      item["lora_kernel_a"][()], item["lora_kernel_b"][()])

            file.visititems(visit)
        except KeyError as error:
            raise ValueError(f"{filepath!r} is not a file save_lora_weights wrote "
                             f"(missing {error}).") from None
    return rank, model_name, adapters


def load_lora_weights(model, filepath):
    """Loads adapters `save_lora_weights` wrote onto a model of the same shape, enabling
    LoRA on the same layers first when the model has none. Everything is checked before the
    model changes: a refused file leaves it as it was."""
    rank, model_name, adapters = _read(filepath)
    name = os.fspath(filepath)
    if model_name != type(model).__name__:
        raise ValueError(f"{name!r} holds LoRA weights of a {model_name}; this model is a "
                         f"{type(model).__name__}.")
    by_path = _layers_by_path(model)
    missing = sorted(path for path in adapters
                     if path not in by_path or not _takes_lora(by_path[path]))
    if missing:
        raise ValueError(f"{name!r} holds LoRA weights for layers this model lacks: "
                         f"{missing[:5]}; it was saved from another model.")
    enabled = lora_layers(model)
    if enabled:
        if model._lora_rank != rank:
            raise ValueError(f"{name!r} holds rank-{rank} adapters, but LoRA is enabled here "
                             f"with rank {model._lora_rank}; both must match.")
        if set(model._lora_paths) != set(adapters):
            raise ValueError(f"{name!r} holds adapters for other layers than the ones LoRA is "
                             f"enabled on here: {sorted(set(adapters) ^ set(model._lora_paths))[:5]}.")
    for path, (_, _, a, b) in adapters.items():
        expected = _adapter_shapes(by_path[path], rank)
        if (a.shape, b.shape) != expected:
            raise ValueError(f"{name!r}: the adapters of {path} have shapes {a.shape} and "
                             f"{b.shape}; this model's have {expected[0]} and {expected[1]}. It "
                             "was saved from another model.")
    if not enabled:
        names = sorted({layer_name for layer_name, *_ in adapters.values()})
        if {_relative_path(model, layer) for layer in _target_layers(model, names)} != set(adapters):
            raise ValueError(f"{name!r} holds adapters for some of the layers named {names} "
                             "only; enable LoRA on those layers first.")
        enable_lora(model, rank, names)
    for path, (_, alpha, a, b) in adapters.items():
        layer = by_path[path]
        layer.lora_alpha = alpha
        layer.lora_kernel_a.assign(a)
        layer.lora_kernel_b.assign(b)
    model.compiled_loops.clear()


def merged_model(model):
    """A new model of the same config whose kernels are `model`'s with the adapters merged
    in, without LoRA: every weight trainable, not compiled (see `TransformerModel.merge_lora`)."""
    if not lora_layers(model):
        raise ValueError("This model has no LoRA adapters to merge; call enable_lora(rank) first.")
    merged = type(model).from_config(model.get_config())
    targets = _layers_by_path(merged)
    pairs = [(model, merged)] + [(layer, targets[path])
                                 for path, layer in _layers_by_path(model).items()]
    for source, target in pairs:
        store = {}
        source.save_own_variables(store)  # a LoRA layer writes its kernel merged, as save does
        if store:
            target.load_own_variables(store)
    return merged
