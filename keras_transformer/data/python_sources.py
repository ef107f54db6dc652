"""A real text corpus every Python install has: the standard library's sources.

The standard library is several megabytes of carefully written, consistently
styled Python: a language-modelling corpus that needs no download. Files are
split into train/validation/test by a hash of their path relative to the
library root, so the split is the same on every machine with the same files.
"""

import os
import sysconfig

from keras_transformer.data.gettext_catalogs import split_by_hash


def python_source_files(root=None, include_tests=False):
    """Paths of the `.py` files under the standard library (sorted).

    Args:
        root: a folder to read instead (default: this interpreter's stdlib).
        include_tests: also take the `test/` and `*/tests/` packages (large,
            repetitive); by default they are left out, as is `site-packages`.

    Example:
    >>> len(python_source_files()) > 100
    True
    """
    root = root or sysconfig.get_paths()["stdlib"]
    if not os.path.isdir(root):
        raise FileNotFoundError(f"`root` {root!r} is not a folder.")
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(
            d for d in subfolders
            if d not in ("site-packages", "dist-packages", "__pycache__")
            and (include_tests or d not in ("test", "tests", "idle_test"))
        )
        found += [os.path.join(folder, f) for f in files if f.endswith(".py")]
    return sorted(found)


def load_python_sources(root=None, include_tests=False, validation_fraction=0.05,
                        test_fraction=0.05):
    """The standard library's source files as text, split by path hash.

    Args:
        root: a folder to read instead of this interpreter's stdlib.
        include_tests: also read the test packages.
        validation_fraction: expected share of files in the validation split.
        test_fraction: expected share of files in the test split.

    Returns:
        `{"train": [...], "validation": [...], "test": [...]}` lists of file
        contents (UTF-8; undecodable bytes replaced, empty files dropped).

    Example:
    >>> splits = load_python_sources()
    >>> len(splits["train"]) > len(splits["test"]) > 0
    True
    """
    root = root or sysconfig.get_paths()["stdlib"]
    files = []
    for path in python_source_files(root, include_tests):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if text.strip():
            files.append((os.path.relpath(path, root), text))
    splits = split_by_hash(files, validation_fraction, test_fraction)
    return {name: [text for _, text in items] for name, items in splits.items()}
