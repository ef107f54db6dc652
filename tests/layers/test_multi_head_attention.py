"""MultiHeadAttention and CrossAttention against a NumPy reference built from the layer's own weights.

Weight layout (the reference relies on it): self-attention has one fused
`qkv` kernel `(d, (H + 2 H_kv) d_head)` whose columns are `[q | k | v]`, each
split into heads; cross-attention has a `query` kernel `(d, d)` and a
`key_value` kernel `(d, 2 H_kv d_head)` split as `[k | v]`; both end with an
`output` kernel `(d, d)` reading the heads concatenated. The reference also
implements the toggles independently: grouped K/V heads (query head h reads
K/V head `h // (H / H_kv)`), per-head query/key norms, rotary positions
(`test_rotary_embedding.np_rotate`) and ALiBi (`-2^(-8 (h + 1) / H) |t - s|`).
"""

import keras
import numpy as np
import pytest
from keras import ops

from test_rotary_embedding import np_rotate

from keras_transformer.layers import CrossAttention
from keras_transformer.layers import MultiHeadAttention
from keras_transformer.testing import run_layer_test

D_MODEL, HEADS, BATCH = 16, 4, 2
T_LEN, S_LEN = 7, 6  # the seeds' cross-attention example: 7 target x 6 source
MODES = {
    "bidirectional": {"mode": "bidirectional"},
    "causal": {"mode": "causal"},
    "banded": {"mode": "banded", "window": 3},
    "cross": {},  # CrossAttention
}


def _attention(mode, **kwargs):
    """An unbuilt attention layer of `mode` ("cross": `CrossAttention`), HEADS heads."""
    if mode == "cross":
        return CrossAttention(num_heads=HEADS, **kwargs)
    return MultiHeadAttention(num_heads=HEADS, **MODES[mode], **kwargs)


def _mode(layer):
    return "cross" if isinstance(layer, CrossAttention) else layer.mode


# --- NumPy reference ---------------------------------------------------------------


def _weights(layer):
    """The layer's projection weights as float64 NumPy arrays, by sub-layer name."""
    out = {}
    for w in layer.weights:
        sublayer, kind = w.path.split("/")[-2:]
        out[(sublayer, kind)] = ops.convert_to_numpy(ops.cast(w, "float32")).astype(np.float64)
    return out


def _np_mask(mode, t_len, s_len, key_mask, window=None):
    """Boolean (B, T, S) mask built by hand; queries aligned to the end of keys."""
    batch = BATCH if key_mask is None else key_mask.shape[0]
    allowed = np.ones((batch, t_len, s_len), bool)
    for t in range(t_len):
        position = s_len - t_len + t
        for s in range(s_len):
            if mode == "causal":
                allowed[:, t, s] = s <= position
            elif mode == "banded":
                allowed[:, t, s] = position - window < s <= position
    if key_mask is not None:
        allowed &= key_mask[:, None, :]
    return allowed


def _np_norm(w, name, x, kind, epsilon):
    """A per-head norm over the last axis, from the layer's `name` weights."""
    if kind == "rms":
        return x / np.sqrt(np.mean(x**2, -1, keepdims=True) + epsilon) * w[(name, "scale")]
    centered = x - x.mean(-1, keepdims=True)
    normed = centered / np.sqrt(np.mean(centered**2, -1, keepdims=True) + epsilon)
    return normed * w[(name, "gamma")] + w[(name, "beta")]


