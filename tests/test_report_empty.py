"""A scheduled report that finds no data says so: exit status 3 and one line on stderr naming
every empty period (the periods with data are written all the same); --allow-empty exits 0."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from sqlmetrics import cli

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "warehouse_examples" / "daily_report.toml"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The example warehouse, 3 days (2026-11-01 to 2026-11-03)."""
    spec = importlib.util.spec_from_file_location("mw", ROOT / "warehouse_examples" / "make_warehouse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path_factory.mktemp("empty") / "warehouse.duckdb"
    module.build(str(path), users=150, days=3)
    return path


@pytest.fixture
def warehouse(built, tmp_path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    shutil.copy(built, path)
    return path


def report(warehouse, capsys, *options):
    code = cli.main(["report", str(CONFIG), "--db", str(warehouse), *map(str, options)])
    out, err = capsys.readouterr()
    return code, out, err


def stored_days(warehouse) -> list[str]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute("SELECT DISTINCT period_start FROM sqlmetrics_results ORDER BY 1").fetchall()
    finally:
        con.close()
    return [str(r[0]) for r in rows]


def test_an_empty_period_exits_3_with_one_line_naming_it(warehouse, capsys):
    code, out, err = report(warehouse, capsys, "--date", "2026-11-05", "--quiet")
    assert code == 3
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(
        "sqlmetrics report daily_ab: no data for 2026-11-05 (no recommendations in the period)"
    )
    assert "--allow-empty" in err
    assert stored_days(warehouse) == []


def test_a_range_writes_the_periods_with_data_and_names_every_empty_one(warehouse, capsys):
    code, out, err = report(warehouse, capsys, "--from", "2026-11-02", "--to", "2026-11-05")
    assert code == 3
    last = err.splitlines()[-1]
    assert last.startswith("sqlmetrics report daily_ab: no data for 2026-11-04 (no recommendations")
    assert "2026-11-05 (no recommendations in the period)" in last
    assert "the 2 other periods are in the results table" in last
    assert "2026-11-02" not in last and "2026-11-03" not in last
    assert stored_days(warehouse) == ["2026-11-02", "2026-11-03"]
    metrics_table = out.split("\n\n")[0]  # (the comparisons of [compare] follow it)
    days = [line.split()[0] for line in metrics_table.splitlines()[2:]]
    assert days == ["2026-11-02"] * 2 + ["2026-11-03"] * 2
    # the same range again: the two done periods are skipped, the empty ones are still empty
    code, _, err = report(warehouse, capsys, "--from", "2026-11-02", "--to", "2026-11-05", "--quiet")
    assert code == 3 and err.count("\n") == 1 and "2026-11-04" in err and "2026-11-05" in err
    # a range with data in every period
    code, _, err = report(warehouse, capsys, "--from", "2026-11-01", "--to", "2026-11-03", "--quiet")
    assert code == 0 and err == ""


def test_allow_empty_keeps_status_0_and_the_old_output(warehouse, capsys):
    code, out, err = report(warehouse, capsys, "--date", "2026-11-05", "--allow-empty")
    assert code == 0
    assert out.splitlines()[-1] == "(no rows)"
    assert "0 written (0 rows), 0 skipped (already done), 1 without data" in err
    assert "2026-11-05: no data: no recommendations in the period" in err  # the progress note
    assert "no data for" not in err and "--allow-empty" not in err  # and no failure line
    code, _, err = report(
        warehouse, capsys, "--from", "2026-11-02", "--to", "2026-11-05", "--allow-empty", "-q"
    )
    assert code == 0 and err == ""
    assert stored_days(warehouse) == ["2026-11-02", "2026-11-03"]


def test_recommendations_without_truth_are_empty_too(warehouse, capsys):
    """The truth's load failed: the recommendations have rows, no user of theirs has truth."""
    con = duckdb.connect(str(warehouse))
    con.execute("DELETE FROM events WHERE day = DATE '2026-11-02'").fetchall()
    con.close()
    code, _, err = report(warehouse, capsys, "--from", "2026-11-01", "--to", "2026-11-02", "-q")
    assert code == 3
    assert err == (
        "sqlmetrics report daily_ab: no data for 2026-11-02 (no truth for the recommended users in the "
        "period); the 1 other period is in the results table; --allow-empty exits 0 for this\n"
    )
    assert stored_days(warehouse) == ["2026-11-01"]


def test_a_period_emptied_later_keeps_its_rows_and_says_so(warehouse, capsys):
    assert report(warehouse, capsys, "--date", "2026-11-01", "-q")[0] == 0
    con = duckdb.connect(str(warehouse))
    con.execute("DELETE FROM recommendations WHERE day = DATE '2026-11-01'").fetchall()  # retention
    con.close()
    code, _, err = report(warehouse, capsys, "--date", "2026-11-01", "--force", "-q")
    assert code == 3 and "no data for 2026-11-01 (no recommendations" in err
    assert stored_days(warehouse) == ["2026-11-01"]


def test_the_process_exit_status(warehouse):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", "sqlmetrics", "report", str(CONFIG), "--db", str(warehouse)]
    done = subprocess.run([*args, "--date", "2026-11-09", "-q"], capture_output=True, text=True, env=env)
    assert done.returncode == 3 and done.stderr.count("\n") == 1 and "2026-11-09" in done.stderr
    done = subprocess.run(
        [*args, "--date", "2026-11-09", "-q", "--allow-empty"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and done.stderr == ""


def test_help_lists_every_exit_status(capsys):
    for command in ([], ["report"]):
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args([*command, "--help"])
        text = capsys.readouterr().out
        statuses = text.split("exit status:", 1)[1]
        for status in ("0", "2", "3", "130", "1"):
            assert f"\n  {status} " in statuses, (command, status)
