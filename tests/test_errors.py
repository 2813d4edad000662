"""Bad input fails with a sqlmetrics error that says what is wrong in the caller's terms."""

import math

import pyarrow as pa
import pytest

import sqlmetrics
from tests.conftest import table

RECS = pa.table({"user_id": [1, 1, 2], "item_id": [10, 11, 10], "score": [0.9, 0.8, 0.5]})
TRUTH = pa.table({"user_id": [1, 2], "item_id": [11, 10], "relevance": [1, 1]})


def evaluate(con, recs=RECS, metrics=("ndcg@10",), truth=TRUTH, **kw):
    return sqlmetrics.evaluate(con, recs, list(metrics), truth=truth, **kw)


def test_every_error_is_a_value_error():
    assert issubclass(sqlmetrics.SqlMetricsError, ValueError)
    for name in [
        "UnknownMetricError",
        "InvalidCutoffError",
        "ConventionError",
        "UnknownTableError",
        "MissingColumnError",
        "ColumnTypeError",
        "InvalidDataError",
        "DuplicateRowError",
    ]:
        assert issubclass(getattr(sqlmetrics, name), sqlmetrics.SqlMetricsError)


@pytest.mark.parametrize(
    "name, message",
    [
        ("ndgc@10", "did you mean 'ndcg'"),
        ("recal@5", "did you mean 'recall'"),
        ("diversity", "needs a cutoff"),
        ("r_precision@5", "takes no cutoff"),
        ("foo@3", "unknown metric"),
    ],
)
def test_unknown_metric_names(con, name, message):
    with pytest.raises(sqlmetrics.UnknownMetricError, match=message):
        evaluate(con, metrics=[name])


@pytest.mark.parametrize("name", ["ndcg@0", "ndcg@-1", "ndcg@1.5", "ndcg@ten"])
def test_bad_cutoffs_in_names(con, name):
    with pytest.raises(sqlmetrics.SqlMetricsError):
        evaluate(con, metrics=[name])


@pytest.mark.parametrize("k", [0, -3, 2.5, True, "10"])
def test_bad_k_in_metric_functions(con, k):
    with pytest.raises(sqlmetrics.InvalidCutoffError):
        sqlmetrics.ndcg(con, RECS, k=k, truth=TRUTH)


def test_metric_requested_twice(con):
    with pytest.raises(sqlmetrics.UnknownMetricError, match="twice"):
        evaluate(con, metrics=["ndcg@10", "NDCG@10"])


def test_no_metric(con):
    with pytest.raises(sqlmetrics.UnknownMetricError):
        evaluate(con, metrics=[])


def test_missing_column_lists_existing_columns(con):
    with pytest.raises(sqlmetrics.MissingColumnError, match="user_id, item_id, score"):
        evaluate(con, score="prediction")


def test_single_table_without_relevance(con):
    with pytest.raises(sqlmetrics.MissingColumnError, match="no relevance column"):
        evaluate(con, truth=None)


def test_non_numeric_score_and_relevance(con):
    text_scores = RECS.set_column(2, "score", pa.array(["a", "b", "c"]))
    with pytest.raises(sqlmetrics.ColumnTypeError, match="score.*VARCHAR"):
        evaluate(con, recs=text_scores)
    text_rel = TRUTH.set_column(2, "relevance", pa.array(["x", "y"]))
    with pytest.raises(sqlmetrics.ColumnTypeError, match="relevance"):
        evaluate(con, truth=text_rel)


