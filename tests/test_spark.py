"""sqlmetrics on Spark (pyspark in local mode, two cores), against DuckDB and the reference.

One SparkSession for the whole run (the `spark` fixture of tests/conftest.py). Every Spark
query costs a second or more in local mode, so each random example here is twelve of the DuckDB
tests' examples evaluated in one query (strategies.batch: disjoint users, one group per
part), and Hypothesis's first, degenerate example (twelve copies of the simplest draw: one user,
one item, k=1; test_against_reference.py covers it on DuckDB) is not sent to Spark."""

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
from engines import BROADCAST, spark_settings
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import FAST, batch, cutoffs, unit_batch
from subtopic_data import check_subtopics

import sqlmetrics

# one random batch of twelve examples per case: the same draws as two batches of six, in half
# the queries (each costs seconds on Spark, whatever its size)
SETTINGS = settings(FAST, max_examples=1)
PARTS = 12


def degenerate(data, ks) -> bool:
    """Hypothesis's first example: every part one user with one rec and one truth row, k=1."""
    return ks == [1] and len(data.recs) == len(data.truth or ()) == len({r["user"] for r in data.recs})


def views(spark) -> list[str]:
    return [row.tableName for row in spark.sql("SHOW TABLES").collect() if row.isTemporary]


# ---- the same random data as the DuckDB tests ---------------------------------------------------


@pytest.mark.parametrize("conventions", CASES, ids=case_id)
@SETTINGS
@given(data=batch(parts=PARTS, tag_groups=True), ks=cutoffs, with_r_precision=st.booleans())
def test_matches_duckdb_and_reference(spark, conventions, data, ks, with_r_precision):
    assume(not degenerate(data, ks))
    metrics = metric_names(ks, conventions.get("ties", "item_desc"), with_r_precision)
    check_engine(spark, data, metrics, conventions)


@SETTINGS
@given(data=batch(parts=PARTS, tag_groups=True, string_ids=False), ks=cutoffs,
       ties=st.sampled_from(["item_desc", "item_asc", "trec_eval"]))
def test_tie_orders_with_integer_ids(spark, data, ks, ties):
    """Integer ids: trec_eval compares them as text ("9" > "10"), the others as numbers."""
    assume(not degenerate(data, ks))
    check_engine(spark, data, metric_names(ks, ties, True), {"ties": ties})


@pytest.mark.parametrize("conventions", CASES, ids=case_id)
@SETTINGS
@given(data=unit_batch(parts=PARTS, tag_groups=True), ks=cutoffs, with_r_precision=st.booleans())
def test_unit_keys_match_duckdb_and_reference(spark, conventions, data, ks, with_r_precision):
    """Units of several key columns (integer, text, DATE; strategies.UNIT_KEYS)."""
    assume(not degenerate(data, ks))
    metrics = metric_names(ks, conventions.get("ties", "item_desc"), with_r_precision)
    check_engine(spark, data, metrics, conventions)


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
METRICS = ["ndcg@2", "map@3", "recall@2", "mrr@3", "r_precision"]


def test_tables_views_dataframes_and_parquet_paths(spark, tmp_path):
    expected = sqlmetrics.evaluate(DUCKDB, RECS, METRICS, truth=TRUTH, by="model")
    pq.write_table(RECS, tmp_path / "recs.parquet")
    (tmp_path / "truth").mkdir()
    pq.write_table(TRUTH, tmp_path / "truth" / "part-0.parquet")
    spark.createDataFrame(RECS).write.saveAsTable("recs_table")
    spark.createDataFrame(TRUTH).createOrReplaceTempView("truth_view")
    try:
        for recs, truth in [
            ("recs_table", "truth_view"),
            ("default.recs_table", spark.table("truth_view")),
            (str(tmp_path / "recs.parquet"), str(tmp_path / "truth" / "*.parquet")),
            (RECS.to_pandas(), TRUTH),
        ]:
            actual = sqlmetrics.evaluate(spark, recs, METRICS, truth=truth, by="model")
            assert_close_tables(actual, expected)
            assert views(spark) == ["truth_view"], "a temporary view was left behind"
    finally:
        spark.sql("DROP TABLE IF EXISTS recs_table")
        spark.catalog.dropTempView("truth_view")


def test_sql_text_reads_parquet_in_place(spark, tmp_path):
    """The text of sqlmetrics.sql(spark, ...) names the files (parquet.`path`): it runs as is."""
    pq.write_table(RECS, tmp_path / "recs.parquet")
    pq.write_table(TRUTH, tmp_path / "truth.parquet")
    text = sqlmetrics.sql(spark, str(tmp_path / "recs.parquet"), METRICS,
                          truth=str(tmp_path / "truth.parquet"))
    assert f"parquet.`{tmp_path / 'recs.parquet'}`" in text
    expected = sqlmetrics.evaluate(DUCKDB, RECS, METRICS, truth=TRUTH)
    assert_close_tables(spark.sql(text).toArrow().cast(expected.schema), expected)


def test_unknown_table(spark):
    with pytest.raises(sqlmetrics.UnknownTableError, match="no table or view named 'nope'"):
        sqlmetrics.evaluate(spark, "nope", METRICS, truth=TRUTH)
    with pytest.raises(sqlmetrics.UnknownTableError, match="no file matches"):
        sqlmetrics.evaluate(spark, "missing/recs.parquet", METRICS, truth=TRUTH)
    with pytest.raises(sqlmetrics.UnknownTableError, match="no table or view named"):
        sqlmetrics.evaluate(spark, "recs; DROP TABLE x", METRICS, truth=TRUTH)


