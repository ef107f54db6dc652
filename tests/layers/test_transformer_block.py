"""TransformerBlock: post-LN vs pre-LN, cross-attention, masks, weights."""

import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import TransformerBlock
from keras_transformer.testing import run_layer_test

D_MODEL, HEADS, D_FF, BATCH = 16, 4, 32, 2  # as in the attention and FFN tests
T_LEN, S_LEN = 7, 6
EPSILON = 1e-5


def _np(x):
    return ops.convert_to_numpy(ops.cast(x, "float32")).astype(np.float64)


def _x(seed=0, mean=2.0, scale=3.0):
    """Inputs that are far from normalized: mean 2, standard deviation 3."""
    rng = np.random.default_rng(seed)
    return (mean + scale * rng.normal(size=(BATCH, T_LEN, D_MODEL))).astype("float32")


def _memory(seed=1):
    return np.random.default_rng(seed).normal(size=(BATCH, S_LEN, D_MODEL)).astype("float32")


def _block(ln_position="post", cross_attention=False, randomize=False, seed=0, **kwargs):
    if randomize:  # overwritten below; skips the (slow on JAX) random init
        kwargs.setdefault("kernel_initializer", "zeros")
    block = TransformerBlock(
        num_heads=HEADS,
        d_ff=D_FF,
        ln_position=ln_position,
        cross_attention=cross_attention,
        **kwargs,
    )
    block.build((None, T_LEN, D_MODEL), memory_shape=(None, S_LEN, D_MODEL))
    if randomize:
        # Every weight random, LayerNorm scales and offsets included.
        rng = np.random.default_rng(seed + 100)
        weights = []
        for w in block.weights:
            if w.path.endswith("norm/gamma"):
                value = 1.0 + 0.5 * rng.normal(size=w.shape)
            elif len(w.shape) == 2:
                value = rng.normal(size=w.shape) / np.sqrt(w.shape[0])
            else:
                value = 0.5 * rng.normal(size=w.shape)
            weights.append(value.astype("float32"))
        block.set_weights(weights)
    return block


def _layer_norm(norm, x):
    """LayerNorm by hand with the norm's own gamma and beta."""
    gamma, beta = _np(norm.gamma), _np(norm.beta)
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + norm.epsilon) * gamma + beta


# --- LayerNorm position --------------------------------------------------------------


def test_post_ln_output_is_normalized_at_init():
    block = _block("post")
    for norm in (block.self_attention_norm, block.feed_forward_norm):
        assert norm.epsilon == EPSILON
        np.testing.assert_array_equal(_np(norm.gamma), 1.0)
        np.testing.assert_array_equal(_np(norm.beta), 0.0)
    out = _np(block(_x()))
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.var(-1), 1.0, atol=1e-3)


def test_pre_ln_output_is_not_normalized_at_init():
    block = _block("pre")
    out = _np(block(_x()))
    # The residual stream carries the input's mean (2) and spread (3) through.
    assert np.abs(out.mean(-1)).mean() > 0.5
    assert np.abs(out.var(-1) - 1.0).mean() > 1.0


@pytest.mark.parametrize("cross_attention", [False, True])
def test_pre_and_post_have_the_same_weights(cross_attention):
    def built(ln_position):
        block = TransformerBlock(
            num_heads=HEADS,
            d_ff=D_FF,
            ln_position=ln_position,
            cross_attention=cross_attention,
            self_attention="causal",
            name="block",
        )
        memory = _memory() if cross_attention else None
        block(_x(), memory=memory)
        return block

    post, pre = built("post"), built("pre")
    describe = lambda b: [(w.path, tuple(w.shape), w.trainable) for w in b.weights]
    assert describe(post) == describe(pre)
    assert post.count_params() == pre.count_params()
    assert len(post.weights) == (20 if cross_attention else 12)
    # ... and nothing else differs in the configuration.
    post_config, pre_config = post.get_config(), pre.get_config()
    assert post_config.pop("ln_position") == "post"
    assert pre_config.pop("ln_position") == "pre"
    assert post_config == pre_config