def test_item_types_must_compare(con):
    with pytest.raises(sqlmetrics.ColumnTypeError, match="item"):
        evaluate(con, truth=TRUTH.set_column(1, "item_id", pa.array(["11", "10"])))


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("user_id", None, "NULL user_id"),
        ("item_id", None, "NULL item_id for user_id = 1"),
        ("score", None, "NULL score for user_id = 1"),
        ("score", math.nan, "NaN or infinite score for user_id = 1"),
        ("score", math.inf, "NaN or infinite score for user_id = 1"),
    ],
)
def test_bad_values_in_recs(con, column, value, message):
    data = RECS.to_pydict()
    data[column][0] = value
    with pytest.raises(sqlmetrics.InvalidDataError, match=message):
        evaluate(con, recs=pa.table(data))


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("user_id", None, "^truth .* has a NULL user_id$"),
        ("item_id", None, "^truth .* has a NULL item_id for user_id = 1$"),
        ("relevance", math.nan, "^truth .* has a NaN or infinite relevance for user_id = 1$"),
        ("relevance", -math.inf, "^truth .* has a NaN or infinite relevance for user_id = 1$"),
    ],
)
@pytest.mark.parametrize(
    "form", ["one aggregation", "one aggregation, combined", "grouped by item", "average ties"]
)
def test_bad_values_in_truth(con, column, value, message, form):
    # DuckDB reads the truth in one aggregation where no grades add up (the repeated items of
    # truth_duplicates='max' combined after it), else grouped by (user, item) first
    # (inputs/truth_tables.sql.j2): the same checks, the same messages
    options = {
        "one aggregation, combined": {"truth_duplicates": "max"},
        "grouped by item": {"truth_duplicates": "sum"},
        "average ties": {"ties": "average"},
    }
    data = {**TRUTH.to_pydict(), "relevance": [1.0, 1.0]}
    data[column][0] = value
    for name, frame in (("recs_t", RECS), ("truth_t", pa.table(data))):
        con.register("frame", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
        con.unregister("frame")
    text = sqlmetrics.sql(con, "recs_t", ["ndcg@10"], truth="truth_t", **options.get(form, {}))
    assert ("truth_items AS" in text) == (not form.startswith("one aggregation"))
    assert ("_by_item" in text) == (form == "one aggregation, combined")
    with pytest.raises(sqlmetrics.InvalidDataError, match=message):
        evaluate(con, truth=pa.table(data), **options.get(form, {}))


def test_null_relevance_means_zero(con):
    truth = pa.table({"user_id": [1, 2], "item_id": [11, 10], "relevance": [None, 1]})
    out = evaluate(con, truth=truth, metrics=["hit_rate@2"])
    assert out.to_pylist() == [{"users": 2, "hit_rate@2": 0.5}]


def test_duplicates_name_an_example(con):
    dup = pa.table({"user_id": [1, 1, 1], "item_id": [10, 11, 10], "score": [0.9, 0.8, 0.1]})
    message = r"recs .*duplicate.*user_id = 1, item_id = 10"
    with pytest.raises(sqlmetrics.DuplicateRowError, match=message):
        evaluate(con, recs=dup, metrics=["ndcg@3"])
    with pytest.raises(sqlmetrics.DuplicateRowError, match=message):
        evaluate(con, recs=dup, metrics=["ndcg@1"], duplicates="all")
    dup_truth = pa.table({"user_id": [2, 2], "item_id": [10, 10], "relevance": [1, 2]})
    with pytest.raises(sqlmetrics.DuplicateRowError, match=r"truth .*user_id = 2, item_id = 10"):
        evaluate(con, truth=dup_truth)


def test_a_duplicate_below_every_cutoff_changes_no_number(con):
    # duplicates="top_k" (the default) checks the pairs that reach a user's list; a second copy
    # below every cutoff gives the numbers of the input without it, and "all" refuses it
    dup = pa.table({"user_id": [1, 1, 1], "item_id": [10, 11, 10], "score": [0.9, 0.8, 0.1]})
    metrics = ["mrr@2", "ndcg@2", "precision@2", "recall@2"]
    without_copy = evaluate(con, recs=dup.slice(0, 2), metrics=metrics)
    assert evaluate(con, recs=dup, metrics=metrics).equals(without_copy)
    with pytest.raises(sqlmetrics.DuplicateRowError):
        evaluate(con, recs=dup, metrics=metrics, duplicates="all")
    # r_precision orders the whole list, so every duplicate reaches it
    with pytest.raises(sqlmetrics.DuplicateRowError):
        evaluate(con, recs=dup, metrics=["r_precision"])


def test_a_duplicate_inside_the_top_list_is_caught_by_the_default_check(con):
    dup = pa.table({"user_id": [1, 1, 1], "item_id": [10, 11, 10], "score": [0.9, 0.8, 0.7]})
    with pytest.raises(sqlmetrics.DuplicateRowError, match="user_id = 1, item_id = 10"):
        evaluate(con, recs=dup, metrics=["mrr@3"])
    with pytest.raises(sqlmetrics.DuplicateRowError, match="user_id = 1, item_id = 10"):
        evaluate(con, recs=dup, metrics=["ndcg@3"], ties="average")


@pytest.mark.parametrize("length", [3, 32, 33, 200])
def test_a_duplicate_is_caught_in_short_and_long_lists(con, length):
    # short lists compare each item with those before it, long ones hash: both must see a copy
    # wherever it lies, and neither may see one in a list without copies
    items = list(range(100, 100 + length))
    scores = [1.0 - i / 1000 for i in range(length)]
    recs = pa.table({"user_id": [1] * length, "item_id": items, "score": scores})
    truth = pa.table({"user_id": [1] * length, "item_id": items, "relevance": [1] * length})
    assert evaluate(con, recs=recs, truth=truth, metrics=[f"precision@{length}"])["users"][0].as_py() == 1
    copy = pa.table({"user_id": [1], "item_id": [100], "score": [0.0]})
    with pytest.raises(sqlmetrics.DuplicateRowError, match="recs .*user_id = 1, item_id = 100"):
        evaluate(con, recs=pa.concat_tables([recs, copy]), truth=truth, metrics=[f"precision@{length + 1}"])
    truth_copy = pa.table({"user_id": [1], "item_id": [100 + length - 1], "relevance": [2]})
    with pytest.raises(sqlmetrics.DuplicateRowError, match="truth .*user_id = 1"):
        evaluate(con, recs=recs, truth=pa.concat_tables([truth, truth_copy]))


def test_tied_ranks_are_an_error(con):
    recs = pa.table({"user_id": [1, 1], "item_id": [10, 11], "rank": [1, 1]})
    with pytest.raises(sqlmetrics.InvalidDataError, match="tied rank"):
        evaluate(con, recs=recs, rank="rank")


@pytest.mark.parametrize(
    "option",
    [
        {"ties": "random"},
        {"gain": "quadratic"},
        {"empty": "drop"},
        {"missing": "ignore"},
        {"ap_denominator": "k"},
        {"threshold": 0},
        {"threshold": -1},
        {"threshold": math.nan},
        {"threshold": "1"},
        {"duplicates": "yes"},
    ],
)
def test_bad_conventions(con, option):
    with pytest.raises(sqlmetrics.ConventionError):
        evaluate(con, **option)


def test_average_ties_refuse_metrics_they_cannot_average(con):
    with pytest.raises(sqlmetrics.ConventionError, match="mrr@10, map@10"):
        evaluate(con, metrics=["ndcg@10", "mrr@10", "map@10"], ties="average")


def test_action_grades_need_both_arguments(con):
    with pytest.raises(sqlmetrics.ConventionError, match="action="):
        evaluate(con, relevance={"purchase": 3})
    with pytest.raises(sqlmetrics.ConventionError, match="mapping"):
        evaluate(con, action="event_type")


def test_unknown_table(con):
    with pytest.raises(sqlmetrics.UnknownTableError, match="no table or view named 'nope'"):
        sqlmetrics.evaluate(con, "nope", ["ndcg@10"])


def test_missing_file(con, tmp_path):
    with pytest.raises(sqlmetrics.UnknownTableError, match="no file matches"):
        sqlmetrics.evaluate(con, str(tmp_path / "absent.parquet"), ["ndcg@10"])


@pytest.mark.parametrize(
    "name",
    [
        "events; DROP TABLE victim",
        'events"; DROP TABLE victim; --',
        "victim WHERE 1=1; DROP TABLE victim",
        "read_parquet('x')",
    ],
)
def test_table_names_cannot_inject_sql(con, name):
    table(con, "victim", "x INTEGER", [(1,)])
    with pytest.raises(sqlmetrics.UnknownTableError):
        sqlmetrics.evaluate(con, name, ["ndcg@10"])
    assert con.execute("SELECT count(*) FROM victim").fetchall() == [(1,)]


def test_column_names_cannot_inject_sql(con):
    table(con, "victim", "x INTEGER", [(1,)])
    with pytest.raises(sqlmetrics.MissingColumnError):
        evaluate(con, score='score"; DROP TABLE victim; --')
    grades = {"purchase'); DROP TABLE victim; --": 1}
    recs = RECS.append_column("event_type", pa.array(["purchase", "view", "x"]))
    out = sqlmetrics.evaluate(con, recs, ["cg@2"], relevance=grades, action="event_type")
    assert out.column("cg@2")[0].as_py() == 0
    assert con.execute("SELECT count(*) FROM victim").fetchall() == [(1,)]


def test_not_a_connection():
    with pytest.raises(sqlmetrics.SqlMetricsError, match="duckdb connection"):
        sqlmetrics.evaluate(None, RECS, ["ndcg@10"], truth=TRUTH)


def test_unsupported_input_type(con):
    with pytest.raises(sqlmetrics.UnknownTableError, match="got int"):
        sqlmetrics.evaluate(con, 42, ["ndcg@10"])


def test_by_column_that_is_the_score(con):
    with pytest.raises(sqlmetrics.ConventionError, match="already"):
        evaluate(con, by="score")


@pytest.mark.parametrize(
    "by, per_user, clash",
    [
        ("users", False, "the count of users"),
        ("USERS", False, "the count of users"),
        ("ndcg@10", False, "the metric 'ndcg@10'"),
        ("NDCG@10", True, "the metric 'ndcg@10'"),
    ],
)
def test_a_by_column_named_like_an_output_column(con, by, per_user, clash):
    recs = RECS.append_column(by, pa.array(["x", "x", "y"]))
    with pytest.raises(sqlmetrics.ConventionError, match=f"two columns named '{by}'.*{clash}"):
        evaluate(con, recs=recs, by=by, per_user=per_user)


def test_a_by_column_named_users_is_fine_per_user(con):
    # per_user=True has no `users` column: the user column is named as in recs
    recs = RECS.append_column("users", pa.array(["x", "x", "y"]))
    got = evaluate(con, recs=recs, by="users", per_user=True, metrics=["precision@1"])
    assert got.column_names == ["users", "user_id", "precision@1"]
    assert got.to_pylist() == [
        {"users": "x", "user_id": 1, "precision@1": 0.0},
        {"users": "y", "user_id": 2, "precision@1": 1.0},
    ]


def test_a_nul_in_an_action_name_is_a_sqlmetrics_error(con):
    import pyarrow as pa

    recs = pa.table({"user_id": [1], "item_id": ["a"], "score": [1.0]})
    truth = pa.table({"user_id": [1], "item_id": ["a"], "event": ["buy"]})
    with pytest.raises(sqlmetrics.ConventionError, match="NUL"):
        sqlmetrics.evaluate(con, recs, ["ndcg@10"], truth=truth, action="event", relevance={"b\x00uy": 1})