def _np_attention(layer, query, memory=None, key_mask=None):
    """(output (B, T, d), probabilities (B, H, T, S)) computed in float64."""
    w = _weights(layer)
    config = layer.config
    heads, d_head = layer.num_heads, layer.d_model // layer.num_heads
    kv_heads = heads if config.num_kv_heads is None else config.num_kv_heads
    window = getattr(layer, "window", None)

    def dense(x, name):
        return x @ w[(name, "kernel")] + w.get((name, "bias"), 0.0)

    query = query.astype(np.float64)
    batch, t_len, d_model = query.shape
    if _mode(layer) == "cross":
        memory = memory.astype(np.float64)
        s_len = memory.shape[1]
        q = dense(query, "query").reshape(batch, t_len, heads, d_head)
        kv = dense(memory, "key_value").reshape(batch, s_len, 2 * kv_heads, d_head)
        k, v = kv[:, :, :kv_heads], kv[:, :, kv_heads:]
    else:
        s_len = t_len
        qkv = dense(query, "qkv").reshape(batch, t_len, heads + 2 * kv_heads, d_head)
        q, k, v = qkv[:, :, :heads], qkv[:, :, heads:heads + kv_heads], qkv[:, :, -kv_heads:]
    if config.qk_norm:
        q = _np_norm(w, "query_norm", q, config.norm, config.layer_norm_epsilon)
        k = _np_norm(w, "key_norm", k, config.norm, config.layer_norm_epsilon)
    if config.position == "rotary":
        q = np_rotate(q, 0, config.rotary_base, config.rotary_fraction)
        k = np_rotate(k, 0, config.rotary_base, config.rotary_fraction)
    group = heads // kv_heads
    k, v = np.repeat(k, group, axis=2), np.repeat(v, group, axis=2)
    scores = np.einsum("bthd,bshd->bhts", q, k) / np.sqrt(d_head)
    if config.attention_softcap is not None:  # before ALiBi's bias and the mask
        scores = config.attention_softcap * np.tanh(scores / config.attention_softcap)
    if config.position == "alibi":
        slopes = 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads)  # H a power of two
        positions_t = np.arange(s_len - t_len, s_len)
        distance = np.abs(positions_t[:, None] - np.arange(s_len)[None, :])
        scores = scores - slopes[None, :, None, None] * distance
    allowed = _np_mask(_mode(layer), t_len, s_len, key_mask, window)[:, None]
    allowed = np.broadcast_to(allowed, scores.shape)
    scores = np.where(allowed, scores, -np.inf)
    row_max = scores.max(-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exp = np.where(allowed, np.exp(scores - row_max), 0.0)
    total = exp.sum(-1, keepdims=True)
    probs = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    heads_out = np.einsum("bhts,bshd->bthd", probs, v).reshape(batch, t_len, d_model)
    out = dense(heads_out, "output")
    return out, probs


# --- helpers ---------------------------------------------------------------------------


def _inputs(mode, seed=0, batch=BATCH):
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(batch, T_LEN, D_MODEL)).astype("float32")
    memory = rng.normal(size=(batch, S_LEN, D_MODEL)).astype("float32")
    return query, (memory if mode == "cross" else None)


def _key_mask(mode, batch=BATCH):
    """Padding at the end of sequence 1; sequence 0 is all real."""
    length = S_LEN if mode == "cross" else T_LEN
    mask = np.ones((batch, length), bool)
    mask[1, -2:] = False
    return mask


def _layer(mode, randomize=True, seed=0, **kwargs):
    """A built layer; random weights (biases included, which start at zero)."""
    if randomize:  # overwritten below; skips the (slow on JAX) random init
        kwargs.setdefault("kernel_initializer", "zeros")
    layer = _attention(mode, **kwargs)
    query_shape = (None, T_LEN, D_MODEL)
    memory_shape = (None, S_LEN, D_MODEL) if mode == "cross" else None
    layer.build(query_shape, memory_shape)
    if randomize:
        rng = np.random.default_rng(seed + 100)
        layer.set_weights(
            [
                (rng.normal(size=w.shape) / np.sqrt(w.shape[0] if len(w.shape) > 1 else 4))
                .astype(w.dtype)
                for w in layer.get_weights()
            ]
        )
    return layer


def _call_kwargs(memory, key_mask):
    kwargs = {}
    if memory is not None:
        kwargs["memory"] = memory
    if key_mask is not None:
        kwargs["key_mask"] = key_mask
    return kwargs


def _np(x):
    return ops.convert_to_numpy(ops.cast(x, "float32"))


def _gradients(layer, query, **kwargs):
    """Gradients of sum(output^2) w.r.t. the query (NumPy, cast to the layer's
    compute dtype) and every trainable weight, as float32 NumPy arrays."""
    backend = keras.backend.backend()
    dtype = layer.compute_dtype
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.cast(tf.convert_to_tensor(query), dtype)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.cast(layer(x, **kwargs), "float32") ** 2)
        grads = tape.gradient(loss, [x] + [v.value for v in layer.trainable_variables])
        return [tf.cast(g, "float32").numpy() for g in grads]
    if backend == "jax":
        import jax

        trainable = [v.value for v in layer.trainable_variables]
        non_trainable = [v.value for v in layer.non_trainable_variables]

        def loss_fn(x, weights):
            out, _ = layer.stateless_call(weights, non_trainable, x, **kwargs)
            return (out.astype("float32") ** 2).sum()

        x = jax.numpy.asarray(query).astype(dtype)
        grad_fn = jax.grad(loss_fn, argnums=(0, 1))
        if dtype != "float16":  # XLA:CPU cannot compile float16 attention's backward pass
            grad_fn = jax.jit(grad_fn)
        gx, gw = grad_fn(x, trainable)
        return [np.asarray(g.astype("float32")) for g in [gx] + list(gw)]
    if backend == "torch":
        import torch

        x = torch.tensor(np.asarray(query)).to(getattr(torch, dtype)).requires_grad_(True)
        for v in layer.trainable_variables:
            v.value.grad = None
        loss = (layer(x, **kwargs).float() ** 2).sum()
        loss.backward()
        return [x.grad.float().numpy()] + [
            v.value.grad.float().numpy() for v in layer.trainable_variables
        ]
    raise AssertionError(backend)


