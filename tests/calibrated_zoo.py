"""Tiny models and calibration data for GPTQ and AWQ, quantized quickly and quietly.

Shared by `tests/models/test_quantization.py` (what calibration does to a model) and
`tests/reliability/test_cross_backend.py` (calibrated files loaded by the other backends), with
`quantized_layers`, which both (and that test's loader) read the quantized layers of a model by.
Tiny models (d_model 16) keep Keras' column-by-column GPTQ loop short: JAX compiles each of its
eager steps. A group of 16 weights spans a projection's whole input (two groups for a
feed-forward output of d_ff 32).
"""

import warnings
from unittest import mock

import keras
import numpy as np
from keras.src.quantizers import gptq_core

import keras_transformer as kt

GROUP = 16
CALIBRATION_IDS = np.random.default_rng(1).integers(4, 64, size=(64, 32))  # 2048 ids


def tiny_llama(**overrides):
    """A LLaMA-toggle `DecoderOnly` of width 16 (rotary, RMSNorm, SwiGLU, grouped-query
    attention, no biases; two blocks unless `overrides` say otherwise).

    Args:
        **overrides: preset arguments to change (such as `num_layers`).

    Returns:
        A `kt.DecoderOnly` with a vocabulary of 64.
    """
    arguments = dict(vocab_size=64, d_model=16, num_heads=2, num_kv_heads=1, d_ff=32)
    return kt.DecoderOnly.from_preset("llama_tiny", **{**arguments, **overrides})


def tiny_translator(**overrides):
    """A post-LN `EncoderDecoder` of width 16 (sinusoids, one encoder and one decoder block,
    no dropout).

    Args:
        **overrides: preset arguments to change.

    Returns:
        A `kt.EncoderDecoder` with a vocabulary of 64.
    """
    arguments = dict(dropout=0.0, vocab_size=64, d_model=16, num_heads=2, d_ff=32,
                     num_layers=1)
    return kt.EncoderDecoder.from_preset("transformer_tiny", **{**arguments, **overrides})


def calibration_config(mode, dataset=CALIBRATION_IDS, **overrides):
    """The `GPTQConfig` or `AWQConfig` of these tests: 8 windows of 32 ids, groups of `GROUP`.

    256 tokens per projection give 8 or more per input feature (fewer leave GPTQ's Hessian near
    singular). Keras asks for a tokenizer; ids need none.

    Args:
        mode: `"gptq"` or `"awq"`.
        dataset: the calibration ids.
        **overrides: other arguments of the config class.

    Returns:
        The config.
    """
    config_class = {"gptq": keras.quantizers.GPTQConfig, "awq": keras.quantizers.AWQConfig}[mode]
    arguments = dict(dataset=dataset, tokenizer=object(), num_samples=8, sequence_length=32,
                     group_size=GROUP)
    return config_class(**{**arguments, **overrides})


def calibrate(model, mode, **overrides):
    """`model.quantize(mode)` on the calibration ids, quietly, without Keras' `gc.collect()`,
    on the same windows in every process.

    Keras prints a progress bar, warns about saving, and collects garbage as it drops each
    float kernel (0.3-0.5 s each in a test process: most of the time of these quantizations).
    Keras 3.15.1 starts its strided windows at an offset drawn from Python's `hash` of a
    string, which `PYTHONHASHSEED` salts per process: a test would see other windows in each
    run. Here the offset is 0, so a run repeats the one before.

    Args:
        model: the model to quantize in place.
        mode: `"gptq"` or `"awq"`.
        **overrides: arguments of `calibration_config`.
    """
    # Keras looks `hash` up in gptq_core's globals, where the patch puts it: while it does.
    assert "hash" in gptq_core.get_dataloader.__code__.co_names, "Keras picks windows otherwise"
    with warnings.catch_warnings(), mock.patch("gc.collect", lambda *args: 0), \
            mock.patch.object(gptq_core, "hash", lambda key: 0, create=True):
        warnings.simplefilter("ignore")
        model.quantize(mode, config=calibration_config(mode, **overrides))


def quantized_layers(model, policies=False):
    """The layers `model.quantize` changed: `{path: mode}`, each path without the model's name.

    Keras' `quantize` turns a layer's `NotImplementedError` into a warning, so a mode that
    quantizes nothing leaves a float model behind: this map says what did quantize.

    Args:
        model: a Keras model.
        policies: map each path to the layer's dtype policy name (mode, bits and group size,
            such as `"gptq/4/16_from_float32"`) instead of its mode. A layer built from a
            `DTypePolicyMap` (a loaded or rebuilt model) holds the map, which gives its own
            policy by path.

    Returns:
        `{"block_0/self_attention/qkv": "int8", ...}`, empty for a model not quantized.
    """
    quantized = {}
    for layer in model._flatten_layers():
        if layer.quantization_mode is None:
            continue
        value = layer.quantization_mode
        if policies:
            policy = layer.dtype_policy
            if isinstance(policy, keras.dtype_policies.DTypePolicyMap):
                policy = policy[layer.path]
            value = policy.name
        quantized[layer.path.split("/", 1)[-1]] = value
    return quantized
