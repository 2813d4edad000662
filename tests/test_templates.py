"""Rendering: compiled templates are cached between processes, and a cache that cannot be
written never fails an evaluation."""

from __future__ import annotations

import subprocess
import sys

import jinja2
import pyarrow as pa

import sqlmetrics
from sqlmetrics.statement import templates

RECS = pa.table({"user_id": [1, 1], "item_id": [10, 11], "score": [0.9, 0.8], "relevance": [0, 1]})


def test_a_second_process_loads_compiled_templates(tmp_path):
    # a fresh cache folder: the first process compiles and stores, the second one only loads
    code = (
        "import sys, jinja2, duckdb, pyarrow as pa, sqlmetrics\n"
        "from sqlmetrics.statement import templates\n"
        "cache = jinja2.FileSystemBytecodeCache(sys.argv[1])\n"
        "templates.environment().bytecode_cache = cache\n"
        "compiled = []\n"
        "original = jinja2.Environment._compile\n"
        "jinja2.Environment._compile = lambda self, *a: compiled.append(1) or original(self, *a)\n"
        "recs = pa.table({'user_id': [1], 'item_id': [1], 'score': [0.5], 'relevance': [1]})\n"
        "sqlmetrics.evaluate(duckdb.connect(), recs, ['ndcg@10', 'map@10'])\n"
        "print(len(compiled))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
        )
        for _ in range(2)
    ]
    first, second = (int(run.stdout.strip()) for run in runs)
    assert first > 5 and second == 0, (first, second)


def test_an_unwritable_cache_is_ignored(con, tmp_path, monkeypatch):
    def refuse(self, bucket):
        raise PermissionError("read-only")

    monkeypatch.setattr(jinja2.FileSystemBytecodeCache, "dump_bytecode", refuse)
    environment = templates.environment()
    monkeypatch.setattr(environment, "bytecode_cache", templates._QuietBytecodeCache(str(tmp_path)))
    monkeypatch.setattr(environment, "cache", None)  # compile again, through the refusing cache
    out = sqlmetrics.evaluate(con, RECS, ["precision@2"])
    assert out.to_pylist() == [{"users": 1, "precision@2": 0.5}]