# --- the output equals the NumPy reference ----------------------------------------------


@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "key_mask"])
@pytest.mark.parametrize("mode", list(MODES))
def test_output_matches_numpy(mode, masked):
    layer = _layer(mode)
    query, memory = _inputs(mode)
    key_mask = _key_mask(mode) if masked else None
    got = _np(layer(query, **_call_kwargs(memory, key_mask)))
    assert got.shape == (BATCH, T_LEN, D_MODEL)
    expected, _ = _np_attention(layer, query, memory, key_mask)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["causal", "banded"])
def test_modes_differ_with_the_same_weights(mode):
    # The masks matter: with identical weights, causal and banded outputs differ
    # from bidirectional ones, and banded (window 3) from causal.
    layer = _layer(mode)
    query, _ = _inputs(mode)
    got = _np(layer(query))
    full = MultiHeadAttention(num_heads=HEADS)
    full.build((None, T_LEN, D_MODEL))
    full.set_weights(layer.get_weights())
    assert np.abs(got - _np(full(query))).max() > 1e-3
    if mode == "banded":
        causal = MultiHeadAttention(num_heads=HEADS, mode="causal")
        causal.build((None, T_LEN, D_MODEL))
        causal.set_weights(layer.get_weights())
        assert np.abs(got - _np(causal(query))).max() > 1e-3


def test_weight_layout():
    self_attention, cross = _layer("causal", randomize=False), _layer("cross", randomize=False)
    shapes = lambda layer: {w.path.split("/", 1)[1]: tuple(w.shape) for w in layer.weights}
    d = D_MODEL
    assert shapes(self_attention) == {
        "qkv/kernel": (d, 3 * d),
        "qkv/bias": (3 * d,),
        "output/kernel": (d, d),
        "output/bias": (d,),
    }
    assert shapes(cross) == {
        "query/kernel": (d, d),
        "query/bias": (d,),
        "key_value/kernel": (d, 2 * d),
        "key_value/bias": (2 * d,),
        "output/kernel": (d, d),
        "output/bias": (d,),
    }


def test_no_bias_matches_numpy():
    layer = MultiHeadAttention(num_heads=HEADS, mode="causal", use_bias=False)
    query, _ = _inputs("causal")
    got = _np(layer(query))
    assert len(layer.weights) == 2
    w = _weights(layer)
    qkv = (query.astype(np.float64) @ w[("qkv", "kernel")]).reshape(BATCH, T_LEN, 3, HEADS, -1)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    scores = np.einsum("bthd,bshd->bhts", q, k) / np.sqrt(D_MODEL // HEADS)
    scores = np.where(np.tril(np.ones((T_LEN, T_LEN), bool)), scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    heads = np.einsum("bhts,bshd->bthd", probs, v).reshape(BATCH, T_LEN, D_MODEL)
    np.testing.assert_allclose(got, heads @ w[("output", "kernel")], rtol=1e-5, atol=1e-5)


# --- attention probabilities ---------------------------------------------------------


@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "key_mask"])
@pytest.mark.parametrize("mode", list(MODES))
def test_attention_probabilities(mode, masked):
    layer = _layer(mode)
    query, memory = _inputs(mode)
    key_mask = _key_mask(mode) if masked else None
    probs = _np(layer.attention_probabilities(query, **_call_kwargs(memory, key_mask)))
    s_len = S_LEN if mode == "cross" else T_LEN
    assert probs.shape == (BATCH, HEADS, T_LEN, s_len)
    allowed = np.broadcast_to(
        _np_mask(mode, T_LEN, s_len, key_mask, MODES[mode].get("window"))[:, None], probs.shape
    )
    visible_rows = allowed.any(-1)
    assert visible_rows.all()  # no empty rows in these masks
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=0, atol=1e-6)
    assert np.all(probs[~allowed] == 0.0)  # exactly zero, not merely small
    assert np.all(probs[allowed] > 0.0)
    _, expected = _np_attention(layer, query, memory, key_mask)
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-6)


def test_cross_attention_scores_are_not_square():
    layer = _layer("cross")
    query, memory = _inputs("cross")
    probs = _np(layer.attention_probabilities(query, memory=memory))
    assert probs.shape == (BATCH, HEADS, 7, 6)
    # Every target position may read every source position.
    assert np.all(probs > 0)


