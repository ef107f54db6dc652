"""`keras_transformer.messages` and its tests never reach Keras or a framework.

`make test` runs these tests in one backend's pass only (tests/conftest.py marks them
`backend_independent`): that holds while what they run is the same Python under every
backend. This reads the imports of every module of the package and of these tests, their
doctests included, and refuses Keras, TensorFlow, JAX, PyTorch and the parts of
`keras_transformer` that use them.
"""

import ast
import doctest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("keras", "tensorflow", "jax", "jaxlib", "torch")
# The parts of keras_transformer that the message code and its tests may use: none reaches
# Keras (the package's own `__init__` imports Keras, so `import keras_transformer` may not).
ALLOWED_OWN = ("keras_transformer.messages", "keras_transformer.termination",
               "keras_transformer.tasks.translation")
FILES = sorted([*(ROOT / "keras_transformer" / "messages").rglob("*.py"),
                *(ROOT / "tests" / "messages").glob("*.py")])


def _imports(source):
    """The modules `source` imports (`from a import b` gives `a.b`: b may be a module)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def _sources_of(text):
    """The code `text`, then each of its docstrings' doctest code."""
    yield text
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            examples = doctest.DocTestParser().get_examples(ast.get_docstring(node) or "")
            if examples:
                yield "\n".join(example.source for example in examples)


def _refused(module):
    root = module.split(".")[0]
    return root in FRAMEWORKS or root == "keras_transformer" and not module.startswith(
        tuple(f"{allowed}." for allowed in ALLOWED_OWN))


def test_the_imports_are_read():
    # The reader finds what it must refuse, in code and in a doctest.
    doctested = ('"""Example:\n>>> import torch\n"""\nimport keras\nfrom jax import numpy\n'
                 'from keras_transformer import models\nimport keras_transformer\n'
                 'from keras_transformer.messages.po_file import parse_po\n')
    found = [module for source in _sources_of(doctested) for module in _imports(source)]
    assert found == ["keras", "jax.numpy", "keras_transformer.models", "keras_transformer",
                     "keras_transformer.messages.po_file.parse_po", "torch"]
    assert [_refused(module) for module in found] == [True, True, True, True, False, True]


@pytest.mark.parametrize("path", FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_message_code_and_its_tests_import_no_framework(path):
    refused = sorted({module for source in _sources_of(path.read_text(encoding="utf-8")) for module in _imports(source)
                      if _refused(module)})
    assert not refused, f"{path.relative_to(ROOT)} imports {refused}: its tests would differ " \
                        "by backend, and make test runs them on one (tests/conftest.py)"
