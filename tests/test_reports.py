"""Scheduled reports: configuration, periods, the results table (one transaction per period,
idempotent, atomic, one writer at a time), resume, progress."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import date, datetime
from pathlib import Path

import duckdb
import pytest

import sqlmetrics
from sqlmetrics.reports import (
    Period,
    ReportConfigError,
    ResultsTableError,
    WarehouseBusyError,
    config_from_dict,
    connect,
    last_complete,
    load_config,
    period_of,
    periods_between,
    results_table,
    run_report,
)
from sqlmetrics.reports import runner as runner_module
from sqlmetrics.statement.progress import Progress

ROOT = Path(__file__).resolve().parents[1]
METRICS = ["ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10"]
GRADES = {"purchase": 3, "add_to_cart": 2, "view": 1}
DAYS = [date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)]


def _make_warehouse_module():
    spec = importlib.util.spec_from_file_location(
        "make_warehouse", ROOT / "warehouse_examples" / "make_warehouse.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def built_warehouse(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("built") / "warehouse.duckdb"
    _make_warehouse_module().build(str(path), users=300, days=3)
    return path


@pytest.fixture
def warehouse(built_warehouse, tmp_path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    shutil.copy(built_warehouse, path)
    return path


def make_config(warehouse: Path, **changes) -> sqlmetrics.reports.ReportConfig:
    data = {
        "name": "daily_ab",
        "warehouse": str(warehouse),
        "recommendations": "recommendations",
        "truth": "events",
        "time_column": "day",
        "metrics": METRICS,
        "by": ["model"],
        "columns": {"action": "event_type"},
        "grades": GRADES,
        **changes,
    }
    return config_from_dict(data)


def day(d: date) -> Period:
    return period_of("day", d)


def stored(con, table="sqlmetrics_results"):
    return con.execute(
        f"SELECT report, period_start, period_end, CAST(segment AS VARCHAR), metric, k, value, users, "
        f"computed_at, sqlmetrics_version, config_hash FROM {table} ORDER BY ALL"
    ).fetchall()


# --- configuration ----------------------------------------------------------------------------


def test_the_example_config_loads_and_says_what_the_issue_asks():
    config = load_config(ROOT / "warehouse_examples" / "daily_report.toml")
    assert config.metrics == tuple(METRICS)
    assert config.by == ("model",)
    assert config.grades == GRADES
    assert config.period == "day" and config.time_column == "day"
    assert config.options()["relevance"] == GRADES and config.options()["action"] == "event_type"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"metrcs": ["ndcg@10"]}, "did you mean 'metrics'"),
        ({"metrics": ["ndgc@10"]}, "did you mean 'ndcg'"),
        ({"metrics": ["P_5", "P(rel=2)@5"]}, "P(rel=2)@5 carry their own conventions"),
        ({"metrics": ["P_5", "relstring"]}, "relstring is a text per user"),
        ({"period": "2 days"}, "'1 day', '1 week'"),
        ({"conventions": {"ties": "random"}}, "ties='random'"),
        ({"conventions": {"tie": "item_asc"}}, "did you mean 'ties'"),
        ({"columns": {"action": "event_type", "usr": "u"}}, "did you mean 'user'"),
        ({"grades": {"purchase": "high"}}, "grades.purchase must be a number"),
        ({"columns": {}}, "[grades] needs columns.action"),
        ({"results_table": "a.b.c.d"}, "not a table name"),
        ({"by": 3}, "by must be a string or a list"),
    ],
)
def test_bad_configurations_are_refused_with_a_reason(tmp_path, change, message):
    with pytest.raises(ReportConfigError, match=None) as info:
        make_config(tmp_path / "w.duckdb", **change)
    assert message in str(info.value)


def test_missing_keys_and_bad_toml_are_config_errors(tmp_path):
    with pytest.raises(ReportConfigError, match="missing key 'time_column'"):
        config_from_dict({"name": "r", "warehouse": "w", "recommendations": "r", "metrics": ["ndcg@10"]})
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "unterminated\n')
    with pytest.raises(ReportConfigError, match="not valid TOML"):
        load_config(bad)
    with pytest.raises(ReportConfigError, match="no report configuration file"):
        load_config(tmp_path / "absent.toml")


def test_the_config_hash_follows_what_decides_the_numbers(tmp_path):
    base = make_config(tmp_path / "w.duckdb")
    assert base.hash == make_config(tmp_path / "w.duckdb", conventions={"ties": "item_desc"}).hash
    assert base.hash == make_config(tmp_path / "elsewhere.duckdb", name="other").hash
    assert base.hash != make_config(tmp_path / "w.duckdb", metrics=METRICS[:2]).hash
    assert base.hash != make_config(tmp_path / "w.duckdb", grades={**GRADES, "view": 0.5}).hash
    assert base.hash != make_config(tmp_path / "w.duckdb", conventions={"missing": "zero"}).hash


# --- periods ----------------------------------------------------------------------------------


def test_periods():
    assert period_of("day", date(2026, 11, 3)) == Period(date(2026, 11, 3), date(2026, 11, 4))
    assert period_of("week", date(2026, 11, 8)) == Period(date(2026, 11, 2), date(2026, 11, 9))  # a Sunday
    assert period_of("month", date(2026, 12, 31)) == Period(date(2026, 12, 1), date(2027, 1, 1))
    assert [p.label for p in periods_between("month", date(2026, 11, 20), date(2027, 1, 2))] == [
        "2026-11",
        "2026-12",
        "2027-01",
    ]
    assert len(periods_between("day", DAYS[0], DAYS[-1])) == 3
    assert last_complete("week", date(2026, 11, 4)) == Period(date(2026, 10, 26), date(2026, 11, 2))


# --- running ----------------------------------------------------------------------------------


def test_one_row_per_period_segment_and_metric_with_the_numbers_of_evaluate(warehouse):
    config = make_config(warehouse)
    con = connect(warehouse)
    outcomes = run_report(con, config, periods_between("day", DAYS[0], DAYS[-1]))
    assert [(o.status, o.rows) for o in outcomes] == [("written", 10)] * 3  # 2 models x 5 metrics

    rows = results_table.read(con, "sqlmetrics_results", "daily_ab").to_pylist()
    assert len(rows) == 30
    row = rows[0]
    assert set(row) >= {"period_start", "period_end", "segment", "metric", "k", "value", "users"}
    assert {r["metric"] for r in rows} == {"ndcg", "map", "recall", "mrr", "hit_rate"}
    assert all(r["config_hash"] == config.hash for r in rows)
    assert all(r["sqlmetrics_version"] == sqlmetrics.__version__ for r in rows)
    assert all(r["period_end"] == r["period_start"] + (DAYS[1] - DAYS[0]) for r in rows)

    # the same numbers as evaluate() on that day's rows of both tables
    recs = con.table("recommendations").filter("day = DATE '2026-11-02'")
    truth = con.table("events").filter("day = DATE '2026-11-02'")
    expected = sqlmetrics.evaluate(
        con, recs, METRICS, truth=truth, by="model", action="event_type", relevance=GRADES
    )
    for line in expected.to_pylist():
        for label in METRICS:
            name, k = label.split("@")
            (match,) = [
                r
                for r in rows
                if r["period_start"] == DAYS[1]
                and dict(r["segment"]) == {"model": line["model"]}
                and (r["metric"], r["k"]) == (name, int(k))
            ]
            assert match["value"] == line[label] and match["users"] == line["users"]
    # the two arms of the example really differ: B ranks better
    by_model = {
        dict(r["segment"])["model"]: r["value"]
        for r in rows
        if r["metric"] == "ndcg" and r["period_start"] == DAYS[0]
    }
    assert by_model["B"] > by_model["A"]
    con.close()


def test_rerunning_a_period_skips_it_and_force_replaces_it_without_duplicates(warehouse):
    config = make_config(warehouse)
    con = connect(warehouse)
    run_report(con, config, [day(DAYS[0])], now=lambda: datetime.fromisoformat("2026-11-02T06:00:00+00:00"))
    before = stored(con)
    assert [o.status for o in run_report(con, config, [day(DAYS[0])])] == ["skipped"]
    assert stored(con) == before

    later = datetime.fromisoformat("2026-11-03T06:00:00+00:00")
    assert [o.status for o in run_report(con, config, [day(DAYS[0])], force=True, now=lambda: later)] == [
        "written"
    ]
    after = stored(con)
    assert len(after) == len(before) == 10
    assert [r[:8] for r in after] == [r[:8] for r in before]  # same numbers
    assert {r[8] for r in after} == {later.replace(tzinfo=None)}  # recomputed, in UTC
    con.close()


def test_a_changed_config_redoes_the_period_and_replaces_all_its_rows(warehouse):
    con = connect(warehouse)
    run_report(con, make_config(warehouse), [day(DAYS[0])])
    smaller = make_config(warehouse, metrics=["ndcg@10"])
    assert [o.status for o in run_report(con, smaller, [day(DAYS[0])])] == ["written"]
    rows = stored(con)
    assert len(rows) == 2 and {r[4] for r in rows} == {"ndcg"} and {r[10] for r in rows} == {smaller.hash}
    con.close()


def test_other_reports_and_other_periods_are_left_alone(warehouse):
    con = connect(warehouse)
    run_report(con, make_config(warehouse), [day(DAYS[0]), day(DAYS[1])])
    run_report(con, make_config(warehouse, name="weekly_copy"), [day(DAYS[0])])
    before = stored(con)
    run_report(con, make_config(warehouse), [day(DAYS[0])], force=True)
    after = stored(con)
    assert len(after) == len(before) == 30
    assert [r for r in after if r[0] == "weekly_copy"] == [r for r in before if r[0] == "weekly_copy"]
    assert [r for r in after if r[1] == DAYS[1]] == [r for r in before if r[1] == DAYS[1]]
    con.close()


def test_a_failure_between_delete_and_insert_leaves_the_table_exactly_as_it_was(warehouse, monkeypatch):
    con = connect(warehouse)
    config = make_config(warehouse)
    run_report(con, config, [day(DAYS[0]), day(DAYS[1])])
    before = stored(con)

    def broken_insert(con, context, parameters):
        raise RuntimeError("disk on fire after the DELETE")

    monkeypatch.setattr(results_table, "_insert", broken_insert)
    with pytest.raises(RuntimeError, match="disk on fire"):
        run_report(con, config, [day(DAYS[0])], force=True)
    assert stored(con) == before
    con.close()
    reopened = duckdb.connect(str(warehouse))
    assert stored(reopened) == before
    reopened.close()


_KILLED_RUN = """
import os, sys, time
from sqlmetrics.reports import results_table
from sqlmetrics.cli import main