@pytest.mark.parametrize("mode", list(MODES))
def test_fused_path_agrees_with_probabilities(mode):
    layer = _layer(mode)
    query, memory = _inputs(mode)
    for key_mask in (None, _key_mask(mode)):
        kwargs = _call_kwargs(memory, key_mask)
        fused = _np(layer(query, **kwargs))
        probs = _np(layer.attention_probabilities(query, **kwargs)).astype(np.float64)
        # Explicit path by hand: probabilities @ V, then the output projection.
        w = _weights(layer)
        if mode == "cross":
            kv = memory @ w[("key_value", "kernel")] + w[("key_value", "bias")]
            v = kv.reshape(BATCH, S_LEN, 2, HEADS, -1)[:, :, 1]
        else:
            qkv = query @ w[("qkv", "kernel")] + w[("qkv", "bias")]
            v = qkv.reshape(BATCH, T_LEN, 3, HEADS, -1)[:, :, 2]
        heads = np.einsum("bhts,bshd->bthd", probs, v).reshape(BATCH, T_LEN, D_MODEL)
        explicit = heads @ w[("output", "kernel")] + w[("output", "bias")]
        np.testing.assert_allclose(fused, explicit, rtol=1e-5, atol=1e-5)


def test_fused_path_agrees_with_dropout_path():
    # dropout > 0 with training=True takes the explicit einsum path; a rate of
    # 1e-7 drops nothing here (seeded), so both paths must give the same output,
    # empty rows (output = output bias, exactly) included. (The explicit path
    # is mode-independent given the mask; every mode's masks are checked
    # against the probabilities in the tests above.)
    mode = "causal"
    layer = _layer(mode, attention_dropout=1e-7)
    query, memory = _inputs(mode)
    empty_row_mask, empty = _empty_row_case(mode)
    for key_mask in (None, empty_row_mask):
        kwargs = _call_kwargs(memory, key_mask)
        explicit = _np(layer(query, training=True, **kwargs))
        fused = _np(layer(query, training=False, **kwargs))
        np.testing.assert_allclose(explicit, fused, rtol=1e-5, atol=1e-5)
        expected, _ = _np_attention(layer, query, memory, key_mask)
        np.testing.assert_allclose(explicit, expected, rtol=1e-5, atol=1e-5)
    bias = _np(layer.output_projection.bias)
    np.testing.assert_array_equal(explicit[empty], np.broadcast_to(bias, explicit[empty].shape))


def test_probability_dropout_only_in_training():
    layer = _layer("causal", attention_dropout=0.5)
    query, _ = _inputs("causal")
    expected, _ = _np_attention(layer, query)
    np.testing.assert_allclose(_np(layer(query)), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(layer(query, training=False)), expected, rtol=1e-5, atol=1e-5)
    dropped = _np(layer(query, training=True))
    assert np.all(np.isfinite(dropped))
    assert np.abs(dropped - expected).max() > 1e-3
    # attention_probabilities never drops.
    probs = _np(layer.attention_probabilities(query))
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-6)


# --- rows with no visible key ------------------------------------------------------------


def _empty_row_case(mode):
    """(key_mask, boolean (B, T) of rows that see no key) for this mode."""
    if mode == "bidirectional":
        key_mask = np.ones((BATCH, T_LEN), bool)
        key_mask[1] = False  # sequence 1 is all padding
    elif mode == "causal":
        key_mask = np.ones((BATCH, T_LEN), bool)
        key_mask[1, 0] = False  # query 0 sees only key 0
    elif mode == "banded":
        key_mask = np.ones((BATCH, T_LEN), bool)
        key_mask[0, 2:4] = False  # window 3 at position 3 sees 1, 2, 3: 1 is real
        key_mask[1, 0] = False
        key_mask[1, 2:5] = False  # position 4 sees 2, 3, 4: all padding
    else:
        key_mask = np.ones((BATCH, S_LEN), bool)
        key_mask[1] = False  # memory 1 is all padding
    s_len = S_LEN if mode == "cross" else T_LEN
    empty = ~_np_mask(mode, T_LEN, s_len, key_mask, MODES[mode].get("window")).any(-1)
    assert empty.any() and not empty.all()
    return key_mask, empty


# Every mode in float32; float16 on causal (square, structural + padding
# mask) and bfloat16 on cross (T != S, padding mask only).
EMPTY_ROW_CASES = [(mode, "float32") for mode in MODES] + [
    ("causal", "float16"),
    ("cross", "bfloat16"),
]


