"""The command line, hardened (issue 17): Ctrl-C (item 8), unreachable sources and any DuckDB
error (item 9), inputs that raised tracebacks (item 10), absurd values (item 13) and the
out-of-memory advice (item 14): one line on stderr with exit status 2 (130 for Ctrl-C)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics import cli
from sqlmetrics.statement.partitions import suggest_partitions

ROOT = Path(__file__).resolve().parents[1]


def run(args, capsys):
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def small(tmp_path) -> Path:
    """A tiny warehouse: recs (with a day column) and truth, and a daily report config."""
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE recs AS SELECT DATE '2026-11-01' + CAST(i % 3 AS INTEGER) AS day, i % 5 AS user_id, "
        "i AS item_id, 1.0 / (i + 1) AS score, i % 2 AS relevance FROM range(30) t(i)"
    ).fetchall()
    con.close()
    (tmp_path / "r.toml").write_text(
        f'name = "r"\nwarehouse = "{db}"\nrecommendations = "recs"\ntime_column = "day"\n'
        'metrics = ["ndcg@10"]\n',
        encoding="utf-8",
    )
    return tmp_path


# --- item 8: Ctrl-C -------------------------------------------------------------------------------

_SLOW = """
import sys
import duckdb
from sqlmetrics import cli
db = sys.argv[1]
con = duckdb.connect(db)
# a view of 3 billion rows: minutes of work, so the statement is surely running at the signal
con.execute("CREATE OR REPLACE VIEW recs AS SELECT i % 1000003 AS user_id, i AS item_id, "
            "hash(i) % 1000 AS score, 1 AS relevance FROM range(3000000000) t(i)")
con.close()
print("ready", flush=True)
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("command", ["evaluate", "report"])
def test_ctrl_c_while_a_statement_runs_is_one_line_and_exit_130(tmp_path, command):
    db = tmp_path / "slow.duckdb"
    if command == "evaluate":
        args = ["evaluate", "recs", "--db", str(db), "-m", "ndcg@10"]
    else:
        config = tmp_path / "slow.toml"
        config.write_text(
            f'name = "slow"\nwarehouse = "{db}"\nrecommendations = "recs_days"\ntime_column = "day"\n'
            'metrics = ["ndcg@10"]\n',
            encoding="utf-8",
        )
        con = duckdb.connect(str(db))
        con.execute("CREATE TABLE placeholder AS SELECT 1").fetchall()
        con.close()
        args = ["report", str(config), "--date", "2026-11-03", "-q"]
    script = _SLOW
    if command == "report":
        script = script.replace(
            'con.close()\nprint("ready"',
            "con.execute(\"CREATE OR REPLACE VIEW recs_days AS "
            "SELECT DATE '2026-11-03' AS day, * FROM recs\")\n"
            'con.close()\nprint("ready"',
        )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(db), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(1.5)  # into the statement (the import and the checks take well under that)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 130, err
    line = one_line(err)
    assert line.startswith("sqlmetrics: interrupted")
    if command == "report":
        assert "finished periods are kept" in line


def test_the_interrupt_handler_is_restored_after_main(small, capsys):
    before = signal.getsignal(signal.SIGINT)
    assert run(["evaluate", "recs", "--db", small / "w.duckdb", "-m", "ndcg@10"], capsys)[0] == 0
    assert signal.getsignal(signal.SIGINT) is before


# --- item 9: unreachable sources, and any DuckDB error ------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the block ends


@pytest.fixture
def offline(monkeypatch):
    """Connections that never download an extension (there is no network here; and never an
    address other than 127.0.0.1), and whose S3 endpoint, where httpfs is present, is local."""
    port = _closed_port()
    real = duckdb.connect

    def connect(*args, **kwargs):
        con = real(*args, **kwargs)
        con.execute("SET autoinstall_known_extensions = false").fetchall()
        try:
            con.execute(f"SET s3_endpoint = '127.0.0.1:{port}'").fetchall()
        except duckdb.Error:  # httpfs is not installed: no S3 at all
            pass
        return con

    monkeypatch.setattr(duckdb, "connect", connect)
    return port


@pytest.mark.parametrize("scheme", ["https", "s3"])
def test_an_unreachable_source_is_one_line_and_exit_2(offline, capsys, scheme):
    url = f"https://127.0.0.1:{offline}/recs.parquet" if scheme == "https" else "s3://bucket/recs.parquet"
    code, _, err = run(["evaluate", url, "--truth", url, "-m", "ndcg@10"], capsys)
    assert code == 2
    # DuckDB's error for a source it cannot open (an IOException, or from DuckDB 2.0.1 its base
    # Error when httpfs cannot be loaded) names the source; another error, the command
    line = one_line(err)
    assert line.startswith((f"sqlmetrics: recs: cannot read {url!r}: ", f"sqlmetrics evaluate {url}: "))


