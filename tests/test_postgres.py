"""sqlmetrics on a real PostgreSQL server (through ADBC), against DuckDB and the reference.

The module starts its own throwaway server (tests/engines.py: a cluster in a temporary
directory on a Unix socket, stopped and deleted at the end)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cross_engine import (
    BAD_RECS,
    CASES,
    DUCKDB,
    assert_close_tables,
    case_id,
    check_all_trec,
    check_beyond_accuracy,
    check_beyond_accuracy_errors,
    check_beyond_accuracy_units,
    check_engine,
    check_exact_sum_forms,
    check_exact_sums,
    check_graded_actions_and_rank,
    check_trec_measures,
    check_truth_duplicates,
    metric_names,
)
from engines import logged_plans
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FAST, batch, cutoffs, unit_batch
from subtopic_data import check_subtopics

import sqlmetrics

# each example a batch of 1 to 8 random evaluations (strategies.batch: ~15 per case)
SETTINGS = settings(FAST, max_examples=4)


@pytest.fixture(scope="module")
def pg(pg_uri):
    import adbc_driver_postgresql.dbapi

    con = adbc_driver_postgresql.dbapi.connect(pg_uri)
    yield con
    con.close()


def query(con, sql: str) -> list[tuple]:
    with con.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def execute(con, sql: str) -> None:
    with con.cursor() as cur:
        cur.execute(sql)


def temp_tables(con) -> list[str]:
    return [r[0] for r in query(con, "SELECT relname FROM pg_class WHERE relpersistence = 't'")]


# ---- the same random data as the DuckDB tests ---------------------------------------------------


@pytest.mark.parametrize("conventions", CASES, ids=case_id)
@SETTINGS
@given(data=batch(), ks=cutoffs, with_r_precision=st.booleans())
def test_matches_duckdb_and_reference(pg, conventions, data, ks, with_r_precision):
    metrics = metric_names(ks, conventions.get("ties", "item_desc"), with_r_precision)
    check_engine(pg, data, metrics, conventions)


@settings(SETTINGS, max_examples=3)
@given(data=batch(string_ids=False), ks=cutoffs,
       ties=st.sampled_from(["item_desc", "item_asc", "trec_eval"]))
def test_tie_orders_with_integer_ids(pg, data, ks, ties):
    """Integer ids: trec_eval compares them as text ("9" > "10"), the others as numbers."""
    check_engine(pg, data, metric_names(ks, ties, True), {"ties": ties})


@pytest.mark.parametrize("conventions", CASES, ids=case_id)
@settings(SETTINGS, max_examples=2)
@given(data=unit_batch(), ks=cutoffs, with_r_precision=st.booleans())
def test_unit_keys_match_duckdb_and_reference(pg, conventions, data, ks, with_r_precision):
    """Units of several key columns (integer, text, DATE; strategies.UNIT_KEYS)."""
    metrics = metric_names(ks, conventions.get("ties", "item_desc"), with_r_precision)
    check_engine(pg, data, metrics, conventions)


def test_the_statement_runs_without_jit(pg, pg_uri):
    """PostgreSQL's JIT compiled a statement of sqlmetrics for 50 s on 96 rows (its estimated
    cost passes jit_above_cost on small inputs: sqlmetrics/engines/postgres.py): sqlmetrics runs
    its statement with jit off. With every statement's cost above the thresholds (0), the
    plans show that JIT compiled sqlmetrics' query of the setting, but not the statement."""
    if not query(pg, "SELECT pg_jit_available()")[0][0]:
        pytest.skip("this PostgreSQL server has no JIT (built without LLVM)")
    recs = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "a"], "score": [0.9, 0.8, 0.7]})
    truth = pa.table({"user_id": [1, 2], "item_id": ["b", "a"], "relevance": [1, 2]})
    for setting in ("SET jit = on", "SET jit_above_cost = 0", "SET auto_explain.log_analyze = on"):
        execute(pg, setting)
    try:
        plans = logged_plans(pg, pg_uri, lambda: sqlmetrics.evaluate(pg, recs, ["ndcg@3"], truth=truth))
        logged = plans.split(" LOG:  duration: ")
        statement = [plan for plan in logged if "Query Text: COPY (WITH" in plan]
        setting = [plan for plan in logged if "current_setting('jit', true)" in plan]
        assert len(statement) == 1 and "JIT:" not in statement[0]
        assert setting and all("JIT:" in plan for plan in setting)
    finally:
        pg.rollback()