@pytest.mark.parametrize("mode, dtype", EMPTY_ROW_CASES)
def test_empty_rows_give_exact_zeros(mode, dtype):
    query, memory = _inputs(mode)
    key_mask, empty = _empty_row_case(mode)
    kwargs = _call_kwargs(memory, key_mask)
    # Default initialization: biases are zero, so an empty row is exactly 0.
    layer = _attention(mode, dtype=dtype)
    out = layer(query, **kwargs)
    assert keras.backend.standardize_dtype(out.dtype) == dtype
    out = _np(out)
    assert np.all(np.isfinite(out))
    assert np.all(out[empty] == 0.0)
    assert np.abs(out[~empty]).max() > 0.0
    probs = _np(layer.attention_probabilities(query, **kwargs))
    assert np.all(np.isfinite(probs))
    assert np.all(probs.transpose(0, 2, 1, 3)[empty] == 0.0)
    np.testing.assert_allclose(probs.transpose(0, 2, 1, 3)[~empty].sum(-1), 1.0, atol=1e-6)

    # Random weights, nonzero biases: an empty row reads nothing, so its output
    # is exactly the output bias; other rows match float64 NumPy to the dtype's
    # precision.
    reference_layer = _layer(mode)
    layer.set_weights(reference_layer.get_weights())
    out = _np(layer(query, **kwargs))
    assert np.all(np.isfinite(out))
    bias = _np(layer.output_projection.bias)
    assert np.all(bias != 0)
    np.testing.assert_array_equal(out[empty], np.broadcast_to(bias, out[empty].shape))
    expected, _ = _np_attention(reference_layer, query, memory, key_mask)
    tolerance = {"float32": 1e-5, "float16": 1e-2, "bfloat16": 6e-2}[dtype]
    np.testing.assert_allclose(out, expected, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(
    "mode, dtype",
    [("causal", "float16"), ("causal", "bfloat16"), ("cross", "float32")],
)
def test_empty_rows_have_finite_gradients(mode, dtype):
    query, memory = _inputs(mode)
    key_mask, _ = _empty_row_case(mode)
    layer = _attention(mode, dtype=dtype)
    kwargs = _call_kwargs(memory, key_mask)
    layer(query, **kwargs)  # build
    grads = _gradients(layer, query, **kwargs)
    assert len(grads) == 1 + len(layer.trainable_variables)
    for grad in grads:
        assert np.all(np.isfinite(grad))
    assert all(np.abs(g).max() > 0 for g in grads)


# --- what each position may see -------------------------------------------------------


def test_causal_output_ignores_later_positions():
    layer = _layer("causal")
    query, _ = _inputs("causal")
    base = _np(layer(query))
    for t in range(T_LEN - 1):
        changed = query.copy()
        changed[:, t + 1 :] = np.random.default_rng(t).normal(size=changed[:, t + 1 :].shape)
        out = _np(layer(changed))
        np.testing.assert_allclose(out[:, : t + 1], base[:, : t + 1], rtol=0, atol=1e-6)
        assert np.abs(out[:, t + 1 :] - base[:, t + 1 :]).max() > 1e-3


def test_bidirectional_output_reads_later_positions():
    layer = _layer("bidirectional")
    query, _ = _inputs("bidirectional")
    changed = query.copy()
    changed[:, -1] += 1.0
    assert np.abs(_np(layer(changed))[:, 0] - _np(layer(query))[:, 0]).max() > 1e-4


def test_banded_output_ignores_positions_outside_window():
    layer = _layer("banded")  # window 3: position t sees t-2, t-1, t
    query, _ = _inputs("banded")
    base = _np(layer(query))
    changed = query.copy()
    changed[:, 2] += 5.0
    out = _np(layer(changed))
    seen_by = [2, 3, 4]  # only these positions read key 2
    others = [t for t in range(T_LEN) if t not in seen_by]
    np.testing.assert_allclose(out[:, others], base[:, others], rtol=0, atol=1e-6)
    assert all(np.abs(out[:, t] - base[:, t]).max() > 1e-4 for t in seen_by)


@pytest.mark.parametrize("mode", list(MODES))
def test_padded_keys_are_not_read(mode):
    layer = _layer(mode)
    query, memory = _inputs(mode)
    if mode == "cross":
        key_mask = _key_mask(mode)  # memory 1's last two positions are padding
        changed_query, changed_memory = query, memory.copy()
        changed_memory[1, -2:] += 10.0
        unchanged = slice(None)  # every query position
    else:
        # Left padding, so that later (causal, banded) queries could read it.
        key_mask = np.ones((BATCH, T_LEN), bool)
        key_mask[1, :2] = False
        changed_query, changed_memory = query.copy(), None
        changed_query[1, :2] += 10.0
        unchanged = slice(2, None)  # the padded positions' own queries change
    base = _np(layer(query, **_call_kwargs(memory, key_mask)))
    out = _np(layer(changed_query, **_call_kwargs(changed_memory, key_mask)))
    np.testing.assert_allclose(out[1, unchanged], base[1, unchanged], rtol=0, atol=1e-6)
    np.testing.assert_allclose(out[0], base[0], rtol=0, atol=1e-6)
    # Without the mask the same change does show.
    free_base = _np(layer(query, **_call_kwargs(memory, None)))
    free = _np(layer(changed_query, **_call_kwargs(changed_memory, None)))
    assert np.abs(free[1, unchanged] - free_base[1, unchanged]).max() > 1e-4


def test_cross_reads_memory():
    layer = _layer("cross")
    query, memory = _inputs("cross")
    other = np.random.default_rng(9).normal(size=memory.shape).astype("float32")
    assert np.abs(_np(layer(query, memory=memory)) - _np(layer(query, memory=other))).max() > 1e-3


# --- the standard layer test -------------------------------------------------------------


@pytest.mark.parametrize("mode", list(MODES))
def test_run_layer_test(mode):
    query, memory = _inputs(mode)
    inputs = {"query": query}
    if memory is not None:
        inputs["memory"] = memory
    inputs["key_mask"] = _key_mask(mode)
    d = D_MODEL
    run_layer_test(
        CrossAttention if mode == "cross" else MultiHeadAttention,
        init_kwargs={"num_heads": HEADS, **MODES[mode]},
        inputs=inputs,
        expected_output_shape=(BATCH, T_LEN, D_MODEL),
        expected_num_params=4 * d * d + 4 * d,
        expected_num_trainable_weights=6 if mode == "cross" else 4,
    )


# --- bad arguments ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"mode": "global"}, "mode"),
        ({"mode": "Causal"}, "mode"),
        ({"mode": "causal", "window": 2}, "window"),
        ({"mode": "bidirectional", "window": 2}, "window"),
        ({"mode": "banded"}, "window"),
        ({"mode": "banded", "window": 0}, "window"),
        ({"attention_dropout": 1.0}, "attention_dropout"),
        ({"attention_dropout": -0.1}, "attention_dropout"),
        ({"dropout": 0.1}, "dropout"),  # the block's residual dropout, not attention's
        ({"norm_epsilon": 1e-6}, "norm_epsilon"),
        ({"mode": "cross"}, "mode"),
        ({"num_heads": 0}, "num_heads"),
    ],
)
def test_bad_arguments_raise(kwargs, name):
    kwargs = {"num_heads": 2, **kwargs}
    with pytest.raises(ValueError, match=f"`{name}`"):
        MultiHeadAttention(**kwargs)


