"""The recommendation measures over item groups (issue 37, item 4): calibration@k (Steck 2018)
against the numpy reference of the paper's formula (tests/reference_groups.py), on random
data with score ties, items without a genre, users without history and lists without a genre;
property tests of its invariants; names, parameters and errors."""

from __future__ import annotations

import json
import math
import random
import re

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import reference_groups as ref
from hypothesis import given
from hypothesis import strategies as st
from peers import run_cases
from strategies import FAST
from test_beyond_accuracy import top_lists

import sqlmetrics
from sqlmetrics.errors import ConventionError, InvalidDataError, UnknownMetricError

CON = duckdb.connect()


def genre_case(seed: int, *, groups: bool = False, text_items: bool = False):
    """Random recs (few distinct scores: ties), a history (some users have none, some only
    items without a genre) and multi-hot or weighted genre vectors (some items have no vector,
    some only zeros). Returns rows of recs and history and {item: weights}."""
    rng = random.Random(seed)
    n_items, n_genres = rng.randint(3, 15), rng.randint(1, 5)
    item = (lambda i: f"i{i}") if text_items else (lambda i: i * 7 % 31)
    genres = {}
    for i in range(n_items):
        roll = rng.random()
        if roll < 0.15:
            continue  # no vector: no genre
        if roll < 0.25:
            weights = [0.0] * n_genres  # a vector of zeros: no genre either
        elif roll < 0.4:
            weights = [rng.choice((0.0, 0.5, 2.0, 3.25)) for _ in range(n_genres)]
        else:
            weights = [float(rng.random() < 0.4) for _ in range(n_genres)]
        genres[item(i)] = np.array(weights)
    recs, history = [], []
    for user in range(rng.randint(1, 8)):
        listed = rng.sample(range(n_items), rng.randint(1, n_items))
        for model in ("a", "b") if groups else (None,):
            for i in listed:
                row = {"user_id": user, "item_id": item(i), "score": rng.choice((0.1, 0.5, 0.9))}
                if groups:
                    row["model"] = model
                recs.append(row)
        if rng.random() < 0.8:  # the others have no history
            for i in rng.sample(range(n_items), rng.randint(1, n_items)):
                history += [{"user_id": user, "item_id": item(i)}] * rng.choice((1, 1, 2))
    history.append({"user_id": 99, "item_id": item(0)})  # a history user without a list
    return recs, history, genres


def features_table(genres: dict) -> pa.Table:
    vectors = pa.array([list(map(float, w)) for w in genres.values()], pa.list_(pa.float64()))
    return pa.table({"item_id": list(genres), "features": vectors})


def expected_calibration(recs, history, genres, k, alpha=0.01, model=None) -> dict:
    seen: dict = {}
    for h in history:
        seen.setdefault(h["user_id"], []).append(h["item_id"])
    lists = top_lists(recs, k, model)
    return {u: ref.calibration(seen.get(u, []), top, genres, alpha) for u, top in lists.items()}


def mean_of(values) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


@pytest.mark.parametrize("seed", range(16))
def test_calibration_equals_stecks_formula(seed):
    recs, history, genres = genre_case(seed, groups=seed % 2 == 0, text_items=seed % 3 == 0)
    by = "model" if seed % 2 == 0 else None
    alpha = (0.01, 0.2, 1.0, 1e-6)[seed % 4]
    names = ["calibration@1", "calibration@3", f"calibration(alpha={alpha})@10"]
    inputs = dict(history=pa.Table.from_pylist(history), item_features=features_table(genres), by=by)
    out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), names, **inputs).to_pylist()
    per_user = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), names, per_user=True,
                                   **inputs).to_pylist()
    for model in ("a", "b") if by else (None,):
        row = next(r for r in out if r.get("model") == model)
        users = [r for r in per_user if r.get("model") == model]
        for name, k, a in [(names[0], 1, 0.01), (names[1], 3, 0.01), (names[2], 10, alpha)]:
            expected = expected_calibration(recs, history, genres, k, a, model)
            assert {r["user_id"] for r in users} == set(expected)
            for r in users:
                want = expected[r["user_id"]]
                assert (r[name] is None) == (want is None), (r["user_id"], name)
                if want is not None:
                    assert r[name] == pytest.approx(want, abs=1e-9), (r["user_id"], name)
            want = mean_of(expected.values())
            assert (row[name] is None) == (want is None)
            if want is not None:
                assert row[name] == pytest.approx(want, abs=1e-9), name


def test_calibration_by_hand():
    # user 1: history item 2 (genre g1); list 1 (g0, g2), 2 (g1): q = (1/4, 1/2, 1/4)
    recs = pa.table({"user_id": [1, 1, 1, 2], "item_id": [1, 2, 3, 1], "score": [3.0, 2.0, 1.0, 1.0]})
    history = pa.table({"user_id": [1, 1, 2], "item_id": [2, 4, 4]})
    features = pa.table({"item_id": [1, 2, 3, 4],
                         "features": [[1.0, 0, 1], [0.0, 1, 0], [1.0, 1, 1], [0.0, 0, 0]]})
    out = sqlmetrics.evaluate(CON, recs, ["calibration@2", "calibration@1"], history=history,
                              item_features=features, per_user=True).to_pylist()
    # user 2's history (item 4) has no genre: no value
    assert out[1]["calibration@2"] is None
    assert out[0]["calibration@2"] == pytest.approx(math.log(1 / (0.99 * 0.5 + 0.01)), abs=1e-15)
    # the top 1 (item 1) shares no genre with the history: q~(g1) = alpha, C_KL = ln(1/alpha)
    assert out[0]["calibration@1"] == pytest.approx(math.log(100), abs=1e-12)


