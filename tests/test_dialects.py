"""sqlmetrics.sql(..., dialect=...): the SQL for each engine.

* dialect="duckdb" (the default on a DuckDB connection) is the DuckDB fast path, unchanged.
* Every rendering of spark, postgres, bigquery and snowflake parses with sqlglot in that
  dialect, for every metric and convention.
* BigQuery and Snowflake cannot run here, so their text is also translated by sqlglot into
  DuckDB's dialect and run: equal to sqlmetrics' DuckDB results to 1e-9 on the random data of
  the DuckDB tests. (Spark and PostgreSQL run for real: test_spark.py, test_postgres.py.)
* Names and text are quoted in each dialect's way, so no name or action can end its quotes."""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa
import pytest
import sqlglot
from cross_engine import CASES, DUCKDB, assert_close_tables, case_id, metric_names
from hypothesis import given, settings
from strategies import FAST, batch, cutoffs

import sqlmetrics
from sqlmetrics.statement.dialects import get as get_dialect

OTHERS = ("spark", "postgres", "bigquery", "snowflake")
NAMES = ("duckdb", *OTHERS)
ALL_METRICS = metric_names([3, 10], "item_desc", True)
AVERAGED = metric_names([3, 10], "average", False)
# trec_eval's measures and the whole-list names (tests/test_trec_measures.py)
TREC = ["bpref", "gm_map", "gm_map@3", "iprec_at_recall_0.30", "11pt_avg", "num_q", "num_ret",
        "num_rel", "num_rel_ret", "set_P", "set_recall", "set_F", "SetF(beta=0.5)", "success@3",
        "judged@3", "judged", "ndcg", "map", "recall", "mrr", "precision", "hit_rate", "cg", "dcg",
        "idcg", "arhr", "mar"]
TREC_AVERAGED = ["num_q", "num_ret", "num_rel", "num_rel_ret", "set_P", "set_recall", "set_F",
                 "success@3", "judged@3", "judged", "ndcg", "recall", "precision", "hit_rate"]


@pytest.fixture
def con():
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE recs AS SELECT * FROM (VALUES (1, 'a', 0.5, 'm', 'view', 2), "
        "(1, 'b', 0.7, 'm', 'buy', 1), (2, 'c', 0.1, 'n', 'view', 1)) "
        "AS t(user_id, item_id, score, model, event_type, pos)"
    )
    con.execute(
        "CREATE TABLE truth AS SELECT * FROM (VALUES (1, 'a', 2), (2, 'c', 1)) "
        "AS t(user_id, item_id, relevance)"
    )
    yield con
    con.close()


def variants():
    """(metrics, options) covering every template branch: modes, conventions, groups, ranks."""
    yield ALL_METRICS, {"truth": "truth"}
    yield ALL_METRICS, {"truth": "truth", "by": "model", "per_user": True}
    yield ALL_METRICS, {"truth": "truth", "missing": "zero", "empty": "skip", "by": ["model", "event_type"]}
    yield ALL_METRICS, {"truth": "truth", "ties": "trec_eval", "duplicates": "all", "ap_denominator": "min_k"}
    yield ALL_METRICS, {"truth": "truth", "ties": "item_asc", "gain": "exponential", "threshold": 2}
    yield ALL_METRICS, {"truth": "truth", "rank": "pos"}
    yield ALL_METRICS, {"relevance": "pos", "action": None}
    yield ALL_METRICS, {"truth": "recs", "action": "event_type", "relevance": {"buy": 3, "it's \\ odd": 1}}
    yield AVERAGED, {"truth": "truth", "ties": "average", "by": "model"}
    yield AVERAGED, {"relevance": "pos", "ties": "average", "per_user": True, "duplicates": "all"}
    yield TREC, {"truth": "truth", "by": "model"}
    yield TREC, {"truth": "truth", "missing": "zero", "by": "model", "per_user": True}
    yield TREC, {"relevance": "pos", "ap_denominator": "min_k"}
    yield TREC_AVERAGED, {"truth": "truth", "ties": "average", "missing": "zero", "by": "model"}
    yield TREC_AVERAGED, {"relevance": "pos", "ties": "average"}


@pytest.mark.parametrize("dialect", OTHERS)
def test_every_variant_parses_in_its_dialect(con, dialect):
    for metrics, options in variants():
        if dialect == "bigquery":  # a "." in a BigQuery name is a path: refused (test_trec_measures)
            metrics = [m for m in metrics if "." not in m]
        text = sqlmetrics.sql(con, "recs", metrics, dialect=dialect, **options)
        statements = sqlglot.parse(text, read=dialect, error_level=sqlglot.ErrorLevel.RAISE)
        assert len(statements) == 1 and statements[0].key == "select", (options, text)


