"""PostgreSQL aborts a transaction on any error, and the ADBC driver then runs nothing on it
but a full rollback (a savepoint cannot be rolled back to): an input error inside the caller's
open transaction says that this happened (issue 17, item 4); with autocommit there is nothing
to lose and nothing is said. Starts its own throwaway server, like tests/test_postgres.py."""

from __future__ import annotations

import pyarrow as pa
import pytest
from cross_engine import BAD_RECS

import sqlmetrics

TRUTH = pa.table({"user_id": [1, 2], "item_id": ["a", "b"], "relevance": [1, 1]})


def _rows(con, sql):
    with con.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def _execute(con, sql):
    with con.cursor() as cur:
        cur.execute(sql)


@pytest.mark.parametrize(("recs", "error", "message"), BAD_RECS[:2] + BAD_RECS[-1:])
@pytest.mark.parametrize("autocommit", [False, True])
def test_an_input_error_says_what_became_of_the_transaction(pg_uri, recs, error, message, autocommit):
    import adbc_driver_postgresql.dbapi

    with adbc_driver_postgresql.dbapi.connect(pg_uri, autocommit=autocommit) as con:
        _execute(con, "CREATE TEMPORARY TABLE work (x integer)")
        _execute(con, "INSERT INTO work VALUES (1)")
        with pytest.raises(error, match=message.rstrip("$")) as raised:
            sqlmetrics.evaluate(con, recs, ["ndcg@3"], truth=TRUTH)
        said = "aborted the open transaction" in str(raised.value)
        assert said is (not autocommit)
        # the connection is usable; the work survived exactly when nothing was said
        _execute(con, "CREATE TEMPORARY TABLE IF NOT EXISTS work (x integer)")
        assert _rows(con, "SELECT count(*) FROM work") == [(0 if said else 1,)]
        # a missing table is found without a failing statement: the work survives
        _execute(con, "INSERT INTO work VALUES (2)")
        with pytest.raises(sqlmetrics.UnknownTableError):
            sqlmetrics.evaluate(con, "no_such_table", ["ndcg@3"], truth=TRUTH)
        assert _rows(con, "SELECT count(*) FROM work WHERE x = 2") == [(1,)]


@pytest.mark.parametrize("fails", [False, True])
@pytest.mark.parametrize("autocommit", [False, True])
def test_the_callers_jit_setting_is_put_back(pg_uri, autocommit, fails):
    """sqlmetrics runs its statement with jit off (sqlmetrics/engines/postgres.py) and puts
    the caller's setting back: inside the open transaction (SET LOCAL, or a rollback after a
    failure) and in the session under autocommit, whether the statement succeeds or fails."""
    import adbc_driver_postgresql.dbapi

    recs = BAD_RECS[0][0] if fails else pa.table({"user_id": [1], "item_id": ["a"], "score": [0.5]})
    with adbc_driver_postgresql.dbapi.connect(pg_uri, autocommit=autocommit) as con:
        if not autocommit:
            con.commit()
        _execute(con, "SET jit = on")
        _execute(con, "SET jit_above_cost = 12345")
        if fails:
            with pytest.raises(sqlmetrics.InvalidDataError):
                sqlmetrics.evaluate(con, recs, ["ndcg@3"], truth=TRUTH)
        else:
            sqlmetrics.evaluate(con, recs, ["ndcg@3"], truth=TRUTH)
        if fails and not autocommit:  # the rollback undid the SETs made in the transaction too
            assert _rows(con, "SELECT current_setting('jit_above_cost')") == [("100000",)]
            default = "SELECT current_setting('jit') = reset_val FROM pg_settings WHERE name = 'jit'"
            assert _rows(con, default) == [(True,)]
        else:
            assert _rows(con, "SELECT current_setting('jit_above_cost')") == [("12345",)]
            assert _rows(con, "SELECT current_setting('jit')") == [("on",)]


@pytest.mark.parametrize(("recs", "error", "message"), BAD_RECS[:2] + BAD_RECS[-1:])
@pytest.mark.parametrize("autocommit", [False, True])
def test_compare_keeps_evaluates_guarantee(pg_uri, recs, error, message, autocommit):
    """compare() on bad data (issue 33, 3j2): what evaluate() does, said as evaluate() says it;
    the connection is usable afterwards, and under autocommit the work is kept."""
    import adbc_driver_postgresql.dbapi

    recs = pa.concat_tables([recs.append_column("model", pa.array(["A"] * len(recs))),
                             recs.append_column("model", pa.array(["B"] * len(recs)))])  # fmt: skip
    with adbc_driver_postgresql.dbapi.connect(pg_uri, autocommit=autocommit) as con:
        _execute(con, "CREATE TEMPORARY TABLE work (x integer)")
        _execute(con, "INSERT INTO work VALUES (1)")
        with pytest.raises(error, match=message.rstrip("$")) as raised:
            sqlmetrics.compare(con, recs, ["ndcg@3"], truth=TRUTH, by="model", baseline="A",
                               test="bootstrap", replicates=20)  # fmt: skip
        said = "aborted the open transaction" in str(raised.value)
        assert said is (not autocommit)
        _execute(con, "CREATE TEMPORARY TABLE IF NOT EXISTS work (x integer)")
        assert _rows(con, "SELECT count(*) FROM work") == [(0 if said else 1,)]