def test_each_exact_sum_term_is_computed_once_per_row(pg, pg_uri):
    """The exact sums' row parts (the scaled term, its wide integer, its exactness flag: each
    read several times by the next) stay steps of their own (fence() in the dialect): in the
    plans, the split of a wide integer appears a few times per expression, not the 42 times
    of a term substituted into each reading."""
    recs = pa.table({"user_id": [1, 1, 1, 2, 2], "item_id": ["a", "b", "c", "a", "d"],
                     "score": [0.9, 0.8, 0.7, 0.6, 0.5]})
    truth = pa.table({"user_id": [1, 1, 2], "item_id": ["b", "c", "d"], "relevance": [1, 3, 2]})
    plans = logged_plans(pg, pg_uri, lambda: sqlmetrics.evaluate(pg, recs, ["ndcg@3"], truth=truth))
    worst = max(line.count("4611686018427387904") for line in plans.splitlines())
    assert 1 <= worst <= 8, worst


@pytest.mark.parametrize(("ties", "first"), [("item_desc", "a"), ("item_asc", "B"), ("trec_eval", "a")])
def test_text_ids_tie_in_byte_order(pg, ties, first):
    """'a' and 'B' tie: by bytes 'B' < 'a' (DuckDB, trec_eval's strcmp), whatever the
    database's collation (this server's default is ICU 'en', where 'a' < 'B')."""
    recs = pa.table({"user_id": [1, 1], "item_id": ["a", "B"], "score": [0.5, 0.5]})
    truth = pa.table({"user_id": [1], "item_id": [first], "relevance": [1]})
    table = sqlmetrics.evaluate(pg, recs, ["precision@1"], truth=truth, ties=ties)
    assert table.to_pylist() == [{"users": 1, "precision@1": 1.0}]


# ---- inputs --------------------------------------------------------------------------------------

RECS = pa.table(
    {
        "user_id": [1, 1, 1, 2, 2, 3],
        "item_id": ["a", "b", "c", "a", "d", "e"],
        "score": [0.9, 0.8, 0.7, 0.6, 0.6, 0.1],
        "model": ["A", "A", "A", "B", "B", "A"],
    }
)
TRUTH = pa.table({"user_id": [1, 1, 2, 4], "item_id": ["b", "c", "d", "a"], "relevance": [1, 3, 2, 1]})
METRICS = ["ndcg@2", "map@3", "recall@2", "mrr@3"]


@pytest.fixture(scope="module")
def tables(pg):
    with pg.cursor() as cur:
        cur.execute("CREATE SCHEMA analytics")
        cur.adbc_ingest("recs", RECS, mode="create", db_schema_name="analytics")
        cur.adbc_ingest("truth", TRUTH, mode="create", db_schema_name="analytics")
        cur.execute('CREATE TABLE "Mixed Case" AS SELECT * FROM analytics.recs')
        cur.execute("CREATE TABLE folded AS SELECT * FROM analytics.truth")
    pg.commit()
    return "analytics.recs", "analytics.truth"


def test_table_names_schema_qualified(pg, tables):
    recs, truth = tables
    expected = sqlmetrics.evaluate(DUCKDB, RECS, METRICS, truth=TRUTH, by="model")
    assert_close_tables(sqlmetrics.evaluate(pg, recs, METRICS, truth=truth, by="model"), expected)


def test_table_names_as_given_then_folded(pg, tables):
    """'Mixed Case' exists quoted; 'FOLDED' was created unquoted, so PostgreSQL stored 'folded'."""
    expected = sqlmetrics.evaluate(DUCKDB, RECS, METRICS, truth=TRUTH)
    assert_close_tables(sqlmetrics.evaluate(pg, "Mixed Case", METRICS, truth="FOLDED"), expected)


def test_unknown_table_lists_tables(pg, tables):
    with pytest.raises(sqlmetrics.UnknownTableError, match="no table or view named 'nope'.*analytics.recs"):
        sqlmetrics.evaluate(pg, "nope", METRICS, truth="analytics.truth")
    with pytest.raises(sqlmetrics.UnknownTableError):
        sqlmetrics.evaluate(pg, "recs; DROP TABLE analytics.truth", METRICS, truth="analytics.truth")
    assert query(pg, "SELECT count(*) FROM analytics.truth") == [(4,)]


