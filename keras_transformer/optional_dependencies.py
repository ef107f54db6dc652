"""Optional dependencies: imported when a feature is used, with an error naming the extra.

The core install is Keras and NumPy: enough to build, train (`fit` on arrays), generate,
save and reload every model under JAX or PyTorch. What needs more says which extra brings it:

- `text`: keras-hub, tensorflow-text (and with it TensorFlow), sentencepiece and polib, for
  the tokenizers, the vocabularies of `Translator` and `TextGenerator`, and `.po` catalogs
  (the `tf.data` pipelines work too, on the TensorFlow it brings);
- `convert`: safetensors, for reading and writing Hugging Face checkpoints;
- `jax`, `torch`, `tensorflow`: the Keras backend (`tensorflow` also for the `tf.data`
  pipelines alone).
"""

import importlib

EXTRAS = {
    "keras_hub": "text",
    "sentencepiece": "text",
    "tensorflow": "tensorflow",  # the tf.data pipelines (the `text` extra also brings it)
    "polib": "text",
    "safetensors": "convert",
}
"""The extra that installs each optional top-level module."""

ALSO_IN = {"tensorflow": "text"}
"""A further extra that brings the module too (tensorflow-text needs TensorFlow)."""


def require(module, feature):
    """Imports `module` for `feature`, or raises an ImportError naming the extra to install.

    Args:
        module: a dotted module name whose top-level package is a key of `EXTRAS`.
        feature: what needs it, as the user called it (e.g. `"train_sentencepiece"`).

    Returns:
        The imported module.

    Raises:
        ImportError: the module is not installed; the message names the extra.

    Example:
    >>> require("polib", "translate_catalog").__name__
    'polib'
    >>> require("safetensors.not_a_module", "from_hf_gpt2")
    Traceback (most recent call last):
    ...
    ImportError: from_hf_gpt2 needs safetensors.not_a_module, which the 'convert' extra installs: pip install 'keras-transformer[convert]'
    """
    extra = EXTRAS[module.split(".")[0]]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if not (module == missing or module.startswith(missing + ".")):
            raise  # something the module itself needs is broken: its own error says what
        also = ALSO_IN.get(module.split(".")[0])
        raise ImportError(
            f"{feature} needs {module}, which the {extra!r} extra installs: "
            f"pip install 'keras-transformer[{extra}]'"
            + (f" (the {also!r} extra brings it too)" if also else "")
        ) from error