@FAST
@given(seed=st.integers(0, 10**6), alpha=st.sampled_from([0.01, 0.3, 1.0]), k=st.integers(1, 12))
def test_calibration_properties(seed, alpha, k):
    """0 <= C_KL <= ln(1/alpha); 0 when alpha = 1 (q~ = p) and when the list's genres are the
    history's (history = the top k list itself)."""
    recs, history, genres = genre_case(seed)
    name = f"calibration(alpha={alpha})@{k}"
    features = features_table(genres)
    out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), [name], history=pa.Table.from_pylist(history),
                              item_features=features, per_user=True).to_pylist()
    for r in out:
        if r[name] is not None:
            assert -1e-12 <= r[name] <= math.log(1 / alpha) + 1e-12
            if alpha == 1.0:
                assert r[name] == pytest.approx(0, abs=1e-12)
    own = [{"user_id": u, "item_id": i} for u, top in top_lists(recs, k).items() for i in top]
    same = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), [name], history=pa.Table.from_pylist(own),
                               item_features=features, per_user=True).to_pylist()
    for r in same:
        assert r[name] is None or r[name] == pytest.approx(0, abs=1e-12)


def test_calibration_names_and_errors():
    recs = pa.table({"user_id": [1, 1], "item_id": [1, 2], "score": [2.0, 1.0]})
    history = pa.table({"user_id": [1], "item_id": [2]})
    features = pa.table({"item_id": [1, 2], "features": [[1.0, 0.0], [0.0, 1.0]]})
    kw = dict(history=history, item_features=features)
    assert sqlmetrics.evaluate(CON, recs, ["Calibration(alpha=1)@2"], **kw).column_names == [
        "users", "Calibration(alpha=1)@2"]
    with pytest.raises(UnknownMetricError, match="0 < alpha <= 1"):
        sqlmetrics.evaluate(CON, recs, ["calibration(alpha=0)@2"], **kw)
    with pytest.raises(UnknownMetricError, match="takes one parameter"):
        sqlmetrics.evaluate(CON, recs, ["calibration(p=0.5)@2"], **kw)
    with pytest.raises(UnknownMetricError, match="needs a cutoff"):
        sqlmetrics.evaluate(CON, recs, ["calibration"], **kw)
    with pytest.raises(UnknownMetricError, match="did you mean 'calibration'"):
        sqlmetrics.evaluate(CON, recs, ["calibraton@2"], **kw)
    with pytest.raises(ConventionError, match="item_features="):
        sqlmetrics.evaluate(CON, recs, ["calibration@2"], history=history)
    with pytest.raises(ConventionError, match="history="):
        sqlmetrics.evaluate(CON, recs, ["calibration@2"], item_features=features)
    negative = pa.table({"item_id": [1, 2], "features": [[1.0, -1.0], [0.0, 1.0]]})
    with pytest.raises(InvalidDataError, match="negative genre weight"):
        sqlmetrics.evaluate(CON, recs, ["calibration@2"], history=history, item_features=negative)


# ---- item_genres=: the long form of the genres --------------------------------------------------


def genre_rows(genres: dict, weighted: bool) -> pa.Table:
    """genre_case's vectors in item_genres' long form, one row per (item, genre 'g<index>'):
    weighted, every element with its weight (zeros too: no genre); unweighted, a row for each
    positive element (the multi-hot reading, each weighing 1)."""
    rows = [{"item_id": i, "genre": f"g{g}", "weight": float(w)}
            for i, ws in genres.items() for g, w in enumerate(ws) if weighted or w > 0]
    table = pa.Table.from_pylist(rows, pa.schema([("item_id", pa.array(list(genres) or [0]).type),
                                                   ("genre", pa.string()), ("weight", pa.float64())]))
    return table if weighted else table.drop_columns(["weight"])


