"""benchmarks/memory_plan.py: the docs' memory-plan table is the script's output."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import memory_plan  # noqa: E402


def test_the_docs_table_is_what_the_script_prints():
    table = memory_plan.table(utilization=0.4)
    with open(os.path.join(ROOT, "docs", "scaling_out.md")) as page:
        docs = page.read()
    assert table in docs, "docs/scaling_out.md: paste `python benchmarks/memory_plan.py` again"


def test_the_table_says_what_fits():
    rows = {tuple(cell.strip() for cell in line.split("|")[1:4]): line
            for line in memory_plan.table(utilization=0.4).splitlines()[2:]}
    assert "**no** / " in rows[("GPT-3 175B", "1,024", "data_parallel")]
    assert "**no**" not in rows[("GPT-3 175B", "64", "fully_sharded (8 x 8)")]
    assert "**no**" not in rows[("GPT-2 XL (1.5B)", "1", "data_parallel")]
    assert len(rows) == 3 * (1 + 3 + 4 + 4)
