"""kt.distribution.plan: the weights it enumerates, its arithmetic, and XLA's measurement.

The enumeration and arithmetic tests run under every backend (nothing is
placed on a device). The measurement test needs JAX: it runs
tests/distribution/plan_checks.py in a fresh process with 8 virtual CPU
devices, where each data- and model-parallel plan must be within 15% of
XLA's buffer assignment for the compiled Keras train step, each
fully-sharded one within the range the module docstring states, and the
planned weights and optimizer state equal to what device 0 holds.
"""

import json
import math
import pathlib

import keras
import numpy as np
import pytest
from jax_processes import run_on_eight_devices

import keras_transformer as kt
from keras_transformer import distribution
from keras_transformer.models import preset_config

ROOT = pathlib.Path(__file__).resolve().parents[2]
JAX_ONLY = pytest.mark.skipif(keras.backend.backend() != "jax",
                              reason="XLA's memory analysis of a compiled step: JAX only")

# Tiny models of both families, each toggle the weights depend on flipped somewhere.
BUILT = {
    "gpt2": ("DecoderOnly", "gpt2_tiny", {}),
    "gpt3_banded": ("DecoderOnly", "gpt3_tiny", {}),
    "llama": ("DecoderOnly", "llama_tiny", {}),
    "llama_qk_norm_tied_biases": ("DecoderOnly", "llama_tiny",
                                  dict(qk_norm=True, tie_embeddings=True, use_bias=True)),
    "gpt2_untied_rms_geglu_post": ("DecoderOnly", "gpt2_tiny",
                                   dict(tie_embeddings=False, norm="rms", feed_forward="geglu",
                                        ln_position="post")),
    "gpt2_alibi_multi_query": ("DecoderOnly", "gpt2_tiny",
                               dict(position="alibi", num_kv_heads=1, qk_norm=True, name="lm")),
    "transformer": ("EncoderDecoder", "transformer_tiny", {}),
    "transformer_everything": ("EncoderDecoder", "transformer_tiny", dict(
        tie_embeddings=False, position="learned", qk_norm=True, ln_position="pre",
        feed_forward="swiglu", num_kv_heads=2, use_bias=False, num_encoder_layers=1,
        num_decoder_layers=3)),
    "transformer_rms_rotary": ("EncoderDecoder", "transformer_tiny",
                               dict(norm="rms", position="rotary", name="translator")),
    "gpt2_parallel_softcap": ("DecoderOnly", "gpt2_tiny",
                              dict(parallel_block=True, attention_softcap=5.0)),
}
GPT2 = preset_config("gpt2_tiny")


@pytest.mark.parametrize("name", sorted(BUILT))
def test_weight_shapes_are_the_built_models_weights(name):
    family, preset, overrides = BUILT[name]
    model = getattr(kt, family).from_preset(preset, **overrides)
    built = [(variable.path, tuple(variable.shape)) for variable in model.weights]
    assert distribution.weight_shapes(model.config, name=model.name) == built


@pytest.mark.parametrize("preset", sorted(kt.models.PRESETS))
def test_weight_shapes_add_up_to_every_presets_count(preset):
    config = preset_config(preset)
    shapes = distribution.weight_shapes(config)
    assert sum(math.prod(shape) for _, shape in shapes) == config.count_params()
    family = "encoder_decoder" if config.num_encoder_layers else "decoder_only"
    assert all(path.startswith(family + "/") for path, _ in shapes)


def test_data_parallel_holds_every_weight_moment_and_gradient_on_each_device():
    step = distribution.plan(GPT2, {"batch": 8}, batch_size=16, length=64)
    params = GPT2.count_params()
    assert step.weights == step.gradients == 4 * params
    assert step.optimizer_state == 2 * 4 * params  # Adam's two float32 moments
    assert step.devices == 8 and step.tokens == 16 * 64
    assert step.gathered == 0
    assert step.total == step.weights + step.optimizer_state + max(
        step.activations, step.gradients + step.reduction)


