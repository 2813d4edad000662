"""The measures over item groups (issue 37, item 4) on every engine: PostgreSQL and Spark run
them and equal DuckDB to 1e-9 (which tests/test_item_groups.py checks against the papers'
formulas); the BigQuery and Snowflake texts, translated to DuckDB by sqlglot, too."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import sqlglot
from cross_engine import DUCKDB, _same_rows
from test_item_groups import genre_case

import sqlmetrics

SEEDS = (0, 1, 2, 3, 4, 5)


def group_data():
    """Several seeds of test_item_groups.genre_case as ONE data set (one query per engine):
    seed s's users are s * 1000 + user, its items "s<seed>:<item>", its models "s<seed>/<m>"."""
    recs, history, features = [], [], {}
    for s in SEEDS:
        r, h, g = genre_case(s, groups=True)
        recs += [{**row, "user_id": s * 1000 + row["user_id"], "item_id": f"s{s}:{row['item_id']}",
                  "model": f"s{s}/{row['model']}"} for row in r]
        history += [{**row, "user_id": s * 1000 + row["user_id"], "item_id": f"s{s}:{row['item_id']}"}
                    for row in h]
        # (vectors of one length: padded with genres of weight 0)
        features.update({f"s{s}:{item}": [float(w) for w in weights] + [0.0] * (5 - len(weights))
                         for item, weights in g.items()})
    vectors = pa.array(list(features.values()), pa.list_(pa.float64()))
    return (pa.Table.from_pylist(recs), pa.Table.from_pylist(history),
            pa.table({"item_id": list(features), "features": vectors}))


def runs():
    """(metrics, options, key of a row): aggregated by model, and per user."""
    recs, history, features = group_data()
    metrics = ["calibration@1", "calibration@4", "calibration(alpha=0.2)@10"]
    base = dict(history=history, item_features=features, by="model")
    yield recs, metrics, base, lambda row: row["model"]
    yield recs, metrics, {**base, "per_user": True}, lambda row: (row["model"], row["user_id"])


def check_same_as_duckdb(con) -> None:
    for recs, metrics, options, key in runs():
        expected = sqlmetrics.evaluate(DUCKDB, recs, metrics, **options)
        actual = sqlmetrics.evaluate(con, recs, metrics, **options)
        assert actual.schema == expected.schema
        _same_rows(actual, expected, key)


def test_postgres_equals_duckdb(pg_uri):
    import adbc_driver_postgresql.dbapi

    with adbc_driver_postgresql.dbapi.connect(pg_uri) as con:
        check_same_as_duckdb(con)


def test_spark_equals_duckdb(spark):
    check_same_as_duckdb(spark)


def test_bigquery_text_computes_the_same():
    dialect = "bigquery"
    for recs, metrics, options, key in runs():
        con = duckdb.connect()
        for name in ("recs", "history", "item_features"):
            con.register(f"{name}_frame", recs if name == "recs" else options[name])
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
        named = {**options, "history": "history", "item_features": "item_features"}
        text = sqlmetrics.sql(con, "recs", metrics, dialect=dialect, **named)
        translated = sqlglot.transpile(text, read=dialect, write="duckdb")[0]
        expected = sqlmetrics.evaluate(DUCKDB, recs, metrics, **options)
        # (BigQuery's column of a label with a "." has a "_" in its place)
        actual = con.sql(translated).to_arrow_table().rename_columns(expected.column_names)
        _same_rows(actual, expected, key)


def test_snowflake_text_parses():
    """Snowflake's text only parses here: sqlglot writes its LATERAL FLATTEN of item_features'
    vectors (sql/dialects/snowflake.sql.j2) as no DuckDB it can run, as for diversity's."""
    recs, metrics, options, _ = next(runs())
    con = duckdb.connect()
    for name in ("recs", "history", "item_features"):
        con.register(f"{name}_frame", recs if name == "recs" else options[name])
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
    named = {**options, "history": "history", "item_features": "item_features"}
    text = sqlmetrics.sql(con, "recs", metrics, dialect="snowflake", **named)
    assert "calibration_genres" in text and "LN(" in text.upper()
    sqlglot.parse_one(text, read="snowflake")