def test_duckdb_dialect_is_the_default_rendering(con):
    for metrics, options in variants():
        assert sqlmetrics.sql(con, "recs", metrics, dialect="duckdb", **options) == sqlmetrics.sql(
            con, "recs", metrics, **options
        )


def test_duckdb_keeps_its_fast_path_and_others_get_the_portable_form(con):
    duck = sqlmetrics.sql(con, "recs", ["ndcg@10", "map@10"], truth="truth")
    # DuckDB's lists come from its top-n aggregates, not from a window over every row
    assert "arg_max(_item, _key, 12)" in duck and "ORDER BY _key DESC" not in duck
    for dialect in OTHERS:
        text = sqlmetrics.sql(con, "recs", ["ndcg@10", "map@10"], truth="truth", dialect=dialect)
        assert "row_number() OVER (PARTITION BY _user ORDER BY _key DESC" in text
        assert "lambda" not in text and "arg_max" not in text and "list_" not in text


@pytest.mark.parametrize(
    ("dialect", "table", "log2", "fails", "text_order"),
    [
        ("spark", "`analytics`.`recs`", "log2(", "raise_error(", "_item DESC"),
        ("postgres", '"analytics"."recs"', "ln(CAST(", "AS INTEGER) = 0", '_item COLLATE "C" DESC'),
        ("bigquery", "`analytics`.`recs`", "LOG(", "ERROR(", "_item DESC"),
        ("snowflake", '"analytics"."recs"', "LOG(2, ", "AS INTEGER) = 0", "_item DESC"),
    ],
)
def test_dialect_spellings(dialect, table, log2, fails, text_order):
    recs = ("analytics.recs", {"user_id": "BIGINT", "item_id": "STRING", "score": "DOUBLE"})
    truth = ("analytics.truth", {"user_id": "BIGINT", "item_id": "STRING"})
    text = sqlmetrics.sql(None, recs, ["ndcg@10"], truth=truth, dialect=dialect)
    assert f"FROM {table}" in text
    assert log2 in text and fails in text and text_order in text


def test_without_connection_inputs_come_with_their_columns():
    schema = pa.schema([("user_id", pa.int64()), ("item_id", pa.string()), ("score", pa.float64())])
    text = sqlmetrics.sql(None, ("proj.ds.recs", schema), ["map@10"], truth=("proj.ds.truth", schema),
                          dialect="bigquery")
    assert "FROM `proj`.`ds`.`recs`" in text
    with pytest.raises(sqlmetrics.SqlMetricsError, match=r"\(table name, columns\) pair"):
        sqlmetrics.sql(None, "recs", ["map@10"], dialect="bigquery")
    with pytest.raises(sqlmetrics.MissingColumnError, match="no score column"):
        sqlmetrics.sql(None, ("recs", {"user_id": "INT64", "item_id": "INT64"}), ["map@10"],
                       dialect="snowflake")
    with pytest.raises(sqlmetrics.SqlMetricsError, match="duckdb connection"):
        sqlmetrics.evaluate(None, ("recs", schema), ["map@10"])


def test_unknown_dialect(con):
    with pytest.raises(sqlmetrics.SqlMetricsError, match="dialect='mysql' is not one of 'duckdb', 'spark'"):
        sqlmetrics.sql(con, "recs", ["ndcg@10"], truth="truth", dialect="mysql")


BEYOND_METRICS = ["fcp", "fcp_surprise", "ndcg@3", "catalog_coverage@3", "distributional_coverage@3",
                  "gini@3", "novelty@3", "popularity@3", "diversity@3", "serendipity@3", "personalization@3"]


def beyond_variants():
    """(metrics, options) covering every branch of sql/beyond/."""
    yield BEYOND_METRICS, {"truth": "truth", "history": "history"}
    yield BEYOND_METRICS, {"truth": "truth", "history": "history", "by": "model", "catalog": "catalog",
                           "item_features": "features"}
    yield ["fcp", "novelty@2", "diversity@3", "serendipity@3"], {"truth": "truth", "history": "history",
                                                              "per_user": True, "by": "model"}
    yield ["fcp", "serendipity@3", "diversity@2"], {"relevance": "pos", "history": "history"}
    yield ["diversity@3", "personalization@2", "gini@2"], {"item_features": "features", "catalog": "catalog"}


