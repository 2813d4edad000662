"""The measures over item groups (issue 37, item 4) on every engine: PostgreSQL and Spark run
them and equal DuckDB to 1e-9 (which tests/test_item_groups.py checks against the papers'
formulas); the BigQuery and Snowflake texts, translated to DuckDB by sqlglot, too."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from cross_engine import DUCKDB, _same_rows
from test_item_groups import exposure_case, genre_case, systems_case

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


def systems_data() -> pa.Table:
    """Several seeds of test_item_groups.systems_case as one data set, users s * 1000 + user."""
    recs = []
    for s in SEEDS:
        recs += [{**row, "user_id": s * 1000 + row["user_id"], "item_id": f"i{row['item_id']}"}
                 for row in systems_case(s)]
    return pa.Table.from_pylist(recs)


def exposure_data() -> tuple[pa.Table, pa.Table]:
    """Several seeds of test_item_groups.exposure_case as one data set, users s * 1000 + user."""
    recs, truth = [], []
    for s in SEEDS:
        r, t = exposure_case(s)
        recs += [{**row, "user_id": s * 1000 + row["user_id"], "model": f"s{s % 2}"} for row in r]
        truth += [{**row, "user_id": s * 1000 + row["user_id"]} for row in t]
    return pa.Table.from_pylist(recs), pa.Table.from_pylist(truth)


def runs():
    """(recs, metrics, options, key of a row): aggregated by model, and per user."""
    recs, history, features = group_data()
    metrics = ["calibration@1", "calibration@4", "calibration(alpha=0.2)@10"]
    base = dict(history=history, item_features=features, by="model")
    by_model, by_user = (lambda row: row["model"]), (lambda row: (row["model"], row["user_id"]))
    yield recs, metrics, base, by_model
    yield recs, metrics, {**base, "per_user": True}, by_user
    # the same genres as rows (item, genre, weight): item_genres=
    genres = long_form(features)
    rows = dict(history=history, item_genres=genres, genre_weight="weight", by="model")
    yield recs, metrics, {**rows, "per_user": True}, by_user
    awrf = ["awrf@1", "awrf@4", "awrf@10"]
    yield recs, awrf, dict(item_features=features, by="model"), by_model
    yield recs, awrf, {**rows, "per_user": True}, by_user
    target = pa.table({"genre": ["g0", "g1", "g3", "g9"], "weight": [1.0, 2.0, 0.5, 1.0]})
    yield recs, awrf, {**rows, "group_target": target}, by_model
    systems = systems_data()
    metrics = ["rbo@1", "rbo@5", "rbo_sum(p=0.5)@5", "rbo(p=0.98)@10"]
    yield systems, metrics, dict(by="model", baseline="B"), by_model
    yield systems, metrics, dict(by="model", baseline="A", per_user=True), by_user
    recs, truth = exposure_data()
    metrics = ["ee_l@3", "ee_d@3", "ee_r@3", "ee_l(gamma=0.9)@10", "ee_r(gamma=0.8)"]
    yield recs, metrics, dict(truth=truth, by="model", threshold=2), by_model
    yield recs, metrics, dict(truth=truth, by="model", missing="zero", per_user=True), by_user
    items = sorted(set(recs.column("item_id").to_pylist()) | set(truth.column("item_id").to_pylist()))
    vectors = [[float(i % 2), float(i % 3 == 0), float(i % 5 == 0)] for i in items]
    features = pa.table({"item_id": pa.array(items, pa.int64()), "features": vectors})
    metrics = ["group_ee_l@3", "group_ee_d@3", "group_ee_r(gamma=0.8)@10"]
    options = dict(truth=truth, item_features=features, by="model")
    yield recs, metrics, options, by_model
    yield recs, metrics, {**options, "per_user": True}, by_user
    options = dict(truth=truth, item_genres=long_form(features), genre_weight="weight", by="model")
    yield recs, metrics, {**options, "per_user": True}, by_user


def long_form(features: pa.Table) -> pa.Table:
    """item_features' vectors as item_genres' rows (item_id, genre, weight), zeros too."""
    rows = [{"item_id": i, "genre": f"g{g}", "weight": w}
            for i, ws in zip(features["item_id"].to_pylist(), features["features"].to_pylist(), strict=True)
            for g, w in enumerate(ws)]
    return pa.Table.from_pylist(rows)


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


def _text(recs, metrics, options, dialect: str) -> tuple[duckdb.DuckDBPyConnection, str]:
    """sql()'s text for `dialect` over tables of a new DuckDB connection holding the inputs."""
    con = duckdb.connect()
    named = dict(options)
    for name, table in (("recs", recs), ("truth", None), ("history", None), ("item_features", None),
                        ("item_genres", None), ("group_target", None)):
        if table is not None or name in options:
            con.register(f"{name}_frame", recs if name == "recs" else options[name])
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
            named[name] = name
    return con, sqlmetrics.sql(con, named.pop("recs"), metrics, dialect=dialect, **named)


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake"])
def test_bigquery_and_snowflake_text_computes_the_same(dialect):
    """Snowflake's text with item_features (calibration, group exposure) only parses here: sqlglot writes its
    LATERAL FLATTEN of the vectors (sql/dialects/snowflake.sql.j2) as no DuckDB it can run (as
    for diversity's); every other text runs translated to DuckDB."""
    for recs, metrics, options, key in runs():
        con, text = _text(recs, metrics, options, dialect)
        if dialect == "snowflake" and "item_features" in options:
            assert "genre_weights" in text
            sqlglot.parse_one(text, read="snowflake")
            continue
        translated = sqlglot.transpile(text, read=dialect, write="duckdb")[0]
        expected = sqlmetrics.evaluate(DUCKDB, recs, metrics, **options)
        # (BigQuery's column of a label with a "." has a "_" in its place)
        actual = con.sql(translated).to_arrow_table().rename_columns(expected.column_names)
        _same_rows(actual, expected, key)
