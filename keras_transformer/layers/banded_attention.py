"""GPT-3's locally banded self-attention at O(T w) cost instead of O(T^2).

A banded layer lets position p read positions `p - w < s <= p` (w = `window`).
Dense attention over a `(T, T)` banded mask gets the right answer and pays for
every score it throws away. The blocked path here computes only the band:

    1. pad T up to a multiple of w and cut the queries into n = T / w blocks of w;
    2. give block i the keys and values of blocks i - 1 and i (2w keys; block 0's
       "previous" block is empty);
    3. attend inside each `(w, 2w)` window with the band mask, all blocks at once
       as a batch of `B * n`;
    4. stitch the blocks back and drop the padding.

Scores, probabilities and masks are `(B * n, H, w, 2w)`: memory and time grow as
`T w`, and the backend's fused kernel runs inside each window. The key padding
mask and the rule that a query with no key gives zeros are those of every other
path (`scaled_dot_product.attend`).

On a GPU, the backend's own windowed kernel is used when it exists and the call
allows it (no key padding mask, no probability dropout, no ALiBi bias): JAX's cuDNN attention
with `local_window_size` in half precision, PyTorch's FlexAttention. This is the
one layers module besides `key_value_cache` that imports a backend, lazily.
"""

import functools
import sys
from typing import NamedTuple

import keras
from keras import ops

from keras_transformer import masks


class Blocks(NamedTuple):
    """Banded self-attention cut into windows, and how to stitch the result back.

    Attributes:
        queries: `(B * n, w, H, d_head)`.
        keys: `(B * n, 2w, H, d_head)`: the previous block's keys, then the block's own.
        values: `(B * n, 2w, H, d_head)`.
        mask: bool `(B * n, w, 2w)`, the band and the key padding mask.
        batch: B.
        length: T, before padding.
    """

    queries: object
    keys: object
    values: object
    mask: object
    batch: object
    length: object

    def merge(self, out):
        """Attention output `(B * n, w, H, d_head)` -> `(B, T, H, d_head)`."""
        heads, d_head = out.shape[2], out.shape[3]
        out = ops.reshape(out, (self.batch, -1, heads, d_head))  # (B, n * w, H, d_head)
        return out[:, : self.length]


def _zeros_like_rows(x, rows):
    """Zeros shaped like `x` `(B, L, ...)` with `rows` in place of L.

    (Built with `concatenate`, not `ops.pad`: the torch backend's `pad` makes
    `torch.compile` break the graph in the next layer call.)
    """
    shape = (ops.shape(x)[0], rows) + tuple(ops.shape(x)[2:])
    return ops.zeros(shape, dtype=x.dtype)


def _pad_length(x, pad):
    """`x` `(B, T, ...)` padded with zeros to `(B, T + pad, ...)`."""
    return ops.concatenate([x, _zeros_like_rows(x, pad)], axis=1)


def _with_previous(x):
    """`(B, n, w, ...)` -> `(B, n, 2w, ...)`: each block after the one before it (zeros first)."""
    previous = ops.concatenate([_zeros_like_rows(x, 1), x[:, :-1]], axis=1)
    return ops.concatenate([previous, x], axis=2)


