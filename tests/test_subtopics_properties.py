"""Properties of the intent-aware measures (subtopics=), with hypothesis, and the intent
weights (an optional `weight` column) against tests/reference_subtopics.py (ndeval takes no
weights): random units with tied scores, graded, zero and negative grades, subtopics without
a relevant item, judged items never retrieved, units without a judgement.

* every measure equals the reference per unit (1e-9), with and without weights;
* p_ia, ap_ia, err_ia and nrbp lie in [0, 1] (alpha_ndcg is >= 0: ndeval's greedy ideal list
  is not always the best, so a list can pass it);
* the unjudged items' order among themselves changes nothing;
* a list in the greedy ideal order has alpha_ndcg@k = 1;
* uniform weights give the values without weights, and weights times a constant the same;
* a unit added changes no other unit's values."""

from __future__ import annotations

import warnings

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_subtopics import close, greedy_ideal, measures, relevant_sets
from strategies import FAST, GRADES, SCORES

import sqlmetrics

CON = duckdb.connect()
SETTINGS = settings(FAST, max_examples=15)  # (each example: several evaluate() calls)
K = 4
NAMES = [f"alpha_ndcg@{K}", f"p_ia@{K}", "ap_ia", f"err_ia@{K}", "nrbp"]
ITEMS = [f"d{i}" for i in range(12)]  # text order: d9 > d11 > d10 > d1 ...
WEIGHTS = (0.0, 0.5, 1.0, 3.0)


@st.composite
def units(draw, count=None) -> list[dict]:
    """[{unit, list: [(item, score)], judgements: [(subtopic, item, grade)], weights}]"""
    out = []
    for u in range(draw(count or st.integers(1, 4))):
        listed = draw(st.lists(st.sampled_from(ITEMS[:9]), unique=True, max_size=7))
        scores = [draw(st.sampled_from(SCORES)) for _ in listed]
        judgements = []
        for s in range(draw(st.integers(0, 3))):
            judged = draw(st.lists(st.sampled_from(ITEMS), unique=True, max_size=6))  # d9..d11 unlisted
            judgements += [(f"s{s}", item, draw(st.sampled_from(GRADES))) for item in judged]
        weights = {s: draw(st.sampled_from(WEIGHTS)) for s, _, _ in judgements}
        if sum(weights[s] for s in relevant_sets(judgements)) == 0:
            weights = dict.fromkeys(weights, 1.0)  # (a total of 0 is refused: tested below)
        out.append({"unit": f"q{u}", "list": list(zip(listed, scores, strict=True)), "judgements": judgements,
                    "weights": weights})  # fmt: skip
    return out


def tables(data: list[dict], weights: str = "none") -> tuple[pa.Table, pa.Table]:
    """recs and subtopics; weights: 'none', 'given' (the units' own), or a constant."""
    recs = [(u["unit"], item, score) for u in data for item, score in u["list"]]
    rows = [(u["unit"], s, item, grade, u["weights"][s]) for u in data for s, item, grade in u["judgements"]]
    recs_t = pa.table({"user_id": pa.array([r[0] for r in recs], pa.string()),
                       "item_id": pa.array([r[1] for r in recs], pa.string()),
                       "score": pa.array([r[2] for r in recs], pa.float64())})  # fmt: skip
    columns = {
        "user_id": pa.string(), "subtopic": pa.string(), "item_id": pa.string(), "relevance": pa.int64()
    }  # fmt: skip
    sub = pa.table({name: pa.array([r[i] for r in rows], t) for i, (name, t) in enumerate(columns.items())})
    if weights != "none":
        values = [r[4] for r in rows] if weights == "given" else [float(weights)] * len(rows)
        sub = sub.append_column("weight", pa.array(values, pa.float64()))
    return recs_t, sub


def ours(data: list[dict], weights: str = "none") -> dict:
    recs, sub = tables(data, weights)
    with warnings.catch_warnings():  # (no unit in common: an empty answer, as the reference's)
        warnings.simplefilter("ignore", sqlmetrics.UnmatchedUnitsWarning)
        rows = sqlmetrics.evaluate(CON, recs, NAMES, subtopics=sub, per_user=True).to_pylist()
    return {row["user_id"]: row for row in rows}


def ranking(unit: dict) -> list:
    """The list in sqlmetrics' default order: score descending, ties by item descending."""
    return [item for item, _ in sorted(unit["list"], key=lambda p: (p[1], p[0]), reverse=True)]


def evaluated(data: list[dict]) -> list[dict]:
    """The units evaluated: a list and a subtopic judgement (ndeval's)."""
    return [u for u in data if u["list"] and u["judgements"]]


@given(data=units())
@SETTINGS
def test_equal_to_the_reference_with_and_without_weights(data):
    for weights in ("none", "given"):
        got = ours(data, weights)
        assert set(got) == {u["unit"] for u in evaluated(data)}
        for u in evaluated(data):
            given_weights = u["weights"] if weights == "given" else None
            want = measures(ranking(u), u["judgements"], weights=given_weights, k=K)
            for name in NAMES:
                assert close(got[u["unit"]][name], want[name.split("@")[0]]), (weights, u, name)


