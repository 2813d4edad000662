"""Inputs DuckDB cannot read, or reads only with care, give a sqlmetrics error naming the input,
never DuckDB's own exception (issue 17, item 12)."""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics.inputs import columns

RECS = pa.table(
    {"user_id": [1, 1, 2], "item_id": ["a", "b", "a"], "score": [0.9, 0.8, 0.5], "relevance": [0, 1, 1]}
)


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"PAR1 this is no footer PAR1", "Footer"),
        (b"", "too small"),
        (b"user_id,item_id\n1,a\n", "magic bytes"),
    ],
)
def test_a_file_that_is_not_parquet(con, tmp_path, content, problem):
    path = tmp_path / "day.parquet"
    path.write_bytes(content)
    with pytest.raises(sqlmetrics.UnknownTableError, match=f"recs: cannot read '{path}'.*{problem}"):
        sqlmetrics.evaluate(con, str(path), ["ndcg@2"])
    with pytest.raises(sqlmetrics.UnknownTableError, match=f"truth: cannot read '{path}'"):
        sqlmetrics.evaluate(con, RECS, ["ndcg@2"], truth=str(path))


@pytest.mark.parametrize(
    "other",
    [
        pa.table({"x": [1]}),  # a column missing
        RECS.set_column(2, "score", pa.array(["high", "low", "low"])),  # a column of another type
    ],
)
def test_a_glob_whose_files_disagree(con, tmp_path, other):
    pq.write_table(RECS, tmp_path / "a.parquet")
    pq.write_table(other, tmp_path / "b.parquet")
    glob = str(tmp_path / "*.parquet")
    with pytest.raises(sqlmetrics.UnknownTableError, match=r"recs: cannot read '.*\*\.parquet'.*b\.parquet"):
        sqlmetrics.evaluate(con, glob, ["ndcg@2"])
    if "user_id" not in other.column_names:  # (truth reads no score)
        with pytest.raises(sqlmetrics.UnknownTableError, match=r"truth: cannot read '.*\*\.parquet'"):
            sqlmetrics.evaluate(con, RECS, ["ndcg@2"], truth=glob)


def test_a_corrupt_file_later_in_a_glob(con, tmp_path):
    pq.write_table(RECS, tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"PAR1 corrupt PAR1")
    with pytest.raises(sqlmetrics.UnknownTableError, match=r"recs: cannot read '.*\*\.parquet'"):
        sqlmetrics.evaluate(con, str(tmp_path / "*.parquet"), ["ndcg@2"])


@pytest.mark.parametrize(
    "query, params",
    [
        ("SELECT * FROM recs -- the recommendations", None),
        ("SELECT * FROM recs /* all */ -- of them\n-- yes", None),
        ("SELECT * FROM recs WHERE user_id = ?", [1]),
        ("SELECT * FROM recs WHERE user_id = $u", {"u": 1}),
    ],
)
def test_relations_with_comments_or_parameters(con, query, params):
    con.register("frame", RECS)
    con.execute("CREATE TABLE recs AS SELECT * FROM frame")
    con.unregister("frame")
    expected = sqlmetrics.evaluate(
        con, RECS.filter(pa.compute.equal(RECS["user_id"], 1)) if params else RECS, ["ndcg@2"]
    )
    got = sqlmetrics.evaluate(con, con.sql(query, params=params), ["ndcg@2"])
    assert got == expected
    if params:  # sql() cannot carry the values of the parameters
        with pytest.raises(sqlmetrics.SqlMetricsError, match="exists only in this Python process"):
            sqlmetrics.sql(con, con.sql(query, params=params), ["ndcg@2"])
    else:
        text = sqlmetrics.sql(con, con.sql(query), ["ndcg@2"])
        assert con.sql(text).to_arrow_table() == expected


@pytest.mark.parametrize("frame", [pd.DataFrame(), pa.table({})])
def test_a_frame_without_columns(con, frame):
    with pytest.raises(sqlmetrics.MissingColumnError, match=r"^recs \(recs \w+\) has no columns$"):
        sqlmetrics.evaluate(con, frame, ["ndcg@2"])
    with pytest.raises(sqlmetrics.MissingColumnError, match=r"^truth \(truth \w+\) has no columns$"):
        sqlmetrics.evaluate(con, RECS, ["ndcg@2"], truth=frame)


@pytest.mark.parametrize(
    "duck_type, smallest, largest",
    [
        ("TINYINT", -(2**7), 2**7 - 1),
        ("SMALLINT", -(2**15), 2**15 - 1),
        ("INTEGER", -(2**31), 2**31 - 1),
        ("BIGINT", -(2**63), 2**63 - 1),
        ("HUGEINT", -(2**127), 2**127 - 1),
        ("UBIGINT", 0, 2**64 - 1),
        ("UHUGEINT", 0, 2**128 - 1),
    ],
)
@pytest.mark.parametrize("metric", ["ndcg@2", "r_precision", "ndcg@200000"])
def test_item_asc_orders_the_extreme_scores_of_every_integer_type(con, duck_type, smallest, largest, metric):
    # user 1: two items tied at the smallest score, the relevant one first by item_asc ('a');
    # user 2: the largest score and the one below it, the relevant item has the largest
    rows = [(1, "a", smallest, 1), (1, "b", smallest, 0), (1, "c", smallest, 0),
            (2, "x", largest - 1, 0), (2, "y", largest, 1)]
    con.execute(f"CREATE TABLE m (user_id INTEGER, item_id VARCHAR, score {duck_type}, relevance INTEGER)")
    con.executemany("INSERT INTO m VALUES (?, ?, ?, ?)", [(u, i, str(s), r) for u, i, s, r in rows])
    got = sqlmetrics.evaluate(con, "m", [metric], ties="item_asc", per_user=True).to_pylist()
    assert [row[metric] for row in got] == [1.0, 1.0]


def test_time_columns_are_dates_or_timestamps_not_lists_of_them():
    assert columns.is_time("DATE") and columns.is_time("TIMESTAMP_NS")
    assert columns.is_time("TIMESTAMP WITH TIME ZONE")
    assert not columns.is_time("DATE[]") and not columns.is_time("TIMESTAMP[3]")
    assert not columns.is_time("DATETIME_LIKE") and not columns.is_time("VARCHAR")
