"""ALiBi's head slopes, as the paper defines them."""

import numpy as np
from keras import ops

from keras_transformer.layers import alibi


def test_slopes_of_a_power_of_two_are_the_geometric_sequence():
    assert alibi.slopes(8) == [2.0 ** -i for i in range(1, 9)]
    assert alibi.slopes(1) == [2.0 ** -8]


def test_slopes_of_other_head_counts_interleave_the_next_power():
    # 6 heads: the 4-head slopes, then the odd-numbered slopes of 8 heads.
    assert alibi.slopes(6) == [2.0 ** -2, 2.0 ** -4, 2.0 ** -6, 2.0 ** -8, 2.0 ** -1, 2.0 ** -3]
    assert len(alibi.slopes(12)) == 12


def test_bias_is_minus_slope_times_distance():
    bias = ops.convert_to_numpy(alibi.bias(2, np.array([3, 4]), np.array([0, 1, 2, 3, 4])))
    assert bias.shape == (1, 2, 2, 5)
    np.testing.assert_allclose(bias[0, 0, 0], -(2.0 ** -4) * np.array([3, 2, 1, 0, 1]))
    np.testing.assert_allclose(bias[0, 1, 1], -(2.0 ** -8) * np.array([4, 3, 2, 1, 0]))
