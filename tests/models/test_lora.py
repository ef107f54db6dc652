"""LoRA as keras-hub's backbones have it: enable_lora, save/load_lora_weights, merged saving."""

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt


def _llama():
    return kt.DecoderOnly.from_preset("llama_tiny")  # no biases


def _transformer():
    return kt.EncoderDecoder.from_preset("transformer_tiny", dropout=0.0)


def _inputs(model, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, model.config.vocab_size, size=(4, 6)).astype("int32")
    if isinstance(model, kt.EncoderDecoder):
        return {"source": ids, "target": np.roll(ids, 1, axis=1)}
    return ids


def _logits(model, inputs):
    return ops.convert_to_numpy(model(inputs))


def _train(model, inputs, steps=3):
    """A few steps of the family's recipe at a rate that moves the adapters."""
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    labels = inputs["target"] if isinstance(inputs, dict) else inputs
    model.fit(inputs, np.roll(labels, -1, axis=1), batch_size=4, epochs=steps, verbose=0)


def _paths(weights):
    return sorted(w.path.split("/", 1)[1] for w in weights)


@pytest.mark.parametrize("build,targets", [
    (_llama, {"qkv"}), (_transformer, {"qkv", "query", "key_value"})], ids=["llama", "transformer"])
def test_only_the_attention_adapters_train_and_the_model_starts_where_it_was(build, targets):
    model = build()
    inputs = _inputs(model)
    before = _logits(model, inputs)
    frozen = {w.path: ops.convert_to_numpy(w) for w in model.weights}
    model.enable_lora(4)
    adapted = [layer for layer in model._flatten_layers() if getattr(layer, "lora_enabled", False)]
    assert {layer.name for layer in adapted} == targets
    lora_weights = model.trainable_weights
    assert all("lora_kernel" in w.path for w in lora_weights)  # the biases too are frozen
    assert len(lora_weights) == 2 * len(adapted)
    assert sum(int(np.prod(w.shape)) for w in lora_weights) == sum(
        4 * (layer.lora_kernel_a.shape[0] + layer.lora_kernel_b.shape[1]) for layer in adapted)
    np.testing.assert_array_equal(_logits(model, inputs), before)  # B starts at zero

    _train(model, inputs)
    after = {w.path: ops.convert_to_numpy(w) for w in model.weights}
    assert all(np.array_equal(frozen[path], after[path]) for path in frozen)
    assert any(not np.allclose(ops.convert_to_numpy(w), 0) for w in lora_weights
               if w.path.endswith("lora_kernel_b"))
    assert not np.allclose(_logits(model, inputs), before)


@pytest.mark.parametrize("build", [_llama, _transformer], ids=["llama", "transformer"])
def test_saving_merges_the_adapters_and_the_adapters_travel_alone(build, tmp_path):
    base = build()
    base_file = str(tmp_path / "base.keras")
    base.save(base_file)
    model = keras.saving.load_model(base_file)
    inputs = _inputs(model)
    model.enable_lora(2)
    _train(model, inputs)
    tuned = _logits(model, inputs)
    assert not np.allclose(tuned, _logits(base, inputs))  # what follows carries a change

    merged_file = str(tmp_path / "merged.keras")
    model.save(merged_file)
    merged = keras.saving.load_model(merged_file, safe_mode=True)
    assert not any(getattr(layer, "lora_enabled", False) for layer in merged._flatten_layers())
    assert len(merged.weights) == len(base.weights)
    np.testing.assert_allclose(_logits(merged, inputs), tuned, atol=1e-5, rtol=0)

    adapters = tmp_path / "tuned.lora.h5"
    model.save_lora_weights(adapters)
    assert adapters.stat().st_size < 0.2 * (tmp_path / "base.keras").stat().st_size
    fresh = keras.saving.load_model(base_file)
    fresh.load_lora_weights(adapters)  # enables LoRA on the same layers, then loads
    np.testing.assert_allclose(_logits(fresh, inputs), tuned, atol=1e-5, rtol=0)
    again = keras.saving.load_model(base_file)
    again.enable_lora(2)
    again.load_lora_weights(adapters)
    np.testing.assert_allclose(_logits(again, inputs), tuned, atol=1e-5, rtol=0)


