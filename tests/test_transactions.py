"""An input error inside the caller's open transaction leaves it usable: the work done before
the evaluation is still committed (issue 17, item 4). DuckDB aborts a transaction on any error
in a statement, so the statement's input checks hand their problem to Python instead of
raising, and the inputs are looked at without failing statements where that can be known
beforehand."""

import subprocess
import sys

import duckdb
import pandas as pd
import pyarrow as pa
import pytest

import sqlmetrics

GOOD_RECS = pa.table({"user_id": [1, 1, 2], "item_id": [10, 11, 10], "score": [0.9, 0.8, 0.5]})
TRUTH = pa.table({"user_id": [1, 2], "item_id": [11, 10], "relevance": [1, 1]})
NAN = float("nan")


def _recs(**columns):
    """GOOD_RECS with some columns replaced or added."""
    return pa.table({**{c: GOOD_RECS[c] for c in GOOD_RECS.column_names}, **columns})


# (what, arguments of evaluate besides con, the error expected)
BAD_INPUTS = [
    ("NULL user", dict(recs=_recs(user_id=pa.array([1, None, 2]))), sqlmetrics.InvalidDataError),
    ("NULL item", dict(recs=_recs(item_id=pa.array([10, None, 10]))), sqlmetrics.InvalidDataError),
    ("NULL score", dict(recs=_recs(score=pa.array([0.9, None, 0.5]))), sqlmetrics.InvalidDataError),
    ("NaN score", dict(recs=_recs(score=pa.array([0.9, NAN, 0.5]))), sqlmetrics.InvalidDataError),
    ("duplicate", dict(recs=_recs(item_id=pa.array([10, 10, 10]))), sqlmetrics.DuplicateRowError),
    ("tied ranks", dict(recs=_recs(rank=pa.array([1, 1, 1])), rank="rank"), sqlmetrics.InvalidDataError),
    (
        "NaN relevance",
        dict(truth=None, recs=_recs(relevance=pa.array([1.0, NAN, 0.0]))),
        sqlmetrics.InvalidDataError,
    ),
    (
        "truth duplicate",
        dict(truth=pa.table({"user_id": [1, 1], "item_id": [11, 11], "relevance": [1, 1]})),
        sqlmetrics.DuplicateRowError,
    ),
    (
        "partitions",
        dict(recs=_recs(score=pa.array([0.9, None, 0.5])), partitions=2),
        sqlmetrics.InvalidDataError,
    ),
    (
        "NaN feature",
        dict(metrics=["diversity@2"], truth=None,
             item_features=pa.table({"item_id": [10, 11], "features": [[1.0], [NAN]]})),
        sqlmetrics.InvalidDataError,
    ),
    (
        "history NULL user",
        dict(metrics=["novelty@2"], truth=None, history=pa.table({"user_id": [1, None], "item_id": [3, 4]})),
        sqlmetrics.InvalidDataError,
    ),
    # problems found before the statement runs
    ("unknown table", dict(recs="no_such_table"), sqlmetrics.UnknownTableError),
    ("missing file", dict(recs="/no/such/file.parquet"), sqlmetrics.UnknownTableError),
    ("corrupt file", dict(recs="CORRUPT"), sqlmetrics.UnknownTableError),
    ("missing column", dict(score="nope"), sqlmetrics.MissingColumnError),
    ("unknown metric", dict(metrics=["ndgc@3"]), sqlmetrics.UnknownMetricError),
    ("empty frame", dict(recs=pd.DataFrame()), sqlmetrics.MissingColumnError),
    ("text score", dict(recs=_recs(score=pa.array(["a", "b", "c"]))), sqlmetrics.ColumnTypeError),
]


@pytest.mark.parametrize("what, arguments, error", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_an_input_error_keeps_the_callers_transaction(tmp_path, what, arguments, error):
    con = duckdb.connect(str(tmp_path / "work.duckdb"))
    con.execute("CREATE TABLE work (x INTEGER)")
    arguments = {"recs": GOOD_RECS, "metrics": ["ndcg@2"], "truth": TRUTH, **arguments}
    if isinstance(arguments["recs"], str) and arguments["recs"] == "CORRUPT":
        (tmp_path / "corrupt.parquet").write_bytes(b"PAR1 no footer PAR1")
        arguments["recs"] = str(tmp_path / "corrupt.parquet")
    con.execute("BEGIN")
    con.execute("INSERT INTO work VALUES (1)")
    with pytest.raises(error) as raised:
        sqlmetrics.evaluate(con, arguments.pop("recs"), arguments.pop("metrics"), **arguments)
    assert "aborted" not in str(raised.value)
    con.execute("INSERT INTO work VALUES (2)")  # the transaction is still usable
    con.execute("COMMIT")
    assert con.execute("SELECT list(x ORDER BY x) FROM work").fetchall() == [([1, 2],)]
    # nothing of the evaluation is left behind (registered frames, the problem function, the
    # temporary table of the partitions' partial results)
    assert not con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE function_name LIKE '__sqlmetrics%'"
    ).fetchall()
    assert _temporary_tables(con) == []
    con.close()


def _temporary_tables(con):
    return con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()


