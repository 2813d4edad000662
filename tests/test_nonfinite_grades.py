"""A NaN or infinite grade in the truth is refused whatever truth_duplicates keeps of an item's
rows (the highest grade or their sum), and so is a sum of grades that overflows, from a
relevance column or from graded actions alike (sql/inputs/relevance.sql.j2 `combined`)."""

from __future__ import annotations

import math

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics

RECS = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "a"], "score": [2.0, 1.0, 1.0]})


def evaluate(truth: pa.Table, **kw) -> list[dict]:
    return sqlmetrics.evaluate(duckdb.connect(), RECS, ["ndcg@2", "map@2"], truth=truth, **kw).to_pylist()


@pytest.mark.parametrize("mode", ["max", "sum"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("rows", [[2.0, "bad"], ["bad", 2.0], ["bad"]])
def test_a_nonfinite_grade_is_refused_by_max_and_sum_alike(mode, bad, rows):
    grades = [bad if g == "bad" else g for g in rows]
    truth = pa.table(
        {
            "user_id": [1] * len(grades) + [2],
            "item_id": ["a"] * len(grades) + ["a"],
            "relevance": [*grades, 1.0],
        }
    )
    with pytest.raises(
        sqlmetrics.InvalidDataError, match="truth .* has a NaN or infinite relevance for user_id = 1"
    ):
        evaluate(truth, truth_duplicates=mode)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_error_mode_refuses_it_too(bad):
    truth = pa.table({"user_id": [1, 2], "item_id": ["a", "a"], "relevance": [bad, 1.0]})
    with pytest.raises(sqlmetrics.InvalidDataError, match="NaN or infinite relevance"):
        evaluate(truth)


def test_graded_actions_summing_to_inf_are_refused_as_a_relevance_column_is():
    huge = 1e308
    column = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "a", "a"], "relevance": [huge, huge, 1.0]})
    actions = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "a", "a"], "event": ["buy", "buy", "view"]})
    grades = {"buy": huge, "view": 1.0}
    with pytest.raises(sqlmetrics.InvalidDataError, match="NaN or infinite relevance for user_id = 1"):
        evaluate(column, truth_duplicates="sum")
    with pytest.raises(sqlmetrics.InvalidDataError, match="NaN or infinite relevance for user_id = 1"):
        evaluate(actions, truth_duplicates="sum", action="event", relevance=grades)
    # the highest grade is finite: both keep it, with the same numbers
    expected = evaluate(column, truth_duplicates="max")
    assert evaluate(actions, truth_duplicates="max", action="event", relevance=grades) == expected
    assert expected == [{"users": 2, "ndcg@2": 1.0, "map@2": 1.0}]


def test_finite_sums_are_unchanged():
    truth = pa.table(
        {"user_id": [1, 1, 1, 2], "item_id": ["a", "a", "b", "a"], "relevance": [1.0, 2.0, 1.5, 1.0]}
    )
    # user 1: a = 3 (sum) or 2 (max), b = 1.5; both ranked a, b: ideal order, ndcg = 1
    for mode in ("max", "sum"):
        assert evaluate(truth, truth_duplicates=mode) == [{"users": 2, "ndcg@2": 1.0, "map@2": 1.0}]
