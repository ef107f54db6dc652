"""What every converter shares: arrays from any framework, checked name lookups, checked writes.

Nothing here imports torch, transformers or keras-hub: a torch tensor is
recognised by its `detach` method (duck typing), so a JAX-only install imports
this package. The Hugging Face helpers (sources, configs, `save_pretrained`
folders) serve every `hf_*` converter; `safetensors` is imported when a file is
read or written.
"""

import collections.abc
import dataclasses
import json
import os
import re

import keras
import numpy as np

from keras_transformer.optional_dependencies import require


def to_numpy(value, name="tensor"):
    """A NumPy array from a NumPy/JAX/TensorFlow array, a Keras variable or a torch tensor."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # torch.Tensor, duck-typed
        value = value.detach().cpu()
        if "bfloat16" in str(value.dtype):  # NumPy has no bfloat16
            value = value.float()
        return value.numpy()
    if isinstance(value, keras.Variable):
        return keras.ops.convert_to_numpy(value)
    try:
        return np.asarray(value)
    except Exception as error:  # noqa: BLE001 - reported with the tensor's name
        raise ValueError(f"Cannot read tensor {name!r} as an array: {error}") from error


def as_mapping(source, what):
    """`source.state_dict()` if it has one, else `source` itself, which must be a mapping."""
    if callable(getattr(source, "state_dict", None)):
        source = source.state_dict()
    if not isinstance(source, collections.abc.Mapping):
        raise ValueError(
            f"{what} must be a mapping of tensor name -> array (a state dict) or an "
            f"object with a `state_dict()` method; received {type(source).__name__}."
        )
    return {str(key): value for key, value in source.items()}


def layer_count(names, pattern, what):
    """Number of layers from names matching `pattern` (one group: the index); checks 0..n-1."""
    indices = sorted({int(m.group(1)) for m in map(re.compile(pattern).match, names) if m})
    if not indices:
        raise ValueError(f"{what}: no layer weights found (no name matches {pattern!r}).")
    if indices != list(range(len(indices))):
        missing = sorted(set(range(indices[-1] + 1)) - set(indices))
        raise ValueError(f"{what}: layer indices are not contiguous; missing layer(s) {missing}.")
    return len(indices)


class StateReader:
    """Reads named tensors from a mapping, remembering what was missing and what was read.

    `get` returns None for a missing name and records it, so that `check`
    reports every missing name at once; `check` also reports names nobody read
    (weights our model has no place for), except those matching `ignore`.
    """

    def __init__(self, state, what, ignore=()):
        self.state = state
        self.what = what
        self.ignore = [re.compile(pattern) for pattern in ignore]
        self.read = set()
        self.missing = []

    def __contains__(self, name):
        return name in self.state

    def get(self, name):
        if name not in self.state:
            self.missing.append(name)
            return None
        self.read.add(name)
        return to_numpy(self.state[name], name)

    def skip(self, name):
        """Marks `name` as deliberately unused."""
        self.read.add(name)

    def check(self):
        if self.missing:
            shown = ", ".join(self.missing[:10]) + (" ..." if len(self.missing) > 10 else "")
            raise ValueError(
                f"{self.what} is missing {len(self.missing)} tensor(s): {shown}"
            )
        unused = sorted(
            name
            for name in self.state
            if name not in self.read and not any(p.fullmatch(name) for p in self.ignore)
        )
        if unused:
            shown = ", ".join(unused[:10]) + (" ..." if len(unused) > 10 else "")
            raise ValueError(
                f"{self.what} has {len(unused)} tensor(s) our model has no place for "
                f"(an architecture it cannot express): {shown}"
            )


class WeightWriter:
    """Collects (our variable, array, their name) and assigns them after checking every shape."""

    def __init__(self, what):
        self.what = what
        self.pending = []

    def add(self, variable, array, their_name, their_shape=None):
        """Queues `array` for `variable`; `their_shape` is the stored shape before a transpose."""
        if array is not None:  # None: missing, already reported by StateReader
            array = np.asarray(array)
            shape = tuple(array.shape) if their_shape is None else tuple(their_shape)
            self.pending.append((variable, array, their_name, shape))

    def apply(self):
        for variable, array, their_name, their_shape in self.pending:
            if tuple(array.shape) != tuple(variable.shape):
                became = "" if their_shape == tuple(array.shape) else f" (as {array.shape})"
                raise ValueError(
                    f"{self.what}: tensor {their_name!r} has shape {their_shape}{became} "
                    f"but maps to {variable.path} of shape {tuple(variable.shape)}."
                )
        for variable, array, _, _ in self.pending:
            variable.assign(array.astype(keras.backend.standardize_dtype(variable.dtype)))


def model_kwargs(dtype, name):
    """Keras base-model arguments: only those the caller set."""
    kwargs = {}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if name is not None:
        kwargs["name"] = name
    return kwargs


def check_exportable(config, what, required, handled):
    """Raises unless a format (`what`) can express a model of `config`.

    `required` names the fields the format fixes (a value each); `handled`
    the fields it writes whatever their value, or that cannot change what
    the model computes in it (a training or generation setting, a setting of
    a toggle the format rules out). Every other field, of the model and of
    its block, must be at its default: a toggle added later is refused by
    every exporter until that exporter handles it, rather than left out of
    the file without a word.

    Args:
        config: the model's `TransformerConfig`.
        what: the format's name, for the message (`"GPT-2"`).
        required: `{field: value}` of the model (`TransformerConfig`) or its
            block (`BlockConfig`), looked up on the model first.
        handled: names of fields the format handles whatever their value.

    Raises:
        ValueError: naming the first field the format cannot express.
    """
    needed = dict(required)
    for owner in (config, config.block):  # a name in both is the model's (`position`)
        for field in dataclasses.fields(owner):
            if (field.default is not dataclasses.MISSING and field.name not in needed
                    and field.name not in handled):
                needed[field.name] = field.default
    model_fields = {field.name for field in dataclasses.fields(config)}
    for name, value in needed.items():
        held = getattr(config if name in model_fields else config.block, name)
        if held != value:
            raise ValueError(
                f"{what} cannot express this model: it needs {name}={value!r}; the model has "
                f"{name}={held!r}."
            )


def check_path(path, what):
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"{what} must be a path; received {type(path).__name__}.")
    return os.fspath(path)


def agree(name, from_config, from_argument):
    """The argument if given, else the config's value; raises if both are given and differ."""
    if from_config is not None and from_argument is not None and from_config != from_argument:
        raise ValueError(
            f"`{name}`={from_argument!r} contradicts the checkpoint's config ({from_config!r})."
        )
    return from_argument if from_argument is not None else from_config


