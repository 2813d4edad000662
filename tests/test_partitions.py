"""partitions=N: the users evaluated in N hash partitions give the numbers of one statement,
to the last bit, in every mode; and what partitions cannot do is refused clearly."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FAST, batch
from test_invariants import assert_identical, conventions, large_inputs, metrics_for

import sqlmetrics

CON = duckdb.connect()


def evaluate(data, metrics, **options):
    by = "model" if data.grouped else None
    return sqlmetrics.evaluate(CON, data.recs_table(), metrics, truth=data.truth_table(), by=by, **options)


@settings(FAST, max_examples=10)  # batches of 1 to 8 random evaluations (strategies.batch)
@given(data=batch(), options=conventions, partitions=st.integers(2, 5))
def test_partitions_give_the_numbers_of_one_statement(data, options, partitions):
    # a few users spread over up to 5 partitions: some partitions hold no user, some groups
    # have no user in a partition (missing="zero" must still evaluate them there)
    metrics = metrics_for(options["ties"])
    for per_user in (False, True):
        one = evaluate(data, metrics, per_user=per_user, **options)
        split = evaluate(data, metrics, per_user=per_user, partitions=partitions, **options)
        assert one.schema == split.schema
        assert_identical(one.to_pylist(), split.to_pylist(), f"partitions={partitions}, per_user={per_user}")


@pytest.mark.parametrize("per_user", [False, True])
def test_partitions_on_larger_data(per_user):
    recs, truth = large_inputs(seed=11)
    metrics = metrics_for("item_desc")
    one = sqlmetrics.evaluate(CON, recs, metrics, truth=truth, per_user=per_user)
    split = sqlmetrics.evaluate(CON, recs, metrics, truth=truth, per_user=per_user, partitions=7)
    assert one.equals(split)
    assert one.num_rows == (4000 if per_user else 1)


def test_integer_users_of_different_widths_meet_in_the_same_partition():
    # INTEGER users in recs, BIGINT in truth: hashed as one type, or users would be lost
    recs = pa.table(
        {
            "user_id": pa.array(list(range(200)) * 2, pa.int32()),
            "item_id": [1] * 200 + [2] * 200,
            "score": [0.9] * 200 + [0.1] * 200,
        }
    )
    truth = pa.table({"user_id": pa.array(range(200), pa.int64()), "item_id": [2] * 200})
    out = sqlmetrics.evaluate(CON, recs, ["mrr@2"], truth=truth, partitions=3)
    assert out.to_pylist() == [{"users": 200, "mrr@2": 0.5}]


def test_text_users_and_an_action_column():
    recs = pa.table({"user_id": ["a", "a", "b", "c"], "item_id": [1, 2, 1, 3], "score": [0.9, 0.8, 0.7, 0.6]})
    truth = pa.table(
        {
            "user_id": ["a", "a", "b", "c"],
            "item_id": [2, 2, 1, 4],
            "action": ["view", "purchase", "view", "view"],
        }
    )
    options = {"truth": truth, "action": "action", "relevance": {"purchase": 3, "view": 1}}
    one = sqlmetrics.evaluate(CON, recs, ["ndcg@2", "recall@2"], **options)
    assert sqlmetrics.evaluate(CON, recs, ["ndcg@2", "recall@2"], partitions=2, **options).equals(one)


def test_bad_input_is_reported_from_its_partition():
    recs = pa.table({"user_id": list(range(50)) + [7], "item_id": [1] * 51, "score": [0.5] * 51})
    with pytest.raises(sqlmetrics.DuplicateRowError, match="user_id = 7, item_id = 1"):
        sqlmetrics.evaluate(CON, recs, ["ndcg@5"], truth=recs.drop(["score"]), partitions=4)


def test_progress_is_one_line_per_partition(capsys):
    recs = pa.table({"user_id": [1, 2, 3], "item_id": [1, 1, 1], "score": [0.5, 0.5, 0.5]})
    sqlmetrics.evaluate(CON, recs, ["ndcg@5"], truth=recs.drop(["score"]), partitions=3, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert [line.split("]")[0] for line in lines] == [f"sqlmetrics partitions [{i}/3" for i in (1, 2, 3)]


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4"])
def test_partitions_must_be_a_whole_number(bad):
    recs = pa.table({"user_id": [1], "item_id": [1], "score": [0.5], "relevance": [1]})
    with pytest.raises(sqlmetrics.ConventionError, match="partitions must be a whole number"):
        sqlmetrics.evaluate(CON, recs, ["ndcg@5"], partitions=bad)


def test_what_partitions_cannot_do_is_refused():
    recs = pa.table({"user_id": [1], "item_id": [1], "score": [0.5], "relevance": [1]})
    with pytest.raises(sqlmetrics.UnsupportedError, match="without partitions"):
        sqlmetrics.evaluate(CON, recs, ["ndcg@5", "distributional_coverage@5"], partitions=2)
    CON.register("one_row", recs)
    with pytest.raises(sqlmetrics.ConventionError, match="evaluate\\(\\) only"):
        sqlmetrics.sql(CON, "one_row", ["ndcg@5"], partitions=2)
    assert "WITH" in sqlmetrics.sql(CON, "one_row", ["ndcg@5"], partitions=1)


def test_running_out_of_memory_says_how_partitions_help():
    recs, truth = large_inputs(seed=3)
    con = duckdb.connect()
    con.execute("SET memory_limit = '2MB'").fetchall()
    try:
        for partitions, advice in ((1, "partitions=N"), (2, "more than partitions=2")):
            with pytest.raises(sqlmetrics.OutOfMemoryError, match=advice) as caught:
                sqlmetrics.evaluate(con, recs, ["ndcg@10"], truth=truth, partitions=partitions)
            assert isinstance(caught.value, duckdb.OutOfMemoryException)  # DuckDB's own, still
    finally:
        con.close()


def test_the_command_line_says_it_in_one_line(tmp_path, capsys):
    from sqlmetrics import cli

    recs, truth = large_inputs(seed=3)
    pq.write_table(recs, tmp_path / "recs.parquet")
    pq.write_table(truth, tmp_path / "truth.parquet")
    code = cli.main(["evaluate", str(tmp_path / "recs.parquet"), "--truth", str(tmp_path / "truth.parquet"),
                     "-m", "ndcg@10", "--memory-limit", "2MB"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "--partitions N" in err and len(err.strip().splitlines()) == 1, err
