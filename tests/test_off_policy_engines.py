"""off_policy() on PostgreSQL and Spark: the same templates, the same numbers as DuckDB (1e-9).
Uses the PostgreSQL server and the Spark session of the run (tests/conftest.py)."""

from __future__ import annotations

import warnings

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)
import pytest

import sqlmetrics
from sqlmetrics.errors import InvalidDataError
from tests.off_policy_reference import random_log

ESTIMATORS = ["sips", "iips", "rips", "snsips", "sniips", "snrips", "cascade-dr", "dm", "logging"]
FROM_HITS = [e for e in ESTIMATORS if e not in ("dm", "cascade-dr")]


@pytest.fixture(scope="module")
def pg(pg_uri):
    import adbc_driver_postgresql.dbapi

    con = adbc_driver_postgresql.dbapi.connect(pg_uri)
    yield con
    con.close()


def data(text_items: bool):
    rng = np.random.default_rng(5)
    impressions, target = random_log(rng, 40, 4, 3, reward_levels=(0, 1, 2))
    for row in impressions:
        row["device"] = None if row["user_id"] % 3 == 0 else ("phone" if row["user_id"] % 3 == 1 else "web")
    if text_items:
        for row in impressions + target:
            row["item_id"] = f"i{row['item_id']}"
    return pa.Table.from_pylist(impressions), pa.Table.from_pylist(target)


def runs(con, text_items: bool) -> list[pa.Table]:
    impressions, target = data(text_items)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
        out.append(sqlmetrics.off_policy(con, impressions, ESTIMATORS, target=target,
                                         predicted_reward="predicted", by="device",
                                         position_weights="dcg", clip=20.0, baseline="logging"))
        out.append(sqlmetrics.off_policy(con, impressions, ESTIMATORS[:7], target_pscore="target_pscore",
                                         target_pscore_item_position="target_pscore_item_position",
                                         target_pscore_cascade="target_pscore_cascade",
                                         predicted_reward="predicted",
                                         target_predicted_reward="target_predicted",
                                         position_weights=[1.0, 0.5], baseline="iips", test="bootstrap",
                                         replicates=200, seed=3))
        out.append(sqlmetrics.off_policy(con, impressions, FROM_HITS, target=target, by="device",
                                         position_weights=[1.0, 0.5], clip=5.0))
        # baseline= another target: the same ranking with its scores reversed
        other = target.set_column(target.column_names.index("score"), "score",
                                  pa.compute.negate(target.column("score")))
        out.append(sqlmetrics.off_policy(con, impressions, ["iips", "snrips", "sips"], target=target,
                                         baseline=other, by="device"))
    return out


def same(a: pa.Table, b: pa.Table, tolerance: float = 1e-9) -> None:
    assert a.column_names == b.column_names
    assert a.num_rows == b.num_rows
    for r, s in zip(a.to_pylist(), b.to_pylist(), strict=True):
        for name, value in r.items():
            if isinstance(value, float):
                assert s[name] == pytest.approx(value, rel=tolerance, abs=tolerance), name
            else:
                assert s[name] == value, name


def check_engine(con, text_items: bool) -> None:
    for a, b in zip(runs(duckdb.connect(), text_items), runs(con, text_items), strict=True):
        same(a, b)


@pytest.mark.parametrize("text_items", [False, True])
def test_postgres_equals_duckdb(pg, text_items):
    check_engine(pg, text_items)


def test_postgres_errors_name_the_unit(pg):
    log = pa.table({"user_id": [1, 1], "item_id": ["a", "b"], "position": [1, 2],
                    "pscore_item_position": [0.5, -0.5], "reward": [1, 0]})
    target = pa.table({"user_id": [1, 1], "item_id": ["a", "b"], "score": [2, 1]})
    with pytest.raises(InvalidDataError, match="pscore_item_position = -0.5 for user_id = 1, position = 2"):
        sqlmetrics.off_policy(pg, log, ["iips"], target=target)


@pytest.mark.parametrize("text_items", [True])
def test_spark_equals_duckdb(spark, text_items):
    """(The bootstrap's statement once ran out of the 1 GB driver's heap while Spark analysed it:
    compare()'s statement inlined the whole per-unit statement at each of its references. The
    per-unit terms are now computed first and read back as a table: off_policy._per_unit_terms.)"""
    check_engine(spark, text_items)


# ---- the text for every dialect; BigQuery and Snowflake run through sqlglot on DuckDB ---------


def tables(con, text_items: bool) -> None:
    impressions, target = data(text_items)
    events = pa.table({"user_id": [0, 1, 1, 2], "item_id": impressions.column("item_id").to_pylist()[:4],
                       "event": ["buy", "view", "buy", "view"]})
    other = target.set_column(target.column_names.index("score"), "score",
                              pa.compute.negate(target.column("score")))
    for name, table in (("impressions", impressions), ("target", target), ("events", events),
                        ("target_b", other)):
        con.register(f"{name}_frame", table)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")


VARIANTS = [
    {"estimators": ESTIMATORS, "target": "target", "predicted_reward": "predicted", "by": "device",
     "position_weights": "dcg", "clip": 20.0},
    # a ranking target without dm and cascade-dr: its weights from its hits (hits.sql.j2)
    {"estimators": FROM_HITS, "target": "target", "by": "device", "position_weights": [1.0, 0.5],
     "clip": 5.0},
    {"estimators": ["iips", "snrips", "logging"], "target": "target", "rewards": "events",
     "action": "event", "relevance": {"buy": 3, "view": 1}, "ties": "trec_eval", "baseline": "logging"},
    {"estimators": ESTIMATORS[:7], "target_pscore": "target_pscore",
     "target_pscore_item_position": "target_pscore_item_position",
     "target_pscore_cascade": "target_pscore_cascade", "predicted_reward": "predicted",
     "target_predicted_reward": "target_predicted", "position_weights": [1.0, 0.5],
     "truth_duplicates": "sum"},
    # baseline= another target: one statement, the estimates and compare()'s comparison
    {"estimators": ["iips", "snrips", "sips", "logging"], "target": "target", "baseline": "target_b",
     "by": "device"},
]


@pytest.mark.parametrize("dialect", ["duckdb", "spark", "postgres", "bigquery", "snowflake"])
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_text_parses_in_its_dialect(dialect, variant):
    import sqlglot

    con = duckdb.connect()
    tables(con, True)
    options = dict(VARIANTS[variant])
    if "rewards" not in options:
        options.pop("truth_duplicates", None)
    text = sqlmetrics.off_policy_sql(con, "impressions", dialect=dialect, **options)
    sqlglot.parse_one(text, read=dialect)


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake"])
@pytest.mark.parametrize("variant", range(len(VARIANTS)))
def test_bigquery_and_snowflake_text_computes_the_same(dialect, variant):
    import sqlglot

    from sqlmetrics.stats.off_policy import _table, _table_against_target

    con = duckdb.connect()
    tables(con, False)
    options = dict(VARIANTS[variant])
    estimators = options.pop("estimators")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
        expected = sqlmetrics.off_policy(con, "impressions", estimators, **options)
        text = sqlmetrics.off_policy_sql(con, "impressions", estimators, dialect=dialect, **options)
        sums = con.sql(sqlglot.transpile(text, read=dialect, write="duckdb")[0]).to_arrow_table()
        by = options.get("by")
        if options.get("baseline") == "target_b":
            got = _table_against_target(sums, estimators, [by] if by else [], 0.95, "target_b")
        else:
            got = _table(sums, estimators, [by] if by else [], 0.95, options.get("baseline"))
        same(got, expected)