@pytest.mark.parametrize("self_attention", ["bidirectional", "causal"])
def test_post_ln_is_norm_of_residual_sum(self_attention):
    block = _block("post", randomize=True, self_attention=self_attention)
    x = _x()
    padding = np.ones((BATCH, T_LEN), bool)
    padding[1, -2:] = False
    got = _np(block(x, padding_mask=padding))
    h = x.astype(np.float64)
    attention = _np(block.self_attention(h.astype("float32"), key_mask=padding))
    h = _layer_norm(block.self_attention_norm, h + attention)
    ffn = _np(block.feed_forward(h.astype("float32")))
    h = _layer_norm(block.feed_forward_norm, h + ffn)
    np.testing.assert_allclose(got, h, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("self_attention", ["bidirectional", "causal"])
def test_pre_ln_is_residual_of_normed_sublayer(self_attention):
    block = _block("pre", randomize=True, self_attention=self_attention)
    x = _x()
    padding = np.ones((BATCH, T_LEN), bool)
    padding[1, -2:] = False
    got = _np(block(x, padding_mask=padding))
    h = x.astype(np.float64)
    normed = _layer_norm(block.self_attention_norm, h).astype("float32")
    h = h + _np(block.self_attention(normed, key_mask=padding))
    normed = _layer_norm(block.feed_forward_norm, h).astype("float32")
    h = h + _np(block.feed_forward(normed))
    np.testing.assert_allclose(got, h, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ln_position", ["post", "pre"])
def test_cross_attention_block_by_hand(ln_position):
    block = _block(ln_position, cross_attention=True, randomize=True, self_attention="causal")
    x, memory = _x(), _memory()
    memory_mask = np.ones((BATCH, S_LEN), bool)
    memory_mask[0, -1] = False
    got = _np(block(x, memory=memory, memory_mask=memory_mask))

    def residual(h, norm, sublayer):
        if ln_position == "post":
            return _layer_norm(norm, h + _np(sublayer(h.astype("float32"))))
        return h + _np(sublayer(_layer_norm(norm, h).astype("float32")))

    h = x.astype(np.float64)
    h = residual(h, block.self_attention_norm, block.self_attention)
    h = residual(
        h,
        block.cross_attention_norm,
        lambda q: block.cross_attention(q, memory=memory, key_mask=memory_mask),
    )
    h = residual(h, block.feed_forward_norm, block.feed_forward)
    np.testing.assert_allclose(got, h, rtol=1e-5, atol=1e-5)


# --- the parallel block (GPT-J, PaLM) ---------------------------------------------------


@pytest.mark.parametrize(
    "self_attention,window,padded,toggles",
    [("bidirectional", None, True, {}),
     ("causal", None, False, {}),  # the fused causal kernel
     ("causal", None, True, {}),
     ("banded", 3, True, {}),
     ("causal", None, True, dict(norm="rms", feed_forward="swiglu", position="rotary",
                                 num_kv_heads=2)),
     ("banded", 3, True, dict(position="alibi", attention_softcap=1.0))],
)
def test_parallel_block_is_one_norm_read_by_both_sublayers(self_attention, window, padded,
                                                           toggles):
    """`x + attn(norm(x)) + ff(norm(x))`, the norm by hand, on each self-attention path."""
    block = _block("pre", randomize=True, self_attention=self_attention, window=window,
                   parallel_block=True, **toggles)
    x = _x()
    padding = None
    if padded:
        padding = np.ones((BATCH, T_LEN), bool)
        padding[1, :2] = False
    got = _np(block(x, padding_mask=padding))
    norm = block.self_attention_norm
    normed = (_rms_norm(norm, x) if toggles.get("norm") == "rms"
              else _layer_norm(norm, x.astype(np.float64))).astype("float32")
    expected = (x + _np(block.self_attention(normed, key_mask=padding))
                + _np(block.feed_forward(normed)))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    sequential = TransformerBlock.from_config(dict(block.get_config(), parallel_block=False))
    sequential.build(x.shape)
    for w in sequential.weights:  # the same weights where they exist
        if not w.path.endswith(("feed_forward_norm/gamma", "feed_forward_norm/beta",
                                "feed_forward_norm/scale")):
            w.assign(next(b for b in block.weights if b.path == w.path))
    assert np.abs(_np(sequential(x, padding_mask=padding)) - got).max() > 1e-2


def test_parallel_block_has_one_norm_fewer():
    sequential = _block("pre", self_attention="causal", name="block")
    parallel = _block("pre", self_attention="causal", parallel_block=True, name="block")
    assert not hasattr(parallel, "feed_forward_norm")
    assert sequential.count_params() - parallel.count_params() == 2 * D_MODEL  # gamma, beta
    assert parallel.count_params() == parallel.config.count_params(D_MODEL)
    assert {w.path for w in parallel.weights} == {
        w.path for w in sequential.weights} - {w.path for w in sequential.feed_forward_norm.weights}


@pytest.mark.parametrize(
    "kwargs,names",
    [(dict(parallel_block=True, ln_position="post"), ("parallel_block", "ln_position")),
     (dict(parallel_block=True, ln_position="pre", cross_attention=True),
      ("parallel_block", "cross-attention")),
     (dict(parallel_block="yes", ln_position="pre"), ("parallel_block",))],
)
def test_parallel_block_arguments_are_checked(kwargs, names):
    with pytest.raises(ValueError) as error:
        TransformerBlock(num_heads=HEADS, d_ff=D_FF, **kwargs)
    assert all(name in str(error.value) for name in names), error.value


def test_post_and_pre_differ_with_the_same_weights():
    post = _block("post", randomize=True)
    pre = _block("pre", randomize=True)
    x = _x()
    assert np.abs(_np(post(x)) - _np(pre(x))).max() > 1e-2


# --- what the block reads ----------------------------------------------------------------


@pytest.mark.parametrize("ln_position", ["post", "pre"])
def test_cross_attention_reads_memory(ln_position):
    block = _block(ln_position, cross_attention=True, randomize=True)
    x = _x()
    a = _np(block(x, memory=_memory(1)))
    b = _np(block(x, memory=_memory(2)))
    assert np.abs(a - b).max() > 1e-3


@pytest.mark.parametrize("ln_position", ["post", "pre"])
def test_memory_mask_hides_padded_memory(ln_position):
    block = _block(ln_position, cross_attention=True, randomize=True, self_attention="causal")
    x, memory = _x(), _memory()
    memory_mask = np.ones((BATCH, S_LEN), bool)
    memory_mask[1, -2:] = False
    changed = memory.copy()
    changed[1, -2:] = 50.0 * np.random.default_rng(3).normal(size=(2, D_MODEL))
    base = _np(block(x, memory=memory, memory_mask=memory_mask))
    out = _np(block(x, memory=changed, memory_mask=memory_mask))
    np.testing.assert_allclose(out, base, rtol=0, atol=1e-5)
    # Without the mask the same change shows in every position of sequence 1.
    free_base = _np(block(x, memory=memory))
    free = _np(block(x, memory=changed))
    assert np.abs(free[1] - free_base[1]).max(-1).min() > 1e-3
    np.testing.assert_allclose(free[0], free_base[0], rtol=0, atol=1e-5)


@pytest.mark.parametrize("ln_position", ["post", "pre"])
def test_padding_mask_hides_padded_positions(ln_position):
    block = _block(ln_position, randomize=True)
    x = _x()
    padding = np.ones((BATCH, T_LEN), bool)
    padding[1, -2:] = False
    changed = x.copy()
    # New random values (a constant shift would vanish in pre-LN's LayerNorm).
    changed[1, -2:] = 5.0 * np.random.default_rng(7).normal(size=(2, D_MODEL))
    base = _np(block(x, padding_mask=padding))
    out = _np(block(changed, padding_mask=padding))
    np.testing.assert_allclose(out[:, :-2], base[:, :-2], rtol=0, atol=1e-5)
    np.testing.assert_allclose(out[0], base[0], rtol=0, atol=1e-5)
    free_change = _np(block(changed)) - _np(block(x))
    assert np.abs(free_change[1, :-2]).max() > 1e-3


@pytest.mark.parametrize("ln_position", ["post", "pre"])
def test_causal_block_ignores_later_positions(ln_position):
    block = _block(ln_position, randomize=True, self_attention="causal")
    x = _x()
    changed = x.copy()
    changed[:, 4:] = 5.0 * np.random.default_rng(7).normal(size=(BATCH, T_LEN - 4, D_MODEL))
    np.testing.assert_allclose(
        _np(block(changed))[:, :4], _np(block(x))[:, :4], rtol=0, atol=1e-5
    )
    # The same weights attending bidirectionally do see the change.
    bidirectional = _block(ln_position, randomize=True)
    assert np.abs(_np(bidirectional(changed))[:, :4] - _np(bidirectional(x))[:, :4]).max() > 1e-3


def test_residual_dropout_only_in_training():
    block = _block("post", randomize=True, dropout=0.5)
    plain = _block("post", randomize=True, dropout=0.0)
    x = _x()
    np.testing.assert_allclose(_np(block(x)), _np(plain(x)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        _np(block(x, training=False)), _np(plain(x)), rtol=1e-6, atol=1e-6
    )
    assert np.abs(_np(block(x, training=True)) - _np(plain(x))).max() > 1e-2


def test_attention_dropout_trains():
    block = _block("pre", randomize=True, attention_dropout=0.5, self_attention="causal")
    x = _x()
    out = _np(block(x, training=True))
    assert np.all(np.isfinite(out))
    assert np.abs(out - _np(block(x))).max() > 1e-3


# --- the standard layer test -------------------------------------------------------------


def _params(cross_attention):
    d = D_MODEL
    attention = 4 * d * d + 4 * d
    ffn = d * D_FF + D_FF + D_FF * d + d
    norm = 2 * d
    total = attention + norm + ffn + norm
    if cross_attention:
        total += attention + norm
    return total


def test_param_formula():
    # d = 16, d_ff = 32: 1088 (attention) + 1072 (ffn) + 2 x 32 (norms).
    assert _params(False) == 2224
    assert _params(True) == 2224 + 1088 + 32


def test_run_layer_test():
    ln_position = "pre"
    padding = np.ones((BATCH, T_LEN), bool)
    padding[1, -2:] = False
    run_layer_test(
        TransformerBlock,
        init_kwargs={
            "num_heads": HEADS,
            "d_ff": D_FF,
            "ln_position": ln_position,
            "self_attention": "causal",
            "activation": "gelu",
        },
        inputs={"x": _x(), "padding_mask": padding},
        expected_output_shape=(BATCH, T_LEN, D_MODEL),
        expected_num_params=_params(False),
        expected_num_trainable_weights=12,
    )


def test_run_layer_test_cross_attention():
    ln_position = "post"
    padding = np.ones((BATCH, T_LEN), bool)
    padding[0, -1] = False
    memory_mask = np.ones((BATCH, S_LEN), bool)
    memory_mask[1, -2:] = False
    run_layer_test(
        TransformerBlock,
        init_kwargs={
            "num_heads": HEADS,
            "d_ff": D_FF,
            "ln_position": ln_position,
            "self_attention": "causal",
            "cross_attention": True,
        },
        inputs={
            "x": _x(),
            "padding_mask": padding,
            "memory": _memory(),
            "memory_mask": memory_mask,
        },
        expected_output_shape=(BATCH, T_LEN, D_MODEL),
        expected_num_params=_params(True),
        expected_num_trainable_weights=20,
    )


# --- bad arguments ---------------------------------------------------------------------


def test_bad_ln_position_raises():
    with pytest.raises(ValueError, match="ln_position") as info:
        TransformerBlock(num_heads=2, d_ff=8, ln_position="middle")
    message = str(info.value)
    assert "'post'" in message and "'pre'" in message and "middle" in message


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"self_attention": "cross"}, "self_attention"),
        ({"self_attention": "banded"}, "window"),
        ({"self_attention": "causal", "window": 3}, "window"),
        ({"activation": "tanh"}, "activation"),
        ({"dropout": 1.5}, "dropout"),
        ({"attention_dropout": -0.5}, "attention_dropout"),
        ({"layer_norm_epsilon": 0.0}, "layer_norm_epsilon"),
        ({"num_heads": 0}, "num_heads"),
        ({"d_ff": 0}, "d_ff"),
    ],
)
def test_bad_arguments_raise(kwargs, name):
    kwargs = {"num_heads": 2, "d_ff": 8, **kwargs}
    with pytest.raises(ValueError, match=f"`{name}`"):
        TransformerBlock(**kwargs)