real_delete = results_table._delete

def delete_then_hang(con, context, parameters):
    real_delete(con, context, parameters)
    open(sys.argv[2], "w").close()   # tell the test: the DELETE ran, the transaction is open
    time.sleep(60)

results_table._delete = delete_then_hang
sys.exit(main(["report", sys.argv[1], "--date", "2026-11-01", "--force", "--quiet"]))
"""


def test_a_run_killed_half_way_leaves_the_table_exactly_as_it_was(warehouse, tmp_path):
    config_path = tmp_path / "report.toml"
    config_path.write_text(
        (ROOT / "warehouse_examples" / "daily_report.toml")
        .read_text()
        .replace('warehouse = "warehouse.duckdb"', f"warehouse = {str(warehouse)!r}")
    )
    con = connect(warehouse)
    run_report(con, load_config(config_path), [day(DAYS[0])])
    before = stored(con)
    con.close()

    marker = tmp_path / "deleted"
    child = subprocess.Popen([sys.executable, "-c", _KILLED_RUN, str(config_path), str(marker)])
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None, "the run ended before its DELETE"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    reopened = duckdb.connect(str(warehouse))
    assert stored(reopened) == before
    # the example config compares the models: the period's comparisons were in the same transaction
    assert reopened.execute("SELECT count(*) FROM sqlmetrics_comparisons").fetchall() == [(5,)]
    assert reopened.execute("SELECT DISTINCT computed_at FROM sqlmetrics_comparisons").fetchall() == [
        (before[0][8],)
    ]
    reopened.close()


_HOLDER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def _hold(warehouse: Path, seconds: float) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(warehouse), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "holding"
    return holder


def test_a_second_writer_fails_at_once_with_a_clear_message_or_waits(warehouse):
    holder = _hold(warehouse, 1.5)
    try:
        with pytest.raises(WarehouseBusyError, match=rf"in use by process {holder.pid}.*--wait"):
            connect(warehouse)
        started = time.monotonic()
        con = connect(warehouse, wait=20)  # the holder lets go after 1.5 s
        assert time.monotonic() - started < 15
        con.close()
    finally:
        holder.wait(timeout=30)


def test_an_interrupted_range_resumes_where_it_stopped(warehouse, monkeypatch):
    config = make_config(warehouse)
    periods = periods_between("day", DAYS[0], DAYS[-1])
    real = runner_module.evaluate_period

    def stop_on_second_day(con, config, period, *args, **kwargs):
        if period.start == DAYS[1]:
            raise KeyboardInterrupt
        return real(con, config, period, *args, **kwargs)

    con = connect(warehouse)
    monkeypatch.setattr(runner_module, "evaluate_period", stop_on_second_day)
    with pytest.raises(KeyboardInterrupt):
        run_report(con, config, periods)
    assert {r[1] for r in stored(con)} == {DAYS[0]}
    monkeypatch.setattr(runner_module, "evaluate_period", real)
    assert [o.status for o in run_report(con, config, periods)] == ["skipped", "written", "written"]
    assert len(stored(con)) == 30
    con.close()


def test_a_period_without_data_keeps_its_stored_rows(warehouse):
    con = connect(warehouse)
    config = make_config(warehouse)
    run_report(con, config, [day(DAYS[0])])
    before = stored(con)
    con.execute("DELETE FROM recommendations WHERE day = DATE '2026-11-01'").fetchall()  # retention
    assert [o.status for o in run_report(con, config, [day(DAYS[0])], force=True)] == ["no data"]
    assert stored(con) == before
    con.close()


def test_bad_data_in_a_period_names_the_period_and_keeps_earlier_ones(warehouse):
    con = connect(warehouse)
    con.execute(
        "INSERT INTO recommendations SELECT * FROM recommendations WHERE day = DATE '2026-11-02' LIMIT 1"
    ).fetchall()
    config = make_config(warehouse, conventions={"duplicates": "all"})
    with pytest.raises(sqlmetrics.DuplicateRowError, match="daily_ab 2026-11-02: .*duplicate"):
        run_report(con, config, periods_between("day", DAYS[0], DAYS[-1]))
    assert {r[1] for r in stored(con)} == {DAYS[0]}
    con.close()


def test_weekly_periods_on_a_timestamp_column_and_no_segments(tmp_path):
    db = tmp_path / "w.duckdb"
    con = connect(db)
    con.execute(
        "CREATE TABLE clicks AS SELECT TIMESTAMP '2026-11-02 10:00:00' + INTERVAL (i) DAY AS ts, "
        "i % 3 AS user_id, i AS item_id, 1.0 / (i + 1) AS score, (i % 2) AS relevance FROM range(14) t(i)"
    ).fetchall()
    config = config_from_dict(
        {
            "name": "weekly",
            "warehouse": str(db),
            "recommendations": "clicks",
            "time_column": "ts",
            "period": "1 week",
            "metrics": ["precision@3", "r_precision"],
        }  # fmt: skip
    )
    outcomes = run_report(con, config, periods_between("week", date(2026, 11, 2), date(2026, 11, 15)))
    assert [(o.period.label, o.rows) for o in outcomes] == [("2026-11-02", 2), ("2026-11-09", 2)]
    rows = results_table.read(con, "sqlmetrics_results", "weekly").to_pylist()
    assert {(r["metric"], r["k"]) for r in rows} == {("precision", 3), ("r_precision", None)}
    assert all(r["segment"] == [] for r in rows)
    first_week = con.sql("SELECT * FROM clicks WHERE ts < TIMESTAMP '2026-11-09'")
    expected = sqlmetrics.evaluate(con, first_week, ["precision@3"]).to_pylist()[0]["precision@3"]
    assert [
        r["value"] for r in rows if r["metric"] == "precision" and r["period_start"] == date(2026, 11, 2)
    ] == [expected]
    con.close()


def test_parquet_sources_are_read_in_place(warehouse, tmp_path):
    con = duckdb.connect(str(warehouse))
    for table in ("recommendations", "events"):
        (tmp_path / table).mkdir()
        con.execute(f"COPY {table} TO '{tmp_path / table / 'part.parquet'}' (FORMAT parquet)").fetchall()
    con.close()
    results = tmp_path / "results.duckdb"
    config = make_config(
        results,
        recommendations=str(tmp_path / "recommendations" / "*.parquet"),
        truth=str(tmp_path / "events" / "*.parquet"),
    )
    con = connect(results)
    assert [o.rows for o in run_report(con, config, [day(DAYS[0])])] == [10]
    from_parquet = stored(con)
    con.close()
    con = connect(warehouse)
    run_report(con, make_config(warehouse), [day(DAYS[0])])
    assert [r[3:8] for r in stored(con)] == [r[3:8] for r in from_parquet]
    con.close()


def test_the_time_column_must_exist_and_be_a_date_or_timestamp(warehouse):
    con = connect(warehouse)
    with pytest.raises(sqlmetrics.MissingColumnError, match="no time column 'ts'"):
        run_report(con, make_config(warehouse, time_column="ts"), [day(DAYS[0])])
    with pytest.raises(sqlmetrics.ColumnTypeError, match="must be a DATE or a TIMESTAMP"):
        run_report(
            con,
            make_config(warehouse, time_column="model", truth=None, columns={}, grades={}),
            [day(DAYS[0])],
        )
    con.close()


def test_a_foreign_table_under_the_results_name_is_refused(warehouse):
    con = connect(warehouse)
    con.execute("CREATE TABLE sqlmetrics_results (x INTEGER)").fetchall()
    with pytest.raises(ResultsTableError, match="not a sqlmetrics results table"):
        run_report(con, make_config(warehouse), [day(DAYS[0])])
    con.close()


def test_identifiers_are_quoted_everywhere(warehouse):
    con = connect(warehouse)
    con.execute('ALTER TABLE recommendations RENAME COLUMN model TO "arm; DROP TABLE events"').fetchall()
    config = make_config(warehouse, by=["arm; DROP TABLE events"], results_table='odd "results"')
    assert [o.rows for o in run_report(con, config, [day(DAYS[0])])] == [10]
    assert con.execute('SELECT count(*) FROM "odd ""results"""').fetchall() == [(10,)]
    assert con.execute("SELECT count(*) FROM events").fetchall()[0][0] > 0
    con.close()