@given(data=units())
@SETTINGS
def test_values_in_range(data):
    for row in ours(data, "given").values():
        assert all(0 <= row[name] <= 1 + 1e-12 for name in NAMES if not name.startswith("alpha_ndcg"))
        assert row[NAMES[0]] >= 0


@given(data=units(), seed=st.randoms(use_true_random=False))
@SETTINGS
def test_the_order_of_unjudged_items_changes_nothing(data, seed):
    """Distinct scores (no tie-break involved); the unjudged items' scores shuffled."""
    for u in data:
        u["list"] = [(item, float(i)) for i, (item, _) in enumerate(u["list"])]
    before = ours(data, "given")
    for u in data:
        judged = {item for _, item, _ in u["judgements"]}
        places = [i for i, (item, _) in enumerate(u["list"]) if item not in judged]
        scores = [u["list"][i][1] for i in places]
        seed.shuffle(scores)
        for i, score in zip(places, scores, strict=True):
            u["list"][i] = (u["list"][i][0], score)
    after = ours(data, "given")
    assert before.keys() == after.keys()
    for unit, row in before.items():
        assert all(close(after[unit][n], row[n], 1e-12) for n in NAMES)


@given(data=units())
@SETTINGS
def test_the_greedy_ideal_order_has_alpha_ndcg_1(data):
    for u in data:
        ideal = greedy_ideal(relevant_sets(u["judgements"]))
        u["list"] = [(item, float(len(ideal) - i)) for i, item in enumerate(ideal)]
    got = ours(data)
    for u in evaluated(data):
        assert close(got[u["unit"]][NAMES[0]], 1.0, 1e-12)


@given(data=units(), constant=st.sampled_from((1.0, 0.25, 7.0)), factor=st.sampled_from((2.0, 0.125, 10.0)))
@SETTINGS
def test_uniform_weights_are_no_weights_and_a_scale_changes_nothing(data, constant, factor):
    plain, uniform, given_ = ours(data), ours(data, str(constant)), ours(data, "given")
    for u in data:
        u["weights"] = {s: w * factor for s, w in u["weights"].items()}
    scaled = ours(data, "given")
    assert plain.keys() == uniform.keys() == scaled.keys()
    for unit in plain:
        assert all(close(uniform[unit][n], plain[unit][n], 1e-12) for n in NAMES)
        assert all(close(scaled[unit][n], given_[unit][n], 1e-12) for n in NAMES)


@given(data=units(st.integers(1, 3)), extra=units(st.just(1)))
@SETTINGS
def test_a_unit_added_changes_no_other(data, extra):
    alone = ours(data, "given")
    added = ours([*data, {**extra[0], "unit": "q_new"}], "given")
    for unit, row in alone.items():
        assert added[unit] == row


def test_weights_reach_only_the_agrawal_family():
    """A weight moves p_ia, ap_ia and err_ia; alpha_ndcg and nrbp keep ndeval's uniform form."""
    data = [{"unit": "q", "list": [("a", 3.0), ("b", 2.0), ("c", 1.0)],
             "judgements": [("s1", "a", 1), ("s2", "c", 1)], "weights": {"s1": 3.0, "s2": 1.0}}]  # fmt: skip
    plain, weighted = ours(data)["q"], ours(data, "given")["q"]
    assert weighted["ap_ia"] == pytest.approx(0.75 * 1 + 0.25 / 3)
    assert plain["ap_ia"] == pytest.approx(0.5 * (1 + 1 / 3))
    assert weighted[f"p_ia@{K}"] == pytest.approx((0.75 + 0.25) / K)
    assert weighted[NAMES[0]] == plain[NAMES[0]] and weighted["nrbp"] == plain["nrbp"]


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ([1.0, None, 1.0], "a NULL, NaN, infinite or negative weight for user_id = q"),
        ([1.0, float("nan"), 1.0], "a NULL, NaN, infinite or negative weight"),
        ([1.0, -0.5, 1.0], "a NULL, NaN, infinite or negative weight"),
        ([1.0, 2.0, 1.0], "two different weight values in one subtopic .* for user_id = q"),
        ([0.0, 0.0, 5.0], "weight values of sum 0 over the subtopics with a relevant item"),
    ],
)
def test_bad_weights_are_refused(weights, message):
    """s1 (a, b) and s2 (c, judged 0: no relevant item, so its weight counts for no sum)."""
    recs = pa.table({"user_id": ["q"] * 3, "item_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    sub = pa.table({"user_id": ["q"] * 3, "subtopic": ["s1", "s1", "s2"], "item_id": ["a", "b", "c"],
                    "relevance": [1, 1, 0], "weight": pa.array(weights, pa.float64())})  # fmt: skip
    with pytest.raises(sqlmetrics.InvalidDataError, match=message):
        sqlmetrics.evaluate(CON, recs, ["p_ia@3"], subtopics=sub)
    # the transaction of the caller survives, and a column of text is refused by name
    assert CON.execute("SELECT 1").fetchall() == [(1,)]
    with pytest.raises(sqlmetrics.ColumnTypeError, match="weight column 'weight' must be numeric"):
        sqlmetrics.evaluate(CON, recs, ["p_ia@3"], subtopics=sub.set_column(4, "weight", pa.array(["x"] * 3)))