def test_cross_attention_block_needs_memory():
    block = TransformerBlock(num_heads=HEADS, d_ff=D_FF, cross_attention=True)
    with pytest.raises(ValueError, match="memory"):
        block(_x())


def test_memory_without_cross_attention_raises():
    block = TransformerBlock(num_heads=HEADS, d_ff=D_FF)
    with pytest.raises(ValueError, match="memory"):
        block(_x(), memory=_memory())


def test_d_model_not_divisible_by_num_heads_raises():
    with pytest.raises(ValueError, match="d_model"):
        TransformerBlock(num_heads=3, d_ff=8)(_x())


def test_residual_dropout_keeps_the_fused_causal_kernel(attention_kernel_calls):
    """GPT-2's dropout 0.1 is residual dropout: training still runs the mask-free kernel.

    Only `attention_dropout` > 0 needs the attention probabilities, and with
    them the unfused path (keras-hub ties the two rates, so its GPT-2 leaves
    the fused kernel whenever dropout is on).
    """
    seen = attention_kernel_calls
    x = _x()
    block = _block("pre", self_attention="causal", dropout=0.1)
    trained = _np(block(x, training=True))
    assert seen == [(True, True)]
    assert not np.allclose(trained, _np(block(x, training=False)))  # dropout was on
    _block("pre", self_attention="causal", dropout=0.1, attention_dropout=0.1)(x, training=True)
    assert len(seen) == 2  # the probabilities path does not call the fused kernel