# --- progress ---------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_a_bar_on_a_terminal_and_one_line_per_period_otherwise(warehouse):
    config = make_config(warehouse)
    periods = periods_between("day", DAYS[0], DAYS[-1])
    log = io.StringIO()
    con = connect(warehouse)
    run_report(con, config, periods, progress=Progress(3, "daily_ab", stream=log))
    assert log.getvalue().splitlines() == [
        line for line in log.getvalue().splitlines() if line.startswith("daily_ab [")
    ]
    assert [line.split(":")[0] for line in log.getvalue().splitlines()] == [
        "daily_ab [1/3] 2026-11-01",
        "daily_ab [2/3] 2026-11-02",
        "daily_ab [3/3] 2026-11-03",
    ]
    terminal = _Terminal()
    run_report(con, config, periods, progress=Progress(3, "daily_ab", stream=terminal))
    text = terminal.getvalue()
    assert "\r" in text and "[" + "#" * 24 + "] 3/3" in text and text.endswith("\n")
    assert "skipped" in text
    con.close()


def test_a_config_is_a_frozen_value():
    config = make_config(Path("w.duckdb"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.name = "x"  # type: ignore[misc]


def test_a_transaction_left_open_by_the_caller_is_reported(warehouse):
    con = connect(warehouse)
    con.execute("BEGIN TRANSACTION").fetchall()
    with pytest.raises(ResultsTableError, match="inside a transaction already"):
        run_report(con, make_config(warehouse), [day(DAYS[0])])
    con.execute("ROLLBACK").fetchall()
    con.close()
