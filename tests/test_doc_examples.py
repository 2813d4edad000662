"""Every example of README.md, docs/*.md and the package docstring runs, verbatim, against the
example warehouse that the README's main job builds (warehouse_examples/make_warehouse.py), or
says, right above it, that it needs other data.

The blocks are read from the files (never copied here). Every fenced block names its language.
A block whose fence has `<!-- needs: WHAT -->` on the line just above it needs data, tools or a
machine the example warehouse does not give (a Spark session, the network, a benchmark's data
set); the text next to it says so to the reader, and it is not run. Every other block runs:

* python: statement by statement, one namespace per page, the README's from nothing, each page
  of docs/ after docs/README.md's own block (which connects `con`, as its text says), the
  package docstring from nothing; an expression is evaluated as a REPL shows it, and each
  table it returns must have rows and a value (an example that evaluates nobody would run and
  say nothing). Runnable blocks may not need pandas or polars: the venv the README builds
  (`pip install -e '.[stats]'`) has neither.
* bash: through `bash -e -o pipefail`, `sqlmetrics` and `python` being this interpreter with
  this checkout's package, after the page's Python (whose connections are closed by then: a
  DuckDB file has one writer process).
* sql: through DuckDB on warehouse.duckdb; it must return rows.
* toml: parsed; a report config is also run (`sqlmetrics report FILE --date 2026-11-03`).
* text: output shown to the reader; not run. Any other language must be marked.

The working directory is the repository's root as the main job leaves it: warehouse.duckdb,
built once per session with 300 users over the default 7 days (the days, dates and tables the
examples name), beside links to warehouse_examples/ and tests/ (the TREC examples read trec_eval's
test collection from tests/data/trec_eval)."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: tomli, a dependency there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.xdist_group("doc_examples")  # one worker, one warehouse

NEEDS = re.compile(r"<!--\s*needs:\s*(.+?)\s*-->")
RUN = {"python", "bash", "sql", "toml"}
SHOWN = {"text"}
NOT_INSTALLED = re.compile(r"\.to_pandas\(|\b(import|from) (pandas|polars)\b|\bpl\.from_arrow")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence (1-based)
    language: str
    code: str
    needs: str | None  # what the block needs beyond the example warehouse, if anything

    def __str__(self) -> str:
        return f"{self.page}:{self.line} ({self.language})"


def markdown_blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with the `needs` marker above each fence."""
    page = str(path.relative_to(ROOT))
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = re.fullmatch(r"```(\S*)\s*", lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == "```"), None)
        assert end is not None, f"{page}:{i + 1}: a fence that is never closed"
        marker = NEEDS.fullmatch(lines[i - 1].strip()) if i else None
        code = "\n".join(lines[i + 1 : end]) + "\n"
        blocks.append(Block(page, i + 1, opening.group(1), code, marker.group(1) if marker else None))
        i = end + 1
    return blocks


def docstring_block() -> Block:
    """The package docstring's example: its lines indented by four spaces."""
    doc = sqlmetrics.__doc__ or ""
    code = "\n".join(line[4:] for line in doc.splitlines() if line.startswith("    ")) + "\n"
    return Block("sqlmetrics/__init__.py", 1, "python", code, None)


PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def page_blocks(page: str) -> list[Block]:
    if page == "sqlmetrics/__init__.py":
        return [docstring_block()]
    return markdown_blocks(ROOT / page)


def runnable(page: str) -> list[Block]:
    return [b for b in page_blocks(page) if b.language in RUN and b.needs is None]


def test_every_block_names_its_language_and_what_it_needs():
    problems = []
    for page in PAGES:
        for block in page_blocks(page):
            if block.language not in RUN | SHOWN and block.needs is None:
                problems.append(f"{block}: a block of language {block.language!r} must be marked "
                                "<!-- needs: ... -->, or be python, bash, sql, toml or text")  # fmt: skip
            if block.language == "python" and block.needs is None and NOT_INSTALLED.search(block.code):
                problems.append(f"{block}: pandas and polars are not in the venv the README builds")
    assert not problems, "\n".join(problems)


def test_the_examples_are_many_and_the_marked_ones_few():
    blocks = [b for page in PAGES for b in page_blocks(page) if b.language in RUN]
    marked = [str(b) for b in blocks if b.needs]
    assert len(blocks) - len(marked) >= 15 and len(marked) <= 10, marked
    assert docstring_block().code.count("sqlmetrics.") >= 2


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    """The repository's root after the main job: the example warehouse, and the files beside it
    that the examples name; `bin/` holds `sqlmetrics` and `python` for the shell blocks."""
    work = tmp_path_factory.mktemp("examples")
    subprocess.run(
        [sys.executable, str(ROOT / "warehouse_examples" / "make_warehouse.py"), "--users", "300",
         "--db", str(work / "warehouse.duckdb")],
        check=True, capture_output=True,
    )  # fmt: skip
    for name in ("warehouse_examples", "tests"):
        (work / name).symlink_to(ROOT / name)
    return work


