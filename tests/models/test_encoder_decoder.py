"""EncoderDecoder (the 2017 Transformer) end to end: causality, padding, saving,
errors, training.

Most tests feed a source (BATCH, SOURCE) and a target (BATCH, TARGET) of one
shape, so that JAX's op-by-op eager mode compiles each primitive once. The
lengths differ so that cross-attention's score matrix is not square.
"""


import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt
from keras_transformer import masks
from keras_transformer.models import EncoderDecoder

VOCAB = 128
BATCH, SOURCE, TARGET, EXTRA = 8, 7, 8, 4
# transformer_tiny's sizes, so that its preset and these models share JAX's compiled ops.
TINY = dict(vocab_size=VOCAB, num_layers=2, d_model=32, num_heads=4, d_ff=64, max_length=64)

CONFIGS = [
    pytest.param(dict(ln_position=ln, position=position), id=f"{ln}-{position}")
    for ln in ("post", "pre")
    for position in ("sinusoidal", "learned")
]


def tiny(**overrides):
    """A tiny Transformer; dropout off unless asked, so outputs are deterministic."""
    arguments = dict(TINY, dropout=0.0)
    arguments.update(overrides)
    return EncoderDecoder(**arguments)


def logits(model, source, target, **kwargs):
    out = model({"source": source, "target": target}, **kwargs)
    return ops.convert_to_numpy(ops.cast(out, "float32"))


def real_ids(rng, shape, low=1):
    """Token ids that are never the padding id 0."""
    return rng.integers(low, VOCAB, size=shape).astype("int32")


def other_ids(rng, ids):
    """Different non-pad ids, position by position."""
    shift = rng.integers(1, VOCAB - 1, size=np.shape(ids))  # in [1, VOCAB - 2]
    changed = (np.asarray(ids) - 1 + shift) % (VOCAB - 1) + 1
    assert np.all(changed != ids) and np.all(changed > 0)
    return changed.astype("int32")


def test_output_shape_and_type(rng):
    model = tiny()
    assert isinstance(model, keras.Model)
    assert kt.EncoderDecoder is EncoderDecoder
    out = model({"source": real_ids(rng, (BATCH, SOURCE)), "target": real_ids(rng, (BATCH, TARGET))})
    assert tuple(out.shape) == (BATCH, TARGET, VOCAB)
    shapes = {"source": (BATCH, SOURCE), "target": (BATCH, TARGET)}
    assert tuple(model.compute_output_shape(shapes)) == (BATCH, TARGET, VOCAB)


def test_call_is_encode_then_decode(rng):
    model = tiny()
    source, target = real_ids(rng, (BATCH, SOURCE)), real_ids(rng, (BATCH, TARGET))
    source[:, 5:] = 0
    memory = model.encode(source)
    assert tuple(memory.shape) == (BATCH, SOURCE, TINY["d_model"])
    decoded = model.decode(target, memory, masks.padding_mask(source, 0))
    np.testing.assert_allclose(
        ops.convert_to_numpy(decoded), logits(model, source, target), atol=1e-6, rtol=0
    )


# --- causality ------------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS)
def test_decoder_causality(config, rng):
    """Changing target tokens after t never changes logits at <= t."""
    model = tiny(**config)
    source = np.repeat(real_ids(rng, (1, SOURCE)), BATCH, axis=0)
    base = real_ids(rng, (1, TARGET))[0]
    rows = [base]  # row 1 + t: every target token after t changed
    for t in range(TARGET - 1):
        row = base.copy()
        row[t + 1 :] = other_ids(rng, row[t + 1 :])
        rows.append(row)
    out = logits(model, source, np.stack(rows))
    for t in range(TARGET - 1):
        np.testing.assert_allclose(
            out[1 + t, : t + 1], out[0, : t + 1], atol=1e-5, rtol=0,
            err_msg=f"target logits at <= {t} depend on later target tokens",
        )
        assert np.abs(out[1 + t, t + 1 :] - out[0, t + 1 :]).max(axis=-1).min() > 1e-4


@pytest.mark.parametrize("config", CONFIGS)
def test_every_source_token_reaches_every_target_position(config, rng):
    """The encoder is bidirectional and cross-attention unmasked: no causality there."""
    model = tiny(**config)
    base = real_ids(rng, (1, SOURCE))[0]
    rows = [base]  # row 1 + s: source token s changed
    for s in range(SOURCE):
        row = base.copy()
        row[s] = other_ids(rng, row[s : s + 1])[0]
        rows.append(row)
    target = np.repeat(real_ids(rng, (1, TARGET)), BATCH, axis=0)
    out = logits(model, np.stack(rows), target)
    for s in range(SOURCE):
        change = np.abs(out[1 + s] - out[0]).max(axis=-1)  # (TARGET,)
        assert np.all(change > 1e-4), f"source token {s} does not reach targets {change}"