def _set_adapters(model, seed=1):
    """Adapters large enough to change every output (as after a long fine-tune)."""
    rng = np.random.default_rng(seed)
    for layer in model._flatten_layers():
        if getattr(layer, "lora_enabled", False):
            layer.lora_kernel_b.assign(rng.normal(0, 0.5, layer.lora_kernel_b.shape))


def test_a_lora_model_can_be_quantized_as_keras_allows(tmp_path):
    """Keras quantizes the frozen kernel and keeps the adapters in float32 (QLoRA's layout);
    the saved model holds the merged kernels, quantized again."""
    keras.utils.set_random_seed(0)
    model = _llama()
    inputs = _inputs(model)
    model.enable_lora(2)
    _set_adapters(model)
    tuned = _logits(model, inputs)
    model.quantize("int8")
    adapted = [layer for layer in model._flatten_layers() if layer.name == "qkv"]
    assert all(layer.lora_enabled and layer.quantization_mode == "int8" for layer in adapted)
    assert all(keras.backend.standardize_dtype(layer.lora_kernel_a.dtype) == "float32"
               for layer in adapted)
    quantized = _logits(model, inputs)
    assert np.abs(quantized - tuned).max() < 0.05 * np.abs(tuned).max()
    path = str(tmp_path / "qlora.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert all(layer.quantization_mode == "int8" and not layer.lora_enabled
               for layer in restored._flatten_layers() if layer.name == "qkv")
    assert np.abs(_logits(restored, inputs) - tuned).max() < 0.05 * np.abs(tuned).max()


@pytest.mark.parametrize("change", ["enable_lora", "quantize"])
def test_generate_after_enable_lora_or_quantize_uses_the_new_weights(change, tmp_path):
    """The decode loop compiled before captured the old variables: it must not be reused."""
    base = _llama()
    path = str(tmp_path / "base.keras")
    base.save(path)
    prompts = _inputs(base)[:, :3]
    used = keras.saving.load_model(path)
    used.generate(prompts, max_new_tokens=5)  # compiles a loop for these shapes
    fresh = keras.saving.load_model(path)
    for model in (used, fresh):
        keras.utils.set_random_seed(0)
        if change == "enable_lora":
            model.enable_lora(2)
            _set_adapters(model)
        else:
            model.quantize("int8")
    expected = fresh.generate(prompts, max_new_tokens=5)
    np.testing.assert_array_equal(used.generate(prompts, max_new_tokens=5), expected)
    if change == "enable_lora":  # the adapters change what is generated
        assert not np.array_equal(expected, base.generate(prompts, max_new_tokens=5))


@pytest.mark.parametrize("call,pattern", [
    (lambda m, p: m.enable_lora(0), r"`rank` must be a whole number >= 1; received 0"),
    (lambda m, p: m.enable_lora(True), r"`rank` must be a whole number >= 1; received True"),
    (lambda m, p: m.enable_lora("4"), r"`rank` must be a whole number >= 1; received '4'"),
    (lambda m, p: m.enable_lora(2, ["attention"]),
     r"`target_layer_names` \['attention'\] names no layer of this model that takes LoRA; "
     r"its layers are named \[.*'qkv'"),
    (lambda m, p: m.enable_lora(2, "qkv"), r"`target_layer_names` must be a list of layer names"),
    (lambda m, p: m.enable_lora(2, ["token_embedding"]),
     r"`target_layer_names` \['token_embedding'\] names no layer of this model that takes LoRA"),
    (lambda m, p: m.enable_lora(10**8), r"`rank` 100000000 is more than the smallest dimension "
     r"\(\d+\) of the layers it adapts"),
    (lambda m, p: m.save_lora_weights(p / "a.lora.h5"), r"no LoRA adapters to save; call enable_lora"),
    (lambda m, p: m.load_lora_weights(p / "missing.lora.h5"), r"cannot read LoRA weights from"),
])
def test_bad_lora_arguments_are_refused_naming_them(call, pattern, tmp_path):
    with pytest.raises(ValueError, match=pattern):
        call(_llama(), tmp_path)


