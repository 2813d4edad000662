"""The command line: evaluate, sql, report; formats; exit codes and one-line errors."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics import cli
from sqlmetrics.cli import report as report_cli
from sqlmetrics.reports.formats import text_table

ROOT = Path(__file__).resolve().parents[1]
GRADES = {"purchase": 3, "add_to_cart": 2, "view": 1}
RELEVANCE = "purchase=3,add_to_cart=2,view=1"


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """One day of the example warehouse as Parquet files, and the warehouse itself."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mw", ROOT / "warehouse_examples" / "make_warehouse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    folder = tmp_path_factory.mktemp("logs")
    module.build(str(folder / "warehouse.duckdb"), users=200, days=2)
    con = duckdb.connect(str(folder / "warehouse.duckdb"))
    for table in ("recommendations", "events"):
        target = folder / f"{table}.parquet"
        con.execute(f"COPY (SELECT * FROM {table} WHERE day = DATE '2026-11-01') TO '{target}'").fetchall()
    con.close()
    return folder


def run(args, capsys):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def expected_table(logs: Path, metrics, **options) -> pa.Table:
    con = duckdb.connect()
    return sqlmetrics.evaluate(
        con, str(logs / "recommendations.parquet"), metrics, truth=str(logs / "events.parquet"), **options
    )


# --- evaluate ---------------------------------------------------------------------------------

EVAL = ["--by", "model", "--action", "event_type", "--relevance", RELEVANCE]


def test_evaluate_prints_a_readable_table(logs, capsys):
    code, out, err = run(
        ["evaluate", logs / "recommendations.parquet", "--truth", logs / "events.parquet",
         "--metrics", "ndcg@10,map@10", *EVAL], capsys,
    )  # fmt: skip
    assert (code, err) == (0, "")
    expected = expected_table(logs, ["ndcg@10", "map@10"], by="model", action="event_type", relevance=GRADES)
    assert out == text_table(expected) + "\n"
    assert out.splitlines()[0].split() == ["model", "users", "ndcg@10", "map@10"]


