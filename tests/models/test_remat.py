"""`remat=True`: every block recomputed in the backward pass, on every backend.

The option changes how training stores activations, nothing else: losses,
weights after a step (dropout included), logits, `generate`, parameter counts
and configs are those of the same model without it. Under JAX the gradient's
program shows one rematerialized region per block.

Cost (the file runs under three backends in every `make test`): under JAX each new model
traces and compiles its train step afresh (seconds each on a loaded 2-core machine, more with
every block), so the models are as small as the checks allow: one block per stack (an
EncoderDecoder still has two rematerialized blocks, the decoder's taking the encoder's output
and passing it gradients), except where blocks are counted. The tests that only call a model
share one plain/remat pair per family (`untrained`), never trained or changed.
"""

import json
import zipfile

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt
from keras_transformer.convert import from_hf_gpt2
from keras_transformer.convert import hf_gpt2_state_dict
from keras_transformer.layers.remat import seed_states
from keras_transformer.layers.decode_context import DecodeContext
from keras_transformer.models import DecoderOnly
from keras_transformer.models import EncoderDecoder
from keras_transformer.models import preset_config

VOCAB, BATCH, LENGTH = 64, 4, 8
TINY = dict(vocab_size=VOCAB, num_layers=1, d_model=8, num_heads=2, d_ff=16)


def build(family, remat, dropout=0.0, **overrides):
    """A tiny model, its weights drawn from the same seed whatever `remat`."""
    keras.utils.set_random_seed(7)
    arguments = dict(TINY, dropout=dropout, attention_dropout=dropout, remat=remat, **overrides)
    if family is DecoderOnly:
        arguments.setdefault("max_length", 16)
    return family(**arguments)


@pytest.fixture(scope="module")
def untrained():
    """`untrained(family)`: a plain model and a remat model with the same weights (dropout 0),
    built once for the tests that only call them; no test trains or changes them."""
    pairs = {}

    def pair(family):
        if family not in pairs:
            plain, remat = build(family, False), build(family, True)
            remat.set_weights(plain.get_weights())
            pairs[family] = plain, remat
        return pairs[family]

    return pair


def batch(family):
    rng = np.random.default_rng(0)
    ids = rng.integers(1, VOCAB, size=(BATCH, LENGTH)).astype("int32")
    ids[0, -2:] = 0  # padding: masks go through the rematerialized blocks
    labels = rng.integers(1, VOCAB, size=(BATCH, LENGTH)).astype("int32")
    inputs = {"source": ids, "target": ids[:, ::-1].copy()} if family is EncoderDecoder else ids
    return inputs, labels


def blocks_of(model):
    return model.blocks if isinstance(model, DecoderOnly) else (model.encoder_blocks
                                                                + model.decoder_blocks)


def rematerialized(block):
    """Whether Keras' `__call__` runs this block's `call` rematerialized."""
    call = block.call
    return block.rematerialized_call(call) is not call