@pytest.mark.parametrize("dialect", OTHERS)
def test_beyond_accuracy_metrics_render_in_every_dialect(con, dialect):
    con.execute("CREATE TABLE history AS SELECT user_id, item_id FROM recs")
    con.execute("CREATE TABLE catalog AS SELECT DISTINCT item_id FROM recs")
    con.execute("CREATE TABLE features AS SELECT DISTINCT item_id, [1.0, 2.0] AS features FROM recs")
    for metrics, options in beyond_variants():
        text = sqlmetrics.sql(con, "recs", metrics, dialect=dialect, **options)
        statements = sqlglot.parse(text, read=dialect, error_level=sqlglot.ErrorLevel.RAISE)
        assert len(statements) == 1 and statements[0].key == "select", (options, text)
        assert "lambda" not in text and "list_transform" not in text and "unnest(_top)" not in text
        quote = "`" if dialect in ("spark", "bigquery") else '"'
        assert f"AS {quote}{metrics[-1]}{quote}" in text  # the columns quoted in the dialect's way


def test_files_only_where_the_dialect_reads_them(con, tmp_path):
    path = str(tmp_path / "recs.parquet")
    con.execute(f"COPY recs TO '{path}' (FORMAT parquet)")
    spark = sqlmetrics.sql(con, path, ["ndcg@10"], truth="truth", dialect="spark")
    assert f"FROM parquet.`{path}`" in spark
    for dialect in ("postgres", "bigquery", "snowflake"):
        with pytest.raises(sqlmetrics.SqlMetricsError, match=f"{dialect} SQL cannot read a file"):
            sqlmetrics.sql(con, path, ["ndcg@10"], truth="truth", dialect=dialect)
    with pytest.raises(sqlmetrics.SqlMetricsError, match="exists only in this Python process"):
        sqlmetrics.sql(con, pa.table({"user_id": [1], "item_id": ["a"], "score": [1.0]}), ["ndcg@10"],
                       truth="truth", dialect="spark")


@pytest.mark.parametrize("dialect", OTHERS)
def test_names_and_text_cannot_escape_their_quotes(dialect):
    """Column names with both quote characters and an action with a quote and a backslash
    come out of the parser as the same names and the same text."""
    user, item, action = 'us"er`id', "it'em", "it's \\ done"
    recs = ("recs", {user: "BIGINT", item: "VARCHAR", "score": "DOUBLE"})
    truth = ("truth", {user: "BIGINT", item: "VARCHAR", "event": "VARCHAR"})
    text = sqlmetrics.sql(None, recs, ["ndcg@10"], truth=truth, user=user, item=item, action="event",
                          relevance={action: 2}, dialect=dialect)
    tree = sqlglot.parse_one(text, read=dialect)
    names = {c.name for c in tree.find_all(sqlglot.exp.Column)}
    assert {user, item, "event"} <= names
    literals = {lit.this for lit in tree.find_all(sqlglot.exp.Literal) if lit.is_string}
    assert action in literals


# ---- BigQuery and Snowflake text, run through sqlglot on DuckDB ----------------------------------


def _through_duckdb(data, metrics, conventions, dialect) -> pa.Table:
    con = duckdb.connect()
    con.register("recs_frame", data.recs_table())
    con.execute("CREATE TABLE recs AS SELECT * FROM recs_frame")
    truth = data.truth_table()
    if truth is not None:
        con.register("truth_frame", truth)
        con.execute("CREATE TABLE truth AS SELECT * FROM truth_frame")
    options = dict(truth=None if truth is None else "truth", by="model" if data.grouped else None,
                   **conventions)
    text = sqlmetrics.sql(con, "recs", metrics, dialect=dialect, **options)
    translated = sqlglot.transpile(text, read=dialect, write="duckdb")[0]
    return con.sql(translated).to_arrow_table()


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake"])
@pytest.mark.parametrize("conventions", CASES, ids=case_id)
@settings(FAST, max_examples=2)  # batches of 1 to 8 random evaluations
@given(data=batch(), ks=cutoffs)
def test_bigquery_and_snowflake_text_computes_the_same(dialect, conventions, data, ks):
    metrics = metric_names(ks, conventions.get("ties", "item_desc"), True)
    expected = sqlmetrics.evaluate(
        DUCKDB, data.recs_table(), metrics, truth=data.truth_table(),
        by="model" if data.grouped else None, **conventions,
    )
    assert_close_tables(_through_duckdb(data, metrics, conventions, dialect).cast(expected.schema), expected)