@pytest.mark.parametrize("seed", range(8))
def test_item_genres_equal_the_vectors_and_the_formulas(seed):
    """calibration@k and group_ee_*@k with the genres as rows (item, genre[, weight]) equal the
    numpy references (and so the vector form): weighted, and unweighted (each row 1)."""
    recs, history, genres = genre_case(seed, text_items=seed % 2 == 1)
    multi_hot = {i: (w > 0).astype(float) for i, w in genres.items()}
    table = pa.Table.from_pylist(recs)
    for weighted, reference in ((True, genres), (False, multi_hot)):
        rows = genre_rows(genres, weighted)
        inputs = dict(history=pa.Table.from_pylist(history), item_genres=rows, per_user=True,
                      genre_weight="weight" if weighted else None)
        out = sqlmetrics.evaluate(CON, table, ["calibration@3", "calibration(alpha=0.2)@10"], **inputs)
        vectors = sqlmetrics.evaluate(CON, table, ["calibration@3", "calibration(alpha=0.2)@10"],
                                      history=inputs["history"], item_features=features_table(reference),
                                      per_user=True)
        for r, v in zip(out.to_pylist(), vectors.to_pylist(), strict=True):
            for name, k, alpha in (("calibration@3", 3, 0.01), ("calibration(alpha=0.2)@10", 10, 0.2)):
                want = expected_calibration(recs, history, reference, k, alpha)[r["user_id"]]
                assert (r[name] is None) == (want is None) == (v[name] is None), (weighted, r, name)
                if want is not None:
                    assert r[name] == pytest.approx(want, abs=1e-9)
                    assert r[name] == pytest.approx(v[name], abs=1e-12)
    # group exposure: groups = the genres of positive weight
    truth = [{"user_id": r["user_id"], "item_id": r["item_id"], "relevance": 1 + n % 3}
             for n, r in enumerate(recs) if n % 3 == 0]
    groups = {i: {g for g, w in enumerate(ws) if w > 0} for i, ws in genres.items()}
    lists = top_lists(recs, 10**6)
    grades: dict = {}
    for t in truth:
        grades.setdefault(t["user_id"], {})[t["item_id"]] = t["relevance"]
    names = {"group_ee_l@3": (0, 3), "group_ee_d@3": (1, 3), "group_ee_r@10": (2, 10)}
    out = sqlmetrics.evaluate(CON, table, list(names), truth=pa.Table.from_pylist(truth), per_user=True,
                              item_genres=genre_rows(genres, True), genre_weight="weight").to_pylist()
    assert out
    for r in out:
        for name, (which, k) in names.items():
            want = ref.expected_exposure(lists[r["user_id"]], grades.get(r["user_id"], {}), k, 0.5, 1, groups)
            assert (r[name] is None) == (want is None), (r, name)
            if want is not None:
                assert r[name] == pytest.approx(want[which], abs=1e-9), (r["user_id"], name)


def test_item_genres_columns_and_errors():
    recs = pa.table({"user_id": [1, 1], "item_id": [1, 2], "score": [2.0, 1.0]})
    history = pa.table({"user_id": [1], "item_id": [2]})
    # other column names; genres of any type (here numbers); item_features then only similarity
    genres = pa.table({"item_id": [1, 2, 2], "kind": [7, 7, 8], "w": [1, 3, 1]})
    out = sqlmetrics.evaluate(CON, recs, ["calibration@1"], history=history, item_genres=genres,
                              genre="kind", genre_weight="w", per_user=True).to_pylist()
    # p = (3/4, 1/4); q = (1, 0): C_KL = 3/4 ln(3/4 / (0.99 + 0.0075)) + 1/4 ln(1/4 / 0.0025)
    want = 0.75 * math.log(0.75 / (0.99 + 0.0075)) + 0.25 * math.log(0.25 / 0.0025)
    assert out[0]["calibration@1"] == pytest.approx(want, abs=1e-12)
    bad = {
        "a NULL genre for item_id = 2": {"item_id": [1, 2], "genre": ["a", None]},
        "a duplicate (item_id, genre) for item_id = 1": {"item_id": [1, 1], "genre": ["a", "a"]},
        "a negative weight for item_id = 2": {"item_id": [1, 2], "genre": ["a", "b"], "weight": [1.0, -1.0]},
        "a NULL, NaN or infinite weight for item_id = 1": {"item_id": [1], "genre": ["a"],
                                                           "weight": [float("nan")]},
        "a NULL item_id": {"item_id": [None, 2], "genre": ["a", "b"]},
    }
    for message, columns in bad.items():
        kw = {"genre_weight": "weight"} if "weight" in columns else {}
        with pytest.raises(InvalidDataError, match=re.escape(message)):
            sqlmetrics.evaluate(CON, recs, ["calibration@2"], history=history,
                                item_genres=pa.table(columns), **kw)
    with pytest.raises(ConventionError, match="item_genres="):
        sqlmetrics.evaluate(CON, recs, ["calibration@2"], history=history)
    with pytest.raises(sqlmetrics.SqlMetricsError, match="genre"):
        sqlmetrics.evaluate(CON, recs, ["calibration@2"], history=history,
                            item_genres=pa.table({"item_id": [1], "kind": ["a"]}))


