"""Where ranx's numbers are not trec_eval's (and so not sqlmetrics'), as docs/conventions.md
(bpref) and docs/compare.md (the randomization test's exact ties) say: checked against ranx
itself, here run uncompiled (tests/conftest.py), and against references computed here."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import sqlmetrics


def bpref_both(qrels: dict, run: dict) -> tuple[list[float], list[float]]:
    ranx = pytest.importorskip("ranx")
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "bpref", return_mean=False, make_comparable=True)
    recs = pa.Table.from_pylist(
        [{"user_id": q, "item_id": d, "score": s} for q, docs in run.items() for d, s in docs.items()]
    )
    truth = pa.Table.from_pylist(
        [{"user_id": q, "item_id": d, "relevance": g} for q, docs in qrels.items() for d, g in docs.items()]
    )
    ours = sqlmetrics.evaluate(duckdb.connect(), recs, "bpref", truth=truth, per_user=True, missing="zero")
    by_query = {r["user_id"]: r["bpref"] for r in ours.to_pylist()}
    return [float(v) for v in theirs], [by_query[q] for q in sorted(qrels)]


def test_bpref_is_the_same_where_ranx_has_what_it_needs():
    # R = 2, N_n = 1: d1 adds 1 (no non-relevant above), d3 adds 1 - min(1, 2) / min(1, 2) = 0
    theirs, ours = bpref_both({"q": {"d1": 1, "d2": 0, "d3": 1}}, {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}})
    assert theirs == ours == [0.5]


def test_ranx_bpref_is_nan_without_judged_non_relevant_items():
    # trec_eval: the relevant item retrieved adds 1 (n = 0), bpref = 1 / R = 1
    with np.errstate(all="ignore"):
        theirs, ours = bpref_both({"q": {"d1": 1}}, {"q": {"d1": 2.0, "d2": 1.0}})
    assert math.isnan(theirs[0]) and ours == [1.0]


def test_ranx_bpref_judges_a_negative_grade_non_relevant():
    # trec_eval: a negative grade is unjudged, so N_n = 0 and d1 adds 1; ranx: d2 is judged
    # non-relevant, above d1: 1 - min(1, 1) / min(1, 1) = 0
    theirs, ours = bpref_both({"q": {"d1": 1, "d2": -1}}, {"q": {"d2": 2.0, "d1": 1.0}})
    assert theirs == [0.0] and ours == [1.0]


def _tenths_data():
    """14 users, precision@10 of A and B in tenths (the data of docs/compare.md's example)."""
    rng = np.random.default_rng(2)
    a = rng.integers(0, 11, 14)
    b = np.clip(a + rng.choice([-1, 0, 1, 2], 14), 0, 10)
    rows, truth = [], []
    for u, hits in enumerate(zip(a, b, strict=True)):
        truth += [{"user_id": u, "item_id": f"t{i}"} for i in range(10)]
        for model, h in zip("AB", hits, strict=True):
            items = [f"t{i}" for i in range(h)] + [f"x{i}" for i in range(10 - h)]
            rows += [
                {"model": model, "user_id": u, "item_id": it, "score": 10.0 - j} for j, it in enumerate(items)
            ]
    return a, b, pa.Table.from_pylist(rows), pa.Table.from_pylist(truth)


def test_randomization_counts_exact_ties_where_ranx_misses_them():
    a, b, recs, truth = _tenths_data()
    # the exact p over all 2^14 sign flips of the integer differences (ties count)
    k = (b - a).astype(np.int64)
    signs = ((np.arange(2 ** len(k))[:, None] >> np.arange(len(k))) & 1) * 2 - 1
    exact = float(np.mean(np.abs(signs @ k) >= abs(k.sum())))
    replicates = 20_000
    se = math.sqrt(exact * (1 - exact) / replicates)
    row = sqlmetrics.compare(
        duckdb.connect(), recs, "precision@10", truth=truth, by="model", baseline="A",
        test="randomization", replicates=replicates, seed=1,
    ).to_pylist()[0]  # fmt: skip
    assert row["delta"] == pytest.approx((b - a).mean() / 10, abs=1e-12)
    assert abs(row["p_value"] - exact) < 4 * se, (row["p_value"], exact)
    fisher = pytest.importorskip("ranx.statistical_tests.fisher_randomization_test")
    theirs, _ = fisher.fisher_randomization_test(a / 10, b / 10, n_permutations=replicates, random_seed=42)
    assert theirs < exact - 5 * se, (theirs, exact)  # the ties it missed
