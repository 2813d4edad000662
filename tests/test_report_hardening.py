"""Reports, hardened (issue 17): periods in an explicit time zone whatever the process's TZ
(item 2), and one writer at a time inside one process as across processes (item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import date
from pathlib import Path

import duckdb
import pytest

from sqlmetrics import cli
from sqlmetrics.reports import config as config_module
from sqlmetrics.reports import (
    config_from_dict,
    connect,
    period_of,
    periods_between,
    results_table,
    run_report,
)

ROOT = Path(__file__).resolve().parents[1]


def tz_config(db: Path, **changes):
    data = {
        "name": "tz",
        "warehouse": str(db),
        "recommendations": "recs",
        "time_column": "ts",
        "metrics": ["precision@1"],
        **changes,
    }
    return config_from_dict(data)


def make_instants(db: Path, instants: dict[int, str], relevance: dict[int, int] | None = None) -> None:
    """One recommendation per user at a TIMESTAMPTZ instant (written in UTC)."""
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE recs (ts TIMESTAMPTZ, user_id INTEGER, item_id VARCHAR, score DOUBLE, "
        "relevance INTEGER)"
    ).fetchall()
    for user, instant in instants.items():
        rel = 1 if relevance is None else relevance[user]
        con.execute(
            "INSERT INTO recs VALUES (CAST(? AS TIMESTAMPTZ), ?, 'a', 1.0, ?)", [instant, user, rel]
        ).fetchall()
    con.close()


# --- item 2: the time zone ----------------------------------------------------------------------

# User 1's only item is relevant, user 2's is not. 2026-11-03 is UTC-8 in Los Angeles (PST since
# Nov 1) and UTC+9 in Tokyo, so the day 2026-11-03 holds: in UTC both users (precision@1 0.5);
# in Los Angeles 23:30Z only (Nov 3 15:30; 00:30Z is Nov 2 16:30): 0.0; in Tokyo 00:30Z only
# (Nov 3 09:30; 23:30Z is Nov 4 08:30): 1.0.
NOV_3 = {1: "2026-11-03 00:30:00+00", 2: "2026-11-03 23:30:00+00"}
NOV_3_RELEVANCE = {1: 1, 2: 0}
EXPECTED = {"UTC": 0.5, "America/Los_Angeles": 0.0, "Asia/Tokyo": 1.0}

_CHILD = """
import json, sys, datetime
import duckdb
from sqlmetrics.reports import config_from_dict, period_of, results_table, run_report
db = sys.argv[1]
con = duckdb.connect(db)
con.execute("SET TimeZone = 'Pacific/Chatham'")  # the caller's own setting: kept as it is
values = {}
for zone in [None, "UTC", "America/Los_Angeles", "Asia/Tokyo"]:
    data = {"name": str(zone), "warehouse": db, "recommendations": "recs", "time_column": "ts",
            "metrics": ["precision@1"]}
    if zone:
        data["timezone"] = zone
    run_report(con, config_from_dict(data), [period_of("day", datetime.date(2026, 11, 3))])
    rows = results_table.read(con, "sqlmetrics_results", str(zone)).to_pylist()
    values[str(zone)] = [r["value"] for r in rows]