# ---- awrf@k (Sapiezynski et al. 2019; TREC Fair Ranking 2021/2022) --------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_awrf_equals_the_trec_fair_ranking_definition(seed):
    """awrf@k against the track's formula (tests/reference_groups.py, scipy's jensenshannon),
    per user and as the mean, groups as vectors or rows; ties, items without a group, lists
    without an item with a group (no value)."""
    recs, _, genres = genre_case(seed, groups=seed % 2 == 0, text_items=seed % 3 == 0)
    by = "model" if seed % 2 == 0 else None
    width = max((len(w) for w in genres.values()), default=0)
    groups = {i: w for i, w in genres.items() if w.sum() > 0}
    present = [g for g in range(width) if any(w[g] > 0 for w in groups.values())]
    reduced = {i: w[present] for i, w in groups.items()}
    names = {"awrf@1": 1, "awrf@3": 3, "awrf@10": 10}
    forms = [dict(item_features=features_table(genres)),
             dict(item_genres=genre_rows(genres, True), genre_weight="weight")]
    for inputs in forms:
        out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), list(names), per_user=True, by=by,
                                  **inputs).to_pylist()
        means = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), list(names), by=by, **inputs).to_pylist()
        for model in ("a", "b") if by else (None,):
            rows = [r for r in out if r.get("model") == model]
            for name, k in names.items():
                lists = top_lists(recs, k, model)
                assert {r["user_id"] for r in rows} == set(lists)
                wanted = {}
                for r in rows:
                    want = ref.awrf(lists[r["user_id"]], reduced, present) if present else None
                    wanted[r["user_id"]] = want
                    assert (r[name] is None) == (want is None), (r, name)
                    if want is not None:
                        assert r[name] == pytest.approx(want, abs=1e-9), (r["user_id"], name)
                        assert 1 - math.log(2) - 1e-12 <= r[name] <= 1 + 1e-12
                row = next(r for r in means if r.get("model") == model)
                mean = mean_of(wanted.values())
                assert (row[name] is None) == (mean is None)
                if mean is not None:
                    assert row[name] == pytest.approx(mean, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_awrf_with_a_target_equals_the_track_s_formula(seed):
    """group_target=: the target's weights normalized (a group it omits has target 0, one no
    item is in counts with p = 0), as scipy's jensenshannon reads the track's targets."""
    recs, _, genres = genre_case(seed, text_items=seed % 2 == 1)
    rng = random.Random(seed)
    width = max((len(w) for w in genres.values()), default=0)
    rows = genre_rows(genres, True)
    listed = [g for g in range(width + 1) if rng.random() < 0.8] or [0]  # g<width>: no item's
    weights = [rng.choice((0.0, 0.5, 1.0, 3.0)) for _ in listed]
    weights[0] = 1.0
    target = pa.table({"genre": [f"g{g}" for g in listed], "weight": weights})
    groups = {i: w for i, w in genres.items() if w.sum() > 0}
    present = sorted({g for w in groups.values() for g in range(len(w)) if w[g] > 0} | set(listed))
    full = {i: np.array([w[g] if g < len(w) else 0.0 for g in present]) for i, w in groups.items()}
    t = np.array([weights[listed.index(g)] if g in listed else 0.0 for g in present])
    out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), ["awrf@2", "awrf@10"], per_user=True,
                              item_genres=rows, genre_weight="weight", group_target=target).to_pylist()
    for r in out:
        for name, k in (("awrf@2", 2), ("awrf@10", 10)):
            want = ref.awrf(top_lists(recs, k)[r["user_id"]], full, present, t)
            assert (r[name] is None) == (want is None), (r, name)
            if want is not None:
                assert r[name] == pytest.approx(want, abs=1e-9), (r["user_id"], name)


def test_awrf_target_errors():
    recs = pa.table({"user_id": [1, 1], "item_id": [1, 2], "score": [2.0, 1.0]})
    genres = pa.table({"item_id": [1, 2], "genre": ["a", "b"]})
    bad = {
        "a NULL genre": {"genre": [None, "b"], "weight": [1.0, 1.0]},
        "a duplicate genre = a": {"genre": ["a", "a"], "weight": [1.0, 1.0]},
        "a negative weight for genre = b": {"genre": ["a", "b"], "weight": [1.0, -1.0]},
        "a NULL, NaN or infinite weight for genre = a": {"genre": ["a"], "weight": [float("inf")]},
        "no positive weight": {"genre": ["a", "b"], "weight": [0.0, 0.0]},
    }
    for message, columns in bad.items():
        with pytest.raises(InvalidDataError, match=re.escape(message)):
            sqlmetrics.evaluate(CON, recs, ["awrf@2"], item_genres=genres, group_target=pa.table(columns))
    with pytest.raises(ConventionError, match="no awrf metric"):
        sqlmetrics.evaluate(CON, recs, ["calibration@2"], history=recs, item_genres=genres,
                            group_target=pa.table(bad["no positive weight"]))


