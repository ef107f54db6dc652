"""`attention_plan`: every kernel `choose_kernel` picks equals a NumPy reference attention.

The reference takes the queries' and keys' absolute positions and builds the mask
(causal, banded, key padding) and ALiBi's bias from them by hand, in float64.
Each case asserts which kernel ran, so that a change in the choice shows.
"""

import functools

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.layers import attention_plan
from keras_transformer.layers import banded_attention
from keras_transformer.layers.block_config import AttentionConfig

HEADS, D_HEAD, BATCH = 4, 8, 2


def np_attention(q, k, v, query_positions, key_positions, structure=None, window=None,
                 key_mask=None, alibi=False, transform=None):
    """Attention `(B, T, H, d)` in float64; rows with no key give zeros."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    group = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, group, axis=2), np.repeat(v, group, axis=2)
    scores = np.einsum("bthd,bshd->bhts", q, k) / np.sqrt(q.shape[-1])
    if transform is not None:
        scores = transform(scores)
    p = np.asarray(query_positions)[:, None]
    s = np.asarray(key_positions)[None, :]
    if alibi:
        slopes = 2.0 ** (-8.0 * np.arange(1, HEADS + 1) / HEADS)
        scores = scores - slopes[None, :, None, None] * np.abs(p - s)[None, None]
    allowed = np.ones((q.shape[0],) + scores.shape[2:], bool)  # (B, T, S)
    if structure == "causal":
        allowed &= (s <= p)[None]
    elif structure == "banded":
        allowed &= ((s <= p) & (s > p - window) & (s >= 0))[None]
    if key_mask is not None:
        allowed &= np.asarray(key_mask)[:, None, :]
    allowed = np.broadcast_to(allowed[:, None], scores.shape)
    scores = np.where(allowed, scores, -np.inf)
    row_max = scores.max(-1, keepdims=True)
    exp = np.where(allowed, np.exp(scores - np.where(np.isfinite(row_max), row_max, 0.0)), 0.0)
    total = exp.sum(-1, keepdims=True)
    probs = np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)
    return np.einsum("bhts,bshd->bthd", probs, v)


def _qkv(t_len, s_len=None, kv_heads=HEADS, seed=0):
    rng = np.random.default_rng(seed)
    s_len = t_len if s_len is None else s_len
    q = rng.normal(size=(BATCH, t_len, HEADS, D_HEAD)).astype("float32")
    k = rng.normal(size=(BATCH, s_len, kv_heads, D_HEAD)).astype("float32")
    v = rng.normal(size=(BATCH, s_len, kv_heads, D_HEAD)).astype("float32")
    return q, k, v


def _config(alibi):
    return AttentionConfig(num_heads=HEADS, position="alibi" if alibi else None)


def _check(q, k, v, plan, expected_kernel, expected, atol=1e-5):
    assert attention_plan.choose_kernel(plan, ops.convert_to_tensor(q)) == expected_kernel
    got = attention_plan.attend(q, k, v, plan)
    got = ops.convert_to_numpy(ops.cast(got, "float32"))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=atol)
    return got


@pytest.mark.parametrize("alibi", [False, True])
@pytest.mark.parametrize("kv_heads", [HEADS, 2])
def test_fused_causal_kernel(alibi, kv_heads):
    q, k, v = _qkv(7, kv_heads=kv_heads)
    plan = attention_plan.self_attention_plan(_config(alibi), "causal", None, q, k)
    assert plan.is_causal and plan.mask is not None  # the mask exists, the kernel needs none
    positions = np.arange(7)
    expected = np_attention(q, k, v, positions, positions, "causal", alibi=alibi)
    _check(q, k, v, plan, "fused_causal", expected)


def test_banded_within_its_window_is_causal():
    q, k, v = _qkv(3)
    plan = attention_plan.self_attention_plan(_config(True), "banded", 3, q, k)
    assert plan.structure == "causal" and plan.window is None
    positions = np.arange(3)
    _check(q, k, v, plan, "fused_causal",
           np_attention(q, k, v, positions, positions, "causal", alibi=True))


def _cache(offset, length=9, seed=1):
    """One query at `offset` over a cache of `length` slots; the slots after it hold garbage."""
    q, k, v = _qkv(1, length, seed=seed)
    k[:, offset + 1:] = 1e4  # never read: the kernels must hide them
    v[:, offset + 1:] = np.nan
    return q, k, v


@pytest.mark.parametrize("alibi", [False, True])
def test_cache_prefix_at_an_int_position_and_masked_at_a_tensor_position(alibi):
    offset = 4
    q, k, v = _cache(offset)
    expected = np_attention(q[..., :, :, :], k[:, :offset + 1], v[:, :offset + 1], [offset],
                            np.arange(offset + 1), "causal", alibi=alibi)
    at_int = attention_plan.self_attention_plan(_config(alibi), "causal", None, q, k,
                                                offset=offset)
    _check(q, k, v, at_int, "cache_prefix", expected)
    at_tensor = attention_plan.self_attention_plan(
        _config(alibi), "causal", None, q, k, offset=ops.convert_to_tensor(offset, "int32")
    )
    np.testing.assert_array_equal(ops.convert_to_numpy(at_tensor.query_positions), [offset])
    v_finite = np.where(np.isnan(v), 0.0, v).astype("float32")  # masked keys still multiply v
    _check(q, k, v_finite, at_tensor, "masked", expected)


@pytest.mark.parametrize("mode", ["bidirectional", "causal", "banded"])
@pytest.mark.parametrize("alibi", [False, True])
def test_masked_kernel_with_padding(mode, alibi):
    q, k, v = _qkv(6, kv_heads=2)
    key_mask = np.ones((BATCH, 6), bool)
    key_mask[1, :2] = False
    window = 2 if mode == "banded" else None
    plan = attention_plan.self_attention_plan(_config(alibi), mode, window, q, k, key_mask)
    positions = np.arange(6)
    structure = None if mode == "bidirectional" else mode
    expected = np_attention(q, k, v, positions, positions, structure, window, key_mask, alibi)
    kernel = "blocked_banded" if mode == "banded" else "masked"
    _check(q, k, v, plan, kernel, expected)


def test_cached_causal_steps_of_several_queries_read_the_filled_slots():
    q, k, v = _qkv(3, 8)
    plan = attention_plan.self_attention_plan(_config(True), "causal", None, q, k, offset=2)
    expected = np_attention(q, k, v, [2, 3, 4], np.arange(8), "causal", alibi=True)
    _check(q, k, v, plan, "masked", expected)


@pytest.mark.parametrize("alibi", [False, True])
@pytest.mark.parametrize("length", [10, 12])
def test_blocked_banded_kernel(alibi, length):
    window = 3
    q, k, v = _qkv(length, kv_heads=1)
    key_mask = np.ones((BATCH, length), bool)
    key_mask[0, 4:6] = False
    for mask in (None, key_mask):
        plan = attention_plan.self_attention_plan(_config(alibi), "banded", window, q, k, mask)
        positions = np.arange(length)
        expected = np_attention(q, k, v, positions, positions, "banded", window, mask, alibi)
        _check(q, k, v, plan, "blocked_banded", expected)


def test_native_windowed_kernel_where_the_device_has_one(monkeypatch):
    """The choice goes to the backend's windowed kernel when `native_kernel` offers one.

    On a CPU none is offered; the backends' reference versions stand in for it here.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        native = functools.partial(banded_attention.jax_windowed_attention,
                                   implementation="xla")
    elif backend == "torch":
        pytest.importorskip("torch.nn.attention.flex_attention")
        native = functools.partial(banded_attention.torch_windowed_attention, compiled=False)
    else:
        pytest.skip("TensorFlow has no windowed kernel")
    q, k, v = _qkv(9)
    plan = attention_plan.self_attention_plan(_config(False), "banded", 3, q, k)
    real_kernel = banded_attention.native_kernel(ops.convert_to_tensor(q))
    monkeypatch.setattr(banded_attention, "native_kernel", lambda q: native)
    positions = np.arange(9)
    tensors = [ops.convert_to_tensor(x) for x in (q, k, v)]
    if backend == "torch":  # FlexAttention on a CPU: eager and forward only
        import torch

        with torch.no_grad():
            _check(*tensors, plan, "native_windowed",
                   np_attention(q, k, v, positions, positions, "banded", 3), atol=1e-4)
    else:
        _check(*tensors, plan, "native_windowed",
               np_attention(q, k, v, positions, positions, "banded", 3), atol=1e-4)
    # Padding and ALiBi keep the blocked path even so.
    with_alibi = attention_plan.self_attention_plan(_config(True), "banded", 3, q, k)
    assert attention_plan.choose_kernel(with_alibi, ops.convert_to_tensor(q)) == "blocked_banded"
    monkeypatch.undo()
    if real_kernel is None:  # on a CPU the choice is the blocked path
        assert attention_plan.choose_kernel(plan, ops.convert_to_tensor(q)) == "blocked_banded"


