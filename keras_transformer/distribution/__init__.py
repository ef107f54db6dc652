"""Training past one device: layouts, sharded weights, clusters and memory plans.

* `layouts`: where each weight lives on a device mesh (data parallel,
  Megatron-style model parallel), handed to `keras.distribution`.
* `sharded_weights`: every weight and optimizer moment also split over the
  batch axis (ZeRO-3 / FSDP).
* `cluster`: several processes (hosts) as one mesh: joining, gathering and
  saving weights that span processes.
* `memory_plan`: will it fit? Per-device bytes of weights, gradients, optimizer
  state and activations, and step FLOPs, from a config alone.
* `measurement`: XLA's per-device memory of a compiled training step.

`keras.distribution` is implemented for JAX; the TensorFlow and PyTorch
backends ignore it (docs/scaling_out.md says what they offer instead).
"""

from keras_transformer.distribution.cluster import gathered_weights
from keras_transformer.distribution.cluster import is_coordinator
from keras_transformer.distribution.cluster import join_cluster
from keras_transformer.distribution.cluster import save_model
from keras_transformer.distribution.layouts import BATCH_AXIS
from keras_transformer.distribution.layouts import EMBEDDING_SPLITS
from keras_transformer.distribution.layouts import MODEL_AXIS
from keras_transformer.distribution.layouts import data_parallel
from keras_transformer.distribution.layouts import layout_map
from keras_transformer.distribution.layouts import make_mesh
from keras_transformer.distribution.layouts import megatron_axes
from keras_transformer.distribution.layouts import model_parallel
from keras_transformer.distribution.measurement import StepMemory
from keras_transformer.distribution.measurement import step_memory
from keras_transformer.distribution.memory_plan import MemoryPlan
from keras_transformer.distribution.memory_plan import plan
from keras_transformer.distribution.memory_plan import weight_shapes
from keras_transformer.distribution.sharded_weights import FullyShardedParallel
from keras_transformer.distribution.sharded_weights import fully_sharded
from keras_transformer.distribution.sharded_weights import sharded_axes

__all__ = [
    "FullyShardedParallel", "data_parallel", "fully_sharded", "gathered_weights",
    "is_coordinator", "join_cluster", "layout_map", "make_mesh", "megatron_axes",
    "model_parallel", "save_model", "sharded_axes",
    "MemoryPlan", "StepMemory", "plan", "step_memory", "weight_shapes",
]