def test_command_line_dialect(tmp_path, capsys):
    from sqlmetrics import cli

    db = str(tmp_path / "w.duckdb")
    with duckdb.connect(db) as con:
        con.execute("CREATE TABLE recs (user_id BIGINT, item_id VARCHAR, score DOUBLE)")
        con.execute("CREATE TABLE purchases (user_id BIGINT, item_id VARCHAR)")
    code = cli.main(["sql", "recs", "--db", db, "--truth", "purchases", "--metrics", "ndcg@10,map@10",
                     "--dialect", "bigquery"])
    out = capsys.readouterr().out
    assert code == 0 and "FROM `recs`" in out
    sqlglot.parse_one(out, read="bigquery")


def render_block(dialect: str, block: str) -> str:
    """The dialect's building block `block` applied to '§'."""
    from sqlmetrics.statement.templates import environment

    text = "{% import 'dialects/' ~ dialect ~ '.sql.j2' as d %}{{ d[block]('§') }}"
    return environment().from_string(text).render(dialect=dialect, block=block)


def test_every_engine_renders_the_same_formula(con):
    """One formula, one place: the per-user metric expressions are the same text on every
    engine but for the dialect's spellings (DuckDB's own path differs only in the top lists)."""
    metrics = ["ndcg@10", "map@10", "recall@10", "precision@10", "mrr@10"]

    def per_user(text: str, dialect: str) -> str:
        # the exact sums read columns of their terms; the building blocks in them that engines
        # spell differently (the wide integer of a scaled term, and its sum as a double) are
        # written scaled_integer(v) and int_to_double(sum(s)) here
        text = text[text.index("per_user AS (") : text.index("GROUP BY _user, _relevant_count")]
        for block, argument in (("scaled_integer", r"_v[0-9]+"), ("int_to_double", r"sum\(_s[0-9]+\)")):
            parts = [re.escape(part) for part in render_block(dialect, block).split("§")]
            pattern = parts[0] + f"({argument})" + r"\1".join(parts[1:])
            text = re.sub(pattern, block + r"(\1)", text)
        return text

    duck = per_user(sqlmetrics.sql(con, "recs", metrics, truth="truth"), "duckdb")
    spark = per_user(sqlmetrics.sql(con, "recs", metrics, truth="truth", dialect="spark"), "spark")
    assert "int_to_double(sum(_s0))" in duck and "scaled_integer(_v0)" in duck
    assert "list_transform" not in duck
    assert duck.replace("`", '"') == spark.replace("`", '"')
    assert "-- ndcg@10 = dcg@k / idcg@k" in duck


HOSTILE_NAMES = [
    "a`b", "``", "a\\`b", "a\\", "\\", "\\\\`", 'a"b', '""', "a'b", "a\\'b", "a\\nb", "a\nb", "a\rb",
    "a\r\nb", "a\tb", "\x0b\x0c\x1c\x85", "é 😀 \u2028\u2029", "x` FROM y --", "x' OR 1=1 --",
]


@pytest.mark.parametrize("dialect", sorted(NAMES))
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_quoted_names_and_text_round_trip_through_sqlglot(dialect, name):
    """Each dialect's own tokenizer (sqlglot's) reads back exactly the name or the text given:
    BigQuery escapes with backslashes inside backticks, the others double the quote."""
    d = get_dialect(dialect)
    tree = sqlglot.parse_one(f"SELECT {d.quote_string(name)} AS {d.quote_identifier(name)}", read=dialect)
    (column,) = tree.expressions
    assert column.args["alias"].this == name
    assert column.this.is_string and column.this.this == name


@pytest.mark.parametrize("dialect", OTHERS)
def test_hostile_table_and_column_names_in_a_whole_statement(dialect):
    for name in HOSTILE_NAMES:
        recs = (f"s.{name}", {name: "BIGINT", "item_id": "VARCHAR", "score": "DOUBLE"})
        truth = (f"{name}t", {name: "BIGINT", "item_id": "VARCHAR", "event": "VARCHAR"})
        text = sqlmetrics.sql(None, recs, ["ndcg@10"], truth=truth, user=name, action="event",
                              relevance={name: 2}, dialect=dialect)
        tree = sqlglot.parse_one(text, read=dialect)
        tables = {(t.db, t.name) for t in tree.find_all(sqlglot.exp.Table)}
        assert {("s", name), ("", f"{name}t")} <= tables
        assert name in {c.name for c in tree.find_all(sqlglot.exp.Column)}
        assert name in {lit.this for lit in tree.find_all(sqlglot.exp.Literal) if lit.is_string}
