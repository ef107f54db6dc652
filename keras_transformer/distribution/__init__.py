"""Training past one device: layouts, sharded weights, clusters and memory plans.

* `layouts`: where each weight lives on a device mesh (data parallel,
  Megatron-style model parallel), handed to `keras.distribution`.

`keras.distribution` is implemented for JAX; the TensorFlow and PyTorch
backends ignore it (docs/scaling_out.md says what they offer instead).
"""

from keras_transformer.distribution.layouts import BATCH_AXIS
from keras_transformer.distribution.layouts import EMBEDDING_SPLITS
from keras_transformer.distribution.layouts import MODEL_AXIS
from keras_transformer.distribution.layouts import data_parallel
from keras_transformer.distribution.layouts import layout_map
from keras_transformer.distribution.layouts import make_mesh
from keras_transformer.distribution.layouts import model_parallel

__all__ = ["data_parallel", "layout_map", "make_mesh", "model_parallel"]
