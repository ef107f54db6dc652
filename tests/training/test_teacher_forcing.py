import numpy as np
import pytest

from keras_transformer.training import next_token_windows
from keras_transformer.training import shift_right
from keras_transformer.training import translation_pairs


def test_translation_pairs_shift_target_behind_start():
    inputs, labels = translation_pairs(
        [[5, 6, 7, 2], [8, 2, 0, 0]], [[9, 10, 2, 0], [11, 12, 13, 2]], start_id=1
    )
    np.testing.assert_array_equal(inputs["source"], [[5, 6, 7, 2], [8, 2, 0, 0]])
    np.testing.assert_array_equal(inputs["target"], [[1, 9, 10, 2], [1, 11, 12, 13]])
    np.testing.assert_array_equal(labels, [[9, 10, 2, 0], [11, 12, 13, 2]])
    # Teacher forcing: the input at t is the label at t - 1.
    real = labels[:, :-1] != 0
    np.testing.assert_array_equal(inputs["target"][:, 1:][real], labels[:, :-1][real])


def test_shift_right_drops_last_token():
    np.testing.assert_array_equal(shift_right([[4, 2, 0, 0]], start_id=1), [[1, 4, 2, 0]])
    np.testing.assert_array_equal(shift_right([[7]], start_id=3), [[3]])


def test_translation_pairs_reject_mismatched_counts():
    with pytest.raises(ValueError, match="same number of examples"):
        translation_pairs([[1, 2]], [[1, 2], [3, 4]], start_id=1)


def test_next_token_windows_with_stride():
    inputs, labels = next_token_windows(np.arange(12), length=4, stride=2)
    assert inputs.shape == labels.shape == (4, 4)
    np.testing.assert_array_equal(labels, inputs + 1)
    np.testing.assert_array_equal(inputs[:, 0], [0, 2, 4, 6])


def test_next_token_windows_errors():
    with pytest.raises(ValueError, match="too short"):
        next_token_windows(np.arange(4), length=4)
    with pytest.raises(ValueError, match="1-D"):
        next_token_windows(np.zeros((2, 8), int), length=2)
    with pytest.raises(ValueError, match="length"):
        next_token_windows(np.arange(10), length=0)
