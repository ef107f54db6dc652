"""`softmax(Q K^T / sqrt(d_head)) V` over a boolean mask: the core every attention path runs.

Dense attention, GPT-3's blocked banded attention and cached decoding all end
here, on heads laid out as `(B, T, H, d_head)` and masks `(B or 1, T, S)`
(`keras_transformer.masks` has the conventions). Two rules hold for every caller:
the softmax runs in float32, and a query row with no key to read gives zeros,
never NaN.

Keys and values may have fewer heads than the queries (grouped-query
attention): query head h reads key/value head `h // (H / H_kv)`. The backends'
fused kernels take them so; the explicit paths repeat them. An additive score
`bias` `(1 or B, H, T, S)` (ALiBi) combines with every path.
"""

import keras
from keras import ops

from keras_transformer import masks

NEG_INF = -1e9  # added to masked scores; the softmax runs in float32


def match_heads(x, heads):
    """Keys or values `(B, S, H_kv, d)` repeated to `heads` query heads `(B, S, H, d)`."""
    groups = heads // x.shape[2]
    return x if groups == 1 else ops.repeat(x, groups, axis=2)


def fused_attention(q, k, v, mask=None, is_causal=False, bias=None):
    """`keras.ops.dot_product_attention` with the kernel choice left to the backend.

    On torch, Keras' own flash check builds a C++ `SDPAParams` object, which
    `torch.compile` cannot trace (a graph break in every attention layer);
    `flash_attention=False` skips that check only: PyTorch's
    `scaled_dot_product_attention` still dispatches to its flash kernel when the
    inputs allow. On JAX, `None` lets Keras pick cuDNN flash attention on GPU.

    Where the fused kernel cannot run (float16 on JAX's CPU, see
    `_fused_kernel_compiles`) the same attention is computed explicitly.

    A `bias` is passed alone: the mask (causal included) is folded into it
    as a large negative score, since some backends take one or the other.
    Keras hands grouped key/value heads to the backends' fused kernels as
    they are, except a single one (multi-query attention): TensorFlow then
    fails and PyTorch leaves only its unfused math kernel, so one key/value
    head is repeated to the query heads there.

    Args:
        q: `(B, T, H, d_head)`.
        k: `(B, S, H_kv, d_head)`.
        v: `(B, S, H_kv, d_head)`.
        mask: bool `(B or 1, 1, T, S)` or None.
        is_causal: the backend's causal kernel, with no mask tensor.
        bias: float `(B or 1, H, T, S)` added to the scores, or None.
    """
    if not _fused_kernel_compiles(q.dtype):
        if is_causal:
            mask = masks.causal_mask(ops.shape(q)[1], ops.shape(k)[1])[:, None]
        probs = probabilities(q, k, None if mask is None else mask[:, 0], bias)  # (B, H, T, S)
        return ops.einsum("bhts,bshd->bthd", ops.cast(probs, v.dtype), match_heads(v, q.shape[2]))
    backend = keras.backend.backend()
    flash = False if backend == "torch" else None
    if backend in ("tensorflow", "torch") and k.shape[2] == 1 and q.shape[2] > 1:
        k, v = match_heads(k, q.shape[2]), match_heads(v, q.shape[2])
    if bias is not None:
        if is_causal:
            mask = masks.causal_mask(ops.shape(q)[1], ops.shape(k)[1])[:, None]
        if mask is not None:
            bias = ops.where(mask, bias, NEG_INF)
        return ops.dot_product_attention(
            q, k, v, bias=ops.cast(bias, q.dtype), flash_attention=flash
        )
    return ops.dot_product_attention(
        q, k, v, mask=mask, is_causal=is_causal, flash_attention=flash
    )


def probabilities(q, k, mask=None, bias=None, transform=None):
    """Attention probabilities `(B, H, T, S)` in float32; masked keys get 0.

    Args:
        q: `(B, T, H, d_head)`.
        k: `(B, S, H_kv, d_head)`.
        mask: bool `(B or 1, T, S)`, `True` where query t may read key s, or None.
        bias: float `(B or 1, H, T, S)` added to the scores, or None.
        transform: a function of the float32 scores `(B, H, T, S)`, applied
            after the `1/sqrt(d_head)` scale and before `bias` and `mask`, or None.
    """
    q, k = ops.cast(q, "float32"), ops.cast(match_heads(k, q.shape[2]), "float32")
    scores = ops.einsum("bthd,bshd->bhts", q, k) / (ops.shape(q)[-1] ** 0.5)
    if transform is not None:
        scores = transform(scores)
    if bias is not None:
        scores = scores + ops.cast(bias, "float32")
    if mask is None:
        return ops.softmax(scores, axis=-1)
    mask = mask[:, None]  # (B, 1, T, S)
    probs = ops.softmax(ops.where(mask, scores, NEG_INF), axis=-1)
    return probs * ops.cast(ops.any(mask, axis=-1, keepdims=True), "float32")


def _fused_kernel_compiles(dtype):
    """False where the backend's fused kernel cannot run: JAX on CPU in float16.

    JAX's attention asks XLA for a float16 product accumulated in float32, which XLA:CPU
    does not implement ("The precision 'F16_F16_F32' is not supported by dot_general on
    CPU"): a `float16` or `mixed_float16` model would not run there. The explicit path
    computes the same (its softmax in float32).
    """
    if keras.backend.backend() != "jax" or keras.backend.standardize_dtype(dtype) != "float16":
        return True
    import jax

    return jax.default_backend() != "cpu"


def attend(q, k, v, mask=None, probability_dropout=None, bias=None, transform=None):
    """Attention output `(B, T, H, d_head)` over `mask`.

    Args:
        q: `(B, T, H, d_head)`.
        k: `(B, S, H_kv, d_head)`.
        v: `(B, S, H_kv, d_head)`.
        mask: bool `(B or 1, T, S)` or None (every key is read).
        probability_dropout: a callable applied to the probabilities (dropout
            in training), or None. With it, the probabilities are formed
            explicitly; without it, the backend's fused kernel runs.
        bias: float `(B or 1, H, T, S)` added to the scores, or None.
        transform: a function of the float32 scores (see `probabilities`), or
            None; with it, too, the probabilities are formed explicitly.
    """
    if probability_dropout is not None or transform is not None:
        probs = probabilities(q, k, mask, bias, transform)  # (B, H, T, S)
        if probability_dropout is not None:
            probs = probability_dropout(probs)
        v = match_heads(v, q.shape[2])
        return ops.einsum("bhts,bshd->bthd", ops.cast(probs, v.dtype), v)
    if mask is None:
        return fused_attention(q, k, v, bias=bias)
    mask = mask[:, None]  # (B, 1, T, S)
    row_has_keys = ops.any(mask, axis=-1, keepdims=True)  # (B, 1, T, 1)
    # A row with no key would be a softmax over nothing: let it read every key
    # (finite), then zero its output.
    mask = ops.logical_or(mask, ops.logical_not(row_has_keys))
    out = fused_attention(q, k, v, mask=mask, bias=bias)
    return out * ops.cast(ops.transpose(row_has_keys, (0, 2, 1, 3)), out.dtype)
