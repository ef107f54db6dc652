"""`softmax(Q K^T / sqrt(d_head)) V` over a boolean mask: the core every attention path runs.

Dense attention, GPT-3's blocked banded attention and cached decoding all end
here, on heads laid out as `(B, T, H, d_head)` and masks `(B or 1, T, S)`
(`keras_transformer.masks` has the conventions). Two rules hold for every caller:
the softmax runs in float32, and a query row with no key to read gives zeros,
never NaN.
"""

import keras
from keras import ops

NEG_INF = -1e9  # added to masked scores; the softmax runs in float32


def fused_attention(q, k, v, mask=None, is_causal=False):
    """`keras.ops.dot_product_attention` with the kernel choice left to the backend.

    On torch, Keras' own flash check builds a C++ `SDPAParams` object, which
    `torch.compile` cannot trace (a graph break in every attention layer);
    `flash_attention=False` skips that check only: PyTorch's
    `scaled_dot_product_attention` still dispatches to its flash kernel when the
    inputs allow. On JAX, `None` lets Keras pick cuDNN flash attention on GPU.

    Args:
        q: `(B, T, H, d_head)`.
        k: `(B, S, H, d_head)`.
        v: `(B, S, H, d_head)`.
        mask: bool `(B or 1, 1, T, S)` or None.
        is_causal: the backend's causal kernel, with no mask tensor.
    """
    flash = False if keras.backend.backend() == "torch" else None
    return ops.dot_product_attention(
        q, k, v, mask=mask, is_causal=is_causal, flash_attention=flash
    )


def probabilities(q, k, mask=None):
    """Attention probabilities `(B, H, T, S)` in float32; masked keys get 0.

    Args:
        q: `(B, T, H, d_head)`.
        k: `(B, S, H, d_head)`.
        mask: bool `(B or 1, T, S)`, `True` where query t may read key s, or None.
    """
    q, k = ops.cast(q, "float32"), ops.cast(k, "float32")
    scores = ops.einsum("bthd,bshd->bhts", q, k) / (ops.shape(q)[-1] ** 0.5)
    if mask is None:
        return ops.softmax(scores, axis=-1)
    mask = mask[:, None]  # (B, 1, T, S)
    probs = ops.softmax(ops.where(mask, scores, NEG_INF), axis=-1)
    return probs * ops.cast(ops.any(mask, axis=-1, keepdims=True), "float32")


def attend(q, k, v, mask=None, probability_dropout=None):
    """Attention output `(B, T, H, d_head)` over `mask`.

    Args:
        q: `(B, T, H, d_head)`.
        k: `(B, S, H, d_head)`.
        v: `(B, S, H, d_head)`.
        mask: bool `(B or 1, T, S)` or None (every key is read).
        probability_dropout: a callable applied to the probabilities (dropout
            in training), or None. With it, the probabilities are formed
            explicitly; without it, the backend's fused kernel runs.
    """
    if probability_dropout is not None:
        probs = probability_dropout(probabilities(q, k, mask))  # (B, H, T, S)
        return ops.einsum("bhts,bshd->bthd", ops.cast(probs, v.dtype), v)
    if mask is None:
        return fused_attention(q, k, v)
    mask = mask[:, None]  # (B, 1, T, S)
    row_has_keys = ops.any(mask, axis=-1, keepdims=True)  # (B, 1, T, 1)
    # A row with no key would be a softmax over nothing: let it read every key
    # (finite), then zero its output.
    mask = ops.logical_or(mask, ops.logical_not(row_has_keys))
    out = fused_attention(q, k, v, mask=mask)
    return out * ops.cast(ops.transpose(row_has_keys, (0, 2, 1, 3)), out.dtype)