def test_awrf_by_hand():
    # groups a, b (uniform target 1/2 each); user 1 shows a, b, a: attention 1, 1, 1/log2(3)
    recs = pa.table({"user_id": [1, 1, 1, 2], "item_id": [1, 2, 3, 1], "score": [3.0, 2.0, 1.0, 1.0]})
    genres = pa.table({"item_id": [1, 2, 3], "genre": ["a", "b", "a"]})
    out = sqlmetrics.evaluate(CON, recs, ["awrf@2", "awrf@3"], item_genres=genres, per_user=True).to_pylist()
    assert out[0]["awrf@2"] == pytest.approx(1.0, abs=1e-15)  # a and b equally: the target
    # user 2 shows only a: p = (1, 0), m = (3/4, 1/4)
    jsd = 0.5 * math.log(4 / 3) + 0.5 * (0.5 * math.log(2 / 3) + 0.5 * math.log(2))
    assert out[1]["awrf@2"] == pytest.approx(1 - jsd, abs=1e-15)
    a = 1 + 1 / math.log2(3)
    p = [a / (a + 1), 1 / (a + 1)]
    jsd = sum(0.5 * x * math.log(x / ((x + 0.5) / 2)) + 0.25 * math.log(0.5 / ((x + 0.5) / 2)) for x in p)
    assert out[0]["awrf@3"] == pytest.approx(1 - jsd, abs=1e-15)
    with pytest.raises(ConventionError, match="item_genres="):
        sqlmetrics.evaluate(CON, recs, ["awrf@3"])
    assert sqlmetrics.awrf(CON, recs, k=2, item_genres=genres).column("awrf@2").to_pylist() == [
        pytest.approx(out[0]["awrf@2"] / 2 + out[1]["awrf@2"] / 2)]


# ---- rbo@k, rbo_sum@k (Webber et al. 2010) ----------------------------------------------------

MODELS = ("A", "B", "C")


def systems_case(seed: int, *, text_items: bool = False):
    """Random lists of three systems: few distinct scores (ties), lists of different lengths,
    users a system (the baseline too) has no list for, lists equal to the baseline's."""
    rng = random.Random(seed)
    n_items = rng.randint(2, 14)
    item = (lambda i: f"i{i}") if text_items else (lambda i: i * 7 % 31)
    recs = []
    for user in range(rng.randint(1, 7)):
        first = rng.sample(range(n_items), rng.randint(1, n_items))
        for model in MODELS:
            if rng.random() < 0.15:
                continue  # no list of this system for the user
            listed = first if rng.random() < 0.2 else rng.sample(range(n_items), rng.randint(1, n_items))
            recs += [{"user_id": user, "item_id": item(i), "score": rng.choice((0.1, 0.5, 0.9)),
                      "model": model} for i in listed]
    return recs


def expected_rbo(recs, k, p, baseline="A", form=ref.rbo_ext) -> dict:
    base = top_lists(recs, k, baseline)
    out = {}
    for model in MODELS:
        for user, top in top_lists(recs, k, model).items():
            out[(model, user)] = form(top, base[user], p) if user in base else None
    return out


@pytest.mark.parametrize("seed", range(16))
def test_rbo_equals_webbers_formulas(seed):
    recs = systems_case(seed, text_items=seed % 3 == 0)
    p = (0.9, 0.5, 0.98, 0.01)[seed % 4]
    baseline = MODELS[seed % 3]
    names = [("rbo@1", "ext", 1, 0.9), ("rbo@4", "ext", 4, 0.9), (f"rbo(p={p})@10", "ext", 10, p),
             ("rbo_sum@3", "sum", 3, 0.9), (f"rbo_sum(p={p})@10", "sum", 10, p)]
    table = pa.Table.from_pylist(recs)
    labels = [n[0] for n in names]
    per_user = sqlmetrics.evaluate(CON, table, labels, by="model", baseline=baseline,
                                   per_user=True).to_pylist()
    out = sqlmetrics.evaluate(CON, table, labels, by="model", baseline=baseline).to_pylist()
    for label, form, k, persistence in names:
        expected = expected_rbo(recs, k, persistence, baseline, ref.rbo_ext if form == "ext" else ref.rbo_sum)
        assert {(r["model"], r["user_id"]) for r in per_user} == set(expected)
        for r in per_user:
            want = expected[(r["model"], r["user_id"])]
            assert (r[label] is None) == (want is None), (r, label)
            if want is not None:
                assert r[label] == pytest.approx(want, abs=1e-9), (r, label)
        for row in out:
            want = mean_of(v for (m, _), v in expected.items() if m == row["model"])
            assert (row[label] is None) == (want is None)
            if want is not None:
                assert row[label] == pytest.approx(want, abs=1e-9), (row["model"], label)


def test_rbo_by_hand():
    # Webber et al.'s definitions on S = a b c, L = b a d, p = 0.9: X = 0, 2, 2
    recs = pa.table({"user_id": [1] * 6, "item_id": list("abcbad"), "score": [3.0, 2, 1, 3, 2, 1],
                     "model": list("AAABBB")})
    out = sqlmetrics.evaluate(CON, recs, ["rbo@3", "rbo_sum@3"], by="model", baseline="A").to_pylist()
    assert out[0]["rbo@3"] == pytest.approx(1, abs=1e-15)
    assert out[1]["rbo@3"] == pytest.approx(0.1 * (0.9 * 2 / 2 + 0.81 * 2 / 3) + 2 / 3 * 0.729, abs=1e-15)
    assert out[1]["rbo_sum@3"] == pytest.approx(0.1 * (0.9 * 2 / 2 + 0.81 * 2 / 3), abs=1e-15)