def test_result_is_arrow_with_duckdb_schema(spark):
    table = sqlmetrics.evaluate(spark, RECS, METRICS, truth=TRUTH, by="model")
    assert table.schema == sqlmetrics.evaluate(DUCKDB, RECS, METRICS, truth=TRUTH, by="model").schema


def test_graded_actions_and_rank_column(spark):
    check_graded_actions_and_rank(spark, "it's \\ odd")


def test_truth_duplicates_max_and_sum(spark):
    check_truth_duplicates(spark)


# ---- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("recs", "error", "message"), BAD_RECS)
def test_bad_input_raises(spark, recs, error, message):
    with pytest.raises(error, match=message):
        sqlmetrics.evaluate(spark, recs, ["ndcg@3"], truth=TRUTH)
    assert views(spark) == []


def test_beyond_accuracy_matches_duckdb(spark):
    check_beyond_accuracy(spark)


def test_exact_sums_over_the_whole_double_range(spark):
    check_exact_sums(spark)


def test_exact_sum_forms_with_cancelling_terms(spark):
    check_exact_sum_forms(lambda sql: spark.sql(sql).collect()[0][0], "spark")


def test_beyond_accuracy_units_match_duckdb(spark):
    check_beyond_accuracy_units(spark)


def test_beyond_accuracy_input_errors(spark):
    check_beyond_accuracy_errors(spark)


def test_warehouse_example(spark, tmp_path, monkeypatch):
    """warehouse_examples/spark_parquet.py: a Parquet log evaluated with a SparkSession gives
    DuckDB's numbers."""
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "warehouse_examples"
    monkeypatch.syspath_prepend(str(examples))
    import parquet_logs
    import spark_parquet

    parquet_logs.write_logs(tmp_path, 300, 2)
    results = spark_parquet.evaluate_days(spark, tmp_path)
    assert [day for day, _ in results] == sorted(p.stem for p in (tmp_path / "events").glob("*.parquet"))
    for day, table in results:
        expected = sqlmetrics.evaluate(
            DUCKDB, str(tmp_path / "recommendations" / f"{day}.parquet"), spark_parquet.METRICS,
            truth=str(tmp_path / "events" / f"{day}.parquet"), by="model", action="event_type",
            relevance=spark_parquet.GRADES,
        )
        assert expected.num_rows == 2
        assert_close_tables(table, expected)
    assert "spark_parquet" in sys.modules


@pytest.mark.parametrize("ansi", ["true", "false"])
def test_ansi_mode_on_and_off(spark, ansi):
    """Under Spark's own code generation, broadcast joins and adaptive execution too (the
    tests' session interprets expressions, joins by sorting and plans once: tests/engines.py)."""
    settings = {"spark.sql.ansi.enabled": ansi, "spark.sql.codegen.factoryMode": "FALLBACK",
                "spark.sql.codegen.wholeStage": "true", "spark.sql.adaptive.enabled": "true",
                **BROADCAST}  # fmt: skip
    with spark_settings(spark, settings):
        for ties in ("item_desc", "average"):
            metrics = ["ndcg@2", "recall@2", "hit_rate@1"]
            expected = sqlmetrics.evaluate(DUCKDB, RECS, metrics, truth=TRUTH, by="model", ties=ties)
            actual = sqlmetrics.evaluate(spark, RECS, metrics, truth=TRUTH, by="model", ties=ties)
            assert_close_tables(actual, expected)
        with pytest.raises(sqlmetrics.InvalidDataError, match="NaN or infinite score"):
            bad = pa.table({"user_id": [1, 1], "item_id": ["a", "b"], "score": [0.5, float("nan")]})
            sqlmetrics.evaluate(spark, bad, ["ndcg@3"], truth=TRUTH)


@SETTINGS
@given(data=batch(parts=6, tag_groups=True))
def test_trec_measures_match_duckdb(spark, data):
    assume(not degenerate(data, [1]))
    check_trec_measures(spark, data)


@SETTINGS
@given(data=batch(parts=6, tag_groups=True))
def test_the_rest_of_all_trec_matches_duckdb(spark, data):
    assume(not degenerate(data, [1]))
    check_all_trec(spark, data)


def test_the_statement_leaves_no_dataset_to_the_jvm(spark):
    """The JVM may drop each statement's Dataset (and its plans) once the result is in Python,
    without waiting for Python's cyclic garbage collector (sqlmetrics/engines/spark.py,
    _release): with that collector off, no Python proxy of a Dataset made during the call is
    still registered with Py4J (a registered proxy keeps its JVM object alive)."""
    import gc

    from py4j.finalizer import ThreadSafeFinalizer

    def datasets(keys) -> list[str]:
        alive = [ThreadSafeFinalizer.finalizers[k]() for k in keys if k in ThreadSafeFinalizer.finalizers]
        names = [proxy.getClass().getName() for proxy in alive if proxy is not None]
        return [name for name in names if name.endswith(".Dataset")]

    gc.collect()
    gc.disable()
    try:
        before = set(ThreadSafeFinalizer.finalizers)
        sqlmetrics.evaluate(spark, RECS, METRICS, truth=TRUTH, by="model")
        sqlmetrics.evaluate(spark, RECS, METRICS, truth=TRUTH, by="model", per_user=True)
        assert datasets(set(ThreadSafeFinalizer.finalizers) - before) == []
    finally:
        gc.enable()


def test_intent_aware_measures_match_duckdb(spark):
    check_subtopics(spark)
