"""A report's results or comparisons table replaced by a view: one line, exit 2, nothing
written (DuckDB's "Can only delete from base table" was all the user saw)."""

from __future__ import annotations

import shutil

import duckdb
import pytest

from sqlmetrics.cli import main
from tests.test_cli import ROOT, logs  # noqa: F401 - the example warehouse's fixture

CONFIG = ROOT / "warehouse_examples" / "daily_report.toml"


@pytest.mark.parametrize("table", ["sqlmetrics_results", "sqlmetrics_comparisons"])
def test_a_results_table_replaced_by_a_view_is_one_line(logs, capsys, tmp_path, table):  # noqa: F811
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(logs / "warehouse.duckdb", warehouse)
    args = ["report", str(CONFIG), "--db", str(warehouse), "-q"]
    assert main([*args, "--date", "2026-11-01"]) == 0, capsys.readouterr().err
    con = duckdb.connect(str(warehouse))
    con.execute(f"CREATE TABLE kept AS SELECT * FROM {table}; DROP TABLE {table}")
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM kept")
    before = con.execute("SELECT count(*) FROM kept").fetchone()[0]
    con.close()
    capsys.readouterr()

    status = main([*args, "--date", "2026-11-02"])
    err = capsys.readouterr().err
    kind = "results" if table == "sqlmetrics_results" else "comparisons"
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert f"'{table}' is a view, but the {kind} table must be a table" in err and "Binder" not in err
    con = duckdb.connect(str(warehouse))
    assert con.execute("SELECT count(*) FROM kept").fetchone()[0] == before
    assert (
        con.execute("SELECT count(*) FROM sqlmetrics_results WHERE period_start = '2026-11-02'").fetchone()[0]
        == 0
    )
