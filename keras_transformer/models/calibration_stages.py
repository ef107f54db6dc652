"""The forward pass cut into the stages Keras' GPTQ and AWQ calibrate, block after block.

`model.quantize("gptq")` and `"awq"` (Keras' `apply_gptq_layerwise`,
`apply_awq_layerwise`) cut windows of `config.sequence_length` token ids from
the calibration data, run each window `(1, L)` through the "pre-block layers",
then quantize the "sequential blocks" one after the other: each is called as
`stage(x)` with one input, and its output (Keras 3.15 takes `stage(x)[0]`, the
one row, and expands it back to a batch of one) is the next stage's input. A
`TransformerBlock` needs more than one tensor (the padding mask; a decoder
block needs the encoder's output), so the stages carry everything in one
packed tensor, the *stream*: hidden states `(B, P, d_model)` with one more
feature, 1.0 at real tokens and 0.0 at padding (`pad_id`), and for an
encoder-decoder the source's states followed by the target's on the time axis.

Each stage runs the model's own code: `EmbeddingStage` calls `model.embed`
(without dropout) and `keras_transformer.masks.padding_mask`, and each
`BlockStage` calls `model.run_stack` on its one block (with the stack's final
norm after the last block), so the blocks see what the model's forward pass
gives them: causal or banded self-attention, rotary or ALiBi positions from
0, the padding mask of the ids.

* `DecoderOnly`: the stream is the window's states; stage i runs block i.
* `EncoderDecoder`: the window is cut in two. Its first half (`L // 2` ids)
  is the source; the target is `start_id` followed by the second half but its
  last id (teacher forcing: the decoder's input is the target shifted right),
  so the stream is `L` long. The encoder stages transform the source part
  (the last one ends with the encoder's final norm: the source part is then
  the memory); the decoder stages transform the target part, attending to the
  source part as memory with the source's padding mask, as `call` does.

Calibration data is the text the model will read. For a language model,
texts of its domain. For a translator, the sentences of training pairs, each
source followed by its target (`[s for pair in pairs for s in pair]`), with a
`sequence_length` of about two sentences: Keras cuts windows anywhere in the
stream, so a window's source half and target half each read both languages,
but the encoder and the decoder see the vocabulary, lengths and positions of
real pairs. Arrays of ids work too (Keras still asks for a `tokenizer`).

Only the Dense layers inside the blocks are quantized (`within_blocks`): the
token embedding and an untied output projection keep the compute dtype.
Keras 3.15.1's hooks miss the inputs of layers already in a quantized mode;
`BlockStage` routes them there (see `_hooks_reachable`), else GPTQ and AWQ
would round to nearest. The same Keras saves these layers without their zero
points, so their files would not load; `save_what_loads` gives them a save that
writes what their load reads.
"""

import contextlib
import functools
import math
import re
import sys

import keras
import numpy as np
from keras import ops

from keras_transformer import masks

__all__ = [
    "CALIBRATED_MODES", "BlockStage", "EmbeddingStage", "check_config",
    "quantization_layer_structure", "save_what_loads", "within_blocks", "zero_points_in_range",
]

CALIBRATED_MODES = ("gptq", "awq")
"""The `quantize` modes Keras calibrates block by block on data, through these stages."""


def _stacks(model):
    """The model's block stacks, in the order the forward pass runs them, with their norms."""
    if model.config.num_encoder_layers:  # an EncoderDecoder: the decoder reads the encoder
        return [(model.encoder_blocks, model.encoder_norm),
                (model.decoder_blocks, model.decoder_norm)]
    return [(model.blocks, model.final_norm)]


def _pack(parts):
    """`[(hidden (B, T_i, d), bool mask (B, T_i) or None), ...]` -> stream `(B, sum T_i, d + 1)`."""
    packed = []
    for hidden, real in parts:
        real = ops.ones(ops.shape(hidden)[:2]) if real is None else real
        packed.append(ops.concatenate(
            [hidden, ops.expand_dims(ops.cast(real, hidden.dtype), -1)], axis=-1))
    return ops.concatenate(packed, axis=1)