def test_a_good_evaluation_inside_a_transaction_sees_its_uncommitted_rows(con):
    con.execute("CREATE TABLE recs (user_id INTEGER, item_id INTEGER, score DOUBLE)")
    con.execute("BEGIN")
    con.execute("INSERT INTO recs VALUES (1, 10, 0.9), (1, 11, 0.8), (2, 10, 0.5)")
    inside = sqlmetrics.evaluate(con, "recs", ["ndcg@2"], truth=TRUTH)
    # frames registered, partials of partitions registered, the problem function: all inside
    in_parts = sqlmetrics.evaluate(con, con.table("recs"), ["ndcg@2"], truth=TRUTH, partitions=2)
    assert _temporary_tables(con) == []  # (the partial results' table, dropped inside it)
    con.execute("ROLLBACK")
    assert inside == in_parts == sqlmetrics.evaluate(con, GOOD_RECS, ["ndcg@2"], truth=TRUTH)
    assert con.execute("SELECT count(*) FROM recs").fetchall() == [(0,)]


def test_compare_in_partitions_inside_a_transaction_leaves_no_table(con):
    # the partitions' per-unit values are kept in a temporary table of the caller's connection
    # until the comparison has read them, then dropped, inside the caller's transaction
    recs = pa.table({"user_id": [u for u in range(6) for _ in range(2)],
                     "model": ["A" if u % 2 else "B" for u in range(6) for _ in range(2)],
                     "item_id": [10, 11] * 6, "score": [0.9, 0.8] * 6})  # fmt: skip
    truth = pa.table({"user_id": list(range(6)), "item_id": [10, 11] * 3, "relevance": [1] * 6})
    con.execute("CREATE TABLE work (x INTEGER)")
    con.execute("BEGIN")
    con.execute("INSERT INTO work VALUES (1)")
    args = dict(truth=truth, by="model", baseline="A", test="bootstrap", replicates=50)
    whole = sqlmetrics.compare(con, recs, ["ndcg@2"], **args)
    in_parts = sqlmetrics.compare(con, recs, ["ndcg@2"], partitions=3, **args)
    assert _temporary_tables(con) == []
    con.execute("COMMIT")
    assert whole == in_parts and in_parts.column("design").to_pylist() == ["unpaired"]
    assert con.execute("SELECT list(x) FROM work").fetchall() == [([1],)]


def test_a_glob_that_fails_while_running_says_the_transaction_was_aborted(tmp_path):
    # the first look reads one file's columns; the other file's disagree, which DuckDB finds
    # only while the statement runs: the error says what that did to the transaction
    import pyarrow.parquet as pq

    pq.write_table(GOOD_RECS, tmp_path / "a.parquet")
    pq.write_table(GOOD_RECS.set_column(2, "score", pa.array(["x", "y", "z"])), tmp_path / "b.parquet")
    con = duckdb.connect()
    con.execute("BEGIN")
    with pytest.raises(sqlmetrics.UnknownTableError, match="aborted the open transaction"):
        sqlmetrics.evaluate(con, str(tmp_path / "*.parquet"), ["ndcg@2"], truth=TRUTH)
    con.execute("ROLLBACK")
    with pytest.raises(sqlmetrics.UnknownTableError, match=r"cannot read .*b\.parquet.*\)?$") as raised:
        sqlmetrics.evaluate(con, str(tmp_path / "*.parquet"), ["ndcg@2"], truth=TRUTH)
    assert "aborted" not in str(raised.value)  # no transaction of the caller's: nothing to say


def test_sql_text_keeps_its_own_error_checks(con):
    con.execute("CREATE TABLE recs (user_id INTEGER, item_id INTEGER, score DOUBLE)")
    con.execute("INSERT INTO recs VALUES (1, 10, NULL)")
    text = sqlmetrics.sql(con, "recs", ["ndcg@2"], truth="recs")
    assert "error('sqlmetrics: '" in text and "__sqlmetrics_problem" not in text
    with pytest.raises(duckdb.Error, match="sqlmetrics: recs .* NULL score"):
        con.sql(text).fetchall()


def test_no_copy_warning_reaches_the_caller_from_threads(tmp_path):
    # DuckDB warns that Arrow from a DB-API result copies the rows; sqlmetrics silences that for
    # its own call (sqlmetrics/statement/run.py) with a filter that must hold while threads evaluate at
    # once, even under a caller's "always" (catch_warnings alone is not thread-safe)
    script = (
        "import threading, warnings, duckdb, pyarrow as pa, sqlmetrics\n"
        "recs = pa.table({'user_id': [1, 1], 'item_id': [1, 2], 'score': [0.5, 0.4]})\n"
        "truth = pa.table({'user_id': [1], 'item_id': [1]})\n"
        "seen = []\n"
        "warnings.showwarning = lambda message, *rest: seen.append(str(message))\n"
        "def work():\n"
        "    con = duckdb.connect()\n"
        "    for _ in range(40):\n"
        "        sqlmetrics.evaluate(con, recs, ['ndcg@2'], truth=truth)\n"
        "threads = [threading.Thread(target=work) for _ in range(4)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "con = duckdb.connect()\n"
        "con.execute('SELECT 1').to_arrow_table()  # the caller's own call still warns\n"
        "print(sum('Arrow output' in m for m in seen))\n"
    )
    out = subprocess.run(
        [sys.executable, "-W", "always::UserWarning", "-c", script],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.split() == ["1"], out.stdout + out.stderr
