"""A saved compile config that every backend can load.

On PyTorch, Keras builds `keras.optimizers.Adam`, `AdamW` and `Adamax` as
subclasses of its own torch module (`keras.src.backend.torch.optimizers`), and
a `.keras` file saved there names that module: JAX and TensorFlow cannot
import it, so the file does not load there ("Could not deserialize class
'Adam' because its parent module keras.src.backend.torch.optimizers.torch_adam
cannot be imported"). Those classes are the public optimizers with a faster
update; their config and their variables are the public class's. The models
save them under the public name, `keras.optimizers.<class>`, which each backend
builds in its own form.
"""

import keras

_BACKEND_MODULES = "keras.src.backend."


def backend_neutral(config):
    """`config` (a serialized Keras object, nested) with backend-only classes renamed public.

    Every `{"module": "keras.src.backend....", "class_name": name}` whose
    `name` is a public `keras.optimizers` class gets `"module":
    "keras.optimizers"`; everything else is returned as it is.

    Example:
    >>> backend_neutral({"module": "keras.src.backend.torch.optimizers.torch_adam",
    ...                  "class_name": "Adam", "config": {}, "registered_name": None})
    {'module': 'keras.optimizers', 'class_name': 'Adam', 'config': {}, 'registered_name': None}
    """
    if isinstance(config, list):
        return [backend_neutral(item) for item in config]
    if not isinstance(config, dict):
        return config
    config = {key: backend_neutral(value) for key, value in config.items()}
    module, name = config.get("module"), config.get("class_name")
    if (isinstance(module, str) and module.startswith(_BACKEND_MODULES)
            and isinstance(name, str) and isinstance(getattr(keras.optimizers, name, None), type)):
        config["module"] = "keras.optimizers"
    return config
