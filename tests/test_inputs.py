"""Inputs of every kind give the same answer; nothing is left behind in the connection."""

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import sqlmetrics

RECS = pa.table(
    {
        "user_id": [1, 1, 1, 2, 2, 3],
        "item_id": [10, 11, 12, 10, 13, 14],
        "score": [0.9, 0.8, 0.7, 0.5, 0.6, 0.1],
    }
)
TRUTH = pa.table({"user_id": [1, 2, 2, 4], "item_id": [11, 10, 99, 10], "relevance": [2, 1, 3, 1]})
METRICS = ["ndcg@2", "map@3", "recall@1", "precision@2"]


def objects(con):
    return con.execute(
        "SELECT count(*) FROM (SELECT table_name FROM duckdb_tables() UNION ALL "
        "SELECT view_name FROM duckdb_views() WHERE NOT internal)"
    ).fetchall()[0][0]


@pytest.fixture
def expected():
    con = duckdb.connect()
    return sqlmetrics.evaluate(con, RECS, METRICS, truth=TRUTH)


def test_arrow_input_matches_hand_computed_values(con, expected):
    # user 1: list 10, 11, 12; truth 11 (rel 2). user 2: list 13, 10; truth 10 (1), 99 (3).
    # users 3 (no truth) and 4 (no recs) are not evaluated.
    import math

    assert expected.column("users").to_pylist() == [2]
    ndcg_u1 = (2 / math.log2(3)) / 2
    ndcg_u2 = (1 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert expected.column("ndcg@2")[0].as_py() == pytest.approx((ndcg_u1 + ndcg_u2) / 2, abs=1e-15)
    assert expected.column("map@3")[0].as_py() == pytest.approx((1 / 2 + (1 / 2) / 2) / 2, abs=1e-15)


@pytest.mark.parametrize(
    "kind", ["table", "relation", "parquet", "csv", "pandas", "polars", "polars_lazy", "path"]
)
def test_every_input_kind_gives_the_same_table(con, expected, kind, tmp_path):
    if kind == "table":
        con.register("r_view", RECS)
        con.execute("CREATE TABLE r AS SELECT * FROM r_view").fetchall()
        con.unregister("r_view")
        con.register("t_view", TRUTH)
        con.execute("CREATE TABLE t AS SELECT * FROM t_view").fetchall()
        con.unregister("t_view")
        recs, truth = "r", "t"
    elif kind == "relation":
        recs, truth = con.from_arrow(RECS).filter("true"), con.from_arrow(TRUTH)
    elif kind in ("parquet", "path"):
        import pyarrow.parquet as pq

        pq.write_table(RECS, tmp_path / "recs.parquet")
        pq.write_table(TRUTH, tmp_path / "truth.parquet")
        recs, truth = tmp_path / "recs.parquet", str(tmp_path / "truth.parquet")
        if kind == "parquet":
            recs = str(recs)
    elif kind == "csv":
        RECS.to_pandas().to_csv(tmp_path / "recs.csv", index=False)
        TRUTH.to_pandas().to_csv(tmp_path / "truth.csv", index=False)
        recs, truth = str(tmp_path / "recs.csv"), str(tmp_path / "truth.csv")
    elif kind == "pandas":
        recs, truth = RECS.to_pandas(), TRUTH.to_pandas()
    elif kind == "polars":
        recs, truth = pl.from_arrow(RECS), pl.from_arrow(TRUTH)
    else:
        recs, truth = pl.from_arrow(RECS).lazy(), pl.from_arrow(TRUTH).lazy()
    before = objects(con)
    out = sqlmetrics.evaluate(con, recs, METRICS, truth=truth)
    assert out.equals(expected)
    assert objects(con) == before


def test_parquet_glob(con, expected, tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(RECS.slice(0, 3), tmp_path / "part-1.parquet")
    pq.write_table(RECS.slice(3), tmp_path / "part-2.parquet")
    out = sqlmetrics.evaluate(con, str(tmp_path / "part-*.parquet"), METRICS, truth=TRUTH)
    assert out.equals(expected)


def test_frames_are_unregistered_even_when_the_query_fails(con):
    bad = pd.DataFrame({"user_id": [1, 1], "item_id": [1, 1], "score": [0.5, 0.4]})
    with pytest.raises(sqlmetrics.DuplicateRowError):
        sqlmetrics.evaluate(con, bad, ["ndcg@2"], truth=TRUTH)
    assert objects(con) == 0


def test_result_schema_and_order(con):
    recs = RECS.append_column("model", pa.array(["b", "b", "b", "a", "a", "a"]))
    out = sqlmetrics.evaluate(con, recs, ["ndcg@2", "recall@1"], truth=TRUTH, by="model")
    assert out.schema.names == ["model", "users", "ndcg@2", "recall@1"]
    assert out.schema.field("users").type == pa.int64()
    assert out.schema.field("ndcg@2").type == pa.float64()
    assert out.column("model").to_pylist() == ["a", "b"]
    assert out.column("users").to_pylist() == [1, 1]


def test_per_user_rows(con):
    out = sqlmetrics.evaluate(con, RECS, ["precision@2", "recall@2"], truth=TRUTH, per_user=True)
    assert out.schema.names == ["user_id", "precision@2", "recall@2"]
    assert out.to_pylist() == [
        {"user_id": 1, "precision@2": 0.5, "recall@2": 1.0},
        {"user_id": 2, "precision@2": 0.5, "recall@2": 0.5},
    ]


def test_missing_and_empty_conventions(con):
    truth = pa.table({"user_id": [1, 2, 4, 3], "item_id": [11, 10, 10, 14], "relevance": [2, 1, 1, 0]})
    # user 3's only truth row has relevance 0: an "empty" user; user 4 has no recs: "missing".
    counts = {}
    for empty in ("zero", "skip"):
        for missing in ("skip", "zero"):
            out = sqlmetrics.evaluate(con, RECS, ["recall@3"], truth=truth, empty=empty, missing=missing)
            counts[empty, missing] = (
                out.column("users")[0].as_py(),
                out.column("recall@3")[0].as_py(),
            )
    assert counts["zero", "skip"] == (3, pytest.approx(2 / 3))
    assert counts["skip", "skip"] == (2, 1.0)
    assert counts["zero", "zero"] == (4, 0.5)
    assert counts["skip", "zero"] == (3, pytest.approx(2 / 3))


def test_missing_zero_counts_absent_users_in_every_group(con):
    recs = RECS.append_column("model", pa.array(["a", "a", "a", "b", "b", "b"]))
    out = sqlmetrics.evaluate(con, recs, ["hit_rate@3"], truth=TRUTH, by=["model"], missing="zero")
    # truth users 1, 2, 4: model a has user 1 only, model b has user 2 only
    assert out.to_pylist() == [
        {"model": "a", "users": 3, "hit_rate@3": pytest.approx(1 / 3)},
        {"model": "b", "users": 3, "hit_rate@3": pytest.approx(1 / 3)},
    ]


def test_rank_column_orders_ascending(con):
    recs = pa.table({"user_id": [1, 1, 1], "item_id": [10, 11, 12], "pos": [3, 1, 2]})
    truth = pa.table({"user_id": [1], "item_id": [12], "relevance": [1]})
    out = sqlmetrics.evaluate(con, recs, ["mrr@3"], truth=truth, rank="pos")
    assert out.column("mrr@3")[0].as_py() == 0.5


def test_tie_orders(con):
    recs = pa.table({"user_id": [1] * 3, "item_id": [9, 10, 100], "score": [1.0, 1.0, 1.0]})
    for item, expected in [
        (100, {"item_desc": 1.0, "item_asc": 1 / 3, "trec_eval": 1 / 2}),
        (9, {"item_desc": 1 / 3, "item_asc": 1.0, "trec_eval": 1.0}),
    ]:
        truth = pa.table({"user_id": [1], "item_id": [item], "relevance": [1]})
        for ties, mrr in expected.items():
            out = sqlmetrics.evaluate(con, recs, ["mrr@3"], truth=truth, ties=ties)
            assert out.column("mrr@3")[0].as_py() == pytest.approx(mrr), (item, ties)
        average = sqlmetrics.evaluate(con, recs, ["precision@1", "hit_rate@1"], truth=truth, ties="average")
        assert average.column("precision@1")[0].as_py() == pytest.approx(1 / 3)
        assert average.column("hit_rate@1")[0].as_py() == pytest.approx(1 / 3)


def test_truth_without_relevance_column_is_binary(con):
    out = sqlmetrics.evaluate(con, RECS, ["recall@3"], truth=TRUTH.drop_columns(["relevance"]))
    assert out.column("recall@3")[0].as_py() == pytest.approx((1 + 1 / 2) / 2)


def test_custom_column_names_and_boolean_relevance(con):
    recs = pa.table({"uid": ["x", "x"], "sku": ["a", "b"], "pred": [0.2, 0.9], "clicked": [True, False]})
    out = sqlmetrics.evaluate(con, recs, ["mrr@2"], user="uid", item="sku", score="pred", relevance="clicked")
    assert out.column("mrr@2")[0].as_py() == 0.5


def test_sql_text_runs_in_a_fresh_duckdb(tmp_path):
    path = str(tmp_path / "w.duckdb")
    con = duckdb.connect(path)
    con.register("r", RECS)
    con.execute("CREATE TABLE recs AS SELECT * FROM r").fetchall()
    con.unregister("r")
    con.register("t", TRUTH)
    con.execute("CREATE TABLE truth AS SELECT * FROM t").fetchall()
    con.unregister("t")
    text = sqlmetrics.sql(con, "recs", METRICS, truth="truth")
    expected = sqlmetrics.evaluate(con, "recs", METRICS, truth="truth")
    con.close()
    other = duckdb.connect(path)
    assert other.sql(text).to_arrow_table().equals(expected)
    other.close()


def rows_scanned(con, text, tmp_path):
    """Rows each scan of the statement read, from DuckDB's profiler: {file: [rows, ...]}."""
    import json

    profile = tmp_path / "profile.json"
    con.execute("PRAGMA enable_profiling='json'").fetchall()
    con.execute(f"PRAGMA profiling_output='{profile}'").fetchall()
    con.execute(text).fetchall()
    con.execute("PRAGMA disable_profiling").fetchall()
    scans: dict[str, list[int]] = {}

    def walk(node):
        if node["type"] == "TABLE_SCAN":
            name = node["extra_info"].get("Filename(s)", "")
            scans.setdefault(name.rsplit("/", 1)[-1], []).append(node["rows_scanned"])
        for child in node.get("children", []):
            walk(child)

    for node in json.loads(profile.read_text())["operator"]:
        walk(node)
    return scans


def test_one_statement_reads_each_input_once(con, tmp_path):
    import pyarrow.parquet as pq

    users, items = 1000, 50
    recs = pa.table(
        {
            "user_id": [u for u in range(users) for _ in range(items)],
            "item_id": [i for _ in range(users) for i in range(items)],
            "score": [
                ((u * 7919 + i * 104729) % 1000003) / 1000003 for u in range(users) for i in range(items)
            ],
        }
    )
    truth = pa.table({"user_id": list(range(users)), "item_id": [u % items for u in range(users)]})
    pq.write_table(recs, tmp_path / "recs.parquet")
    pq.write_table(truth, tmp_path / "truth.parquet")
    text = sqlmetrics.sql(
        con,
        str(tmp_path / "recs.parquet"),
        ["ndcg@10", "map@10", "recall@20", "mrr@5"],
        truth=str(tmp_path / "truth.parquet"),
    )
    assert len(con.extract_statements(text)) == 1
    scans = rows_scanned(con, text, tmp_path)
    # no score ties at any user's cutoff: the tie fallback reads nothing (DuckDB may start its
    # scan, one vector of 2048 rows, before it learns that no user needs it)
    assert scans["recs.parquet"][0] == users * items
    assert sum(scans["recs.parquet"][1:]) <= 2048
    assert scans["truth.parquet"] == [users]


def test_boundary_ties_are_read_again_only_for_their_users(con, tmp_path):
    import pyarrow.parquet as pq

    # user 0: all 30 scores tied; users 1..99: distinct scores
    rows = [(0, i, 0.5) for i in range(30)] + [(u, i, u + i / 100) for u in range(1, 100) for i in range(30)]
    recs = pa.table(
        {"user_id": [r[0] for r in rows], "item_id": [r[1] for r in rows], "score": [r[2] for r in rows]}
    )
    pq.write_table(recs, tmp_path / "recs.parquet", row_group_size=300)
    pq.write_table(pa.table({"user_id": list(range(100)), "item_id": [29] * 100}), tmp_path / "truth.parquet")
    text = sqlmetrics.sql(
        con, str(tmp_path / "recs.parquet"), ["mrr@5"], truth=str(tmp_path / "truth.parquet")
    )
    scans = rows_scanned(con, text, tmp_path)
    assert scans["recs.parquet"][0] == len(rows)
    assert 30 <= sum(scans["recs.parquet"][1:]) <= 300  # the row group of user 0, not the rest
    per_user = sqlmetrics.evaluate(
        con, str(tmp_path / "recs.parquet"), ["mrr@5"], truth=str(tmp_path / "truth.parquet"), per_user=True
    )
    # user 0: item 29 comes first of its 30 tied items (item ids descending); users 1..99: item
    # 29 has the highest score
    assert per_user.column("mrr@5").to_pylist() == [1.0] * 100


def test_sql_refuses_in_memory_inputs(con):
    with pytest.raises(sqlmetrics.SqlMetricsError, match="only in this Python process"):
        sqlmetrics.sql(con, RECS, ["ndcg@1"], truth=TRUTH)
    assert objects(con) == 0


def test_metric_functions(con):
    out = sqlmetrics.ndcg(con, RECS, k=[1, 2], truth=TRUTH)
    assert out.schema.names == ["users", "ndcg@1", "ndcg@2"]
    assert sqlmetrics.map(con, RECS, k=3, truth=TRUTH).schema.names == ["users", "map@3"]
    assert sqlmetrics.r_precision(con, RECS, truth=TRUTH).schema.names == ["users", "r_precision"]
    # (iprec_at_recall_0.50, 11pt_avg: no Python name, evaluate() only)
    every = {name: getattr(sqlmetrics, name) for name in sqlmetrics.METRICS if name.isidentifier()}
    assert sqlmetrics.ndcg(con, RECS, k=None, truth=TRUTH).schema.names == ["users", "ndcg"]
    # the measures over item groups: genres (item_features), a baseline system (by, baseline);
    # the intent-aware ones: subtopics=, no truth=
    genres = pa.table({"item_id": [10, 11, 12, 13, 14], "features": [[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 2})
    subtopics = TRUTH.append_column("subtopic", pa.array(["s1"] * len(TRUTH)))
    for name, function in every.items():
        if "subtopics" in sqlmetrics.METRICS[name].reads:
            out = function(con, RECS, subtopics=subtopics)
            assert out.num_rows == 1 and out.schema.names[0] == "users", name
            continue
        needs = sqlmetrics.METRICS[name].needs
        extra = {"history": TRUTH} if sqlmetrics.METRICS[name].beyond else {}  # beyond accuracy
        extra |= {"item_features": genres} if "genres" in needs else {}  # (groups too)
        extra |= {"by": "day", "baseline": 1} if "baseline" in needs else {}
        recs = RECS.append_column("day", pa.array([1] * RECS.num_rows)) if "baseline" in needs else RECS
        out = function(con, recs, truth=TRUTH, **extra)
        assert out.num_rows == 1 and out.schema.names[0] == ("day" if "baseline" in needs else "users"), name


@pytest.mark.parametrize("make", [lambda o: o.table("recs"), lambda o: o.sql("SELECT * FROM recs")])
def test_a_relation_of_another_connection_is_refused(con, make):
    # both connections hold a table `recs`: the relation's SQL text would read con's
    other = duckdb.connect()
    for c, score in ((con, [0.9, 0.8, 0.7, 0.5, 0.6, 0.1]), (other, [0.1] * 6)):
        c.register("frame", RECS.set_column(2, "score", pa.array(score)))
        c.execute("CREATE TABLE recs AS SELECT * FROM frame")
        c.unregister("frame")
    with pytest.raises(sqlmetrics.UnknownTableError, match="recs: .*another .*connection"):
        sqlmetrics.evaluate(con, make(other), METRICS, truth=TRUTH)
    with pytest.raises(sqlmetrics.UnknownTableError, match="truth: .*another .*connection"):
        sqlmetrics.evaluate(con, "recs", METRICS, truth=other.table("recs"))
    relation = make(other)
    other.close()
    with pytest.raises(sqlmetrics.UnknownTableError, match="closed"):
        sqlmetrics.evaluate(con, relation, METRICS, truth=TRUTH)
    # a relation of con itself is read as before
    assert sqlmetrics.evaluate(con, make(con), METRICS, truth=TRUTH) == sqlmetrics.evaluate(
        con, "recs", METRICS, truth=TRUTH
    )