def test_ring_cache_step():
    """A banded layer's ring: slots hold positions 3, 4, 2; the new key is position 5."""
    window, offset = 3, 5
    q, _, _ = _qkv(1, seed=3)
    _, k, v = _qkv(1, window + 1, seed=4)
    plan = attention_plan.self_attention_plan(_config(True), "banded", window, q, k,
                                              offset=ops.convert_to_tensor(offset, "int32"),
                                              ring=True)
    np.testing.assert_array_equal(ops.convert_to_numpy(plan.key_positions), [3, 4, 2, 5])
    expected = np_attention(q, k, v, [5], [3, 4, 2, 5], "banded", window, alibi=True)
    _check(q, k, v, plan, "masked", expected)


def test_ring_cache_empty_slots_are_not_read():
    window, offset = 3, 1  # slot 0 holds position 0; slots 1, 2 are empty (-2, -1)
    q, _, _ = _qkv(1, seed=5)
    _, k, v = _qkv(1, window + 1, seed=6)
    plan = attention_plan.self_attention_plan(_config(False), "banded", window, q, k,
                                              offset=offset, ring=True)
    np.testing.assert_array_equal(ops.convert_to_numpy(plan.key_positions), [0, -2, -1, 1])
    expected = np_attention(q, k, v, [1], [0, -2, -1, 1], "banded", window)
    _check(q, k, v, plan, "masked", expected)