def tied_embeddings(config, state, lm_head_name, embedding, reader):
    """Whether the output projection is the token embedding (Hugging Face `tie_word_embeddings`).

    The config decides when it has the field; without it, tied unless a stored
    `lm_head_name` differs from `embedding`. A stored head that is tied is
    marked as read: Hugging Face ignores it too.
    """
    lm_head = state.get(lm_head_name)
    if "tie_word_embeddings" in config:
        tie = bool(config["tie_word_embeddings"])
    else:
        tie = lm_head is None or np.array_equal(to_numpy(lm_head, lm_head_name), embedding)
    if tie and lm_head is not None:
        reader.skip(lm_head_name)
    return tie


# --- Hugging Face files ---------------------------------------------------------


def load_safetensors(path):
    return require("safetensors.numpy", "reading a .safetensors checkpoint").load_file(path)


def read_json(path, what):
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, json.JSONDecodeError) as error:
        raise ValueError(f"Cannot read {what} {path!r}: {error}") from error


def load_hf_directory(directory):
    """State dict and config of a `save_pretrained` folder (one file, or shards and an index)."""
    single = os.path.join(directory, "model.safetensors")
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.isfile(single):
        state = load_safetensors(single)
    elif os.path.isfile(index):
        shards = sorted(set(read_json(index, "safetensors index")["weight_map"].values()))
        state = {}
        for shard in shards:
            state.update(load_safetensors(os.path.join(directory, shard)))
    else:
        raise ValueError(
            f"{directory!r} holds neither model.safetensors nor model.safetensors.index.json."
        )
    config_path = os.path.join(directory, "config.json")
    config = read_json(config_path, "config") if os.path.isfile(config_path) else None
    return state, config