def test_bad_mode_lists_allowed_values():
    with pytest.raises(ValueError) as info:
        MultiHeadAttention(num_heads=2, mode="global")
    for mode in ("bidirectional", "causal", "banded"):
        assert repr(mode) in str(info.value)


def test_cross_mode_names_cross_attention():
    with pytest.raises(ValueError, match="mode='cross'.*CrossAttention"):
        MultiHeadAttention(num_heads=2, mode="cross")


def test_d_model_not_divisible_by_num_heads_raises():
    with pytest.raises(ValueError, match="d_model") as info:
        MultiHeadAttention(num_heads=3)(np.zeros((1, 4, 16), "float32"))
    assert "num_heads" in str(info.value)


def test_cross_without_memory_raises():
    with pytest.raises(ValueError, match="memory"):
        CrossAttention(num_heads=2)(np.zeros((1, 4, 16), "float32"))


def test_memory_with_self_attention_raises():
    with pytest.raises(ValueError, match="memory"):
        MultiHeadAttention(num_heads=2, mode="causal")(
            np.zeros((1, 4, 16), "float32"), memory=np.zeros((1, 3, 16), "float32")
        )


# --- the mask-free causal kernel ---------------------------------------------------------


def test_causal_without_padding_hands_the_kernel_no_mask(attention_kernel_calls):
    """Plain causal self-attention asks for `is_causal`, never a `(T, T)` mask tensor."""
    seen = attention_kernel_calls
    attention = MultiHeadAttention(num_heads=2, mode="causal")
    x = np.random.default_rng(0).normal(size=(2, 6, 8)).astype("float32")
    attention(x)
    assert seen == [(True, True)]
    attention(x, key_mask=np.ones((2, 6), bool))  # padding: the mask is needed
    assert seen[-1] == (False, False)


def test_mask_free_causal_kernel_equals_the_masked_one():
    """The two causal paths (no padding mask / an all-real one) give the same outputs."""
    attention = MultiHeadAttention(num_heads=2, mode="causal")
    x = np.random.default_rng(1).normal(size=(2, 7, 8)).astype("float32")
    fused = ops.convert_to_numpy(attention(x))
    masked = ops.convert_to_numpy(attention(x, key_mask=np.ones((2, 7), bool)))
    np.testing.assert_allclose(fused, masked, rtol=1e-5, atol=1e-6)
    # and it is causal: changing the last position leaves the others alone
    changed = x.copy()
    changed[:, -1] += 1.0
    np.testing.assert_allclose(
        ops.convert_to_numpy(attention(changed))[:, :-1], fused[:, :-1], rtol=1e-5, atol=1e-6
    )


# --- the toggles of newer architectures ------------------------------------------------

TOGGLES = {
    "gqa": dict(num_kv_heads=2),
    "multi_query": dict(num_kv_heads=1, use_bias=False),
    "rotary": dict(position="rotary"),
    "rotary_partial_gqa": dict(position="rotary", rotary_fraction=0.5, num_kv_heads=2),
    "alibi": dict(position="alibi"),
    "alibi_multi_query": dict(position="alibi", num_kv_heads=1),
    "qk_rms_norm": dict(qk_norm=True, norm="rms", num_kv_heads=2),
    "qk_layer_norm_rotary": dict(qk_norm=True, position="rotary"),
    "softcap": dict(attention_softcap=0.5),
    "softcap_alibi_gqa": dict(attention_softcap=0.5, position="alibi", num_kv_heads=2),
}


