"""The standard library corpus: files found, tests left out, split by path."""

import os
import sysconfig

import pytest

import keras_transformer as kt


def test_stdlib_sources_are_found_without_tests_or_site_packages():
    files = kt.data.python_source_files()
    assert len(files) > 300
    relative = [os.path.relpath(f, sysconfig.get_paths()["stdlib"]) for f in files]
    assert "os.py" in relative
    assert not any(part in ("test", "site-packages") for r in relative
                   for part in r.split(os.sep))
    assert len(kt.data.python_source_files(include_tests=True)) > len(files)


def test_split_is_by_file_and_holds_real_python(tmp_path):
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"{name}.py").write_text(f"def {name}():\n    return 1\n")
    (tmp_path / "empty.py").write_text("\n")
    splits = kt.data.load_python_sources(root=str(tmp_path), validation_fraction=0.25,
                                         test_fraction=0.25)
    texts = sorted(t for items in splits.values() for t in items)
    assert texts == sorted(f"def {n}():\n    return 1\n" for n in "abcd")
    assert splits == kt.data.load_python_sources(root=str(tmp_path), validation_fraction=0.25,
                                                 test_fraction=0.25)


def test_missing_root():
    with pytest.raises(FileNotFoundError, match="root"):
        kt.data.python_source_files(root="/nonexistent/folder")
