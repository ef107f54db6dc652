"""keras_transformer.distribution: layout rules, argument checks, and 8-device runs.

The rule and argument tests run under every backend (building a LayoutMap
touches no device). The 8-device tests need JAX, the one backend that
implements keras.distribution: they run tests/distribution_checks.py and
examples/distributed.py in fresh processes with 8 virtual CPU devices.
"""

import json
import pathlib

import keras
import pytest
from distribution_checks import expected_axes
from jax_processes import run_on_eight_devices

import keras_transformer as kt
from keras_transformer import distribution

ROOT = pathlib.Path(__file__).resolve().parents[1]
CPUS = [f"cpu:{i}" for i in range(8)]
JAX_ONLY = pytest.mark.skipif(
    keras.backend.backend() != "jax",
    reason="keras.distribution shards variables on the JAX backend only; the "
    "TensorFlow and PyTorch backends ignore it",
)


@pytest.fixture(scope="module")
def models():
    """Both families, tied and untied, one with GPT-3's banded layers and a custom name."""
    return {
        "gpt2_tied": kt.DecoderOnly.from_preset("gpt2_tiny", num_layers=1),
        "gpt2_untied": kt.DecoderOnly.from_preset("gpt2_tiny", num_layers=1, tie_embeddings=False),
        "gpt3_banded": kt.DecoderOnly.from_preset("gpt3_tiny", num_layers=2),
        "transformer": kt.EncoderDecoder.from_preset("transformer_tiny", num_layers=1),
        "transformer_untied": kt.EncoderDecoder(
            vocab_size=64, num_layers=1, d_model=16, num_heads=2, d_ff=32,
            tie_embeddings=False, name="translator",
        ),
    }


def _axes(layouts, path, ndim):
    layout = layouts[path]
    return (None,) * ndim if layout is None else layout.axes


@pytest.mark.parametrize("embedding", ["vocab", "model"])
def test_layout_map_gives_every_weight_of_both_families_its_layout(models, embedding):
    layouts = distribution.layout_map(distribution.make_mesh(4, devices=CPUS), embedding=embedding)
    split = 0
    for model in models.values():
        for variable in model.weights:
            ndim = len(variable.shape)
            want = expected_axes(variable.path, tuple(variable.shape), embedding=embedding)
            assert _axes(layouts, variable.path, ndim) == want, variable.path
            split += "model" in want
    assert split > 30  # not everything replicated


def test_layout_map_uses_the_given_axis_names():
    mesh = distribution.make_mesh(2, devices=CPUS[:4], batch_axis="data", model_axis="tensor")
    layouts = distribution.layout_map(mesh, model_axis="tensor")
    assert layouts["m/block_0/feed_forward/inner/kernel"].axes == (None, "tensor")
    assert layouts["m/block_0/feed_forward/inner/kernel"].device_mesh is mesh
    parallel = distribution.model_parallel(mesh, batch_axis="data", model_axis="tensor")
    assert isinstance(parallel, keras.distribution.ModelParallel)
    assert parallel.batch_dim_name == "data"


def test_row_parallel_biases_and_norms_are_replicated():
    layouts = distribution.layout_map(distribution.make_mesh(4, devices=CPUS))
    for path in (
        "m/block_0/self_attention/output/bias",
        "m/decoder_block_0/cross_attention/output/bias",
        "m/block_0/feed_forward/outer/bias",
        "m/block_0/self_attention_norm/gamma",
        "m/position_embedding/table",
        "m/block_0/self_attention/output/output",  # a layer output, not a weight
    ):
        assert layouts[path] is None, path


def test_make_mesh_shapes_batch_by_model():
    mesh = distribution.make_mesh(2, devices=CPUS)
    assert mesh.shape == (4, 2)
    assert tuple(mesh.axis_names) == ("batch", "model")
    assert mesh.devices.tolist() == [CPUS[i : i + 2] for i in range(0, 8, 2)]


def test_data_parallel_shortcut():
    parallel = distribution.data_parallel(devices=CPUS[:2])
    assert isinstance(parallel, keras.distribution.DataParallel)
    assert parallel.device_mesh.shape == (2,)
    assert parallel.batch_dim_name == "batch"