def shell_env(work: Path) -> dict[str, str]:
    import os

    shims = work.parent / f"{work.name}-bin"
    shims.mkdir(exist_ok=True)
    # (duckdb: the DuckDB command-line client of the test extra, duckdb-cli, for docs/sql.md)
    shims_of = (("sqlmetrics", "-m sqlmetrics"), ("python", ""), ("python3", ""), ("duckdb", "-m duckdb_cli"))
    for name, args in shims_of:
        shim = shims / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" {args} "$@"\n')
        shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "PATH": f"{shims}:{env['PATH']}", "PYTHONPATH": str(ROOT)}


def check_table(where: str, code: str, table: pa.Table) -> None:
    """A table an example shows has rows, units and a value."""
    assert table.num_rows > 0, f"{where}: {code}\nreturned no rows"
    if "users" in table.column_names:
        assert all(n for n in table.column("users").to_pylist()), f"{where}: {code}\nhas a group of 0 users"
    values = [v for c in table.columns if pa.types.is_floating(c.type) for v in c.to_pylist()]
    assert any(v for v in values), f"{where}: {code}\nhas no value"


def run_python(blocks: list[Block], namespace: dict) -> None:
    printed = io.StringIO()
    for block in blocks:
        for statement in ast.parse(block.code).body:
            code = ast.get_source_segment(block.code, statement)
            where = f"{block.page}:{block.line + statement.lineno}"
            with contextlib.redirect_stdout(printed):
                if isinstance(statement, ast.Expr):  # what a REPL would show
                    value = eval(compile(ast.Expression(statement.value), where, "eval"), namespace)
                    if isinstance(value, pa.Table):
                        check_table(where, code, value)
                else:
                    exec(compile(ast.Module([statement], []), where, "exec"), namespace)


def close_connections(namespace: dict) -> None:
    for value in namespace.values():
        if isinstance(value, duckdb.DuckDBPyConnection):
            value.close()


def run_outside(block: Block, work: Path) -> None:
    if block.language == "bash":
        done = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=work, env=shell_env(work),
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{block} exited {done.returncode}:\n{block.code}\n{done.stderr}"
    elif block.language == "sql":
        with duckdb.connect(str(work / "warehouse.duckdb")) as con:
            assert con.execute(block.code).fetchall(), f"{block}: no rows\n{block.code}"
    elif block.language == "toml":
        config = tomllib.loads(block.code)
        if "warehouse" in config and "metrics" in config:  # a report config: run it
            path = work / "example_report.toml"
            path.write_text(block.code, encoding="utf-8")
            run_outside(Block(block.page, block.line, "bash", f"sqlmetrics report {path} --date 2026-11-03\n",
                              None), work)  # fmt: skip


@pytest.mark.parametrize("page", [p for p in [*PAGES, "sqlmetrics/__init__.py"] if runnable(p)])
def test_every_example_runs_against_the_example_warehouse(page, workdir, monkeypatch):
    blocks = runnable(page)
    monkeypatch.chdir(workdir)
    monkeypatch.syspath_prepend(str(ROOT))
    namespace: dict = {"__name__": "__doc_example__"}
    preamble = [] if page in ("README.md", "docs/README.md", "sqlmetrics/__init__.py") else [
        b for b in markdown_blocks(ROOT / "docs" / "README.md") if b.language == "python"
    ]  # fmt: skip
    try:
        run_python(preamble + [b for b in blocks if b.language == "python"], namespace)
    finally:
        close_connections(namespace)
    for block in blocks:
        if block.language != "python":
            run_outside(block, workdir)


NOTEBOOK = "### In a terminal or a notebook"


def test_a_result_reads_as_a_table_with_nothing_extra_installed(workdir):
    """docs/inputs.md's example of showing a result, run where pandas and polars cannot be
    imported (the venv the README builds has neither): it prints a box-drawn table, a row per
    model, the metrics rounded to 4 decimals by the second query."""
    text = (ROOT / "docs" / "inputs.md").read_text(encoding="utf-8")
    section = text[text.index(NOTEBOOK) :]
    section = section[: section.index("\n#", len(NOTEBOOK))]
    blocks = markdown_blocks(ROOT / "docs" / "inputs.md")
    (block,) = [b for b in blocks if b.code in section and b.language == "python"]
    preamble = "".join(b.code for b in markdown_blocks(ROOT / "docs" / "README.md") if b.language == "python")
    blocked = "import sys\nsys.modules['pandas'] = sys.modules['polars'] = None  # not installed\n"
    done = subprocess.run(
        [sys.executable, "-c", blocked + preamble + block.code], cwd=workdir, env=shell_env(workdir),
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    header = r"^│\s+model\s+│\s+users\s+│\s+ndcg@10\s+│\s+map@10\s+│\s+recall@20\s+│$"
    assert re.search(header, done.stdout, re.M), done.stdout
    for model in ("A", "B"):
        row = rf"^│ {model}\s+│\s+[1-9]\d* │(\s+0\.\d{{1,4}} │){{3}}$"  # users, then 3 rounded values
        assert re.search(row, done.stdout, re.M), done.stdout

