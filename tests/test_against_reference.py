"""sqlmetrics against the plain-Python reference (tests/reference.py), on random data.

Every metric at several cutoffs, per user and aggregated, under every convention value, in
single-table and truth-table mode, with and without `by` groups."""

from __future__ import annotations

import math

import duckdb
import polars as pl
import pyarrow as pa
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FAST, batch, cutoffs

import sqlmetrics

CON = duckdb.connect()
# each example a batch of 1 to 8 random evaluations (strategies.batch: ~15 per case)
SETTINGS = settings(FAST, max_examples=4)

CASES = [
    pytest.param({}, id="defaults"),
    pytest.param({"ties": "item_asc"}, id="ties-item_asc"),
    pytest.param({"ties": "trec_eval"}, id="ties-trec_eval"),
    pytest.param({"ties": "average"}, id="ties-average"),
    pytest.param({"ties": "average", "gain": "exponential", "threshold": 2}, id="average-exp-t2"),
    pytest.param({"gain": "exponential"}, id="gain-exponential"),
    pytest.param({"empty": "skip"}, id="empty-skip"),
    pytest.param({"missing": "zero"}, id="missing-zero"),
    pytest.param({"missing": "zero", "empty": "skip", "ties": "item_asc"}, id="missing-zero-empty-skip"),
    pytest.param({"ap_denominator": "min_k"}, id="ap-min_k"),
    pytest.param({"short_lists": "evidently"}, id="short_lists-evidently"),
    pytest.param({"short_lists": "evidently", "ties": "average"}, id="short_lists-evidently-average"),
    pytest.param({"ties": "evidently"}, id="ties-evidently"),
    pytest.param({"ties": "evidently", "short_lists": "evidently", "empty": "skip"}, id="evidently-all"),
    pytest.param(
        {"short_lists": "evidently", "ap_denominator": "min_k", "missing": "zero", "threshold": 2},
        id="short_lists-evidently-min_k-missing-zero",
    ),
    pytest.param({"threshold": 2}, id="threshold-2"),
    pytest.param({"threshold": 2, "empty": "skip", "ties": "trec_eval"}, id="threshold-2-empty-skip"),
]


def metric_names(ks: list[int], ties: str, with_r_precision: bool) -> list[str]:
    # ties 'average' and 'evidently' refuse the order statistics
    names = reference.TIE_AVERAGED if ties in ("average", "evidently") else reference.CUTOFF_METRICS
    labels = [f"{name}@{k}" for name in names for k in ks]
    if with_r_precision and ties not in ("average", "evidently"):
        labels.append("r_precision")  # no cutoff: the library sorts whole lists
    return labels


def close(actual, expected) -> bool:
    return actual is not None and math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-9)


def run(data, metrics, per_user, frame, **conventions) -> list[dict]:
    recs, truth = data.recs_table(), data.truth_table()
    if frame == "polars":
        recs = pl.from_arrow(recs)
        truth = None if truth is None else pl.from_arrow(truth)
    table = sqlmetrics.evaluate(
        CON, recs, metrics, truth=truth, by="model" if data.grouped else None,
        per_user=per_user, **conventions,
    )
    assert isinstance(table, pa.Table)
    return table.to_pylist()


def check_against_reference(data, metrics, frame, conventions):
    expected_users, expected_groups = reference.evaluate(
        data.recs, metrics, data.truth, **conventions
    )

    # per user
    rows = run(data, metrics, True, frame, **conventions)
    actual_users = {(row.get("model"), row["user_id"]): row for row in rows}
    assert len(actual_users) == len(rows), "a (group, user) pair is reported twice"
    assert set(actual_users) == set(expected_users)
    for key, expected in expected_users.items():
        wrong = {
            m: (actual_users[key][m], expected[m])
            for m in metrics
            if not close(actual_users[key][m], expected[m])
        }
        assert not wrong, f"(group, user) = {key}: (sqlmetrics, reference) = {wrong}"

    # aggregated: users and macro means, per group
    rows = run(data, metrics, False, frame, **conventions)
    if not data.grouped and not expected_groups:
        assert [row["users"] for row in rows] == [0]
        return
    actual_groups = {row.get("model"): row for row in rows}
    assert set(actual_groups) == set(expected_groups)
    for group, expected in expected_groups.items():
        assert actual_groups[group]["users"] == expected["users"]
        wrong = {
            m: (actual_groups[group][m], expected[m])
            for m in metrics
            if not close(actual_groups[group][m], expected[m])
        }
        assert not wrong, f"group {group}: (sqlmetrics, reference) = {wrong}"


