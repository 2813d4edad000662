"""The README's Quick Start runs, verbatim, against the warehouse that
warehouse_examples/make_warehouse.py builds: its code blocks are read from README.md (not
copied here) and run statement by statement, in a directory holding a freshly built
warehouse.duckdb, as the main job leaves it (the default days, fewer users to be quick)."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]


def quick_start_blocks() -> list[str]:
    """The ```python blocks of the README's "## Quick start" section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Quick start\n(.*?)(?=^## )", readme, flags=re.M | re.S)
    assert match, "README.md has no '## Quick start' section"
    return re.findall(r"^```python\n(.*?)^```", match.group(1), flags=re.M | re.S)


def test_the_blocks_are_found():
    blocks = quick_start_blocks()
    assert blocks and all(block.strip() for block in blocks)
    assert any("sqlmetrics.evaluate(" in block for block in blocks)


def test_every_line_runs_against_the_example_warehouse(tmp_path, monkeypatch):
    subprocess.run(
        [sys.executable, str(ROOT / "warehouse_examples" / "make_warehouse.py"), "--users", "300",
         "--db", str(tmp_path / "warehouse.duckdb")],
        check=True, capture_output=True,
    )  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    namespace: dict = {"__name__": "__quick_start__"}
    results, printed = [], io.StringIO()
    for block in quick_start_blocks():
        for statement in ast.parse(block).body:
            code = ast.get_source_segment(block, statement)
            with contextlib.redirect_stdout(printed):
                if isinstance(statement, ast.Expr):  # what a REPL would show
                    results.append(
                        (code, eval(compile(ast.Expression(statement.value), "<README>", "eval"), namespace))
                    )
                else:
                    exec(compile(ast.Module([statement], []), "<README>", "exec"), namespace)
    tables = [(code, value) for code, value in results if isinstance(value, pa.Table)]
    assert tables, "the Quick Start evaluates nothing"
    for code, table in tables:
        # a Quick Start that evaluates nobody would run and say nothing
        assert table.num_rows > 0, code
        if "users" in table.column_names:
            assert all(n > 0 for n in table.column("users").to_pylist()), code
        metrics = [c for c in table.column_names if "@" in c]
        assert metrics and any(v for c in metrics for v in table.column(c).to_pylist()), code
    if "print(sqlmetrics.sql(" in "".join(quick_start_blocks()):
        assert printed.getvalue().startswith("WITH")
