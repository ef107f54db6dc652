"""Rotary position embedding (RoPE): positions as rotations of queries and keys.

Su et al. (2021), "RoFormer". Each pair of features `(x_i, x_{i + r/2})` of a
query or key at position p is rotated by the angle `p * base^(-2i / r)`, where
r is the number of rotated features. The product of a query at p and a key at
s then depends on `p - s` only: attention sees relative positions, and no
position table limits the length.

The layout is the "rotate half" one of GPT-NeoX and HF's Llama: feature i is
paired with feature `i + r/2` (not with its neighbour `i + 1`, as in the
paper's interleaved layout). With `fraction < 1` (GPT-NeoX rotates a quarter)
only the first `r = fraction * d_head` features turn; the rest pass through.
"""

from keras import ops


def rotary_dim(d_head, fraction):
    """Number of rotated features: `fraction * d_head`, rounded down to an even number."""
    return int(d_head * fraction) // 2 * 2


def check_head_width(d_head, fraction):
    """Raises ValueError unless heads of `d_head` features can rotate at `fraction`."""
    if d_head % 2 or rotary_dim(d_head, fraction) < 2:
        raise ValueError(
            f"Rotary positions turn pairs of features: the head width (d_model / num_heads "
            f"= {d_head}) must be even and `rotary_fraction` ({fraction}) must leave at "
            f"least 2 of them rotating."
        )


def rotate(x, start_index, base=10000.0, fraction=1.0):
    """`x` `(B, T, H, d_head)` at positions `start_index ..` rotated by its positions.

    The angles are computed in float32 and the result cast back to `x`'s dtype.

    Args:
        x: queries or keys, `(B, T, H, d_head)`.
        start_index: the absolute position of `x[:, 0]` (int or scalar tensor).
        base: the wavelength base (10,000 in the paper and LLaMA).
        fraction: share of each head's features that rotate (GPT-NeoX: 0.25).

    Returns:
        `(B, T, H, d_head)`.

    Example:
    >>> import numpy as np
    >>> x = np.ones((1, 3, 2, 4), "float32")
    >>> y = ops.convert_to_numpy(rotate(x, 0))
    >>> bool(np.allclose(y[:, 0], x[:, 0])), bool(np.allclose(y[:, 1], x[:, 1]))
    (True, False)
    """
    x = ops.convert_to_tensor(x)
    d_head = x.shape[-1]
    r = rotary_dim(d_head, fraction)
    exponents = ops.arange(0, r, 2, dtype="float32") / r
    inverse_frequency = ops.power(float(base), -exponents)  # (r / 2,)
    positions = ops.cast(ops.arange(ops.shape(x)[1], dtype="int32") + start_index, "float32")
    angles = positions[:, None] * inverse_frequency[None, :]  # (T, r / 2)
    angles = ops.concatenate([angles, angles], axis=-1)[None, :, None, :]  # (1, T, 1, r)
    cos, sin = ops.cast(ops.cos(angles), x.dtype), ops.cast(ops.sin(angles), x.dtype)
    turned, passed = x[..., :r], x[..., r:]
    first, second = turned[..., : r // 2], turned[..., r // 2:]
    turned = turned * cos + ops.concatenate([-second, first], axis=-1) * sin
    return turned if r == d_head else ops.concatenate([turned, passed], axis=-1)