@pytest.mark.parametrize("conventions", CASES)
@SETTINGS
@given(
    data=batch(),
    ks=cutoffs,
    with_r_precision=st.booleans(),
    frame=st.sampled_from(["arrow", "polars"]),
)
def test_matches_reference(conventions, data, ks, with_r_precision, frame):
    metrics = metric_names(ks, conventions.get("ties", "item_desc"), with_r_precision)
    check_against_reference(data, metrics, frame, conventions)


@settings(SETTINGS, max_examples=5)
@given(
    data=batch(string_ids=False),
    ks=cutoffs,
    ties=st.sampled_from(["item_desc", "item_asc", "trec_eval"]),
)
def test_tie_orders_with_integer_ids(data, ks, ties):
    """Integer ids: trec_eval compares them as text ("9" > "10"), the others as numbers."""
    check_against_reference(data, metric_names(ks, ties, True), "arrow", {"ties": ties})


@pytest.mark.parametrize(
    ("ties", "first"), [("item_desc", 10), ("item_asc", 9), ("trec_eval", 9)]
)
def test_tie_order_nine_versus_ten(ties, first):
    """Items 9 and 10 tie; only item `first` is relevant, so precision@1 tells who is first."""
    recs = pa.table({"user_id": [1, 1], "item_id": [9, 10], "score": [0.5, 0.5]})
    truth = pa.table({"user_id": [1], "item_id": [first], "relevance": [1]})
    table = sqlmetrics.evaluate(CON, recs, ["precision@1"], truth=truth, ties=ties)
    assert table.to_pylist() == [{"users": 1, "precision@1": 1.0}]
    recs_rows = [{"user": 1, "item": 9, "score": 0.5}, {"user": 1, "item": 10, "score": 0.5}]
    truth_rows = [{"user": 1, "item": first, "relevance": 1}]
    _, expected = reference.evaluate(recs_rows, ["precision@1"], truth_rows, ties=ties)
    assert expected[None]["precision@1"] == 1.0


@pytest.mark.parametrize("ties", ["average", "evidently"])
@pytest.mark.parametrize("metric", ["mrr@3", "map@3", "mar@3", "r_precision", "novelty@3"])
def test_average_ties_refuse_order_statistics(metric, ties):
    recs = pa.table({"user_id": [1], "item_id": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(sqlmetrics.ConventionError, match=f"ties='{ties}'.*{metric}"):
        sqlmetrics.evaluate(CON, recs, ["ndcg@3", metric], ties=ties, history=recs)


def test_evidently_ties_share_the_floor_of_the_mean_position():
    """a > b = c = d > e: b, c, d take position floor((2 + 4) / 2) = 3; f = g take 1."""
    recs = pa.table({"user_id": [1] * 5 + [2] * 2, "item_id": list("abcdefg"),
                     "score": [0.9, 0.5, 0.5, 0.5, 0.1, 0.3, 0.3],
                     "relevance": [0, 1, 0, 1, 1, 1, 0]})  # fmt: skip
    metrics = ["precision@2", "precision@3", "hit_rate@1", "arhr@5", "dcg@5"]
    rows = sqlmetrics.evaluate(CON, recs, metrics, ties="evidently", per_user=True).to_pylist()
    assert rows[0] == {"user_id": 1, "precision@2": 0.0, "precision@3": 2 / 3, "hit_rate@1": 0.0,
                       "arhr@5": 1 / 3 + 1 / 3 + 1 / 5, "dcg@5": 2 / 2 + 1 / math.log2(6)}  # fmt: skip
    assert rows[1] == {"user_id": 2, "precision@2": 0.5, "precision@3": 1 / 3, "hit_rate@1": 1.0,
                       "arhr@5": 1.0, "dcg@5": 1.0}  # fmt: skip