def test_lora_twice_another_rank_another_model_and_a_bad_name_are_refused(tmp_path):
    model = _llama()
    model.enable_lora(2)
    with pytest.raises(ValueError, match=r"LoRA is already enabled on this model \(rank 2"):
        model.enable_lora(2)
    with pytest.raises(ValueError, match=r"`filepath` must end in '\.lora\.h5'"):
        model.save_lora_weights(tmp_path / "adapters.h5")
    path = tmp_path / "adapters.lora.h5"
    model.save_lora_weights(path)
    other_rank = _llama()
    other_rank.enable_lora(4)
    with pytest.raises(ValueError, match=r"holds rank-2 adapters, but LoRA is enabled here with "
                                         r"rank 4"):
        other_rank.load_lora_weights(path)
    wider = kt.DecoderOnly.from_preset("llama_tiny", d_model=64)
    with pytest.raises(ValueError, match=r"the adapters of block_0/self_attention/qkv have shapes "
                                         r"\(32, 2\) and \(2, 64\); this model's have \(64, 2\)"):
        wider.load_lora_weights(path)
    shallower = kt.DecoderOnly.from_preset("llama_tiny", num_layers=1)
    with pytest.raises(ValueError, match=r"holds LoRA weights for layers this model lacks: "
                                         r"\['block_1/self_attention/qkv'\]"):
        shallower.load_lora_weights(path)
    for refused in (wider, shallower):  # a refused file leaves the model as it was
        assert not any(getattr(layer, "lora_enabled", False) for layer in refused._flatten_layers())
        assert len(refused.trainable_weights) == len(refused.weights)
    with pytest.raises(ValueError, match=r"holds LoRA weights of a DecoderOnly; this model is a "
                                         r"EncoderDecoder"):
        _transformer().load_lora_weights(path)
    (tmp_path / "junk.lora.h5").write_bytes(b"not hdf5")
    with pytest.raises(ValueError, match=r"cannot read LoRA weights from"):
        _llama().load_lora_weights(tmp_path / "junk.lora.h5")


@pytest.mark.parametrize("build", [_llama, _transformer], ids=["DecoderOnly", "EncoderDecoder"])
def test_merge_lora_gives_a_plain_model_computing_the_same(build):
    model = build()
    model.enable_lora(2)
    for layer in kt.models.lora.lora_layers(model):
        layer.lora_kernel_b.assign(np.full(layer.lora_kernel_b.shape, 0.05, "float32"))
    inputs = _inputs(model)
    merged = model.merge_lora()
    assert kt.models.lora.lora_layers(merged) == [] and type(merged) is type(model)
    assert len(merged.trainable_weights) == len(merged.weights)
    np.testing.assert_allclose(ops.convert_to_numpy(merged(inputs)),
                               ops.convert_to_numpy(model(inputs)), atol=1e-5)


@pytest.mark.parametrize("mode", ["float8", "gptq", "awq"])
def test_lora_and_the_modes_keras_cannot_merge_into_are_refused_before_any_change(mode):
    model = _llama()
    model.enable_lora(2)
    config = {"gptq": keras.quantizers.GPTQConfig, "awq": keras.quantizers.AWQConfig}.get(mode)
    config = config and config(dataset=np.full((4, 16), 5), tokenizer=object(),
                               sequence_length=8, num_samples=2, group_size=16)
    with pytest.raises(ValueError, match=f"`mode` '{mode}' cannot quantize a model with LoRA"):
        model.quantize(mode, config=config)
    assert {layer.quantization_mode for layer in model._flatten_layers()} == {None}

    # A model whose attention projections are in that mode, as a loaded quantized model is.
    reference = kt.DecoderOnly.from_preset("llama_tiny", name="probe")
    policy_map = keras.dtype_policies.DTypePolicyMap(default_policy="float32")
    for layer in reference._flatten_layers():
        if layer.name == "qkv":
            policy_map[layer.path] = (f"{mode}/4/16_from_float32" if mode in ("gptq", "awq")
                                      else f"{mode}_from_float32")
    quantized = kt.DecoderOnly.from_preset("llama_tiny", name="probe", dtype=policy_map)
    assert {layer.quantization_mode for layer in quantized._flatten_layers()
            if layer.name == "qkv"} == {mode}
    trainable = len(quantized.trainable_weights)
    with pytest.raises(ValueError, match=f"LoRA cannot adapt this model's '{mode}'-quantized"):
        quantized.enable_lora(2)
    assert len(quantized.trainable_weights) == trainable and kt.models.lora.lora_layers(quantized) == []


def test_an_empty_target_list_adapts_nothing_and_says_so():
    with pytest.raises(ValueError, match=r"`target_layer_names` \[\] names no layer"):
        _llama().enable_lora(2, [])