def test_any_duckdb_error_is_one_line_naming_what_failed(small, capsys, monkeypatch):
    def fail(*args, **kwargs):
        raise duckdb.InternalException("INTERNAL Error: something broke\nLINE 1: SELECT ...\n       ^")

    monkeypatch.setattr(sqlmetrics.api.evaluation, "evaluate", fail)
    code, _, err = run(["evaluate", "recs", "--db", small / "w.duckdb", "-m", "ndcg@10"], capsys)
    assert code == 2
    assert one_line(err) == (
        "sqlmetrics evaluate recs: DuckDB failed (InternalException): INTERNAL Error: something broke"
    )


# --- item 10: inputs that raised tracebacks ----------------------------------------------------------


def test_a_memory_limit_too_small_for_anything(small, capsys):
    code, _, err = run(
        ["evaluate", "recs", "--db", small / "w.duckdb", "-m", "ndcg@10", "--memory-limit", "1KB"], capsys
    )
    assert code == 2
    assert "out of memory" in one_line(err).lower()


@pytest.mark.parametrize(
    "when",
    [["--date", "9999-12-31"], ["--from", "9999-12-01", "--to", "9999-12-31"]],
    ids=["date", "to"],
)
def test_a_period_that_would_end_after_9999_12_31(small, capsys, when):
    code, _, err = run(["report", small / "r.toml", *when], capsys)
    assert code == 2
    assert "ends after 9999-12-31" in one_line(err)


def test_the_last_periods_of_the_calendar_run(small, capsys):
    # 9999-12-30's period ends on 9999-12-31, the last date: it runs (no data there: status 3)
    args = ["report", small / "r.toml", "--from", "9999-12-29", "--to", "9999-12-30"]
    code, _, err = run(args, capsys)
    assert code == 3, err
    assert "2 without data" in err and "no data for 9999-12-29 (no recommendations" in err
    code, _, err = run([*args, "--allow-empty"], capsys)
    assert code == 0 and "2 without data" in err


def test_a_nul_in_a_toml_grades_key(small, capsys):
    text = (small / "r.toml").read_text(encoding="utf-8")
    (small / "nul.toml").write_text(
        text + '[columns]\naction = "item_id"\n[grades]\n"a\\u0000b" = 1\n', encoding="utf-8"
    )
    code, _, err = run(["report", small / "nul.toml", "--date", "2026-11-01"], capsys)
    assert code == 2
    assert "NUL" in one_line(err)