values["setting"] = con.execute("SELECT current_setting('TimeZone')").fetchall()[0][0]
print(json.dumps(values))
"""


@pytest.mark.parametrize("process_tz", ["UTC", "America/Los_Angeles", "Asia/Tokyo"])
def test_the_process_time_zone_never_changes_a_number(tmp_path, process_tz):
    db = tmp_path / "w.duckdb"
    make_instants(db, NOV_3, NOV_3_RELEVANCE)
    env = {**os.environ, "TZ": process_tz, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(db)], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    values = json.loads(out.stdout)
    assert values["None"] == [EXPECTED["UTC"]]  # the default zone is UTC
    for zone, expected in EXPECTED.items():
        assert values[zone] == [expected], zone
    assert values["setting"] == "Pacific/Chatham"


def test_the_command_line_takes_the_zone_and_a_run_in_another_zone_is_not_skipped(tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    make_instants(db, NOV_3, NOV_3_RELEVANCE)
    toml = tmp_path / "r.toml"
    toml.write_text(
        f'name = "tz"\nwarehouse = "{db}"\nrecommendations = "recs"\ntime_column = "ts"\n'
        'metrics = ["precision@1"]\n',
        encoding="utf-8",
    )

    def run(*extra):
        assert cli.main(["report", str(toml), "--date", "2026-11-03", "-q", *extra]) == 0
        con = duckdb.connect(str(db), read_only=True)
        try:
            return [r["value"] for r in results_table.read(con, "sqlmetrics_results", "tz").to_pylist()]
        finally:
            con.close()

    assert run() == [0.5]
    assert run("--timezone", "Asia/Tokyo") == [1.0]  # a new hash: redone, not skipped as done
    assert run("--timezone", "America/Los_Angeles") == [0.0]
    assert run("--timezone", "UTC") == [0.5]
    assert cli.main(["report", str(toml), "--date", "2026-11-03", "--timezone", "Mars/Olympus"]) == 2
    assert "Mars/Olympus" in capsys.readouterr().err


# New York: EST (UTC-5) until 2026-03-08 02:00 local, then EDT (UTC-4) until 2026-11-01 02:00
# local, then EST. So 2026-03-08 has 23 hours ([05:00Z, 04:00Z next day)) and 2026-11-01 has 25
# ([04:00Z, 05:00Z next day)). Each user is one instant; the expected local day is by hand.
DST = {
    1: ("2026-03-08 04:59:59+00", date(2026, 3, 7)),  # 23:59:59 EST
    2: ("2026-03-08 05:00:00+00", date(2026, 3, 8)),  # 00:00 EST
    3: ("2026-03-08 07:00:00+00", date(2026, 3, 8)),  # 03:00 EDT (02:00 EST does not exist)
    4: ("2026-03-09 03:59:59+00", date(2026, 3, 8)),  # 23:59:59 EDT
    5: ("2026-03-09 04:00:00+00", date(2026, 3, 9)),  # 00:00 EDT
    6: ("2026-11-01 03:59:59+00", date(2026, 10, 31)),  # 23:59:59 EDT
    7: ("2026-11-01 04:00:00+00", date(2026, 11, 1)),  # 00:00 EDT
    8: ("2026-11-01 05:30:00+00", date(2026, 11, 1)),  # 01:30 EDT
    9: ("2026-11-01 06:30:00+00", date(2026, 11, 1)),  # 01:30 EST (the hour again)
    10: ("2026-11-02 04:59:59+00", date(2026, 11, 1)),  # 23:59:59 EST
    11: ("2026-11-02 05:00:00+00", date(2026, 11, 2)),  # 00:00 EST
}


@pytest.mark.parametrize("unit", ["day", "week", "month"])
def test_periods_across_dst_changes_are_the_local_days(tmp_path, unit):
    db = tmp_path / "w.duckdb"
    make_instants(db, {user: instant for user, (instant, _) in DST.items()})
    con = duckdb.connect(str(db))
    config = tz_config(db, timezone="America/New_York", period=f"1 {unit}")
    periods = [
        *periods_between(unit, date(2026, 3, 7), date(2026, 3, 9)),
        *periods_between(unit, date(2026, 10, 31), date(2026, 11, 2)),
    ]
    periods = sorted(set(periods))
    run_report(con, config, periods)
    rows = results_table.read(con, "sqlmetrics_results", "tz").to_pylist()
    users = {r["period_start"]: r["users"] for r in rows}
    expected: dict[date, int] = {}
    for _, local_day in DST.values():
        start = period_of(unit, local_day).start
        expected[start] = expected.get(start, 0) + 1
    assert users == expected
    con.close()


def test_a_timestamp_without_zone_or_a_date_is_a_calendar_value_whatever_the_zone(tmp_path):
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE recs AS SELECT * FROM (VALUES (TIMESTAMP '2026-11-03 00:30:00', 1, 'a', 1.0, 1), "
        "(TIMESTAMP '2026-11-03 23:30:00', 2, 'a', 1.0, 0), "
        "(TIMESTAMP '2026-11-04 00:00:00', 3, 'a', 1.0, 1)) "
        "t(ts, user_id, item_id, score, relevance)"
    ).fetchall()
    for zone in ("UTC", "Asia/Tokyo", "America/Los_Angeles"):
        config = tz_config(db, name=zone, timezone=zone)
        run_report(con, config, [period_of("day", date(2026, 11, 3))])
        rows = results_table.read(con, "sqlmetrics_results", zone).to_pylist()
        assert [(r["users"], r["value"]) for r in rows] == [(2, 0.5)], zone
    con.close()


def test_the_zone_is_in_the_config_hash_and_configs_without_one_keep_theirs(tmp_path):
    db = tmp_path / "w.duckdb"
    without = tz_config(db)
    # the hash this config had before the time zone existed (sqlmetrics at cc92cc1)
    assert without.hash == "b1249e0b1163408a50c813081151d7dedb457f2aedf570937047d1b7d480f07f"
    assert tz_config(db, timezone="UTC").hash == without.hash
    assert tz_config(db, timezone="Asia/Tokyo").hash != without.hash
    assert tz_config(db, timezone="Asia/Tokyo").hash != tz_config(db, timezone="Europe/Paris").hash


@pytest.mark.parametrize("zone", ["", "Mars/Olympus", "../etc/passwd", "localtime", "utc+1", 3])
def test_a_zone_that_is_not_a_zone_name_is_refused(tmp_path, zone):
    with pytest.raises(config_module.ReportConfigError, match="timezone|must be a non-empty string"):
        tz_config(tmp_path / "w.duckdb", timezone=zone)


# --- item 3: one writer inside one process --------------------------------------------------------


@pytest.mark.parametrize("table_exists", [True, False], ids=["results-table-exists", "first-run"])
def test_two_threads_writing_one_new_period_leave_no_duplicates(tmp_path, monkeypatch, table_exists):
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE recs AS SELECT DATE '2026-11-03' AS ts, i % 5 AS user_id, i AS item_id, "
        "1.0 / (i + 1) AS score, i % 2 AS relevance, 'm' || (i % 2) AS model FROM range(40) t(i)"
    ).fetchall()
    if table_exists:
        results_table.ensure(con, "sqlmetrics_results")
    con.close()
    config = tz_config(db, metrics=["precision@1", "ndcg@5", "map@5", "recall@5", "mrr@5"], by=["model"])
    period = period_of("day", date(2026, 11, 3))

    # Hold each writer between its DELETE and its INSERT until the other arrives (or 3 s pass,
    # when one writer at a time is kept): without the rule, both insert and both commit.
    meeting = threading.Barrier(2, timeout=3)
    delete = results_table._delete

    def delete_then_meet(*args):
        delete(*args)
        try:
            meeting.wait()
        except threading.BrokenBarrierError:
            pass

    monkeypatch.setattr(results_table, "_delete", delete_then_meet)
    errors = []

    def writer():
        con = connect(db, wait=5)
        try:
            run_report(con, config, [period], force=True)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            con.close()

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    con = duckdb.connect(str(db), read_only=True)
    keys = con.execute(
        "SELECT period_start, CAST(segment AS VARCHAR), metric, k, count(*) FROM sqlmetrics_results "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    con.close()
    assert len(keys) == 2 * 5  # two segments, five metrics
    assert all(row[-1] == 1 for row in keys), keys
