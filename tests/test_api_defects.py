"""Issue 33, item 3: defects of the public API and the command line found by an adversarial
review (a, b, c, d, e, f, g, h, m), each with the test that failed before its fix."""

import pyarrow as pa
import pytest
from test_cli import run as cli

import sqlmetrics
from sqlmetrics.errors import UnknownMetricError

RECS = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "c"], "score": [0.9, 0.8, 0.7]})
TRUTH = pa.table({"user_id": [1, 2], "item_id": ["b", "c"], "relevance": [1, 2]})


# c. a comma list in one string, as the command line takes it -------------------------------


def test_a_comma_list_in_one_string_is_several_metrics(con):
    listed = sqlmetrics.evaluate(con, RECS, ["ndcg@10", "map@10", "P.5,10"], truth=TRUTH)
    for text in ("ndcg@10,map@10,P.5,10", "ndcg@10, map@10 P.5,10"):
        got = sqlmetrics.evaluate(con, RECS, text, truth=TRUTH)
        assert got.column_names == listed.column_names == ["users", "ndcg@10", "map@10", "P_5", "P_10"]
        assert got.equals(listed)
    con.execute("CREATE TABLE events AS SELECT 1 user_id, 'a' item_id, 0.5 score, 1 relevance")
    assert '"map@10"' in sqlmetrics.sql(con, "events", "ndcg@10,map@10")


def test_the_command_line_and_the_api_split_with_one_function():
    from sqlmetrics.cli import options
    from sqlmetrics.names.metric_names import split_metric_list

    assert options.metric_list is split_metric_list
    assert split_metric_list("ndcg@10,map@10 recall@20") == ["ndcg@10", "map@10", "recall@20"]


# d. a space inside a name is refused (it would name the column) -----------------------------


@pytest.mark.parametrize("name", ["ndcg@ 10", "ndcg @10", "ndcg @ 10", "recall@\t5"])
def test_a_space_inside_a_metric_name_is_refused(con, name):
    fixed = "".join(name.split())
    for metrics in (name, [name]):
        refused = f"has a space in it.*write it without spaces: '{fixed}'"
        with pytest.raises(UnknownMetricError, match=refused):
            sqlmetrics.evaluate(con, RECS, metrics, truth=TRUTH)


def test_spaces_around_a_name_are_dropped(con):
    got = sqlmetrics.evaluate(con, RECS, [" ndcg@10 ", "map@10\n"], truth=TRUTH)
    assert got.column_names == ["users", "ndcg@10", "map@10"]


def test_the_command_line_refuses_a_space_after_the_at_sign(tmp_path, capsys):
    recs, truth = tmp_path / "recs.parquet", tmp_path / "truth.parquet"
    import pyarrow.parquet as pq

    pq.write_table(RECS, recs)
    pq.write_table(TRUTH, truth)
    code, out, err = cli(["evaluate", str(recs), "--truth", str(truth), "--metrics", "ndcg@ 10"], capsys)
    assert code == 2 and out == ""
    assert "'ndcg@ 10' has a space in it" in err and "'ndcg@10'" in err