def split(q, k, v, window, key_mask=None):
    """Cuts banded self-attention into windows of `window` queries and 2 `window` keys.

    Args:
        q: `(B, T, H, d_head)` queries; keys and values have the same positions.
        k: `(B, T, H_kv, d_head)`.
        v: `(B, T, H_kv, d_head)`.
        window: w, how many positions each query sees, its own included.
        key_mask: bool `(B, T)`, `True` for real keys, or None.

    Returns:
        `Blocks`; attend over them and call `merge` on the result.

    Example:
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(2, 10, 2, 4)).astype("float32")
    >>> blocks = split(x, x, x, window=4)
    >>> tuple(blocks.queries.shape), tuple(blocks.keys.shape), tuple(blocks.mask.shape)
    ((6, 4, 2, 4), (6, 8, 2, 4), (6, 4, 8))
    """
    batch, length = ops.shape(q)[0], ops.shape(q)[1]
    blocks = (length + window - 1) // window
    pad = blocks * window - length

    def windows(x):  # (B, T, H, d) -> (B, n, w, H, d); keys may have fewer heads
        return ops.reshape(_pad_length(x, pad), (batch, blocks, window) + tuple(x.shape[2:]))

    def flat(x, rows):  # (B, n, rows, H, d) -> (B * n, rows, H, d)
        return ops.reshape(x, (batch * blocks, rows) + tuple(x.shape[3:]))

    real = ops.ones((1, length)) if key_mask is None else ops.cast(key_mask, "float32")
    real = ops.reshape(_pad_length(real, pad), (-1, blocks, window))  # (B or 1, n, w)
    real = ops.greater(_with_previous(real), 0.5)  # (B or 1, n, 2w): block 0 has no previous
    band = masks.banded_mask(window, 2 * window, window)  # (1, w, 2w): queries are the last w
    mask = ops.logical_and(real[:, :, None, :], band[:, None])  # (B or 1, n, w, 2w)
    mask = ops.broadcast_to(mask, (batch, blocks, window, 2 * window))
    return Blocks(
        queries=flat(windows(q), window),
        keys=flat(_with_previous(windows(k)), 2 * window),
        values=flat(_with_previous(windows(v)), 2 * window),
        mask=ops.reshape(mask, (batch * blocks, window, 2 * window)),
        batch=batch,
        length=length,
    )


# The backends' own windowed kernels. Each takes and returns `(B, T, H, d_head)`.


def jax_windowed_attention(q, k, v, window, implementation=None):
    """`jax.nn.dot_product_attention` with a causal window of `window` positions.

    `implementation=None` lets JAX pick cuDNN's fused windowed kernel on GPU;
    `"xla"` (which builds the dense mask) is the reference on CPU.
    """
    import jax

    return jax.nn.dot_product_attention(
        q, k, v, is_causal=True, local_window_size=(window - 1, 0),
        implementation=implementation,
    )


@functools.lru_cache(maxsize=None)
def _torch_flex():
    """PyTorch's FlexAttention, compiled once (uncompiled it forms every score)."""
    from torch.nn.attention import flex_attention

    compiled = sys.modules["torch"].compile(flex_attention.flex_attention, dynamic=False)
    return compiled, flex_attention.create_block_mask


@functools.lru_cache(maxsize=64)
def _torch_band_block_mask(window, length, device):
    """FlexAttention's block-sparse band mask: blocks wholly outside the band are skipped."""
    _, create_block_mask = _torch_flex()

    def band(batch, head, query, key):
        return (query >= key) & (query - key < window)

    return create_block_mask(band, None, None, length, length, device=device)


def torch_windowed_attention(q, k, v, window, compiled=True):
    """PyTorch FlexAttention over the band (`compiled=False`: eager, forward only on CPU)."""
    if compiled:
        flex, _ = _torch_flex()
    else:
        from torch.nn.attention.flex_attention import flex_attention as flex
    block_mask = _torch_band_block_mask(window, q.shape[1], str(q.device))
    heads_first = [x.transpose(1, 2) for x in (q, k, v)]  # (B, H, T, d_head)
    grouped = k.shape[2] != q.shape[2]  # fewer key/value heads (grouped-query attention)
    return flex(*heads_first, block_mask=block_mask, enable_gqa=grouped).transpose(1, 2)


def native_kernel(q):
    """The backend's windowed kernel for `q`'s device and dtype, or None.

    JAX on GPU in float16/bfloat16 (cuDNN's window needs half precision) and
    PyTorch on CUDA; everything else (CPU, TensorFlow, float32 JAX) takes the
    blocked path.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        jax = sys.modules["jax"]
        on_gpu = jax.default_backend() == "gpu"
        if on_gpu and str(q.dtype) in ("bfloat16", "float16"):
            return jax_windowed_attention
    elif backend == "torch" and getattr(q, "is_cuda", False):
        return torch_windowed_attention
    return None