# Cross-attention encodes no positions (a ValueError, tested below).
TOGGLED_MODES = [
    (mode, toggles)
    for mode in ("bidirectional", "causal", "banded", "cross")
    for toggles in TOGGLES
    if not (mode == "cross" and "position" in TOGGLES[toggles])
]


@pytest.mark.parametrize("mode,toggles", TOGGLED_MODES)
@pytest.mark.parametrize("masked", [False, True])
def test_toggled_output_matches_numpy(mode, toggles, masked):
    """Every attention path (fused causal, blocked band, masked) with each toggle."""
    layer = _layer(mode, **TOGGLES[toggles])
    query, memory = _inputs(mode)
    key_mask = _key_mask(mode) if masked else None
    out = layer(query, **_call_kwargs(memory, key_mask))
    expected, _ = _np_attention(layer, query, memory, key_mask)
    np.testing.assert_allclose(ops.convert_to_numpy(out), expected, atol=1e-4)


@pytest.mark.parametrize("mode", ["causal", "cross"])
def test_softcap_changes_the_output(mode):
    """The cap binds at these inputs, so the reference tests above see it (self and cross)."""
    capped = _layer(mode, attention_softcap=0.5)
    query, memory = _inputs(mode)
    plain = _layer(mode, randomize=False)
    plain.set_weights(capped.get_weights())
    difference = (ops.convert_to_numpy(capped(query, **_call_kwargs(memory, None)))
                  - ops.convert_to_numpy(plain(query, **_call_kwargs(memory, None))))
    assert np.abs(difference).max() > 1e-2


@pytest.mark.parametrize("toggles", ["gqa", "rotary_partial_gqa", "alibi", "qk_rms_norm",
                                     "softcap_alibi_gqa"])
def test_toggled_probabilities_match_numpy(toggles):
    layer = _layer("causal", **TOGGLES[toggles])
    query, _ = _inputs("causal")
    _, expected = _np_attention(layer, query)
    got = ops.convert_to_numpy(layer.attention_probabilities(query))
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_grouped_heads_equal_full_heads_with_repeated_keys_and_values():
    """GQA is multi-head attention whose K/V heads are copied to their groups."""
    grouped = _layer("causal", num_kv_heads=2)
    full = _layer("causal", randomize=False)
    w = _weights(grouped)
    d_head = D_MODEL // HEADS

    def expand(x):  # (..., 2 heads * d_head) -> (..., 4 heads * d_head), each head twice
        heads = x.reshape(x.shape[:-1] + (2, d_head))
        return np.repeat(heads, 2, axis=-2).reshape(x.shape[:-1] + (HEADS * d_head,))

    for part in ("kernel", "bias"):
        x = w[("qkv", part)]
        q, k, v = x[..., :D_MODEL], x[..., D_MODEL:D_MODEL + 8], x[..., D_MODEL + 8:]
        full.qkv_projection.get_weights()  # built
        getattr(full.qkv_projection, part).assign(
            np.concatenate([q, expand(k), expand(v)], axis=-1).astype("float32")
        )
        getattr(full.output_projection, part).assign(w[("output", part)].astype("float32"))
    query, _ = _inputs("causal")
    np.testing.assert_allclose(
        ops.convert_to_numpy(grouped(query)), ops.convert_to_numpy(full(query)), atol=1e-5
    )
    assert grouped.count_params() < full.count_params()


def test_cache_holds_only_the_key_value_heads():
    from keras_transformer.layers import TransformerBlock

    block = TransformerBlock(num_heads=4, num_kv_heads=1, d_ff=8, self_attention="causal")
    block.build((None, None, 16))
    assert block.self_cache_shape(2, 10) == (2, 2, 10, 1, 4)
    full = TransformerBlock(num_heads=4, d_ff=8, self_attention="causal")
    full.build((None, None, 16))
    assert full.self_cache_shape(2, 10) == (2, 2, 10, 4, 4)