def test_evaluate_csv_json_and_parquet_keep_every_digit(logs, capsys, tmp_path):
    metrics = ["ndcg@10", "recall@20", "mrr@10"]
    expected = expected_table(logs, metrics, by="model", action="event_type", relevance=GRADES).to_pylist()
    base = [
        "evaluate",
        logs / "recommendations.parquet",
        "--truth",
        logs / "events.parquet",
        "-m",
        ",".join(metrics),
        *EVAL,
    ]

    code, out, _ = run([*base, "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [float(r["ndcg@10"]) for r in rows] == [r["ndcg@10"] for r in expected]

    code, out, _ = run([*base, "--format", "json"], capsys)
    assert code == 0 and json.loads(out) == expected

    code, out, _ = run([*base, "--output", tmp_path / "out.parquet"], capsys)  # the suffix decides
    assert code == 0 and out == "" and pq.read_table(tmp_path / "out.parquet").to_pylist() == expected

    code, _, err = run([*base, "--format", "parquet"], capsys)
    assert code == 2 and "--output" in err


def test_evaluate_per_user_on_a_database_table(logs, capsys):
    code, out, err = run(
        ["evaluate", "recommendations", "--db", logs / "warehouse.duckdb", "--truth", "events",
         "-m", "ndcg@10", "--per-user", "--format", "json", "--user", "user_id,day", "--duplicates", "all",
         "--action", "event_type", "--relevance", RELEVANCE, "--by", "day,model"], capsys,
    )  # fmt: skip
    # the events have a day: each (user, day) list is judged against that day's events, and
    # the day is shown once, as the by column
    assert code == 0, err
    rows = json.loads(out)
    assert rows and list(rows[0]) == ["day", "model", "user_id", "ndcg@10"]


def test_evaluate_trec_files_like_the_library(tmp_path, capsys):
    (tmp_path / "run.test").write_text(
        "301 Q0 d1 1 2.5 myrun\n301 Q0 d2 2 2.0 myrun\n301 Q0 d3 3 1.0 myrun\n302 Q0 d1 1 0.5 myrun\n"
    )
    (tmp_path / "qrels.test").write_text("301 0 d2 1\n301 0 d9 2\n302 0 d1 1\n")
    metrics = ["ndcg@10", "map@1000", "r_precision"]
    code, out, err = run(
        [
            "evaluate",
            tmp_path / "run.test",
            "--truth",
            tmp_path / "qrels.test",
            "-m",
            ",".join(metrics),
            "--format",
            "json",
        ],
        capsys,
    )
    expected = sqlmetrics.evaluate(
        duckdb.connect(),
        sqlmetrics.read_run(tmp_path / "run.test"),
        metrics,
        truth=sqlmetrics.read_qrels(tmp_path / "qrels.test"),
    )
    assert (code, err) == (0, "") and json.loads(out) == expected.to_pylist()

    (tmp_path / "notes.test").write_text("this is not a run file\n")
    code, _, err = run(["evaluate", tmp_path / "notes.test", "-m", "ndcg@10"], capsys)
    assert code == 2 and "cannot tell what" in err


def test_sql_prints_the_statement_evaluate_runs(logs, capsys):
    code, out, err = run(
        [
            "sql",
            logs / "recommendations.parquet",
            "--truth",
            logs / "events.parquet",
            "-m",
            "ndcg@10,map@10",
            *EVAL,
        ],
        capsys,
    )
    assert code == 0 and err == ""
    ran = duckdb.connect().sql(out).to_arrow_table()
    expected = expected_table(logs, ["ndcg@10", "map@10"], by="model", action="event_type", relevance=GRADES)
    assert ran.to_pylist() == expected.to_pylist()


def test_evaluate_in_partitions_with_a_memory_limit(logs, capsys):
    code, out, err = run(
        ["evaluate", logs / "recommendations.parquet", "--truth", logs / "events.parquet",
         "-m", "ndcg@10,map@10", "--format", "json", "--partitions", "3", "--memory-limit", "512MB",
         *EVAL], capsys,
    )  # fmt: skip
    assert code == 0
    expected = expected_table(logs, ["ndcg@10", "map@10"], by="model", action="event_type", relevance=GRADES)
    assert json.loads(out) == expected.to_pylist()
    assert [line.split("]")[0] for line in err.splitlines()] == [
        f"sqlmetrics partitions [{i}/3" for i in (1, 2, 3)
    ]


# --- usage and errors -------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["evaluate"], ["sql"], ["report"]])
def test_help_is_complete_with_examples(command, capsys):
    code, out, _ = run([*command, "--help"], capsys)
    assert code == 0 and "examples:" in out
    if command in (["evaluate"], ["sql"]):
        for option in ("--metrics", "--truth", "--by", "--db", "--per-user", "--user", "--item", "--score",
                       "--rank", "--relevance", "--action", "--ties", "--threshold", "--gain", "--empty",
                       "--missing", "--ap-denominator", "--duplicates"):  # fmt: skip
            assert option in out, option
    if command == ["evaluate"]:
        assert "--format" in out and "--output" in out
        assert "--partitions" in out and "--memory-limit" in out
    if command == ["report"]:
        for option in ("--date", "--from", "--to", "--force", "--html", "--wait", "--db", "[grades]"):
            assert option in out, option


@pytest.mark.parametrize(
    "args, reason",
    [
        (["evaluate", "recs.parquet"], "--metrics LIST is required"),
        (["evaluate", "no_such_table", "-m", "ndcg@10"], "no table or view named 'no_such_table'"),
        (["evaluate", "x.parquet", "-m", "ndcg@10"], "no file matches 'x.parquet'"),
        (["evaluate", "{recs}", "-m", "ndgc@10"], "did you mean 'ndcg'"),
        (["evaluate", "{recs}", "-m", "ndcg@10", "--ties", "random"], "invalid choice: 'random'"),
        (["evaluate", "{recs}", "-m", "ndcg@10", "--relevance", "purchase=lots"], "is not action=grade"),
        (["evaluate", "{recs}", "-m", "ndcg@10", "--db", "absent.duckdb"], "no database file"),
        (
            ["evaluate", "{recs}", "-m", "ndcg@10", "--truth", "{recs}", "--partitions", "0"],
            "partitions must be a whole number",
        ),
        (["evaluate", "{recs}", "-m", "ndcg@10", "--memory-limit", "lots"], "is not a size like"),
        (
            ["evaluate", "{recs}", "-m", "ndcg@10", "--truth", "{recs}", "--user", "who"],
            "no user column 'who'",
        ),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["report", "absent.toml"], "no report configuration file 'absent.toml'"),
        (["report", "{config}", "--date", "2026-13-01"], "--date '2026-13-01' is not a date"),
        (
            ["report", "{config}", "--date", "2026-11-01", "--from", "2026-11-01"],
            "either --date or --from/--to",
        ),
        (["report", "{config}", "--from", "2026-11-01"], "--from and --to go together"),
        (["report", "{config}", "--from", "2026-11-03", "--to", "2026-11-01"], "is after --to"),
        (["report", "{config}", "--date", "2026-11-01", "--db", "absent.duckdb"], "no warehouse file"),
    ],
)
def test_bad_usage_and_input_exit_2_with_one_line(args, reason, logs, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    recs = str(logs / "recommendations.parquet")
    config = str(ROOT / "warehouse_examples" / "daily_report.toml")
    code, out, err = run([a.format(recs=recs, config=config) for a in args], capsys)
    assert code == 2
    assert reason in err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and out == ""


def test_an_unexpected_failure_exits_1_with_its_traceback(logs, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(sqlmetrics.api.evaluation, "evaluate", broken)
    code, _, err = run(["evaluate", logs / "recommendations.parquet", "-m", "ndcg@10"], capsys)
    assert code == 1 and "Traceback" in err and "RuntimeError: a bug" in err


def test_the_console_script_and_python_m(logs):
    script = shutil.which("sqlmetrics") or str(Path(sys.executable).parent / "sqlmetrics")
    for command in ([script], [sys.executable, "-m", "sqlmetrics"]):
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == f"sqlmetrics {sqlmetrics.__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "sqlmetrics", "evaluate", str(logs / "recommendations.parquet"),
         "-m", "ndcg@1O"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "cutoff" in done.stderr


# --- report -----------------------------------------------------------------------------------


def test_report_runs_a_range_prints_the_results_and_resumes(logs, capsys, tmp_path):
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(logs / "warehouse.duckdb", warehouse)
    config = ROOT / "warehouse_examples" / "daily_report.toml"
    args = ["report", config, "--db", warehouse, "--from", "2026-11-01", "--to", "2026-11-02"]

    code, out, err = run([*args, "--html", tmp_path / "report.html"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "period",
        "model",
        "users",
        "ndcg@10",
        "map@10",
        "recall@20",
        "mrr@10",
        "hit_rate@10",
    ]
    assert [line.split()[:2] for line in lines[2:6]] == [
        ["2026-11-01", "A"], ["2026-11-01", "B"], ["2026-11-02", "A"], ["2026-11-02", "B"]
    ]  # fmt: skip
    # then the example's [compare] section: B against A, each day, each metric
    assert lines[6:8] == ["", "against A (t test):"]
    assert [line.split()[:3] for line in lines[10:-1]] == [
        [day, "B", m] for day in ("2026-11-01", "2026-11-02")
        for m in ("ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10")
    ]  # fmt: skip
    assert "daily_ab [1/2] 2026-11-01: 10 rows" in err and "daily_ab [2/2] 2026-11-02: 10 rows" in err
    assert "2 written (20 rows and 10 comparisons)" in err
    assert (tmp_path / "report.html").stat().st_size > 10_000

    code, out2, err = run(args, capsys)
    assert code == 0 and out2 == out and "2 skipped" in err
    code, _, err = run([*args, "--force", "--quiet"], capsys)
    assert code == 0 and err == ""

    con = duckdb.connect(str(warehouse), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT computed_at) FROM sqlmetrics_results").fetchall() == [
        (20, 2)
    ]
    con.close()


def test_report_on_a_busy_warehouse_exits_2_and_says_so(logs, capsys, tmp_path):
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(logs / "warehouse.duckdb", warehouse)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, duckdb, time; c = duckdb.connect(sys.argv[1]); "
         "print('ok', flush=True); time.sleep(30)", str(warehouse)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "ok"
        code, _, err = run(
            [
                "report",
                ROOT / "warehouse_examples" / "daily_report.toml",
                "--db",
                warehouse,
                "--date",
                "2026-11-01",
            ],
            capsys,
        )
        assert code == 2 and f"in use by process {holder.pid}" in err and len(err.splitlines()) == 1
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_report_without_a_date_runs_yesterday(logs, capsys, tmp_path, monkeypatch):
    import datetime as dt

    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(logs / "warehouse.duckdb", warehouse)

    zones = []

    def today(zone):
        zones.append(zone)
        return dt.date(2026, 11, 3)

    monkeypatch.setattr(report_cli, "_today", today)
    code, out, err = run(
        ["report", ROOT / "warehouse_examples" / "daily_report.toml", "--db", warehouse], capsys
    )
    assert code == 0, err
    assert "daily_ab [1/1] 2026-11-02" in err and out.splitlines()[2].startswith("2026-11-02")
    assert os.path.exists(warehouse)
    assert zones == ["UTC"]  # today in the report's time zone, not the machine's