# --- padding --------------------------------------------------------------------


def _padded_batch(rng, pad_id):
    """Source and target rows of different real lengths, padded on the right."""
    source = rng.integers(0, VOCAB, size=(BATCH, SOURCE)).astype("int32")
    target = rng.integers(0, VOCAB, size=(BATCH, TARGET)).astype("int32")
    source[source == pad_id] = pad_id + 1
    target[target == pad_id] = pad_id + 1
    for row in range(BATCH):
        source[row, SOURCE - row :] = pad_id  # row 7: no real source token at all
        target[row, TARGET - (row + 3) % BATCH :] = pad_id
    return source, target


def _append(ids, pad_id, extra=EXTRA):
    return np.concatenate([ids, np.full((len(ids), extra), pad_id, "int32")], axis=1)


@pytest.mark.parametrize("pad_id", [0, 7])
@pytest.mark.parametrize("config", CONFIGS)
def test_appending_padding_never_changes_real_positions(config, pad_id, rng):
    model = tiny(pad_id=pad_id, **config)
    source, target = _padded_batch(rng, pad_id)
    real = target != pad_id
    expected = logits(model, source, target)
    assert np.all(np.isfinite(expected))
    # More padding on the source: every target position is unchanged.
    np.testing.assert_allclose(
        logits(model, _append(source, pad_id), target), expected, atol=1e-5, rtol=0
    )
    # More padding on the target, and on both: real target positions unchanged.
    got = logits(model, source, _append(target, pad_id))[:, :TARGET]
    np.testing.assert_allclose(got[real], expected[real], atol=1e-5, rtol=0)
    got = logits(model, _append(source, pad_id), _append(target, pad_id))[:, :TARGET]
    np.testing.assert_allclose(got[real], expected[real], atol=1e-5, rtol=0)
    # Appending real tokens to the source does change them (the check can fail).
    more = _append(source, pad_id + 1)
    assert np.abs(logits(model, more, target) - expected)[real].max() > 1e-4


@pytest.mark.parametrize("config", CONFIGS)
def test_padding_anywhere_is_invisible_to_real_positions(config, rng):
    """Pads are masked as keys everywhere: the pad embedding never reaches a real token."""
    model = tiny(tie_embeddings=False, **config)
    source, target = real_ids(rng, (BATCH, SOURCE)), real_ids(rng, (BATCH, TARGET))
    source[0, :3] = source[1, 2:4] = source[2, :] = 0  # left, inner, all padding
    target[3, :2] = target[4, 3:5] = target[5, :] = 0
    out = logits(model, source, target)
    assert np.all(np.isfinite(out))
    table = ops.convert_to_numpy(model.token_embedding.embeddings).copy()
    table[0] = 3.0
    model.token_embedding.embeddings.assign(table)
    changed = logits(model, source, target)
    real = target != 0
    np.testing.assert_allclose(changed[real], out[real], atol=1e-5, rtol=0)
    assert np.abs(changed[~real] - out[~real]).max() > 1e-3  # the pads themselves move


# --- saving ---------------------------------------------------------------------


SAVE_CONFIGS = [
    pytest.param(dict(), id="paper-toggles"),
    pytest.param(
        dict(
            num_encoder_layers=1,
            num_decoder_layers=3,
            ln_position="pre",
            position="learned",
            activation="gelu",
            tie_embeddings=False,
            scale_embeddings=False,
            pad_id=5,
            position_layout="concatenated",
            layer_norm_epsilon=1e-6,
            dropout=0.2,
        ),
        id="everything-flipped",
    ),
]


@pytest.mark.parametrize("overrides", SAVE_CONFIGS)
def test_save_and_load_give_identical_logits(overrides, tmp_path, rng):
    model = tiny(**overrides)
    source, target = _padded_batch(rng, model.config.pad_id)
    expected = logits(model, source, target)
    path = str(tmp_path / "encoder_decoder.keras")
    model.save(path)
    restored = keras.saving.load_model(path)  # no custom_objects
    assert type(restored) is EncoderDecoder
    assert restored.get_config() == model.get_config()
    assert restored.config == model.config
    np.testing.assert_array_equal(logits(restored, source, target), expected)


