"""Sharded weights (ZeRO-3 / FSDP style) on top of the model-parallel layout.

Data parallelism keeps a whole copy of every weight, gradient and optimizer
moment on each device of the batch axis. With `fully_sharded`, each of those
arrays is also split over the batch axis: a device holds `1 / batch_size` of
it (and `1 / (batch_size x model_size)` of a Megatron-split matrix). Nothing
is gathered by hand. The weights are ordinary sharded `jax.Array`s; when a
matmul needs a whole weight, XLA's GSPMD partitioner inserts the all-gather
over the batch axis, and the gradient comes back as a reduce-scatter that
leaves each device its own slice to update. Each optimizer moment takes its
weight's layout (Keras creates it from the weight), so the update runs on
slices too.

What is split: on top of `layout_map`'s model-axis split, the largest
dimension of the weight that is not already split (over more than one
device) and that the batch axis size divides; a weight with no such dimension (a vector shorter than the
batch axis, say) stays replicated over the batch axis, and integer variables
(seed states, counters) are never split. Rajbhandari et al. (2020), ZeRO
stage 3; PyTorch's FSDP shards the same way on flattened parameters.
"""

import keras

from keras_transformer import validation
from keras_transformer.distribution import layouts

__all__ = ["FullyShardedParallel", "fully_sharded", "sharded_axes"]


def sharded_axes(axes, shape, axis, sizes):
    """`axes` with `axis` added on the weight's largest dimension that its size divides.

    A dimension split over an axis of one device is not split at all: it is
    free for `axis` (on an `(n, 1)` mesh, Megatron's column split of a kernel
    leaves that dimension to the batch axis).

    Args:
        axes: the weight's layout without the batch axis: one mesh axis name
            or None per dimension.
        shape: the weight's shape.
        axis: the axis to add (the batch axis).
        sizes: `{mesh axis name: number of devices}`, with `axis` among them.

    Returns:
        The new tuple of axes; `axes` (without axes of one device) when no
        free dimension is divisible by `axis`' size or `axis` is already used.

    Example:
    >>> sharded_axes((None, "model"), (64, 192), "batch", {"batch": 8, "model": 4})
    ('batch', 'model')
    >>> sharded_axes((None, "model"), (64, 192), "batch", {"batch": 8, "model": 1})
    (None, 'batch')
    >>> sharded_axes((None,), (4,), "batch", {"batch": 8})  # too short: replicated
    (None,)
    """
    axes = tuple(None if name is not None and sizes.get(name) == 1 else name for name in axes)
    if axis in axes:
        return axes
    size = sizes[axis]
    free = [i for i, (name, dim) in enumerate(zip(axes, shape)) if name is None and dim % size == 0]
    if not free:
        return axes
    widest = max(free, key=lambda i: shape[i])  # the first of equals
    return axes[:widest] + (axis,) + axes[widest + 1 :]


class FullyShardedParallel(keras.distribution.ModelParallel):
    """`ModelParallel` whose weights are also split over the batch axis (FSDP).

    Build it with `fully_sharded`. Each weight gets `layout_map`'s
    model-axis layout, then `sharded_axes` adds the batch axis. A variable
    that already carries a layout keeps it: an optimizer moment is created
    with its weight's layout.

    It takes `keras.distribution.ModelParallel`'s arguments: `layout_map`
    (the model-axis layout), `batch_dim_name` (the axis over which data and
    weights are split) and `auto_shard_dataset`.

    Example:
    >>> mesh = layouts.make_mesh(1, devices=[f"cpu:{i}" for i in range(2)])
    >>> fully_sharded(mesh).batch_dim_name
    'batch'
    """

    def get_variable_layout(self, variable):
        if getattr(variable, "_layout", None) is not None:
            return variable._layout
        layout = super().get_variable_layout(variable)
        if not keras.backend.is_float_dtype(variable.dtype):
            return layout
        sizes = dict(zip(self.device_mesh.axis_names, self.device_mesh.shape))
        axes = sharded_axes(layout.axes, variable.shape, self.batch_dim_name, sizes)
        return keras.distribution.TensorLayout(axes, self.device_mesh)


def fully_sharded(
    mesh, batch_axis=layouts.BATCH_AXIS, model_axis=layouts.MODEL_AXIS, embedding="vocab",
    config=None, auto_shard_dataset=True,
):
    """Sharded weights over `batch_axis`, Megatron's split over `model_axis`.

    On a `(n, 1)` mesh this is pure FSDP / ZeRO-3: every weight and optimizer
    moment split `n` ways, batches split `n` ways. On an `(n, m)` mesh the
    block matrices are split `n x m` ways. Create (and compile) the model
    inside `distribution.scope()`, as with `model_parallel`.

    Args:
        mesh: a `keras.distribution.DeviceMesh` (e.g. from `make_mesh`).
        batch_axis: the mesh axis batches and weights are split over.
        model_axis: the mesh axis of Megatron's split (size 1 for none).
        embedding: `"vocab"` or `"model"`; see `layout_map`.
        config: optional `TransformerConfig` to check the model-axis split.
        auto_shard_dataset: as in `model_parallel`.

    Returns:
        A `FullyShardedParallel` distribution.

    Example:
    >>> mesh = layouts.make_mesh(2, devices=[f"cpu:{i}" for i in range(8)])
    >>> distribution = fully_sharded(mesh)
    >>> distribution.device_mesh.shape
    (4, 2)
    """
    layout_map = layouts.layout_map(
        mesh, model_axis=model_axis, embedding=embedding, config=config
    )
    auto_shard_dataset = validation.check_bool("auto_shard_dataset", auto_shard_dataset)
    layouts.check_batch_axis(mesh, batch_axis, model_axis)
    return FullyShardedParallel(
        layout_map=layout_map, batch_dim_name=batch_axis, auto_shard_dataset=auto_shard_dataset
    )