def test_frames_and_files_are_copied_into_temporary_tables(pg, tmp_path):
    import pandas as pd
    import polars as pl

    pq.write_table(RECS, tmp_path / "recs.parquet")
    TRUTH.to_pandas().to_csv(tmp_path / "truth.csv", index=False)
    expected = sqlmetrics.evaluate(DUCKDB, RECS, METRICS, truth=TRUTH, per_user=True)
    for recs, truth in [
        (RECS, TRUTH),
        (pd.DataFrame(RECS.to_pandas()), pl.from_arrow(TRUTH)),
        (str(tmp_path / "recs.parquet"), str(tmp_path / "truth.csv")),
        (str(tmp_path / "*.parquet"), TRUTH),
    ]:
        actual = sqlmetrics.evaluate(pg, recs, METRICS, truth=truth, per_user=True)
        assert_close_tables(actual, expected)
        assert temp_tables(pg) == []


def test_result_is_plain_arrow(pg):
    table = sqlmetrics.evaluate(pg, RECS, METRICS, truth=TRUTH, by="model")
    assert table.schema == pa.schema(
        [("model", pa.string()), ("users", pa.int64())] + [(m, pa.float64()) for m in METRICS]
    )
    assert table.schema.metadata is None and all(f.metadata is None for f in table.schema)


def test_graded_actions_and_rank_column(pg):
    check_graded_actions_and_rank(pg, "it's")


def test_truth_duplicates_max_and_sum(pg):
    check_truth_duplicates(pg)


# ---- bad input: the statement's own checks, and the connection afterwards ------------------------


@pytest.mark.parametrize(("recs", "error", "message"), BAD_RECS)
@pytest.mark.parametrize("autocommit", [False, True])
def test_bad_input_raises_and_leaves_the_connection_usable(pg_uri, recs, error, message, autocommit):
    import adbc_driver_postgresql.dbapi

    # (inside a transaction the message goes on: it says the transaction was rolled back)
    expected = message if autocommit else message.rstrip("$") + r" \(PostgreSQL aborted .*\)$"
    with adbc_driver_postgresql.dbapi.connect(pg_uri, autocommit=autocommit) as con:
        with pytest.raises(error, match=expected):
            sqlmetrics.evaluate(con, recs, ["ndcg@3"], truth=TRUTH)
        assert query(con, "SELECT 1") == [(1,)]
        assert temp_tables(con) == []


# the server's own errors, whose driver message ends with the statement (which holds the checks'
# marker): (what, the setup, recs, the SQLSTATE)
SERVER_ERRORS = [
    ("permission denied", "SET ROLE sqlmetrics_nobody", "server_recs", "42501"),
    ("statement timeout", "SET statement_timeout = 300", "server_slow", "57014"),
]


@pytest.mark.parametrize(
    ("what", "setup", "recs", "sqlstate"), SERVER_ERRORS, ids=[e[0] for e in SERVER_ERRORS]
)
@pytest.mark.parametrize("autocommit", [False, True])
def test_a_server_error_is_not_an_input_error(pg_uri, what, setup, recs, sqlstate, autocommit):
    """Issue 33, 3k: a permission, a timeout or an unknown function is the server's error, raised
    as the driver's own (with its SQLSTATE), never InvalidDataError about the data; inside an
    open transaction it is rolled back as after any failed statement, and a note says so."""
    import adbc_driver_manager
    import adbc_driver_postgresql.dbapi

    with adbc_driver_postgresql.dbapi.connect(pg_uri, autocommit=True) as admin:
        for statement in (
            "CREATE TABLE IF NOT EXISTS server_recs AS "
            "SELECT 1 AS user_id, 'a' AS item_id, 0.5::float8 AS score",
            "CREATE OR REPLACE VIEW server_slow AS "
            "SELECT r.* FROM server_recs AS r, (SELECT pg_sleep(2)) AS s",
            "DO $$ BEGIN CREATE ROLE sqlmetrics_nobody; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
        ):
            execute(admin, statement)
    with adbc_driver_postgresql.dbapi.connect(pg_uri, autocommit=autocommit) as con:
        execute(con, setup)
        with pytest.raises(adbc_driver_manager.Error) as raised:
            sqlmetrics.evaluate(con, recs, ["ndcg@3"], truth=TRUTH)
        assert not isinstance(raised.value, sqlmetrics.SqlMetricsError)
        assert raised.value.sqlstate == sqlstate
        notes = getattr(raised.value, "__notes__", [])
        if not autocommit and hasattr(raised.value, "add_note"):
            assert any("rolled it back" in note for note in notes)
        else:
            assert not notes
        execute(con, "RESET ROLE")
        assert query(con, "SELECT 1") == [(1,)]