@pytest.mark.parametrize("overrides", SAVE_CONFIGS)
def test_get_config_round_trip(overrides, rng):
    model = tiny(**overrides)
    config = model.get_config()
    for key, value in overrides.items():  # a block toggle under "block", the model's beside it
        assert (config if key in config else config["block"])[key] == value
    clone = EncoderDecoder.from_config(config)
    assert clone.get_config() == config
    assert clone.config == model.config
    assert clone.count_params() == model.count_params()
    clone.set_weights(model.get_weights())
    source, target = real_ids(rng, (BATCH, SOURCE)), real_ids(rng, (BATCH, TARGET))
    np.testing.assert_array_equal(logits(clone, source, target), logits(model, source, target))


def test_mixed_precision_policy_survives_saving(tmp_path, rng):
    model = tiny(dtype="mixed_bfloat16")
    path = str(tmp_path / "mixed.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.dtype_policy.name == "mixed_bfloat16"
    out = restored({"source": real_ids(rng, (BATCH, SOURCE)), "target": real_ids(rng, (BATCH, TARGET))})
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"


# --- bad arguments --------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides,words",
    [
        (dict(ln_position="middle"), ["ln_position", "'post'", "'pre'", "middle"]),
        (dict(position="rope"), ["position", "'sinusoidal'", "'rotary'", "rope"]),
        (dict(activation="tanh"), ["activation", "'relu'", "'gelu'", "tanh"]),
        (dict(d_model=30, num_heads=4), ["d_model", "num_heads", "divisible"]),
        (dict(d_model=15, num_heads=3), ["d_model", "even"]),
        (dict(vocab_size=0), ["`vocab_size`", ">= 1"]),
        (dict(num_layers=0), ["`num_layers`", ">= 1"]),
        (dict(num_layers=-1), ["`num_layers`", ">= 1"]),
        (dict(num_encoder_layers=0), ["`num_encoder_layers`", ">= 1"]),
        (dict(num_encoder_layers=-1), ["`num_encoder_layers`", ">= 1"]),
        (dict(num_decoder_layers=0), ["`num_decoder_layers`", ">= 1"]),
        (dict(d_model=-16), ["`d_model`", ">= 1"]),
        (dict(num_heads=0), ["`num_heads`", ">= 1"]),
        (dict(d_ff=0), ["`d_ff`", ">= 1"]),
        (dict(max_length=-4), ["`max_length`", ">= 1"]),
        (dict(dropout=1.5), ["`dropout`", "[0, 1)"]),
        (dict(attention_dropout=-0.5), ["`attention_dropout`", "[0, 1)"]),
        (dict(pad_id=VOCAB), ["`pad_id`", f"vocab_size={VOCAB}"]),
        (dict(pad_id=-1), ["`pad_id`", f"[0, vocab_size={VOCAB})", "-1"]),
        (dict(start_id=VOCAB), ["`start_id`", f"[0, vocab_size={VOCAB})"]),
        (dict(start_id=0), ["`start_id`", "differ from `pad_id`"]),
        (dict(end_id=-3), ["`end_id`", f"[0, vocab_size={VOCAB})"]),
        (dict(layer_norm_epsilon=0.0), ["`layer_norm_epsilon`", "> 0"]),
        (dict(position_layout="mixed"), ["position_layout", "'interleaved'"]),
    ],
)
def test_bad_constructor_argument_raises_naming_it(overrides, words):
    with pytest.raises(ValueError) as info:
        tiny(**overrides)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_unknown_preset_raises():
    with pytest.raises(ValueError, match="transformer_huge"):
        EncoderDecoder.from_preset("transformer_huge")


@pytest.mark.parametrize("side", ["source", "target"])
@pytest.mark.parametrize(
    "bad,words",
    [
        (lambda ids: np.where(ids == ids[0, 0], VOCAB, ids), [f"vocab_size={VOCAB}", str(VOCAB)]),
        (lambda ids: np.where(ids == ids[0, 0], -3, ids), [f"vocab_size={VOCAB}", "-3"]),
        (lambda ids: ids.astype("float32"), ["integer", "float32"]),
        (lambda ids: ids[0], ["(batch, length)", "SIDE"]),
        (lambda ids: ids[:, None], ["(batch, length)", "SIDE"]),
    ],
    ids=["too-large", "negative", "float", "1-D", "3-D"],
)
def test_bad_ids_in_an_eager_call(side, bad, words, rng):
    model = tiny()
    inputs = {"source": real_ids(rng, (BATCH, SOURCE)), "target": real_ids(rng, (BATCH, TARGET))}
    inputs[side] = bad(inputs[side])
    with pytest.raises(ValueError) as info:
        model(inputs)
    for word in words:
        word = word.replace("SIDE", f"'{side}'")  # rank errors name the input
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize("side", ["source", "target"])
def test_sequence_longer_than_the_learned_table(side, rng):
    model = tiny(position="learned", max_length=TARGET)
    inputs = {"source": real_ids(rng, (BATCH, SOURCE)), "target": real_ids(rng, (BATCH, TARGET))}
    model(inputs)  # both fit
    inputs[side] = real_ids(rng, (BATCH, TARGET + EXTRA))
    with pytest.raises(ValueError, match=f"max_length={TARGET}"):
        model(inputs)
    # Sinusoids have no such limit.
    out = tiny(max_length=TARGET)(inputs)
    assert tuple(out.shape) == (BATCH, inputs["target"].shape[1], VOCAB)