# --- the toggles of newer blocks (BlockConfig) ---------------------------------------

LLAMA = dict(num_kv_heads=2, ln_position="pre", norm="rms", feed_forward="swiglu",
             use_bias=False, position="rotary")


def _rms_norm(norm, x):
    """RMSNorm by hand with the norm's own scale: `x / rms(x) * scale`, no mean, no offset."""
    return x / np.sqrt(np.mean(x**2, -1, keepdims=True) + norm.epsilon) * _np(norm.scale)


@pytest.mark.parametrize("ln_position", ["post", "pre"])
def test_rms_norm_block_by_hand(ln_position):
    toggles = {k: v for k, v in LLAMA.items() if k != "ln_position"}
    block = _block(ln_position, randomize=True, self_attention="causal", **toggles)
    x = _x()
    got = _np(block(x))
    h = x.astype(np.float64)
    for norm, sublayer in ((block.self_attention_norm, block.self_attention),
                           (block.feed_forward_norm, block.feed_forward)):
        if ln_position == "pre":
            h = h + _np(sublayer(_rms_norm(norm, h).astype("float32")))
        else:
            h = _rms_norm(norm, h + _np(sublayer(h.astype("float32"))))
    np.testing.assert_allclose(got, h, rtol=1e-4, atol=1e-4)
    assert {w.path.split("/")[-1] for w in block.self_attention_norm.weights} == {"scale"}