def test_few_rows_per_device_peak_at_the_end_of_the_backward_pass():
    """With one row per device the gradients, not the kept activations, make the peak; on
    XLA:CPU with their all-reduced copy, and a tied embedding's two gradient terms."""
    tied = 4 * GPT2.vocab_size * GPT2.d_model  # the output projection's gradient term
    gpu = distribution.plan(GPT2, {"batch": 8}, 8, 16)
    cpu = distribution.plan(GPT2, {"batch": 8}, 8, 16, in_place_all_reduce=False)
    alone = distribution.plan(GPT2, {"batch": 1}, 1, 16, in_place_all_reduce=False)
    assert gpu.reduction == alone.reduction == tied  # one device: nothing to all-reduce
    assert cpu.reduction == tied + (cpu.gradients + tied)
    assert cpu.activations < cpu.gradients + cpu.reduction  # the end is the peak
    assert cpu.total == cpu.weights + cpu.optimizer_state + 2 * (cpu.gradients + tied)
    assert gpu.total == gpu.weights + gpu.optimizer_state + max(gpu.activations,
                                                                gpu.gradients + tied)
    untied = preset_config("gpt2_tiny", tie_embeddings=False)
    assert distribution.plan(untied, {"batch": 8}, 8, 16).reduction == 0
    # Megatron's split: the batch axis all-reduces each device's slices.
    megatron = distribution.plan(GPT2, {"batch": 2, "model": 4}, 2, 16,
                                 layout="model_parallel", in_place_all_reduce=False)
    assert megatron.reduction == 2 * tied // 4 + megatron.gradients
    assert distribution.plan(GPT2, {"batch": 1, "model": 8}, 1, 16, layout="model_parallel",
                             in_place_all_reduce=False,
                             flash_attention=True).reduction == tied // 8  # 4 heads on 8


def test_fully_sharded_gathers_one_block_and_the_output_projection():
    config = preset_config("gpt2_small", vocab_size=50304)  # divisible by 4
    mesh = {"batch": 2, "model": 4}

    def whole(path, shape):  # elements on one device with the model axis' split only
        split = 4 ** sum(axis is not None for axis in distribution.megatron_axes(path, len(shape)))
        return math.prod(shape) // split

    shapes = distribution.weight_shapes(config)
    block = sum(whole(path, shape) for path, shape in shapes if "/block_0/" in path)
    embedding = whole(*shapes[0])
    step = distribution.plan(config, mesh, 8, 1024, layout="fully_sharded",
                             in_place_all_reduce=False)
    assert step.gathered == 4 * (2 * block + embedding)  # float32 weights and gradients
    assert step.reduction == 0  # reduce-scattered slices, counted in the gradients
    assert step.total == (step.weights + step.optimizer_state + step.gathered
                          + max(step.activations, step.gradients))
    assert distribution.plan(config, mesh, 8, 1024, layout="model_parallel").gathered == 0


@pytest.mark.parametrize("optimizer, moments", [("adam", 2), ("momentum", 1), ("sgd", 0)])
def test_optimizer_state_counts_the_optimizers_moments(optimizer, moments):
    step = distribution.plan(GPT2, {"batch": 1}, 1, 64, optimizer=optimizer)
    assert step.optimizer_state == moments * step.weights


def test_dtype_policies_and_float32_moments():
    mixed = distribution.plan(GPT2, {"batch": 1}, 1, 64, dtype="mixed_bfloat16")
    half = distribution.plan(GPT2, {"batch": 1}, 1, 64, dtype="bfloat16",
                             optimizer_dtype="float32")
    full = distribution.plan(GPT2, {"batch": 1}, 1, 64)
    assert mixed.weights == full.weights == 2 * half.weights  # mixed keeps float32 weights
    assert half.optimizer_state == full.optimizer_state
    # The kept activations follow the compute dtype, the head's gradient buffers the weights'.
    assert half.activations < mixed.activations < full.activations


