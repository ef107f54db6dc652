"""No NaN or inf: fully padded rows, 16-bit compute, 4,096-token sequences."""

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt

VOCAB = 32
SMALL = dict(vocab_size=VOCAB, num_layers=2, d_model=16, num_heads=2, d_ff=32,
             max_length=8, dropout=0.0)


def _finite(x):
    return np.all(np.isfinite(ops.convert_to_numpy(ops.cast(x, "float32"))))


def _models(policy):
    # pad_id=0 in both families: id 0 is padding, masked as a key in every attention.
    return [
        kt.DecoderOnly(**SMALL, pad_id=0, attention_window=2, dtype=policy),
        kt.DecoderOnly(**SMALL, pad_id=0, ln_position="post", position="sinusoidal",
                       dtype=policy),
        kt.EncoderDecoder(**SMALL, dtype=policy),
        kt.EncoderDecoder(**SMALL, ln_position="pre", position="learned",
                          tie_embeddings=False, dtype=policy),
    ]


def _inputs(model):
    rng = np.random.default_rng(0)
    ids = rng.integers(1, VOCAB, size=(3, 8)).astype("int32")
    ids[0] = 0  # a fully padded row: no query has a key to read
    ids[1, 4:] = 0  # a right-padded row
    assert model.config.pad_id == 0
    if isinstance(model, kt.EncoderDecoder):
        source = rng.integers(1, VOCAB, size=(3, 6)).astype("int32")
        source[2] = 0  # a real target reading a fully padded source
        return {"source": source, "target": ids}, ids
    ids[2, :3] = 0  # a left-padded row: its first queries have no key to read
    return ids, ids


@pytest.mark.parametrize("policy", ["float32", "float16", "bfloat16", "mixed_float16",
                                    "mixed_bfloat16"])
def test_padded_rows_give_finite_outputs_and_gradients(policy):
    for model in _models(policy):
        inputs, labels = _inputs(model)
        # One forward pass: its logits, and the gradients of a loss that reads every
        # position, padded ones included.
        logits, grads = _logits_and_gradients(model, inputs, labels)
        assert keras.backend.standardize_dtype(logits.dtype) == model.compute_dtype
        assert _finite(logits), (type(model).__name__, policy)
        assert len(grads) == len(model.trainable_weights)
        for weight, grad in zip(model.trainable_weights, grads):
            assert grad is not None and _finite(grad), (weight.path, policy)
        if policy == "float32" and isinstance(model, kt.DecoderOnly):
            # The padding is masked, not read: other ids in the padded positions, marked
            # padding by a `padding_mask`, leave every real position's logits unchanged.
            real = inputs != 0
            other = np.where(real, inputs, 7).astype("int32")
            relabeled = ops.convert_to_numpy(model(other, padding_mask=real))
            np.testing.assert_allclose(relabeled[real], ops.convert_to_numpy(logits)[real],
                                       atol=1e-5)


def _logits_and_gradients(model, inputs, labels):
    def loss_and_logits():
        logits = model(inputs)
        loss = ops.mean(ops.sparse_categorical_crossentropy(
            labels, ops.cast(logits, "float32"), from_logits=True))
        return loss, logits

    backend = keras.backend.backend()
    variables = model.trainable_weights
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss, logits = loss_and_logits()
        return logits, tape.gradient(loss, [v.value for v in variables])
    if backend == "torch":
        model.zero_grad()
        loss, logits = loss_and_logits()
        loss.backward()
        return logits, [v.value.grad for v in variables]
    import jax

    def stateless(values):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return loss_and_logits()

    step = jax.value_and_grad(stateless, has_aux=True)
    if model.compute_dtype != "float16":  # XLA:CPU cannot compile float16 attention's backward
        step = jax.jit(step)  # one compile instead of a dispatch per op
    (_, logits), grads = step([v.value for v in variables])
    return logits, grads


@pytest.mark.parametrize("mode", ["causal", "banded"])
def test_4096_token_sequences_stay_finite_and_padding_changes_no_real_position(mode):
    length, pad = 4096, 100
    model = kt.DecoderOnly(
        vocab_size=VOCAB, num_layers=1, d_model=8, num_heads=1, d_ff=16,
        max_length=length, dropout=0.0, attention_window=64 if mode == "banded" else None,
        banded_layers="all", pad_id=0,
    )
    assert model.blocks[0].self_attention.mode == mode
    rng = np.random.default_rng(0)
    ids = rng.integers(1, VOCAB, size=(2, length)).astype("int32")
    ids[0, :pad] = 0  # left-padded: its first 100 queries have no key to read
    ids[1, -pad:] = 0  # right-padded tail
    logits = ops.convert_to_numpy(model(ids))
    assert logits.shape == (2, length, VOCAB)
    assert np.all(np.isfinite(logits))
    # Distant positions still produce distinct, non-degenerate outputs.
    assert np.abs(logits[1, -pad - 1] - logits[1, 0]).max() > 0
    # Padding is masked, not read: other ids at the padded positions, marked padding by a
    # `padding_mask`, leave every real position's logits as they were. Row 0's first real
    # queries (within the 64-token band of the padding) would read them otherwise.
    real = ids != 0
    other = np.where(real, ids, rng.integers(1, VOCAB, size=ids.shape)).astype("int32")
    relabeled = ops.convert_to_numpy(model(other, padding_mask=real))
    np.testing.assert_allclose(relabeled[real], logits[real], atol=1e-5)
