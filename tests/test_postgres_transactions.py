"""PostgreSQL aborts a transaction on any error: sqlmetrics works after a savepoint of its own
and rolls back to it, so an input error leaves the caller's open transaction usable with its
work kept (issue 17, item 4). Starts its own throwaway server, like tests/test_postgres.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from cross_engine import BAD_RECS
from engines import postgres_server, unavailable

import sqlmetrics

TRUTH = pa.table({"user_id": [1, 2], "item_id": ["a", "b"], "relevance": [1, 1]})


@pytest.fixture(scope="module")
def pg_uri():
    try:
        import adbc_driver_postgresql.dbapi  # noqa: F401
    except ImportError:
        unavailable("adbc-driver-postgresql is not installed: pip install -e '.[postgres]'")
    with postgres_server() as uri:
        yield uri


def _rows(con, sql):
    with con.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def _execute(con, sql):
    with con.cursor() as cur:
        cur.execute(sql)


@pytest.mark.parametrize(("recs", "error", "message"), BAD_RECS[:2] + BAD_RECS[-1:])
def test_an_input_error_keeps_the_callers_work(pg_uri, recs, error, message):
    import adbc_driver_postgresql.dbapi

    with adbc_driver_postgresql.dbapi.connect(pg_uri) as con:  # autocommit off: one transaction
        _execute(con, "CREATE TEMPORARY TABLE work (x integer)")
        _execute(con, "INSERT INTO work VALUES (1)")
        with pytest.raises(error, match=message):
            sqlmetrics.evaluate(con, recs, ["ndcg@3"], truth=TRUTH)
        with pytest.raises(sqlmetrics.UnknownTableError):
            sqlmetrics.evaluate(con, "no_such_table", ["ndcg@3"], truth=TRUTH)
        _execute(con, "INSERT INTO work VALUES (2)")  # the transaction goes on
        assert _rows(con, "SELECT x FROM work ORDER BY x") == [(1,), (2,)]
        good = pa.table({"user_id": [1, 2], "item_id": ["a", "c"], "score": [0.5, 0.4]})
        assert sqlmetrics.evaluate(con, good, ["precision@1"], truth=TRUTH).to_pylist() == [
            {"users": 2, "precision@1": 0.5}
        ]
        assert _rows(con, "SELECT x FROM work ORDER BY x") == [(1,), (2,)]
        assert _rows(con, "SELECT count(*) FROM pg_class WHERE relname LIKE '__sqlmetrics%'") == [(0,)]