def resolve_hf_source(source, config_class):
    """(state mapping, config dict or None) from a path, a model object or a mapping.

    Args:
        source: a `.safetensors` file (with the `config.json` beside it, if
            any), a `save_pretrained` folder, a transformers model (its
            `state_dict()` and `.config`) or a state dict.
        config_class: the transformers config class name, for messages.
    """
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            return load_hf_directory(path)
        if not os.path.isfile(path):
            raise ValueError(f"No such file or folder: {path!r}.")
        if not path.endswith(".safetensors"):
            raise ValueError(
                f"Expected a .safetensors file or a save_pretrained folder; received {path!r}."
            )
        config_path = os.path.join(os.path.dirname(path), "config.json")
        config = read_json(config_path, "config") if os.path.isfile(config_path) else None
        return load_safetensors(path), config
    config = getattr(source, "config", None)  # a transformers model object
    state = as_mapping(source, "`source`")
    return state, (hf_config_dict(config, config_class) if config is not None else None)


def hf_config_dict(config, config_class):
    """A config dict from a dict, a transformers config (`to_dict()`) or a config.json path."""
    if config is None:
        return None
    if isinstance(config, (str, os.PathLike)):
        return read_json(os.fspath(config), "config")
    if callable(getattr(config, "to_dict", None)):  # a transformers config object
        return config.to_dict()
    if isinstance(config, dict):
        return dict(config)
    raise ValueError(
        f"`config` must be a dict, a {config_class}-like object with `to_dict()`, or a path "
        f"to config.json; received {type(config).__name__}."
    )


def save_hf_folder(state, config, directory, what):
    """Writes `model.safetensors` (float32 arrays) and `config.json`; returns the weights' path."""
    safetensors = require("safetensors.numpy", what)
    directory = check_path(directory, "`directory`")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.safetensors")
    safetensors.save_file(state, path, metadata={"format": "pt"})  # transformers requires the format
    with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as file:
        json.dump(config, file, indent=2)
    return path


# --- name tables ------------------------------------------------------------------
#
# A converter's name table lists `(their name, our variable, transpose, columns)`:
# `transpose` for a `torch.nn.Linear` weight `(out, in)` against our `Dense` kernel
# `(in, out)`; `columns` None, or the `(start, stop)` of our variable's last axis
# that their tensor fills (several of their tensors fused into one of ours, like
# Llama's q/k/v projections into our `qkv`). Entries may omit `columns`.


def _entry(entry):
    their_name, variable, transpose, *rest = entry
    return their_name, variable, transpose, (rest[0] if rest else None)


def assign_table(table, reader, what):
    """Reads every tensor of `table` from `reader` into our variables, checking shapes first.

    Every missing tensor and every tensor nothing reads is reported (by
    `reader.check`) before any shape; no variable changes unless all fit.
    """
    writer = WeightWriter(what)
    fused = {}  # variable path -> (variable, array being filled, names, problems)
    for entry in table:
        their_name, variable, transpose, columns = _entry(entry)
        array = reader.get(their_name)
        if array is None:
            continue
        ours = array.T if transpose else array
        if columns is None:
            writer.add(variable, ours, their_name, array.shape)
            continue
        shape = tuple(variable.shape)
        _, full, names, problems = fused.setdefault(
            variable.path, (variable, np.zeros(shape, "float32"), [], [])
        )
        names.append(their_name)
        start, stop = columns
        expected = shape[:-1] + (stop - start,)
        if tuple(ours.shape) != expected:
            problems.append(
                f"{what}: tensor {their_name!r} has shape {tuple(array.shape)} but maps to "
                f"{variable.path}[..., {start}:{stop}] of shape {expected}"
                f"{' once transposed' if transpose else ''}."
            )
        else:
            full[..., start:stop] = ours
    reader.check()
    for variable, full, names, problems in fused.values():
        if problems:
            raise ValueError(" ".join(problems))
        writer.add(variable, full, " + ".join(names))
    writer.apply()


def export_table(table):
    """`their name -> float32 NumPy array` for every entry of `table` (the import reversed)."""
    state = {}
    for entry in table:
        their_name, variable, transpose, columns = _entry(entry)
        array = to_numpy(variable)
        if columns is not None:
            array = array[..., columns[0]:columns[1]]
        state[their_name] = np.ascontiguousarray(array.T if transpose else array).astype("float32")
    return state