def test_llama_block_run_layer_test():
    d_head = D_MODEL // HEADS
    run_layer_test(
        TransformerBlock,
        init_kwargs=dict(num_heads=HEADS, d_ff=D_FF, self_attention="causal", qk_norm=True,
                         **LLAMA),
        inputs={"x": _x()},
        expected_output_shape=(BATCH, T_LEN, D_MODEL),
        # Q and output 16x16, K and V 16x8; SwiGLU 3 x 16x32; two RMS norms of 16; q/k norms
        expected_num_params=2 * 256 + 2 * 128 + 3 * 512 + 2 * 16 + 2 * d_head,
        expected_num_trainable_weights=3 + 2 + 2 + 2,  # qkv, output; 3 FF; 2 norms; q/k norms
    )


def test_block_config_object_and_keywords_build_the_same_block():
    from keras_transformer.layers.block_config import BlockConfig

    config = BlockConfig(num_heads=HEADS, d_ff=D_FF, **LLAMA)
    from_object = TransformerBlock(config, self_attention="causal")
    from_keywords = TransformerBlock(num_heads=HEADS, d_ff=D_FF, self_attention="causal", **LLAMA)
    assert from_object.config == from_keywords.config == config
    # A keyword replaces the object's value; get_config is flat and rebuilds the block.
    overridden = TransformerBlock(config, norm="layer", self_attention="causal")
    assert overridden.config.norm == "layer" and overridden.config.num_kv_heads == 2
    rebuilt = TransformerBlock.from_config(from_object.get_config())
    assert rebuilt.config == config
    assert from_object.get_config()["num_kv_heads"] == 2


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(num_kv_heads=3), "num_heads"),
        (dict(norm="batch"), "norm"),
        (dict(feed_forward="glu"), "feed_forward"),
        (dict(use_bias="no"), "use_bias"),
        (dict(qk_norm=1), "qk_norm"),
        (dict(position="learned"), "position"),
        (dict(rotary_fraction=1.5), "rotary_fraction"),
        (dict(config="llama"), "config"),
    ],
)
def test_bad_block_toggles_raise_naming_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        TransformerBlock(**dict(dict(num_heads=HEADS, d_ff=D_FF), **kwargs))


def test_rotary_block_with_too_few_rotating_features_raises_at_build():
    block = TransformerBlock(num_heads=4, d_ff=8, position="rotary", rotary_fraction=0.25)
    with pytest.raises(ValueError, match="rotary_fraction"):
        block.build((None, None, 16))  # d_head 4: a quarter is 1 feature