def test_model_parallel_and_sharded_layouts_split_what_the_distribution_splits():
    config = preset_config("gpt2_small", vocab_size=50304)  # divisible by 4
    mesh = {"batch": 2, "model": 4}
    whole = distribution.plan(config, mesh, 8, 1024).weights
    megatron = distribution.plan(config, mesh, 8, 1024, layout="model_parallel").weights
    sharded = distribution.plan(config, mesh, 8, 1024, layout="fully_sharded").weights
    replicated = 4 * sum(math.prod(shape) for path, shape in distribution.weight_shapes(config)
                         if distribution.megatron_axes(path, len(shape)) == (None,) * len(shape))
    assert megatron == replicated + (whole - replicated) // 4
    # The norms, the row-parallel biases and the position table are split 2 ways only.
    assert whole / 8 < sharded < 1.03 * whole / 8


def test_a_device_mesh_plans_as_its_shape():
    mesh = distribution.make_mesh(4, devices=[f"cpu:{i}" for i in range(8)])
    given = distribution.plan(GPT2, mesh, 8, 64, layout="model_parallel")
    shaped = distribution.plan(GPT2, {"batch": 2, "model": 4}, 8, 64, layout="model_parallel")
    assert given == shaped


def test_a_weight_no_dimension_of_which_the_batch_axis_divides_stays_whole():
    """GPT-2 XL's 1,600, 4,800, 6,400 and 50,257 do not divide by 1,024: FSDP over 1,024
    devices splits only the position table (1,024 rows), as `sharded_axes` lays it out."""
    config = preset_config("gpt2_xl")
    plain = distribution.plan(config, {"batch": 1024}, 1024, 1024)
    sharded = distribution.plan(config, {"batch": 1024, "model": 1}, 1024, 1024,
                                layout="fully_sharded")
    table = 2 * 1024 * config.d_model  # float32 bytes of the position table, less its 1/1024
    assert plain.weights - sharded.weights == table * 1023 // 1024 * 2
    assert distribution.plan(config, {"batch": 64, "model": 1}, 64, 1024,
                             layout="fully_sharded").weights < plain.weights / 60


def test_activations_follow_the_rows_remat_flash_attention_and_the_model_axis():
    config = preset_config("gpt2_small")

    def activations(**kwargs):
        arguments = dict(mesh={"batch": 8, "model": 4}, batch_size=8, length=1024,
                         layout="model_parallel", embedding="model")
        arguments.update(kwargs)
        return distribution.plan(config, **arguments).activations

    base = activations()
    assert 1.9 < activations(batch_size=16) / base < 2.0  # the head's gradient buffers stay
    assert activations(remat=True) < base / 2.5  # the logits' gradient is most of what stays
    # 12 layers of 1,024 tokens, each keeping 3 float32 copies of 12 heads' 1,024 scores,
    # split over 4 devices: what flash attention does not keep.
    assert base - activations(flash_attention=True) == 12 * 1024 * 12 * 1024 * 3 * 4 // 4
    assert activations(mesh={"batch": 8, "model": 1}) > 2 * base
    scores = base - activations(flash_attention=True)
    half = activations(length=512) - activations(length=512, flash_attention=True)
    assert half == scores // 4  # quadratic in the length


def test_soft_capped_scores_are_kept_and_a_parallel_block_keeps_one_norm_fewer():
    def activations(config, **kwargs):
        return distribution.plan(config, {"batch": 8, "model": 4}, 8, 1024,
                                 layout="model_parallel", embedding="model", **kwargs).activations

    plain, capped = preset_config("gpt2_small"), preset_config("gpt2_small", attention_softcap=50.0)
    # A capped layer forms its scores even where flash attention would keep none.
    assert activations(capped, flash_attention=True) == activations(capped) == activations(plain)
    assert activations(plain, flash_attention=True) < activations(plain)
    parallel = preset_config("gpt2_small", parallel_block=True)
    assert activations(parallel) < activations(plain)  # one norm's tensors fewer per block
    weights = distribution.plan(parallel, {"batch": 8}, 8, 1024).weights
    assert weights < distribution.plan(plain, {"batch": 8}, 8, 1024).weights


def test_remat_defaults_to_the_configs():
    rematerialized = preset_config("gpt2_tiny", remat=True)
    step = distribution.plan(rematerialized, {"batch": 1}, 1, 64)
    assert step.remat and "activations (remat)" in str(step)
    assert not distribution.plan(GPT2, {"batch": 1}, 1, 64).remat
    plain = distribution.plan(rematerialized, {"batch": 1}, 1, 64, remat=False)
    assert not plain.remat and plain.activations > step.activations