@pytest.mark.parametrize("mode", ["causal", "banded"])
def test_explicit_kernel_with_dropout(mode):
    """The dropout path (here a dropout that keeps everything) equals the reference."""
    q, k, v = _qkv(7)
    key_mask = np.ones((BATCH, 7), bool)
    key_mask[1, 0] = False  # query 0 of row 1 reads nothing: zeros
    window = 3 if mode == "banded" else None
    plan = attention_plan.self_attention_plan(_config(True), mode, window, q, k, key_mask,
                                              dropout=lambda probs: probs)
    positions = np.arange(7)
    expected = np_attention(q, k, v, positions, positions, mode, window, key_mask, alibi=True)
    kernel = "blocked_banded" if mode == "banded" else "explicit"
    got = _check(q, k, v, plan, kernel, expected)
    assert np.all(got[1, 0] == 0.0)


CAP = 0.5
SOFTCAP_CASES = ("bidirectional", "causal", "banded", "causal_padded", "banded_padded",
                 "cache_int", "cache_tensor", "ring", "cross")


@pytest.mark.parametrize("alibi", [False, True])
@pytest.mark.parametrize("case", SOFTCAP_CASES)
def test_attention_softcap_on_every_path(case, alibi):
    """`attention_softcap` caps the scores, `cap * tanh(s / cap)`, on every path a plan takes.

    Full passes of each mode (with and without padding), a cached step at an int and at a
    tensor position, a banded layer's ring step and cross-attention, each against the
    NumPy reference with the same cap; and the cap changes the answer in each.
    """
    config = AttentionConfig(num_heads=HEADS, position="alibi" if alibi else None,
                             attention_softcap=CAP)
    capped = lambda scores: CAP * np.tanh(scores / CAP)
    mode, _, padded = case.partition("_")
    if case.startswith("cache"):
        offset = 4
        q, k, v = _cache(offset)
        v = np.where(np.isnan(v), 0.0, v).astype("float32")  # masked keys still multiply v
        index = offset if case == "cache_int" else ops.convert_to_tensor(offset, "int32")
        plan = attention_plan.self_attention_plan(config, "causal", None, q, k, offset=index)
        reference = functools.partial(np_attention, q, k[:, :offset + 1], v[:, :offset + 1],
                                      [offset], np.arange(offset + 1), "causal", alibi=alibi)
        kernel = "explicit"
    elif case == "ring":  # slots hold positions 3, 4, 2; the new key is position 5
        q, _, _ = _qkv(1, seed=3)
        _, k, v = _qkv(1, 4, seed=4)
        plan = attention_plan.self_attention_plan(
            config, "banded", 3, q, k, offset=ops.convert_to_tensor(5, "int32"), ring=True)
        reference = functools.partial(np_attention, q, k, v, [5], [3, 4, 2, 5], "banded", 3,
                                      alibi=alibi)
        kernel = "explicit"
    elif case == "cross":
        q, k, v = _qkv(5, 7, kv_heads=2)
        key_mask = np.ones((BATCH, 7), bool)
        key_mask[1, :3] = False
        plan = attention_plan.cross_attention_plan(config, q, k, key_mask)
        reference = functools.partial(np_attention, q, k, v, np.arange(5), np.arange(7),
                                      key_mask=key_mask)  # no positions, so no ALiBi
        kernel = "explicit"
    else:
        length, window = 10, (3 if mode == "banded" else None)
        q, k, v = _qkv(length, kv_heads=2)
        key_mask = None
        if padded:
            key_mask = np.ones((BATCH, length), bool)
            key_mask[1, :3] = False
        plan = attention_plan.self_attention_plan(config, mode, window, q, k, key_mask)
        positions = np.arange(length)
        structure = None if mode == "bidirectional" else mode
        reference = functools.partial(np_attention, q, k, v, positions, positions, structure,
                                      window, key_mask, alibi)
        kernel = "blocked_banded" if mode == "banded" else "explicit"
    expected = reference(transform=capped)
    _check(q, k, v, plan, kernel, expected)
    assert np.abs(expected - reference()).max() > 1e-2  # the cap changes the answer