def test_an_unknown_function_is_not_an_input_error(pg):
    """The statement holds the checks' marker; the server's error is about something else."""
    import adbc_driver_manager

    from sqlmetrics.engines import for_connection

    engine = for_connection(pg, describe_only=False)
    try:
        with pytest.raises(adbc_driver_manager.Error, match="no_such_function") as raised:
            engine.run(
                "SELECT no_such_function(1), CAST(CASE WHEN 1 = 0 THEN 'sqlmetrics: x' END AS INTEGER)"
            )
        assert not isinstance(raised.value, sqlmetrics.SqlMetricsError)
    finally:
        engine.release()


def test_truth_duplicates(pg):
    truth = pa.table({"user_id": [1, 1], "item_id": ["b", "b"], "relevance": [1, 2]})
    with pytest.raises(sqlmetrics.DuplicateRowError, match=r"^truth \(truth Table\) has a duplicate"):
        sqlmetrics.evaluate(pg, RECS, ["ndcg@3"], truth=truth)


def test_beyond_accuracy_matches_duckdb(pg):
    check_beyond_accuracy(pg)


def test_exact_sums_over_the_whole_double_range(pg):
    check_exact_sums(pg)


def test_exact_sum_forms_with_cancelling_terms(pg):
    check_exact_sum_forms(lambda sql: query(pg, sql)[0][0], "postgres")


def test_beyond_accuracy_units_match_duckdb(pg):
    check_beyond_accuracy_units(pg)


def test_beyond_accuracy_input_errors(pg):
    check_beyond_accuracy_errors(pg)


def test_sql_text_runs_as_is(pg, tables):
    """sqlmetrics.sql(pg, ...) is the statement evaluate() runs: plain text for psql or dbt."""
    text = sqlmetrics.sql(pg, "analytics.recs", METRICS, truth="analytics.truth", by="model")
    assert '"analytics"."recs"' in text
    with pg.cursor() as cur:
        cur.execute(text)
        from_text = cur.fetch_arrow_table()
    expected = sqlmetrics.evaluate(DUCKDB, RECS, METRICS, truth=TRUTH, by="model")
    assert_close_tables(from_text.cast(expected.schema), expected)


def test_psycopg_connection_points_to_adbc(pg_uri):
    psycopg = pytest.importorskip("psycopg")
    host = pg_uri.split("host=")[1].split("&")[0]
    with psycopg.connect(host=host, dbname="postgres", user="sqlmetrics") as con:
        with pytest.raises(sqlmetrics.SqlMetricsError, match="adbc_driver_postgresql.dbapi.connect"):
            sqlmetrics.evaluate(con, "analytics.recs", METRICS)


def test_rows_in_duckdb_order(pg):
    """Groups and users sort as DuckDB sorts them: text by bytes ('B' before 'a'), NULL last."""
    recs = pa.table(
        {
            "user_id": ["u", "U", "u", "v"],
            "item_id": ["a", "a", "b", "a"],
            "score": [0.5, 0.4, 0.3, 0.2],
            "model": ["a", "B", None, "a"],
        }
    )
    truth = pa.table({"user_id": ["u", "U", "v"], "item_id": ["a", "a", "a"]})
    for per_user in (False, True):
        expected = sqlmetrics.evaluate(DUCKDB, recs, ["ndcg@2"], truth=truth, by="model", per_user=per_user)
        actual = sqlmetrics.evaluate(pg, recs, ["ndcg@2"], truth=truth, by="model", per_user=per_user)
        assert_close_tables(actual, expected)


@SETTINGS
@given(data=batch())
def test_trec_measures_match_duckdb(pg, data):
    check_trec_measures(pg, data)


@SETTINGS
@given(data=batch())
def test_the_rest_of_all_trec_matches_duckdb(pg, data):
    check_all_trec(pg, data)


def test_intent_aware_measures_match_duckdb(pg):
    check_subtopics(pg)