@FAST
@given(seed=st.integers(0, 10**6), k=st.integers(1, 12), p=st.sampled_from([0.1, 0.9, 0.99]))
def test_rbo_properties(seed, k, p):
    """The baseline's own lists: rbo 1; 0 <= rbo_sum <= rbo <= 1; symmetric (the baseline swapped)."""
    table = pa.Table.from_pylist(systems_case(seed))
    names = [f"rbo(p={p})@{k}", f"rbo_sum(p={p})@{k}"]
    runs = {b: {(r["model"], r["user_id"]): r for r in sqlmetrics.evaluate(
        CON, table, names, by="model", baseline=b, per_user=True).to_pylist()} for b in ("A", "B")}
    for (model, user), r in runs["A"].items():
        ext, lower = r[names[0]], r[names[1]]
        if ext is None:
            continue
        assert -1e-12 <= lower <= ext + 1e-12 and ext <= 1 + 1e-12
        if model == "A":
            assert ext == pytest.approx(1, abs=1e-12)
        if model == "B":
            assert runs["B"][("A", user)][names[0]] == pytest.approx(ext, abs=1e-12)


def test_against_the_rbo_package():
    """The rbo package (changyaochen/rbo: RankingSimilarity.rbo_ext(p), the same eq. 32, and
    .rbo(p), the sum to the shorter list's depth), in the interpreter SQLMETRICS_RBO_PYTHON
    names (it pins numpy < 2: not in this venv); skipped without it (failed under CI=true)."""
    cases, values = [], []
    for seed in range(10):
        recs = systems_case(seed)
        p = (0.9, 0.5, 0.98)[seed % 3]
        base = top_lists(recs, 8, "A")
        out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), [f"rbo(p={p})@8", f"rbo_sum(p={p})@8"],
                                  by="model", baseline="A", per_user=True).to_pylist()
        for r in out:
            if r["user_id"] in base:
                top = top_lists(recs, 8, r["model"])[r["user_id"]]
                cases.append({"S": top, "T": base[r["user_id"]], "p": p})
                values.append((r[f"rbo(p={p})@8"], r[f"rbo_sum(p={p})@8"]))
    results = run_cases("SQLMETRICS_RBO_PYTHON", "the rbo package", "rbo_run.py", cases)
    for (ext, lower), (their_ext, their_sum) in zip(values, results, strict=True):
        assert ext == pytest.approx(their_ext, abs=1e-9)
        assert lower == pytest.approx(their_sum, abs=1e-9)


def test_rbo_needs_by_and_baseline():
    table = pa.Table.from_pylist(systems_case(1))
    with pytest.raises(ConventionError, match="by="):
        sqlmetrics.evaluate(CON, table, ["rbo@3"])
    with pytest.raises(ConventionError, match="no baseline="):
        sqlmetrics.evaluate(CON, table, ["rbo@3"], by="model")
    with pytest.raises(ConventionError, match="one value per by column"):
        sqlmetrics.evaluate(CON, table, ["rbo@3"], by="model", baseline=("A", "B"))
    with pytest.raises(ConventionError, match="no rbo metric"):
        sqlmetrics.evaluate(CON, table, ["personalization@3"], by="model", baseline="A")
    with pytest.raises(ConventionError, match="is text"):
        numbered = table.drop_columns("model").append_column("model", pa.array([1] * len(table)))
        sqlmetrics.evaluate(CON, numbered, ["rbo@3"], by="model", baseline="A")
    with pytest.raises(UnknownMetricError, match="0 < p < 1"):
        sqlmetrics.evaluate(CON, table, ["rbo(p=1)@3"], by="model", baseline="A")
    with pytest.raises(UnknownMetricError, match="did you mean 'rbo_sum'"):
        sqlmetrics.evaluate(CON, table, ["rbo_summ@3"], by="model", baseline="A")


# ---- expected exposure (Diaz et al. 2020) -----------------------------------------------------


def exposure_case(seed: int):
    """Random recs with score ties and graded truth (negative, 0, missing grades; at most 5
    items of one grade), users without truth, truth users without a list."""
    rng = random.Random(seed)
    n_items = rng.randint(1, 12)
    recs, truth = [], []
    for user in range(rng.randint(1, 7)):
        if rng.random() < 0.85:
            recs += [{"user_id": user, "item_id": i, "score": rng.choice((0.1, 0.5, 0.9))}
                     for i in rng.sample(range(n_items), rng.randint(1, n_items))]
        if rng.random() < 0.85:
            judged = rng.sample(range(n_items + 3), rng.randint(1, min(8, n_items + 3)))
            truth += [{"user_id": user, "item_id": i, "relevance": rng.choice((-1, 0, 1, 1, 2, 3))}
                      for i in judged]
    return recs, truth


