"""ties="average" ndcg@k against sklearn.metrics.ndcg_score (ignore_ties=False), which averages
the gain of tied items over their tie group (McSherry and Najork 2008).

Single-table mode: a user's y_true is the relevance of their rows, y_score the scores."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score
from strategies import FAST, EvalData, sklearn_users

import sqlmetrics

CON = duckdb.connect()
KS = [1, 2, 3, 5, 10]  # 10 is longer than any list: the whole list


def by_user(data: EvalData) -> dict:
    users: dict = {}
    for row in data.recs:
        y_true, y_score = users.setdefault(row["user"], ([], []))
        y_true.append(row["relevance"])
        y_score.append(row["score"])
    return users


def check(data: EvalData, ks: list[int]) -> None:
    metrics = [f"ndcg@{k}" for k in ks]
    per_user = sqlmetrics.evaluate(CON, data.recs_table(), metrics, ties="average", per_user=True)
    actual = {row["user_id"]: row for row in per_user.to_pylist()}
    users = by_user(data)
    assert set(actual) == set(users)
    expected = {
        user: {f"ndcg@{k}": ndcg_score([y_true], [y_score], k=k) for k in ks}
        for user, (y_true, y_score) in users.items()
    }
    for user in users:
        for m in metrics:
            assert actual[user][m] is not None
            assert math.isclose(actual[user][m], expected[user][m], rel_tol=1e-9, abs_tol=1e-9), (
                f"user {user} {m}: sqlmetrics {actual[user][m]}, sklearn {expected[user][m]}"
            )

    # the mean over users, as ndcg_score averages over samples
    [mean] = sqlmetrics.evaluate(CON, data.recs_table(), metrics, ties="average").to_pylist()
    assert mean["users"] == len(users)
    for m in metrics:
        sk_mean = float(np.mean([expected[user][m] for user in users]))
        assert math.isclose(mean[m], sk_mean, rel_tol=1e-9, abs_tol=1e-9), (m, mean[m], sk_mean)


@settings(FAST, max_examples=60)
@given(data=sklearn_users(), ks=st.lists(st.sampled_from(KS), min_size=1, max_size=3, unique=True))
def test_average_ties_ndcg_matches_sklearn(data, ks):
    check(data, ks)


def rows(user, scores, grades):
    return [
        {"user": user, "item": f"i{n}", "score": s, "relevance": g}
        for n, (s, g) in enumerate(zip(scores, grades, strict=True))
    ]


@pytest.mark.parametrize(
    "recs",
    [
        pytest.param(rows(1, [0.5] * 5, [3.0, 0.0, 1.0, 0.0, 2.0]), id="all-tied"),
        pytest.param(rows(1, [0.5] * 4, [0.0] * 4), id="all-tied-all-zero"),
        pytest.param(rows(1, [0.9, 0.1, 0.4], [0.0] * 3), id="all-zero"),
        pytest.param(
            rows(1, [1.0, 0.5, 0.5, 0.5, 0.0], [0.0, 1.0, 0.0, 2.0, 3.0])
            + rows(2, [0.5] * 3, [0.0] * 3)
            + rows(3, [0.2, 0.2, 0.7, 0.7], [1.0, 2.0, 0.0, 1.0]),
            id="mixed",
        ),
    ],
)
def test_average_ties_ndcg_fixed_cases(recs):
    data = EvalData(recs, None, pa.string(), False)
    check(data, KS)