def test_a_trec_rank_that_is_not_an_ascii_integer_is_ignored_as_trec_eval_does(tmp_path, capsys):
    (tmp_path / "run.txt").write_text("1 Q0 d1 ² 1.0 r\n1 Q0 d2 ¹ 2.0 r\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text("1 0 d1 1\n", encoding="utf-8")
    code, out, err = run(
        ["evaluate", tmp_path / "run.txt", "--truth", tmp_path / "qrels.txt", "-m", "mrr@10",
         "--format", "csv"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines()[1] == "1,0.5"  # by score: d2 first, d1 (relevant) second


def test_a_qrels_relevance_beyond_64_bits(tmp_path, capsys):
    (tmp_path / "qrels.txt").write_text("1 0 d1 9223372036854775808\n", encoding="utf-8")
    code, _, err = run(["evaluate", tmp_path / "qrels.txt", "--truth", tmp_path / "qrels.txt",
                        "-m", "ndcg@10"], capsys)  # fmt: skip
    assert code == 2
    assert "qrels.txt:1: relevance must be an integer" in one_line(err)


# --- item 13: absurd values -------------------------------------------------------------------------


def test_more_partitions_than_users_is_refused_with_a_reason(small, capsys):
    base = ["evaluate", "recs", "--db", small / "w.duckdb", "-m", "ndcg@10"]
    code, _, err = run([*base, "--partitions", str(10**20)], capsys)
    assert code == 2
    assert "--partitions 100000000000000000000 is more than the 5 users" in one_line(err)
    code, out, err = run([*base, "--partitions", "5", "--format", "csv"], capsys)
    assert code == 0, err
    one = sqlmetrics.evaluate(duckdb.connect(str(small / "w.duckdb"), read_only=True), "recs", ["ndcg@10"])
    assert out.splitlines()[1] == f"{one['users'][0].as_py()},{one['ndcg@10'][0].as_py()}"


def test_the_api_refuses_absurd_partitions():
    recs = pa.table({"user_id": [1, 2, 3], "item_id": [1, 1, 1], "score": [0.5, 0.5, 0.5]})
    truth = pa.table({"user_id": [1, 4], "item_id": [1, 1]})
    with pytest.raises(sqlmetrics.ConventionError, match="partitions=200 is more than the 4 users"):
        sqlmetrics.evaluate(duckdb.connect(), recs, ["ndcg@5"], truth=truth, partitions=200)
    with pytest.raises(sqlmetrics.ConventionError, match="partitions=5000 is more than 1,000"):
        sqlmetrics.evaluate(duckdb.connect(), recs, ["ndcg@5"], truth=truth, partitions=5000)


def test_a_range_of_more_than_max_periods_is_refused_unless_asked(small, capsys):
    code, _, err = run(["report", small / "r.toml", "--from", "1000-01-01", "--to", "9000-12-31"], capsys)
    assert code == 2
    assert "2,922,305 periods" in one_line(err) and "--max-periods" in err
    when = ["--from", "2026-11-01", "--to", "2026-11-05", "-q"]
    code, _, err = run(["report", small / "r.toml", *when, "--max-periods", "4"], capsys)
    assert code == 2 and "5 periods of 1 day, more than 4" in one_line(err)
    assert run(["report", small / "r.toml", *when, "--max-periods", "5", "--allow-empty"], capsys)[0] == 0


# --- exit statuses are documented ----------------------------------------------------------------------


def test_the_exit_statuses_are_in_the_help(capsys):
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    for status in ("0 ", "1 ", "2 ", "3 ", "130 "):
        assert f"\n  {status}" in text, status


# --- item 14: the out-of-memory advice -------------------------------------------------------------


def test_the_suggested_partitions_grow_with_users_and_lists_and_shrink_with_memory():
    base = suggest_partitions(100_000, 50, 500 * 10**6, whole_lists=False)
    assert base < suggest_partitions(200_000, 50, 500 * 10**6, whole_lists=False)
    assert base < suggest_partitions(100_000, 100, 500 * 10**6, whole_lists=False)
    assert base < suggest_partitions(100_000, 50, 500 * 10**6, whole_lists=True)
    assert base > suggest_partitions(100_000, 50, 1000 * 10**6, whole_lists=False)
    # the measured cases (benchmarks/README.md) get at least the partitions they needed there
    assert suggest_partitions(300_000, 10, 200 * 10**6, whole_lists=False) >= 2
    assert suggest_partitions(300_000, 50, 500 * 10**6, whole_lists=False) >= 3
    assert suggest_partitions(300_000, 100, 1000 * 10**6, whole_lists=True) >= 8
    assert suggest_partitions(300_000, 100, 500 * 10**6, whole_lists=True) > 12
    assert suggest_partitions(10, 100, 50 * 10**6, whole_lists=True) is None  # raise the limit


def test_following_the_out_of_memory_advice_succeeds(tmp_path, capsys, monkeypatch):
    # 10,000 users x 100 rows with ndcg@1000 (whole lists) under memory_limit 200MB, 2 threads
    # (the thread count changes the memory a statement takes; the advice was measured with 2)
    real = duckdb.connect

    def two_threads(*args, **kwargs):
        con = real(*args, **kwargs)
        con.execute("SET threads = 2").fetchall()
        return con

    monkeypatch.setattr(duckdb, "connect", two_threads)
    recs, truth = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    con = real()
    con.execute(
        f"COPY (SELECT i // 100 AS user_id, i % 1000 * 7 + i // 100 AS item_id, "
        f"hash(i) % 1000 / 1000 AS score FROM range(1000000) t(i)) TO '{recs}'"
    ).fetchall()
    con.execute(
        f"COPY (SELECT i AS user_id, (i * 7) % 1000 * 7 + i AS item_id, 1 AS relevance "
        f"FROM range(10000) t(i)) TO '{truth}'"
    ).fetchall()
    args = ["evaluate", recs, "--truth", truth, "-m", "ndcg@1000", "--memory-limit", "200MB"]
    args += ["--format", "csv"]
    code, _, err = run(args, capsys)
    assert code == 2
    line = one_line(err)
    assert "ran out of memory" in line and "10,000 users with lists of 100 items" in line
    suggested = int(line.split("--partitions ")[1].split()[0])
    assert 2 <= suggested <= 10
    code, out, err = run([*args, "--partitions", suggested], capsys)
    assert code == 0, err
    expected = sqlmetrics.evaluate(con, str(recs), ["ndcg@1000"], truth=str(truth))
    assert out.splitlines()[1] == f"10000,{expected['ndcg@1000'][0].as_py()}"


@pytest.mark.parametrize("db", [False, True])
def test_the_command_line_prints_no_progress_bar_into_its_output(tmp_path, db):
    """DuckDB's Python client prints a progress bar on stdout for a statement of over 2 s (into
    `--format trec > out`): the command's connections have it off."""
    import argparse

    from sqlmetrics.cli.options import connection

    path = tmp_path / "w.duckdb"
    duckdb.connect(str(path)).close()
    args = argparse.Namespace(command="evaluate", wait=0, db=str(path) if db else None)
    con = connection(args)
    assert con.sql("SELECT current_setting('enable_progress_bar')").fetchall() == [(False,)]