@pytest.mark.parametrize("seed", range(16))
def test_expected_exposure_equals_the_papers_definitions(seed):
    recs, truth = exposure_case(seed)
    gamma = (0.5, 0.9, 0.1, 0.5)[seed % 4]
    missing = "zero" if seed % 2 else "skip"
    threshold = 2 if seed % 3 == 0 else 1
    names = {"ee_l@3": (0, 3, 0.5), "ee_d@3": (1, 3, 0.5), "ee_r@3": (2, 3, 0.5),
             f"ee_l(gamma={gamma})@10": (0, 10, gamma), f"ee_r(gamma={gamma})": (2, None, gamma),
             f"ee_d(gamma={gamma})@1": (1, 1, gamma)}
    if not recs or not truth:
        return
    inputs = dict(truth=pa.Table.from_pylist(truth), missing=missing, threshold=threshold)
    out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), list(names), per_user=True,
                              **inputs).to_pylist()
    lists = top_lists(recs, 10**6)
    grades: dict = {}
    for t in truth:
        grades.setdefault(t["user_id"], {})[t["item_id"]] = t["relevance"]
    users = set(grades) if missing == "zero" else set(lists) & set(grades)
    assert {r["user_id"] for r in out} == users
    for r in out:
        for name, (which, k, g) in names.items():
            want = ref.expected_exposure(lists.get(r["user_id"], []), grades[r["user_id"]], k, g, threshold)
            assert r[name] == pytest.approx(want[which], abs=1e-9), (r["user_id"], name)
    means = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), list(names), **inputs).to_pylist()[0]
    for name in names:
        assert means[name] == pytest.approx(sum(r[name] for r in out) / len(out), abs=1e-9)


def test_expected_exposure_by_hand():
    # list a, b, c; a of grade 2 alone, c and e of grade 1: e* = 1, 0.375, 0.375; e = 1, 0.5, 0.25
    recs = pa.table({"user_id": [1, 1, 1], "item_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    truth = pa.table({"user_id": [1, 1, 1], "item_id": ["a", "c", "e"], "relevance": [2, 1, 1]})
    out = sqlmetrics.evaluate(CON, recs, ["ee_l@3", "ee_d@3", "ee_r@3"], truth=truth).to_pylist()[0]
    assert out["ee_d@3"] == 1.3125 and out["ee_r@3"] == 1.09375
    assert out["ee_l@3"] == pytest.approx(0.5**2 + 0.125**2 + 0.375**2, abs=1e-15)


@FAST
@given(seed=st.integers(0, 10**6), k=st.integers(1, 12), gamma=st.sampled_from([0.2, 0.5, 0.95]))
def test_expected_exposure_properties(seed, k, gamma):
    """ee_l (a squared distance) >= 0, ee_r >= 0, and ee_d = (1 - gamma^(2n)) / (1 - gamma^2)
    for a list of n = min(k, N) items, whatever the truth."""
    recs, truth = exposure_case(seed)
    if not recs or not truth:
        return
    names = [f"ee_l(gamma={gamma})@{k}", f"ee_d(gamma={gamma})@{k}", f"ee_r(gamma={gamma})@{k}"]
    truth_table = pa.Table.from_pylist(truth)
    out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), names, truth=truth_table,
                              per_user=True).to_pylist()
    for r in out:
        loss, disparity, relevance = (r[n] for n in names)
        assert loss >= -1e-12 and relevance >= -1e-12
        n = min(k, sum(1 for row in recs if row["user_id"] == r["user_id"]))
        assert disparity == pytest.approx((1 - gamma ** (2 * n)) / (1 - gamma * gamma), abs=1e-12)


def test_rbo_on_the_command_line(tmp_path, capsys):
    """sqlmetrics evaluate --by model --baseline VALUE: the same numbers; a number read as the
    integer by column's value; without --baseline, one line and exit status 2."""
    import pyarrow.csv as csv

    from sqlmetrics import cli

    table = pa.Table.from_pylist(systems_case(3))
    numbered = table.drop_columns("model").append_column(
        "model", pa.array([ord(m) for m in table.column("model").to_pylist()]))
    for data, baseline, value in ((table, "B", "B"), (numbered, str(ord("B")), ord("B"))):
        path = tmp_path / "recs.csv"
        csv.write_csv(data, path)
        code = cli.main(["evaluate", str(path), "--metrics", "rbo@5,rbo_sum(p=0.5)@3", "--by", "model",
                         "--baseline", baseline, "--format", "json"])
        assert code == 0
        printed = json.loads(capsys.readouterr().out)
        expected = sqlmetrics.evaluate(CON, data, ["rbo@5", "rbo_sum(p=0.5)@3"], by="model",
                                       baseline=value).to_pylist()
        assert len(printed) == len(expected)
        for got, want in zip(printed, expected, strict=True):
            for name in ("rbo@5", "rbo_sum(p=0.5)@3"):
                assert got[name] == pytest.approx(want[name], abs=1e-12)
    assert cli.main(["evaluate", str(path), "--metrics", "rbo@5", "--by", "model"]) == 2
    assert "--baseline" in capsys.readouterr().err