def test_flops_are_six_per_weight_and_token_plus_attention():
    config = preset_config("gpt2_small")
    step = distribution.plan(config, {"batch": 8}, batch_size=8, length=1024)
    d, layers, length = config.d_model, config.num_decoder_layers, 1024
    matmul_weights = config.count_params() - 1024 * d  # the position table multiplies nothing
    kaplan = 6 * matmul_weights * step.tokens + 12 * layers * d * length * step.tokens
    assert abs(step.flops - kaplan) / kaplan < 0.002  # biases and norms aside
    assert step.tokens_per_second(1e15, 0.5) == pytest.approx(0.5 * 8e15 * step.tokens / step.flops)


def test_banded_layers_and_cross_attention_count_their_keys():
    dense = preset_config("gpt3_tiny", attention_window=None)
    banded = preset_config("gpt3_tiny")  # every second layer reads 4 positions back
    assert (distribution.plan(banded, {"batch": 1}, 1, 64).flops
            < distribution.plan(dense, {"batch": 1}, 1, 64).flops)
    translator = preset_config("transformer_tiny")
    short, long = (distribution.plan(translator, {"batch": 1}, 1, 32, source_length=source)
                   for source in (16, 64))
    assert short.flops < long.flops and short.activations < long.activations


def test_the_plan_reads_as_a_table_and_says_whether_it_fits():
    step = distribution.plan(GPT2, {"batch": 2, "model": 4}, 8, 64, layout="model_parallel")
    text = str(step)
    assert "model_parallel on 8 devices (batch 2 x model 4)" in text
    assert "total (peak)" in text and "optimizer state" in text
    assert "gradient reduction" in text and "gathered" not in text
    sharded = distribution.plan(GPT2, {"batch": 2, "model": 4}, 8, 64, layout="fully_sharded")
    assert "gathered (one block)" in str(sharded)
    assert step.fits(step.total) and not step.fits(step.total - 1)


@pytest.mark.parametrize("arguments, message", [
    (dict(config=kt.DecoderOnly), "`config` must be a TransformerConfig"),
    (dict(mesh=(8, 1)), "`mesh` must be a keras.distribution.DeviceMesh or a mapping"),
    (dict(mesh={"batch": 0}), "`mesh['batch']` must be an integer >= 1"),
    (dict(mesh={}), "`mesh` must have at least one axis"),
    (dict(batch_size=12), "`batch_size` (12) must be divisible by the 8 devices"),
    (dict(length=0), "`length` must be an integer >= 1"),
    (dict(length=65), "at most the learned position table's 64 rows"),
    (dict(layout="zero3"), "`layout` must be one of"),
    (dict(dtype="int8"), "`dtype` must be one of"),
    (dict(optimizer="lion"), "`optimizer` must be one of"),
    (dict(optimizer_dtype="float64"), "`optimizer_dtype` must be one of"),
    (dict(remat="yes"), "`remat` must be True or False"),
    (dict(in_place_all_reduce="no"), "`in_place_all_reduce` must be True or False"),
    (dict(layout="model_parallel"), "`model_axis` must be an axis of `mesh`"),
    (dict(layout="fully_sharded", batch_axis="data"), "`batch_axis` must be an axis of `mesh`"),
    (dict(layout="model_parallel", mesh={"batch": 2, "model": 3}, batch_size=2),
     "must be divisible by the model axis size (3)"),
    (dict(layout="model_parallel", mesh={"batch": 1, "model": 2, "pipe": 4}, batch_size=2),
     "has axes other than 'batch' and 'model'"),
])
def test_bad_arguments_are_refused_by_name(arguments, message):
    given = dict(config=GPT2, mesh={"batch": 8}, batch_size=8, length=64)
    given.update(arguments)
    with pytest.raises(ValueError) as error:
        distribution.plan(**given)
    assert message in str(error.value)


def test_weight_shapes_refuses_what_is_not_a_config():
    with pytest.raises(ValueError, match="`config` must be a TransformerConfig"):
        distribution.weight_shapes({"d_model": 8})
    with pytest.raises(ValueError, match="`name` must be a non-empty string"):
        distribution.weight_shapes(GPT2, name="")


