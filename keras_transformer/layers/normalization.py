"""The normalization a block uses: LayerNorm (2017, GPT) or RMSNorm (LLaMA).

Written once here for every place a norm stands: the residual sub-layers of a
block, the final norm of a pre-LN stack, and per-head query/key norms.
"""

import keras

NORMS = ("layer", "rms")


def make_norm(kind, epsilon, dtype, name):
    """A fresh normalization layer over the last axis.

    * `"layer"`: `keras.layers.LayerNormalization`, `(x - mean) / std * scale +
      offset` (Ba et al., 2016).
    * `"rms"`: `keras.layers.RMSNormalization`, `x / rms(x) * scale`, no mean
      and no offset (Zhang and Sennrich, 2019); LLaMA's choice: cheaper, and
      as stable in practice.

    Args:
        kind: `"layer"` or `"rms"`.
        epsilon: added to the variance (or mean square) before the root.
        dtype: the owning layer's dtype policy.
        name: the layer's name.
    """
    if kind == "rms":
        return keras.layers.RMSNormalization(epsilon=epsilon, dtype=dtype, name=name)
    return keras.layers.LayerNormalization(epsilon=epsilon, dtype=dtype, name=name)


def norm_weights(kind, width):
    """Weights of one `make_norm(kind, ...)` over `width` features (for counts)."""
    return width if kind == "rms" else 2 * width