def test_units_of_two_key_columns():
    """user=["user_id", "day"]: calibration meets the user's whole history when history has no
    day; rbo pairs the lists of one (user, day); expected exposure judges each (user, day)."""
    recs, history, genres = genre_case(7, groups=True)
    days = [{**r, "day": r["item_id"] % 2} for r in recs]  # (each user's items in two days)
    out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(days), ["calibration@3", "rbo@4"], by="model",
                              baseline="a", history=pa.Table.from_pylist(history),
                              item_features=features_table(genres), user=["user_id", "day"],
                              per_user=True).to_pylist()
    seen: dict = {}
    for h in history:
        seen.setdefault(h["user_id"], []).append(h["item_id"])
    checked = set()
    for r in out:
        key = (r["user_id"], r["day"])
        rows = [x for x in days if (x["user_id"], x["day"], x["model"]) == (*key, r["model"])]
        top = top_lists(rows, 3, r["model"])[r["user_id"]]
        want = ref.calibration(seen.get(r["user_id"], []), top, genres)
        assert (r["calibration@3"] is None) == (want is None)
        if want is not None:
            assert r["calibration@3"] == pytest.approx(want, abs=1e-9)
        base = [x for x in days if (x["user_id"], x["day"], x["model"]) == (*key, "a")]
        if not base:
            assert r["rbo@4"] is None
        else:
            mine, theirs = top_lists(rows, 4, r["model"])[r["user_id"]], top_lists(base, 4, "a")[r["user_id"]]
            assert r["rbo@4"] == pytest.approx(ref.rbo_ext(mine, theirs, 0.9), abs=1e-9)
            checked.add(r["model"])
    assert checked == {"a", "b"}


def test_exposure_refuses_tie_averaging():
    recs, truth = exposure_case(2)
    with pytest.raises(ConventionError, match="ee_l@3"):
        sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), ["ee_l@3"], truth=pa.Table.from_pylist(truth),
                            ties="average")


@pytest.mark.parametrize("seed", range(12))
def test_group_expected_exposure_equals_the_papers_definitions(seed):
    recs, truth = exposure_case(seed)
    if not recs or not truth:
        return
    rng = random.Random(seed)
    items = sorted({r["item_id"] for r in recs} | {t["item_id"] for t in truth})
    vectors = {i: [float(rng.random() < 0.4) for _ in range(3)] for i in items if rng.random() < 0.85}
    features = pa.table({"item_id": pa.array(list(vectors), pa.int64()),
                         "features": pa.array(list(vectors.values()), pa.list_(pa.float64()))})
    groups = {i: {g for g, w in enumerate(v) if w > 0} for i, v in vectors.items()}
    gamma = (0.5, 0.8, 0.3)[seed % 3]
    names = {"group_ee_l@3": (0, 3, 0.5), "group_ee_d@3": (1, 3, 0.5), "group_ee_r@3": (2, 3, 0.5),
             f"group_ee_l(gamma={gamma})@10": (0, 10, gamma),
             f"group_ee_r(gamma={gamma})@2": (2, 2, gamma)}
    inputs = dict(truth=pa.Table.from_pylist(truth), item_features=features, threshold=1 + seed % 2)
    out = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), list(names), per_user=True,
                              **inputs).to_pylist()
    lists = top_lists(recs, 10**6)
    grades: dict = {}
    for t in truth:
        grades.setdefault(t["user_id"], {})[t["item_id"]] = t["relevance"]
    assert {r["user_id"] for r in out} == set(lists)
    for r in out:
        for name, (which, k, g) in names.items():
            want = ref.expected_exposure(lists[r["user_id"]], grades.get(r["user_id"], {}), k, g,
                                         1 + seed % 2, groups)
            assert (r[name] is None) == (want is None), (r, name)
            if want is not None:
                assert r[name] == pytest.approx(want[which], abs=1e-9), (r["user_id"], name)
    means = sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), list(names), **inputs).to_pylist()[0]
    for name in names:
        values = [r[name] for r in out if r[name] is not None]
        assert (means[name] is None) == (not values)
        if values:
            assert means[name] == pytest.approx(sum(values) / len(values), abs=1e-9)


def test_group_expected_exposure_needs_truth_and_groups():
    recs, truth = exposure_case(3)
    features = pa.table({"item_id": [0], "features": [[1.0]]})
    with pytest.raises(ConventionError, match="truth="):
        sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), ["group_ee_l@3"], item_features=features)
    with pytest.raises(ConventionError, match="item_features="):
        sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), ["group_ee_l@3"],
                            truth=pa.Table.from_pylist(truth))


def test_ordinary_data_runs_once(monkeypatch):
    """The measures over item groups on the random data above: every statement in the fast
    form of the exact sums, none run again in the wide one (sql/exact_sum.sql.j2)."""
    from test_exact_sums import recording_forms

    forms = recording_forms(monkeypatch)
    for seed in range(4):
        recs, history, genres = genre_case(seed)
        inputs = dict(history=pa.Table.from_pylist(history), item_features=features_table(genres))
        sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), ["calibration@3", "calibration(alpha=0.2)@10"],
                            **inputs)
        table = pa.Table.from_pylist(systems_case(seed))
        sqlmetrics.evaluate(CON, table, ["rbo@10", "rbo_sum(p=0.98)@10"], by="model", baseline="A")
        recs, truth = exposure_case(seed)
        if recs and truth:
            features = pa.table({"item_id": pa.array(range(20), pa.int64()),
                                 "features": [[float(i % 2), float(i % 3 == 0)] for i in range(20)]})
            sqlmetrics.evaluate(CON, pa.Table.from_pylist(recs), ["ee_l@10", "ee_r(gamma=0.9)@20",
                                "group_ee_l@10"], truth=pa.Table.from_pylist(truth), item_features=features)
    assert forms and set(forms) == {"fast"}, forms
