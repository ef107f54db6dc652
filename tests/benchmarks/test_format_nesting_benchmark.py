"""benchmarks/format_nesting.py: a smoke run on its fastest shapes (the others take minutes)."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import format_nesting  # noqa: E402


def test_the_script_times_each_shape_and_says_its_verdict(capsys):
    assert format_nesting.main(word="~( nested") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4  # Lisp and Scheme, 30,000 levels deep and to 200 KB
    assert lines[0].endswith("~( nested 30,000 deep: None")
    assert lines[1].endswith("~( nested to 200 KB: None")
    assert lines[2].endswith("~( nested 30,000 deep: None")