@pytest.mark.skipif(keras.backend.backend() == "jax", reason="the refusal of other backends")
def test_step_memory_needs_jax():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", num_layers=1)
    model.compile(optimizer="adamw")
    ids = np.ones((2, 8), "int32")
    with pytest.raises(ValueError, match="needs the JAX backend"):
        distribution.step_memory(model, ids, ids)


@JAX_ONLY
def test_step_memory_of_one_device():
    model = kt.DecoderOnly.from_preset("gpt2_tiny", num_layers=1, dropout=0.0)
    ids = np.ones((2, 8), "int32")
    with pytest.raises(ValueError, match="must be a compiled keras.Model"):
        distribution.step_memory(model, ids, ids)
    model.compile(optimizer="adamw")
    before = [w.copy() for w in model.get_weights()]
    memory = distribution.step_memory(model, ids, ids)
    state = 3 * 4 * model.count_params()  # weights and two moments
    assert state <= memory.arguments < state + 1000  # and the counters, the batch
    assert memory.peak == memory.arguments + memory.outputs - memory.aliased + memory.temporaries
    assert memory.aliased > 0.99 * state  # the donated state is updated in place
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))  # not run


def _run_on_eight_devices(script):
    # XLA's code generation flags of `make test` make the compile quicker; XLA's buffer
    # assignment, which is what is measured, does not depend on them. Without
    # cse_barrier_expander XLA:CPU keeps remat (docs/training.md); nothing else changes.
    flags = ("--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
             "--xla_cpu_multi_thread_eigen=false --xla_disable_hlo_passes=cse_barrier_expander")
    output = run_on_eight_devices(script, xla_flags=flags)
    return json.loads(output.strip().splitlines()[-1])


@JAX_ONLY
def test_plans_against_xlas_measurement_on_eight_devices(record_property):
    results = _run_on_eight_devices(ROOT / "tests" / "distribution" / "plan_checks.py")
    assert len(results) == 10
    for case, figures in results.items():
        ratio = figures["planned"] / figures["measured"]
        record_property("summary", f"plan vs XLA, {case}: {figures['planned'] / 1e6:.1f} MB "
                                   f"planned, {figures['measured'] / 1e6:.1f} MB measured "
                                   f"({ratio:.3f})")
        if "fully_sharded" in case:  # ZeRO-3's figure; GSPMD's choices (module docstring)
            assert 0.4 <= figures["measured"] / figures["planned"] <= 1.3, (case, figures)
        else:
            assert 0.85 <= ratio <= 1.15, (case, figures)
        assert figures["planned_weights"] == figures["weights"], case
        # Keras' optimizer adds its step counters to the moments.
        assert 0 <= figures["optimizer_state"] - figures["planned_optimizer_state"] <= 64, case
    # The cases cover both ends of the backward pass: one row per device peaks at its end.
    for case in ("wide/data_parallel", "wide/model_parallel"):
        figures = results[case]
        assert (figures["planned_gradients"] + figures["planned_reduction"]
                > figures["planned_activations"]), case
    remat, plain = results["gpt/data_parallel/remat"], results["gpt/data_parallel"]
    assert remat["measured"] < 0.6 * plain["measured"]  # remat kept: the flag took effect


def test_a_model_axis_that_does_not_divide_the_heads_is_refused():
    """XLA pads or gathers unevenly split heads (0.5x to 3x of a per-head split, measured):
    no plan rather than a silently wrong one."""
    config = kt.models.preset_config("gpt2_tiny", num_heads=2)
    with pytest.raises(ValueError, match=r"`num_heads` \(2\) must be divisible by the model axis"):
        distribution.plan(config, {"batch": 1, "model": 8}, 8, 64, layout="model_parallel")
    assert distribution.plan(config, {"batch": 8, "model": 1}, 8, 64).total > 0
    flash = distribution.plan(config, {"batch": 1, "model": 8}, 8, 64, layout="model_parallel",
                              flash_attention=True)  # no scores kept: nothing to lay out
    assert flash.total > 0