def test_qk_norm_makes_the_scores_blind_to_the_projection_scale():
    """With per-head RMS norms, scaling the Q and K projections changes nothing."""
    layer = _layer("causal", qk_norm=True, norm="rms", use_bias=False)
    query, _ = _inputs("causal")
    before = ops.convert_to_numpy(layer(query))
    kernel = ops.convert_to_numpy(layer.qkv_projection.kernel).copy()
    kernel[:, : 2 * D_MODEL] *= 10.0  # queries and keys, not values
    layer.qkv_projection.kernel.assign(kernel)
    np.testing.assert_allclose(ops.convert_to_numpy(layer(query)), before, atol=1e-4)
    plain = _layer("causal", use_bias=False)
    before = ops.convert_to_numpy(plain(query))
    kernel = ops.convert_to_numpy(plain.qkv_projection.kernel).copy()
    kernel[:, : 2 * D_MODEL] *= 10.0
    plain.qkv_projection.kernel.assign(kernel)
    assert np.abs(ops.convert_to_numpy(plain(query)) - before).max() > 1e-2


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(num_kv_heads=3), "num_heads"),
        (dict(num_kv_heads=0), "num_kv_heads"),
        (dict(position="rope"), "position"),

        (dict(rotary_fraction=0.0), "rotary_fraction"),
        (dict(rotary_base=0), "rotary_base"),
        (dict(qk_norm="batch"), "qk_norm"),
        (dict(norm="batch"), "norm"),
    ],
)
def test_bad_toggles_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        MultiHeadAttention(num_heads=HEADS, **kwargs)


def test_cross_attention_with_a_position_raises():
    with pytest.raises(ValueError, match="`position` is for self-attention"):
        CrossAttention(num_heads=HEADS, position="rotary")


@pytest.mark.parametrize("toggles", ["gqa", "alibi", "rotary_partial_gqa"])
def test_toggles_keep_the_fused_kernel_with_grouped_heads(monkeypatch, toggles):
    """The backend's fused kernel gets the 2 K/V heads as they are (no repeat) and any bias."""
    calls = []
    kernel = ops.dot_product_attention

    def recording(q, k, v, **kwargs):
        calls.append((q.shape[2], k.shape[2], kwargs.get("bias") is not None))
        return kernel(q, k, v, **kwargs)

    layer = _layer("causal", **TOGGLES[toggles])
    monkeypatch.setattr(ops, "dot_product_attention", recording)
    query, _ = _inputs("causal")
    layer(query)
    kv_heads = layer.kv_heads
    assert calls == [(HEADS, kv_heads, layer.config.position == "alibi")]


# --- the block's config and names; older configs ------------------------------------


def test_config_object_and_keywords_build_the_same_layer():
    from keras_transformer.layers import AttentionConfig, BlockConfig

    block = BlockConfig(num_heads=HEADS, d_ff=8, num_kv_heads=2, qk_norm=True, norm="rms",
                        position="alibi", attention_dropout=0.1, dropout=0.2)
    from_block = MultiHeadAttention(block, mode="causal")
    from_keywords = MultiHeadAttention(num_heads=HEADS, num_kv_heads=2, qk_norm=True,
                                       norm="rms", position="alibi", attention_dropout=0.1,
                                       mode="causal")
    assert from_block.config == from_keywords.config == AttentionConfig.of(block)
    assert MultiHeadAttention(block, position=None).config.position is None  # keyword wins
    config = from_block.get_config()
    assert config["attention_dropout"] == 0.1 and "dropout" not in config and "d_ff" not in config
    assert MultiHeadAttention.from_config(config).config == from_block.config
    cross = CrossAttention(block)  # a block's position is its self-attention's
    assert cross.config.position is None and cross.config.qk_norm
    assert CrossAttention.from_config(cross.get_config()).config == cross.config


def test_older_standalone_configs_load():
    old = dict(name="attention", num_heads=HEADS, mode="causal", window=None, dropout=0.25,
               use_bias=False, num_kv_heads=2, position="rotary", rotary_base=500.0,
               rotary_fraction=0.5, qk_norm="rms", norm_epsilon=1e-6,
               kernel_initializer="zeros", output_kernel_initializer=None)
    layer = MultiHeadAttention.from_config(old)
    assert isinstance(layer, MultiHeadAttention) and layer.mode == "causal"
    c = layer.config
    assert (c.attention_dropout, c.qk_norm, c.norm, c.layer_norm_epsilon) == (0.25, True, "rms",
                                                                              1e-6)
    assert (c.use_bias, c.num_kv_heads, c.position, c.rotary_base, c.rotary_fraction) == (
        False, 2, "rotary", 500.0, 0.5)
    plain = MultiHeadAttention.from_config(dict(old, qk_norm=None))
    assert plain.config.qk_norm is False and plain.config.norm == "layer"
    cross = MultiHeadAttention.from_config(dict(old, mode="cross", position=None, name="cross"))
    assert isinstance(cross, CrossAttention) and cross.config.attention_dropout == 0.25
    # The saved weights' paths are unchanged: query / key_value / output.
    cross.build((None, T_LEN, D_MODEL), (None, S_LEN, D_MODEL))
    assert {w.path for w in cross.weights} == {
        "cross/query/kernel", "cross/key_value/kernel", "cross/query_norm/scale",
        "cross/key_norm/scale", "cross/output/kernel"}


def test_config_must_be_a_config():
    with pytest.raises(ValueError, match="`config`.*num_heads"):
        MultiHeadAttention(2)