def test_default_devices():
    if keras.backend.backend() == "jax":
        assert distribution.data_parallel().device_mesh.shape == (
            len(keras.distribution.list_devices()),
        )
    else:
        with pytest.raises(ValueError, match="`devices` must be given"):
            distribution.data_parallel()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: distribution.make_mesh(3, devices=CPUS), r"`len\(devices\)` \(8\).*`model_size`"),
        (lambda: distribution.make_mesh(0, devices=CPUS), "`model_size` must be an integer"),
        (lambda: distribution.make_mesh(2, devices=[]), "`devices` must name at least one"),
        (
            lambda: distribution.make_mesh(2, devices=CPUS, batch_axis="x", model_axis="x"),
            "`batch_axis` and `model_axis` must differ",
        ),
        (lambda: distribution.data_parallel(devices=[]), "`devices` must name at least one"),
        (lambda: distribution.layout_map((2, 4)), "`mesh` must be a keras.distribution.DeviceMesh"),
        (
            lambda: distribution.layout_map(distribution.make_mesh(4, devices=CPUS), "tensor"),
            "`model_axis` must be one of the mesh's axis names",
        ),
        (
            lambda: distribution.layout_map(
                distribution.make_mesh(4, devices=CPUS), embedding="rows"
            ),
            "`embedding` must be one of 'vocab', 'model'",
        ),
        (
            lambda: distribution.layout_map(distribution.make_mesh(4, devices=CPUS), config={}),
            "`config` must be None or a TransformerConfig",
        ),
        (
            lambda: distribution.model_parallel(
                distribution.make_mesh(4, devices=CPUS), batch_axis="model"
            ),
            "`batch_axis` must be a mesh axis other than `model_axis`",
        ),
        (
            lambda: distribution.fully_sharded(
                distribution.make_mesh(4, devices=CPUS), batch_axis="data"
            ),
            "`batch_axis` must be a mesh axis other than `model_axis`",
        ),
        (lambda: distribution.fully_sharded("mesh"), "`mesh` must be a keras.distribution"),
        (
            lambda: distribution.fully_sharded(
                distribution.make_mesh(4, devices=CPUS), auto_shard_dataset="yes"
            ),
            "`auto_shard_dataset` must be",
        ),
    ],
)
def test_bad_arguments_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    "axes, shape, sizes, want",
    [
        ((None, "model"), (64, 192), {"model": 4, "batch": 8}, ("batch", "model")),  # column
        (("model", None), (256, 64), {"model": 4, "batch": 2}, ("model", "batch")),  # row
        ((None, None), (100, 64), {"batch": 8}, (None, "batch")),  # 100 rows: not 8 ways
        ((None, None), (64, 64), {"batch": 8}, ("batch", None)),  # equal: the first
        ((None,), (4,), {"batch": 8}, (None,)),  # shorter than the axis: replicated
        (("model",), (128,), {"model": 2, "batch": 2}, ("model",)),  # nothing left to split
        (("batch", None), (64, 64), {"batch": 8}, ("batch", None)),  # already split
        # A model axis of one device splits nothing: its dimension is free for the batch.
        ((None, "model"), (64, 192), {"model": 1, "batch": 8}, (None, "batch")),
        (("model", None), (64, 50), {"model": 1, "batch": 2}, ("batch", None)),
    ],
)
def test_sharded_axes_splits_the_widest_free_dimension(axes, shape, sizes, want):
    assert distribution.sharded_axes(axes, shape, "batch", sizes) == want


def test_megatron_axes_is_the_layout_maps_rule(models):
    layouts = distribution.layout_map(distribution.make_mesh(4, devices=CPUS))
    for model in models.values():
        for variable in model.weights:
            ndim = len(variable.shape)
            assert distribution.megatron_axes(variable.path, ndim) == _axes(
                layouts, variable.path, ndim
            ), variable.path


@pytest.mark.parametrize(
    "overrides, embedding, match",
    [
        (dict(vocab_size=127), "vocab", r"`vocab_size` \(127\).*embedding='model'"),
        (dict(d_ff=66), "model", r"`d_ff` \(66\)"),
        (dict(d_model=36, num_heads=3), "model", r"`d_model` \(36\)"),
    ],
)
def test_config_check_names_the_dimension_that_does_not_divide(overrides, embedding, match):
    mesh = distribution.make_mesh(8, devices=CPUS)
    config = kt.models.preset_config("gpt2_tiny", **overrides)
    with pytest.raises(ValueError, match=match):
        distribution.layout_map(mesh, embedding=embedding, config=config)


def test_config_check_accepts_what_divides():
    mesh = distribution.make_mesh(4, devices=CPUS)
    # GPT-2's 50,257 tokens only split with embedding="model".
    config = kt.models.preset_config("gpt2_small")
    assert len(distribution.layout_map(mesh, embedding="model", config=config)) == 5
    with pytest.raises(ValueError, match="vocab_size"):
        distribution.layout_map(mesh, config=config)


def _checks(*flags):
    output = run_on_eight_devices(str(ROOT / "tests" / "distribution_checks.py"), *flags)
    return json.loads(output.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def eight_device_results():
    return _checks()


CHECKS = [
    f"{family}/{name}/{check}"
    for family in ("decoder_only", "encoder_decoder")
    for name in ("data_parallel", "model_parallel", "fully_sharded", "fully_sharded_model_parallel")
    for check in ("training", "sharding", "optimizer_sharding", "generation")
] + [
    f"{family}/{name}/memory"
    for family in ("decoder_only", "encoder_decoder")
    for name in ("fully_sharded", "fully_sharded_model_parallel")
] + [
    "decoder_only/step_moves_weights",
    "encoder_decoder/step_moves_weights",
    "decoder_only/embedding_model/sharding",
]


@JAX_ONLY
@pytest.mark.parametrize("check", CHECKS)
def test_eight_devices_match_one_device(eight_device_results, check):
    """Training step (loss and weights to 1e-5), layouts, and greedy generation."""
    assert eight_device_results[check] == []


@JAX_ONLY
def test_sharding_check_catches_a_wrong_layout():
    failures = _checks("--wrong-layout")["decoder_only/model_parallel/sharding"]
    assert any("qkv/kernel: spec ('model', None)" in f for f in failures), failures
    assert any("feed_forward/inner/kernel: shard shapes {(8, 128)}" in f for f in failures)


@JAX_ONLY
def test_distributed_example_smoke_run():
    output = run_on_eight_devices(str(ROOT / "examples" / "distributed.py"), "--smoke")
    assert "DataParallel" in output and "ModelParallel" in output
    assert "mesh (2, 4)" in output