def _unpack(stream, num_parts, masked):
    """The inverse of `_pack`: a list of `(hidden, bool mask or None)`, the first part
    `P // 2` long when there are two."""
    length = stream.shape[1]
    bounds = [0, length] if num_parts == 1 else [0, length // 2, length]
    parts = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        part = stream[:, start:stop]
        real = ops.greater(part[..., -1], 0.5) if masked else None
        parts.append((part[..., :-1], real))
    return parts


class EmbeddingStage(keras.layers.Layer):
    """The pre-block stage of GPTQ/AWQ calibration: a window of ids to the packed stream.

    Embeds as `model.embed` does without dropout and marks the padding as the
    forward pass does (see the module's docstring for the stream's layout). For
    an `EncoderDecoder` the window becomes a source (its first half) and a
    target (`start_id`, then the second half but its last id).

    It holds no weights: the model's embedding layers stay the model's.
    `model.get_quantization_layer_structure("gptq")` makes one; it is not saved.

    Args:
        model: a `DecoderOnly` or `EncoderDecoder`.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        ids: int token ids `(1, L)`, a calibration window (L >= 2 for an
            `EncoderDecoder`).

    Returns:
        The stream `(1, L, d_model + 1)`.

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> model = kt.DecoderOnly.from_preset("llama_tiny")
    >>> tuple(EmbeddingStage(model)(np.array([[5, 6, 7]])).shape)
    (1, 3, 33)
    """

    def __init__(self, model, **kwargs):
        kwargs.setdefault("dtype", model.compute_dtype)
        super().__init__(**kwargs)
        self._embed = model.embed  # a bound method: the model's layers are not tracked here
        self._pad_id, self._start_id = model.config.pad_id, model.config.start_id
        self._two_parts = bool(model.config.num_encoder_layers)

    def call(self, ids):
        parts = [ids]
        if self._two_parts:
            length = ids.shape[1]
            if length < 2:
                raise ValueError(
                    "An EncoderDecoder cuts each calibration window into a source and a "
                    "target: `sequence_length` must be at least 2; received a window of "
                    f"{length} id(s)."
                )
            target = ids[:, length // 2:]
            if self._start_id is not None:  # teacher forcing: the target shifted right
                start = ops.full((ops.shape(ids)[0], 1), self._start_id, dtype=ids.dtype)
                target = ops.concatenate([start, target[:, :-1]], axis=1)
            parts = [ids[:, :length // 2], target]
        return _pack([(self._embed(part, training=False), masks.padding_mask(part, self._pad_id))
                      for part in parts])


class BlockStage(keras.layers.Layer):
    """One block of GPTQ/AWQ calibration: runs `block` on its part of the packed stream.

    Calls `run_stack([block], final_norm, ...)`, the model's own stack code,
    on its part of the stream with that part's padding mask, and, for a block
    with cross-attention, the part before it (the encoder's output) as
    `memory` with its padding mask; the other parts pass unchanged. The
    block is a sublayer, so Keras finds the block's Dense and EinsumDense
    layers through this stage and quantizes them in place; the stage itself
    holds no weights and is not saved.

    Args:
        block: a `TransformerBlock` of the model.
        run_stack: the model's `run_stack`.
        final_norm: the stack's final norm, for the stack's last block; else None.
        part: which part of the stream the block transforms (0: the decoder-only
            model's tokens or the encoder's source, 1: the decoder's target).
        num_parts: 1 (`DecoderOnly`) or 2 (`EncoderDecoder`).
        masked: whether the model has a `pad_id` (else the forward pass has no
            padding mask either).
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        stream: `(1, P, d_model + 1)`, as `EmbeddingStage` or the previous
            stage returned it.

    Returns:
        The stream with the block's part transformed, the same shape.

    Example:
    >>> import numpy as np, keras_transformer as kt
    >>> model = kt.DecoderOnly.from_preset("llama_tiny")
    >>> structure = model.get_quantization_layer_structure("gptq")
    >>> stream = structure["pre_block_layers"][0](np.array([[5, 6, 7]]))
    >>> tuple(structure["sequential_blocks"][0](stream).shape)
    (1, 3, 33)
    """

    def __init__(self, block, run_stack, final_norm=None, part=0, num_parts=1, masked=True,
                 **kwargs):
        kwargs.setdefault("dtype", block.compute_dtype)
        kwargs.setdefault("name", f"{block.name}_stage")
        super().__init__(**kwargs)
        self.block, self.final_norm = block, final_norm
        self._run_stack = run_stack
        self._part, self._num_parts, self._masked = part, num_parts, masked

    def call(self, stream):
        with _hooks_reachable(self.block):
            return self._run(stream)

    def _run(self, stream):
        parts = _unpack(stream, self._num_parts, self._masked)
        hidden, real = parts[self._part]
        memory = {}
        if self._part > 0:  # a decoder block reads the encoder's output
            memory = {"memory": parts[self._part - 1][0], "memory_mask": parts[self._part - 1][1]}
        hidden = self._run_stack([self.block], self.final_norm, hidden, real, training=False,
                                 **memory)
        parts[self._part] = (hidden, real)
        return _pack(parts)


@contextlib.contextmanager
def _hooks_reachable(block):
    """Lets Keras' calibration hooks see the inputs of the block's layers.

    Keras 3.15 (`gptq_core.stream_hessians`, `awq_core.stream_activations`)
    wraps each layer's `call` to collect its inputs, but it has already put the
    layer in the `"gptq"` or `"awq"` mode, and a layer in a quantized mode runs
    `quantized_call`, never `call`: the hooks would see nothing, every Hessian
    would stay zero and GPTQ and AWQ would round to nearest (AWQ's scales all 1).
    While a layer is uncalibrated and `call` is its own attribute (Keras' hook;
    later Keras versions wrap `quantized_call` instead, and this leaves those
    alone), this sends `quantized_call` to it: the hook records the input and
    runs the float kernel, as the uncalibrated `quantized_call` does.
    """
    redirected = []
    for layer in block._flatten_layers():
        own = vars(layer)
        uncalibrated = layer.quantization_mode in CALIBRATED_MODES and not (
            getattr(layer, "is_gptq_calibrated", False)
            or getattr(layer, "is_awq_calibrated", False))
        if uncalibrated and "call" in own and "quantized_call" not in own:
            object.__setattr__(layer, "quantized_call", own["call"])
            redirected.append(layer)
    try:
        yield
    finally:
        for layer in redirected:
            object.__delattr__(layer, "quantized_call")


def quantization_layer_structure(model):
    """The structure `model.quantize("gptq")` and `"awq"` calibrate: one `EmbeddingStage`,
    then one `BlockStage` per block, encoder blocks before decoder blocks.

    Args:
        model: a `DecoderOnly` or `EncoderDecoder`.

    Returns:
        `{"pre_block_layers": [EmbeddingStage], "sequential_blocks": [BlockStage, ...]}`.

    Example:
    >>> import keras_transformer as kt
    >>> model = kt.EncoderDecoder.from_preset("transformer_tiny")
    >>> structure = quantization_layer_structure(model)
    >>> [stage.block.name for stage in structure["sequential_blocks"]]
    ['encoder_block_0', 'encoder_block_1', 'decoder_block_0', 'decoder_block_1']
    """
    stacks = _stacks(model)
    stages = []
    for part, (blocks, final_norm) in enumerate(stacks):
        for i, block in enumerate(blocks):
            stages.append(BlockStage(
                block, model.run_stack, final_norm if i == len(blocks) - 1 else None,
                part=part, num_parts=len(stacks), masked=model.config.pad_id is not None,
            ))
    return {"pre_block_layers": [EmbeddingStage(model)], "sequential_blocks": stages}


def check_config(model, mode, config):
    """Refuses a `"gptq"` or `"awq"` config `model` cannot calibrate on, naming what is wrong.

    Keras checks the dataset and the tokenizer only after it has turned every
    layer into an uncalibrated quantized one; this runs before.

    Args:
        model: the `DecoderOnly` or `EncoderDecoder` to quantize.
        mode: `"gptq"` or `"awq"`.
        config: the `GPTQConfig` or `AWQConfig` passed to `quantize`.

    Raises:
        ValueError: `config` has no `dataset` or no `tokenizer`, or its
            `sequence_length` is below 2 for an `EncoderDecoder`.

    Example:
    >>> import keras, keras_transformer as kt
    >>> model = kt.DecoderOnly.from_preset("llama_tiny")
    >>> check_config(model, "gptq", keras.quantizers.GPTQConfig(dataset=None, tokenizer=None))
    Traceback (most recent call last):
    ...
    ValueError: quantize('gptq') calibrates on data: its config (GPTQConfig) needs a dataset and a tokenizer; received dataset=None and tokenizer=None. ...
    """
    missing = [name for name in ("dataset", "tokenizer") if getattr(config, name, None) is None]
    if missing:
        raise ValueError(
            f"quantize({mode!r}) calibrates on data: its config ({type(config).__name__}) "
            f"needs {' and '.join('a ' + name for name in missing)}; received "
            f"{' and '.join(name + '=None' for name in missing)}. Pass `dataset` (texts, or "
            "arrays of token ids) and `tokenizer` (whose `tokenize(text)` gives this model's "
            "ids; Keras asks for one even when `dataset` holds ids)."
        )
    if model.config.num_encoder_layers and config.sequence_length < 2:
        raise ValueError(
            "An EncoderDecoder cuts each calibration window into a source and a target: "
            f"`sequence_length` must be at least 2; received {config.sequence_length}."
        )


@functools.lru_cache(maxsize=None)
def _keras_saves_zero_points(mode):
    """Whether this Keras' Dense saves every variable of a `mode` layer (3.15.1 does not)."""
    probe = keras.layers.Dense(1, dtype=f"{mode}/4/-1_from_float32")
    probe.build((None, 1))
    store = {}
    probe.save_own_variables(store)
    return len(store) == len(probe.variables)


def _save_as_loaded(layer, store):
    """`save_own_variables` of a GPTQ/AWQ Dense or EinsumDense: the variables its
    `load_own_variables` reads, in that order."""
    if layer.lora_enabled:
        raise ValueError(f"{layer.path}: a {layer.quantization_mode!r} layer with LoRA adapters "
                         "cannot be saved with them merged; save_lora_weights saves them alone.")
    index = 0
    for name in layer.variable_serialization_spec[layer.quantization_mode]:
        if name == "bias" and layer.bias is None:
            continue
        if name in ("kernel_zero", "g_idx") and not hasattr(layer, name):
            continue
        store[str(index)] = layer._kernel if name == "kernel" else getattr(layer, name)
        index += 1


def save_what_loads(model):
    """Makes each `"gptq"` or `"awq"` layer of the model save what its load reads.

    Keras 3.15.1's Dense and EinsumDense leave the zero points (`kernel_zero`)
    of these modes out of the file but expect them when loading, so
    `keras.saving.load_model` refused the file ("expected 5 variables, but
    received 4"). Where this Keras does so, each such layer saves with
    `_save_as_loaded` instead; a Keras that writes them keeps its own.

    Args:
        model: a built model.
    """
    for layer in model._flatten_layers(include_self=False):
        mode = layer.quantization_mode
        if (mode in CALIBRATED_MODES and isinstance(layer, (keras.layers.Dense,
                                                             keras.layers.EinsumDense))
                and not _keras_saves_zero_points(mode)):
            layer.save_own_variables = functools.partial(_save_as_loaded, layer)


def _keras_quantizers():
    """Keras' module that computes GPTQ's and AWQ's scales and zero points."""
    from keras.src.quantizers import quantizers  # Keras' own module: not in its public API

    return quantizers


@functools.lru_cache(maxsize=None)
def _keras_grid_misses_one_signed_groups():
    """Whether this Keras' asymmetric 4-bit grid fails a group whose weights are all of one
    sign (3.15.1 does: its zero point leaves `[0, 15]` and is cast to `uint8`)."""
    quantizers = _keras_quantizers()
    weights = ops.convert_to_tensor(np.array([[0.5, 0.6, 1.0], [-1.0, -0.995, -0.99]],
                                             "float32"))
    scale, zero, maxq = quantizers.compute_quantization_parameters(
        weights, bits=4, per_channel=True)
    levels = quantizers.quantize_with_zero_point(weights, scale, zero, maxq)
    error = ops.abs(quantizers.dequantize_with_zero_point(levels, scale, zero) - weights)
    return not bool(ops.convert_to_numpy(ops.all(error <= scale / 2 + 1e-6)))


def _parameters_with_zero_in_range(compute, x, *, bits, symmetric=False, per_channel=False,
                                   group_size=-1, compute_dtype="float32", epsilon=0.0,
                                   signed=False):
    """Keras' `compute_quantization_parameters` (`compute`), with 0 in each asymmetric group.

    A group (a row, a group of `group_size` inputs of a row, or the whole
    tensor, as `compute` forms them) whose weights are all of one sign gets
    the range from 0 to its farthest weight, so its zero point lies in
    `[0, 2**bits - 1]`; a group with weights of both signs keeps Keras' range,
    hence its scale and zero point. Symmetric grids are Keras' own.
    """
    if symmetric:
        return compute(x, bits=bits, symmetric=symmetric, per_channel=per_channel,
                       group_size=group_size, compute_dtype=compute_dtype, epsilon=epsilon,
                       signed=signed)
    out_features, in_features = x.shape[0], x.shape[1]
    groups = 1
    if per_channel and group_size > 0:  # rows of one group each, zero-padded as Keras pads
        groups = math.ceil(in_features / group_size)
        if groups * group_size > in_features:
            x = ops.pad(x, [[0, 0], [0, groups * group_size - in_features]])
        rows = ops.reshape(x, (out_features * groups, group_size))
    else:
        rows = x if per_channel else ops.reshape(x, (1, -1))
    rows = ops.concatenate([rows, ops.zeros((rows.shape[0], 1), dtype=rows.dtype)], axis=1)
    scale, zero, maxq = compute(rows, bits=bits, symmetric=False, per_channel=True,
                                group_size=-1, compute_dtype=compute_dtype, epsilon=epsilon,
                                signed=signed)
    if not per_channel:  # one grid for the tensor, repeated per output as Keras does
        return (ops.tile(scale, (out_features, 1)), ops.tile(zero, (out_features, 1)), maxq)
    return (ops.reshape(scale, (out_features, groups)), ops.reshape(zero, (out_features, groups)),
            maxq)


@contextlib.contextmanager
def zero_points_in_range(mode):
    """While it is open, GPTQ's and AWQ's grids include 0: every zero point fits its bits.

    Keras 3.15.1's asymmetric grid spans a group's smallest to largest weight,
    and its zero point, `round(-smallest / scale)`, is cast to `uint8`. A group
    whose weights are all positive gets a negative zero point, one whose
    weights are all negative and close together one above 255: the cast wraps
    them on TensorFlow and PyTorch (a zero point of 255 for -1) and saturates
    them on JAX, and the group's levels, chosen with that zero point, come out
    wrong (a kernel off by several times its own norm). Groups of 8 in a model
    of width 16 have such groups. Inside this context, Keras'
    `compute_quantization_parameters` gives each such group the range from 0 to
    its farthest weight (GPTQ's reference implementation always includes 0), so
    its zero point lies in `[0, 2**bits - 1]`; groups with weights of both signs
    keep Keras' grid. `TransformerModel.quantize` opens it around Keras'
    `quantize`. A Keras whose grid represents such groups keeps its own (probed).

    Args:
        mode: the quantization mode; the context changes nothing for modes
            other than `"gptq"` and `"awq"`.

    Yields:
        None.

    Example:
    >>> import numpy as np
    >>> from keras import ops
    >>> from keras.src.quantizers import quantizers
    >>> weights = np.array([[0.5, 0.6, 1.0], [-1.0, -0.995, -0.99]], "float32")  # one sign
    >>> with zero_points_in_range("gptq"):
    ...     scale, zero, maxq = quantizers.compute_quantization_parameters(
    ...         weights, bits=4, per_channel=True)
    >>> ops.convert_to_numpy(zero).ravel().tolist()  # Keras alone: 241 (or 0) and 220 (or 255)
    [0, 15]
    """
    if mode not in CALIBRATED_MODES or not _keras_grid_misses_one_signed_groups():
        yield
        return
    original = _keras_quantizers().compute_quantization_parameters
    replacement = functools.partial(_parameters_with_zero_in_range, original)
    # Keras' quantizer modules import the function by name (GPTQ's quantizer calls it from
    # `quantizers`, AWQ from `awq`): each name that holds it gets the replacement, and gives
    # the original back after (a module imported meanwhile too).
    for module, name in _holders(original):
        setattr(module, name, replacement)
    try:
        yield
    finally:
        for module, name in _holders(replacement):
            setattr(module, name, original)


def _holders(function):
    """`(module, name)` of each name in Keras' quantizer modules bound to `function`."""
    return [(module, name) for module_name, module in list(sys.modules.items())
            if module_name.startswith("keras.src.quantizers") and module is not None
            for name, value in list(vars(module).items()) if value is function]


def within_blocks(structure, filters=None):
    """A `quantize` filter that keeps the Dense and EinsumDense layers of the structure's
    blocks (those Keras calibrates) that `filters` keeps.

    Keras gives every Dense layer the `"gptq"` or `"awq"` policy but calibrates
    only those inside the sequential blocks: a layer outside them (an untied
    `output_projection`) would keep its float kernel beside empty quantized
    ones, and a saved model would load those. The token embedding and the output
    projection therefore stay in the compute dtype, as keras-hub's and GPTQ's
    reference implementations leave them.

    Args:
        structure: `{"pre_block_layers": [...], "sequential_blocks": [...]}`.
        filters: the filters passed to `quantize` (a regex on layer names, a list
            of them or a callable), or None.

    Returns:
        A callable filter.

    Example:
    >>> import keras_transformer as kt
    >>> model = kt.DecoderOnly.from_preset("llama_tiny")
    >>> keep = within_blocks(quantization_layer_structure(model), "qkv")
    >>> [layer.path.split("/", 1)[1] for layer in model._flatten_layers() if keep(layer)]
    ['block_0/self_attention/qkv', 'block_1/self_attention/qkv']
    """
    inside = {id(layer) for block in structure["sequential_blocks"]
              for layer in block._flatten_layers()
              if isinstance(layer, (keras.layers.Dense, keras.layers.EinsumDense))}

    def keep(layer):
        if id(layer) not in inside:
            return False
        if filters is None:
            return True
        if callable(filters):
            return bool(filters(layer))
        patterns = [filters] if isinstance(filters, str) else filters
        return any(re.search(pattern, layer.name) for pattern in patterns)  # Keras' rule

    return keep