def test_attention_softcap_probabilities_are_capped():
    """The probabilities a caller reads (coverage, figures) come from the capped scores."""
    q, k, _ = _qkv(4)
    plan = attention_plan.self_attention_plan(
        AttentionConfig(num_heads=HEADS, attention_softcap=CAP), "bidirectional", None, q, k)
    probs = ops.convert_to_numpy(attention_plan.probabilities(q, k, plan))
    scores = np.einsum("bthd,bshd->bhts", q.astype(np.float64), k) / np.sqrt(D_HEAD)
    expected = np.exp(CAP * np.tanh(scores / CAP))
    np.testing.assert_allclose(probs, expected / expected.sum(-1, keepdims=True), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("cap", [0, -1.0, True, "50", float("inf"), float("nan")])
def test_a_bad_attention_softcap_raises_naming_it(cap):
    with pytest.raises(ValueError, match="attention_softcap"):
        AttentionConfig(num_heads=HEADS, attention_softcap=cap)


@pytest.mark.parametrize("padded", [False, True])
def test_cross_attention_plan(padded):
    q, k, v = _qkv(5, 7, kv_heads=2)
    key_mask = np.ones((BATCH, 7), bool)
    key_mask[1] = False  # row 1's memory is all padding: zeros
    key_mask = key_mask if padded else None
    plan = attention_plan.cross_attention_plan(_config(False), q, k, key_mask)
    assert plan.bias is None and not plan.is_causal
    expected = np_attention(q, k, v, np.arange(5), np.arange(7), key_mask=key_mask)
    got = _check(q, k, v, plan, "masked", expected)
    if padded:
        assert np.all(got[1] == 0.0)
    probs = ops.convert_to_numpy(attention_plan.probabilities(q, k, plan))
    assert probs.shape == (BATCH, HEADS, 5, 7) and np.all(np.isfinite(probs))


def test_query_positions_align_to_the_end_of_the_keys_without_a_cache():
    q, k, _ = _qkv(2, 5)
    plan = attention_plan.self_attention_plan(_config(True), "causal", None, q, k)
    assert not plan.is_causal  # T != S: the mask is needed
    np.testing.assert_array_equal(ops.convert_to_numpy(plan.query_positions), [3, 4])
    bias = ops.convert_to_numpy(plan.bias)
    assert bias.shape == (1, HEADS, 2, 5)
    slope = 2.0 ** (-8.0 / HEADS)
    np.testing.assert_allclose(bias[0, 0, 0], -slope * np.abs(3 - np.arange(5)), rtol=1e-6)