def sgd_step(model, steps=1):
    """Losses of `steps` SGD steps on one batch, then every variable (seed states too)."""
    model.compile(optimizer=keras.optimizers.SGD(1.0),  # weights move by the gradients
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    inputs, labels = batch(type(model))
    losses = [model.train_on_batch(inputs, labels, return_dict=True)["loss"]
              for _ in range(steps)]
    return np.array(losses, "float64"), [ops.convert_to_numpy(v) for v in model.variables]


def assert_same_training(family, dropout, steps=1):
    """Returns the trained remat model. Each model is built right before it trains: PyTorch
    draws the dropout masks from torch's generator, which `build` seeds."""
    plain_losses, plain_weights = sgd_step(build(family, False, dropout), steps)
    model = build(family, True, dropout)
    remat_losses, remat_weights = sgd_step(model, steps)
    np.testing.assert_allclose(remat_losses, plain_losses, rtol=0, atol=1e-5)
    assert len(remat_weights) == len(plain_weights)
    for remat, plain in zip(remat_weights, plain_weights):
        np.testing.assert_allclose(remat, plain, rtol=0, atol=1e-5)
    return model


@pytest.mark.parametrize("family", [DecoderOnly, EncoderDecoder])
def test_one_sgd_step_is_the_same_with_remat(family):
    """The loss and the weights after a step (so the gradients) equal those without remat."""
    assert_same_training(family, dropout=0.0)


@pytest.mark.parametrize("family", [DecoderOnly, EncoderDecoder])
def test_dropout_masks_are_the_forward_passs_in_the_recomputation(family):
    """With dropout the recomputation draws the masks the forward pass drew: under the same
    seed, two steps give the losses, weights and seed states of the model without remat.

    Keras' remat alone does not: TensorFlow's recomputation reads the seed state the
    forward pass advanced and draws other masks (the weights then differ by 0.3-0.4 after
    a step), and under JAX the advanced state escapes `jax.checkpoint` (a tracer leak).
    PyTorch draws an unseeded Dropout's masks from torch's generator, which
    `torch.utils.checkpoint` restores.
    """
    model = assert_same_training(family, dropout=0.3, steps=2)
    assert all(seed_states(block) for block in blocks_of(model))  # dropout in every block


def test_fit_trains_the_same_with_remat():
    inputs, labels = batch(DecoderOnly)
    histories = []
    for remat in (False, True):
        model = build(DecoderOnly, remat, dropout=0.1)
        model.compile()  # the GPT recipe: AdamW with its schedule
        history = model.fit(inputs, labels, batch_size=2, epochs=2, verbose=0, shuffle=False)
        histories.append(history.history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=0, atol=1e-5)
    assert np.all(np.isfinite(histories[1]))


@pytest.mark.parametrize("family", [DecoderOnly, EncoderDecoder])
def test_generate_is_unchanged(family, untrained):
    plain, remat = untrained(family)
    inputs, _ = batch(family)
    if family is DecoderOnly:  # greedy
        np.testing.assert_array_equal(remat.generate(inputs[:, :4], 5),
                                      plain.generate(inputs[:, :4], 5))
    else:  # beam search
        np.testing.assert_array_equal(remat.generate(inputs["source"], max_length=6, beam_size=2),
                                      plain.generate(inputs["source"], max_length=6, beam_size=2))


def test_direct_calls_and_cached_steps_work_with_remat(untrained):
    """The torch decode loop's direct calls skip `Layer.__call__` and so the remat wrapper;
    cached steps through `__call__` are never rematerialized. Both give the plain logits."""
    plain, remat = untrained(DecoderOnly)
    ids, _ = batch(DecoderOnly)
    ids = ops.convert_to_tensor(ids)  # direct calls take tensors; the shape other tests call
    expected = ops.convert_to_numpy(plain(ids))
    np.testing.assert_allclose(ops.convert_to_numpy(remat(ids)), expected, atol=1e-5)
    for direct in (False, True):
        context = DecodeContext(direct_calls=direct)
        logits, caches = remat.call_with_cache(ids[:, :-1], remat.empty_cache(BATCH, LENGTH),
                                               0, context=context)
        step, _ = remat.call_with_cache(ids[:, -1:], caches, LENGTH - 1,  # one token
                                        context=context)
        np.testing.assert_allclose(ops.convert_to_numpy(logits), expected[:, :-1], atol=1e-5)
        np.testing.assert_allclose(ops.convert_to_numpy(step), expected[:, -1:], atol=1e-5)


def _remat_regions(model, inputs):
    """The rematerialized regions of the jitted gradient's program: their name stacks."""
    import jax

    trainable = [v.value for v in model.trainable_variables]
    non_trainable = [v.value for v in model.non_trainable_variables]

    def loss(trainable):
        logits, _ = model.stateless_call(trainable, non_trainable, inputs, training=True)
        return ops.mean(ops.square(logits))

    jaxpr = jax.make_jaxpr(jax.jit(jax.grad(loss)))(trainable).jaxpr
    regions = []

    def visit(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name.startswith(("checkpoint", "remat")):
                regions.append(str(eqn.source_info.name_stack))
            for value in eqn.params.values():
                for item in value if isinstance(value, (list, tuple)) else [value]:
                    inner = getattr(item, "jaxpr", item)  # a ClosedJaxpr holds a Jaxpr
                    if hasattr(inner, "eqns"):
                        visit(inner)

    visit(jaxpr)
    return regions


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="reads JAX's program")
@pytest.mark.parametrize("family", [DecoderOnly, EncoderDecoder])
def test_the_gradient_rematerializes_each_block_under_jax(family):
    """Two blocks per stack (tracing only, no compile): a region per block, not one over a
    stack or the first block's alone."""
    inputs, _ = batch(family)
    assert _remat_regions(build(family, False, dropout=0.1, num_layers=2), inputs) == []
    model = build(family, True, dropout=0.1, num_layers=2)
    assert len(blocks_of(model)) == 2 * (1 + (family is EncoderDecoder))
    regions = _remat_regions(model, inputs)
    assert len(regions) == len(blocks_of(model))
    for block in blocks_of(model):
        assert sum(f"({block.name})" in region for region in regions) == 1, regions


@pytest.mark.parametrize("family", [DecoderOnly, EncoderDecoder])
def test_save_and_load_keep_remat(family, tmp_path, untrained):
    _, model = untrained(family)
    path = str(tmp_path / "remat.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.config.remat is True and loaded.get_config()["remat"] is True
    assert all(rematerialized(block) for block in blocks_of(loaded))
    inputs, _ = batch(family)
    np.testing.assert_allclose(ops.convert_to_numpy(loaded(inputs)),
                               ops.convert_to_numpy(model(inputs)), atol=1e-6)


def test_a_file_saved_before_the_option_loads_without_remat(tmp_path, untrained):
    """A `.keras` file whose config has no `remat` (written before it existed) loads."""
    path = str(tmp_path / "old.keras")
    untrained(DecoderOnly)[0].save(path)
    old = str(tmp_path / "older.keras")
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(old, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                del config["config"]["remat"]
                data = json.dumps(config).encode()
            target.writestr(item, data)
    loaded = keras.saving.load_model(old)
    assert loaded.config.remat is False
    assert not any(rematerialized(block) for block in loaded.blocks)


def test_remat_is_not_architecture():
    """Same parameter count, equal configs, and presets take it as an override."""
    assert preset_config("gpt2_small", remat=True) == preset_config("gpt2_small")
    assert preset_config("gpt2_small", remat=True).remat is True
    assert (preset_config("gpt2_small", remat=True).count_params()
            == preset_config("gpt2_small").count_params() == 124439808)
    model = kt.DecoderOnly.from_preset("gpt2_tiny", remat=True)
    assert model.config.remat is True
    assert model.count_params() == kt.DecoderOnly.from_preset("gpt2_tiny").count_params()
    translator = kt.EncoderDecoder.from_preset("transformer_tiny", remat=True)
    assert all(rematerialized(block) for block in blocks_of(translator))
    assert translator.count_params() == translator.config.count_params()


def test_a_remat_model_converts_like_any_other(untrained):
    _, model = untrained(DecoderOnly)
    plain = from_hf_gpt2(hf_gpt2_state_dict(model), num_heads=2, dropout=0.0)
    ids, _ = batch(DecoderOnly)
    np.testing.assert_allclose(ops.convert_to_numpy(plain(ids)),
                               ops.convert_to_numpy(model(ids)), atol=1e-5)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_remat_must_be_a_bool(value):
    with pytest.raises(ValueError, match="`remat` must be True or False"):
        DecoderOnly(**TINY, remat=value)
    with pytest.raises(ValueError, match="`remat`"):
        kt.EncoderDecoder.from_preset("transformer_tiny", remat=value)
