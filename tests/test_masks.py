"""Masks of `keras_transformer.masks` against masks built by hand in NumPy.

Convention (see the module docstring): `True` means "may attend", and with T
queries and S >= T keys, query t sits at absolute position S - T + t.
"""

import numpy as np
import pytest
from keras import ops

from keras_transformer import masks


def _np(x):
    return ops.convert_to_numpy(x)


def _reference_causal(t_len, s_len):
    """Loop-built causal mask (T, S): query t (at position S - T + t) sees s <= it."""
    ref = np.zeros((t_len, s_len), bool)
    for t in range(t_len):
        position = s_len - t_len + t
        for s in range(s_len):
            ref[t, s] = s <= position
    return ref


def _reference_banded(t_len, s_len, window):
    """Loop-built banded mask (T, S): query at position p sees p - window < s <= p."""
    ref = np.zeros((t_len, s_len), bool)
    for t in range(t_len):
        position = s_len - t_len + t
        for s in range(s_len):
            ref[t, s] = position - window < s <= position
    return ref


# --- padding_mask -----------------------------------------------------------------


def test_padding_mask_marks_real_tokens():
    ids = np.array([[5, 6, 0, 0], [0, 1, 2, 3]], "int32")
    got = _np(masks.padding_mask(ids))
    assert got.dtype == bool
    np.testing.assert_array_equal(got, ids != 0)


def test_padding_mask_custom_pad_id():
    ids = np.array([[5, 6, 7, 7], [0, 7, 2, 3]], "int32")
    np.testing.assert_array_equal(_np(masks.padding_mask(ids, pad_id=7)), ids != 7)
    # Id 0 is a real token when the pad id is something else.
    assert _np(masks.padding_mask(ids, pad_id=7))[1, 0]


def test_padding_mask_none_pad_id():
    assert masks.padding_mask(np.array([[0, 1]], "int32"), pad_id=None) is None


# --- causal_mask ------------------------------------------------------------------


@pytest.mark.parametrize("length", [1, 2, 5])
def test_causal_mask_square(length):
    got = _np(masks.causal_mask(length))
    assert got.shape == (1, length, length)
    assert got.dtype == bool
    np.testing.assert_array_equal(got[0], np.tril(np.ones((length, length), bool)))


@pytest.mark.parametrize("t_len, s_len", [(1, 5), (3, 5), (4, 4)])
def test_causal_mask_queries_aligned_to_end_of_keys(t_len, s_len):
    got = _np(masks.causal_mask(t_len, s_len))
    assert got.shape == (1, t_len, s_len)
    np.testing.assert_array_equal(got[0], _reference_causal(t_len, s_len))
    # The last query always sees every key; a single cached step sees them all.
    assert got[0, -1].all()
    # The cached step equals the last rows of the full square mask.
    full = _np(masks.causal_mask(s_len))[0]
    np.testing.assert_array_equal(got[0], full[s_len - t_len :])


# --- banded_mask ------------------------------------------------------------------


@pytest.mark.parametrize("window", [1, 2, 3])
def test_banded_mask_square(window):
    length = 6
    got = _np(masks.banded_mask(length, window=window))
    assert got.shape == (1, length, length)
    assert got.dtype == bool
    ones = np.ones((length, length), bool)
    # Causal band: diagonal and window - 1 sub-diagonals.
    expected = np.tril(ones) & ~np.tril(ones, -window)
    np.testing.assert_array_equal(got[0], expected)
    np.testing.assert_array_equal(got[0], _reference_banded(length, length, window))
    # Every query sees min(window, position + 1) keys.
    np.testing.assert_array_equal(
        got[0].sum(-1), np.minimum(window, np.arange(length) + 1)
    )


def test_banded_mask_window_one_is_identity():
    got = _np(masks.banded_mask(5, window=1))[0]
    np.testing.assert_array_equal(got, np.eye(5, dtype=bool))


@pytest.mark.parametrize("window", [5, 6, 50])
def test_banded_mask_wide_window_equals_causal(window):
    length = 5
    np.testing.assert_array_equal(
        _np(masks.banded_mask(length, window=window)), _np(masks.causal_mask(length))
    )


@pytest.mark.parametrize("t_len, s_len, window", [(1, 6, 2), (3, 6, 2), (2, 7, 3), (3, 6, 10)])
def test_banded_mask_queries_aligned_to_end_of_keys(t_len, s_len, window):
    got = _np(masks.banded_mask(t_len, s_len, window=window))
    assert got.shape == (1, t_len, s_len)
    np.testing.assert_array_equal(got[0], _reference_banded(t_len, s_len, window))
    full = _np(masks.banded_mask(s_len, window=window))[0]
    np.testing.assert_array_equal(got[0], full[s_len - t_len :])


def test_banded_mask_single_step_sees_last_window_keys():
    got = _np(masks.banded_mask(1, 6, window=2))[0, 0]
    np.testing.assert_array_equal(got, [False, False, False, False, True, True])


# --- key_mask_to_attention_mask and merge_masks ----------------------------------------


def test_key_mask_to_attention_mask():
    key_mask = np.array([[True, False, True], [False, True, True]])
    got = _np(masks.key_mask_to_attention_mask(key_mask))
    assert got.shape == (2, 1, 3)
    np.testing.assert_array_equal(got[:, 0], key_mask)
    assert masks.key_mask_to_attention_mask(None) is None


def test_merge_masks_all_none():
    assert masks.merge_masks() is None
    assert masks.merge_masks(None, None) is None


def test_merge_masks_single_mask_passes_through():
    causal = masks.causal_mask(3)
    np.testing.assert_array_equal(
        _np(masks.merge_masks(None, causal, None)), _np(causal)
    )


def test_merge_masks_broadcasts_and_ands():
    ids = np.array([[4, 5, 6, 0], [7, 0, 0, 0]], "int32")
    key = masks.key_mask_to_attention_mask(masks.padding_mask(ids))  # (2, 1, 4)
    causal = masks.causal_mask(4)  # (1, 4, 4)
    got = _np(masks.merge_masks(causal, None, key))
    assert got.shape == (2, 4, 4)
    expected = np.tril(np.ones((4, 4), bool))[None] & (ids != 0)[:, None, :]
    np.testing.assert_array_equal(got, expected)


def test_merge_masks_three_masks():
    band = masks.banded_mask(4, window=2)
    causal = masks.causal_mask(4)
    key = masks.key_mask_to_attention_mask(np.array([[False, True, True, True]]))
    got = _np(masks.merge_masks(band, causal, key))
    expected = _reference_banded(4, 4, 2)[None] & np.array([False, True, True, True])
    np.testing.assert_array_equal(got, expected)
    # Query 0 sees only key 0, which is padding: its row is empty.
    assert not got[0, 0].any()