def test_sequence_longer_than_the_learned_table_through_predict(rng):
    inputs = {"source": real_ids(rng, (3, TARGET + 1)), "target": real_ids(rng, (3, TARGET))}
    model = tiny(position="learned", max_length=TARGET)
    with pytest.raises(ValueError, match=f"max_length={TARGET}"):
        model.predict(inputs, batch_size=2, verbose=0)
    # A model of its own: JAX's predict leaves the variables purged when it raises.
    model = tiny(position="learned", max_length=TARGET)
    inputs["source"] = inputs["source"][:, :TARGET]
    assert model.predict(inputs, batch_size=2, verbose=0).shape == (3, TARGET, VOCAB)


@pytest.mark.parametrize(
    "make_inputs,words",
    [
        (lambda s, t: [s, t], ["dict", "'source'", "'target'", "list"]),
        (lambda s, t: (s, t), ["dict", "'source'", "'target'", "tuple"]),
        (lambda s, t: s, ["dict", "'source'", "'target'"]),
        (lambda s, t: {"source": s}, ["'source'", "'target'", "['source']"]),
        (lambda s, t: {"target": t}, ["'source'", "'target'", "['target']"]),
        (lambda s, t: {"source": s, "target": t, "extra": s}, ["'extra'"]),
        (lambda s, t: {"source": s, "target": t[:3]}, ["batch", str(BATCH), "3"]),
        (lambda s, t: {"source": s[:1], "target": t}, ["batch", "1", str(BATCH)]),
    ],
    ids=["list", "tuple", "array", "no-target", "no-source", "extra-key", "batch", "batch-2"],
)
def test_bad_inputs_structure_raises(make_inputs, words, rng):
    model = tiny()
    source, target = real_ids(rng, (BATCH, SOURCE)), real_ids(rng, (BATCH, TARGET))
    with pytest.raises(ValueError) as info:
        model(make_inputs(source, target))
    for word in words:
        assert word in str(info.value), (word, str(info.value))


# --- training -------------------------------------------------------------------


def test_fit_learns_a_copy_task(rng):
    """Learned, not memorized: the copy carries over to sources never trained on.

    On a few dozen sources the model would memorize each one (64 sources for 30
    epochs: 99.6% right, 5% of new ones); on 2,048 it learns to read the source
    position it writes, through cross-attention.
    """
    start, train = 1, 2048
    source = real_ids(rng, (train + 256, SOURCE), low=2)
    decoder_input = np.concatenate(
        [np.full((len(source), 1), start, "int32"), source[:, :-1]], axis=1)
    model = tiny()
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    inputs = {"source": source[:train], "target": decoder_input[:train]}
    # 256 steps: seconds after compilation on any backend, where 97-98% of held-out
    # tokens come out right (measured under TensorFlow, JAX and PyTorch; about 55%
    # after half as many).
    history = model.fit(inputs, source[:train], batch_size=64, epochs=8, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < 0.25 * losses[0], losses
    # Trained in place, and the task learned: teacher-forced predictions on sources
    # never trained on copy them almost everywhere (chance: 1 / 126).
    predicted = np.argmax(logits(model, source[train:], decoder_input[train:]), axis=-1)
    accuracy = np.mean(predicted == source[train:])
    assert accuracy > 0.9, accuracy


# --- mixed precision ------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS)
def test_mixed_bfloat16_gives_finite_logits(config, rng):
    model = tiny(dtype="mixed_bfloat16", **config)
    assert model.compute_dtype == "bfloat16"
    assert all(keras.backend.standardize_dtype(w.dtype) == "float32" for w in model.weights)
    source, target = _padded_batch(rng, 0)  # includes a row with no real source token
    out = model({"source": source, "target": target})
    assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
    assert tuple(out.shape) == (BATCH, TARGET, VOCAB)
    assert np.all(np.isfinite(ops.convert_to_numpy(ops.cast(out, "float32"))))
