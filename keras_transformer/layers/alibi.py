"""ALiBi: attention with linear biases, positions as a penalty on distance.

Press, Smith and Lewis (2022), "Train Short, Test Long". No position is added
to the embeddings; instead every attention score is lowered in proportion to
how far the key is from the query, `score - m_h * |p - s|`, with a fixed slope
m_h per head: a geometric sequence, so some heads look far and some near. The
paper trains at one length and extrapolates to longer ones.

A causal layer only reads keys with `s <= p`, where `|p - s| = p - s` is the
paper's bias; a bidirectional (encoder) layer penalizes distance both ways.
"""

import math

from keras import ops


def slopes(num_heads):
    """The paper's head slopes `(num_heads,)`, as Python floats.

    For n heads, a power of two, `2^(-8/n), 2^(-16/n), ..., 2^(-8)`. Otherwise
    the slopes of the power of two below n, then every second slope of the one
    above, as the paper's reference code does.

    Example:
    >>> slopes(4)
    [0.25, 0.0625, 0.015625, 0.00390625]
    """
    def power_of_two(n):
        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]

    below = 2 ** int(math.floor(math.log2(num_heads)))
    if below == num_heads:
        return power_of_two(num_heads)
    return power_of_two(below) + power_of_two(2 * below)[0::2][: num_heads - below]


def bias(num_heads, query_positions, key_positions):
    """The additive score bias `(1, H, T, S)`, float32: `-m_h * |p - s|`.

    Args:
        num_heads: H (the query heads).
        query_positions: int `(T,)` absolute positions of the queries.
        key_positions: int `(S,)` absolute positions of the keys.
    """
    m = ops.convert_to_tensor(slopes(num_heads), dtype="float32")  # (H,)
    query_positions = ops.cast(query_positions, "float32")
    key_positions = ops.cast(key_positions, "float32")
    distance = ops.abs(query_positions[:, None] - key_positions[None, :])  # (T, S)
    return -m[None, :, None, None] * distance[None, None]
