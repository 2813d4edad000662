"""err@k, nerr@k and rank-biased precision under peers' names, against the peers on random data:
ERR@k against ir_measures (its gdeval provider, which prints 5 decimals) and to 1e-9 against a
short reference of Chapelle et al.'s formula (below, with gdeval's gains); nerr@k against the
reference; RBP(p=...) against ir_measures (trectools: graded; cwl_eval: RBP(rel=N), binary),
ranx's rbp.95 against ranx. The data: graded and negative grades, retrieved items without a
judgment, users without a relevant item; score ties only where the peer breaks them as
sqlmetrics does (gdeval: score, then docno descending)."""

from __future__ import annotations

import math
import random

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics

ir_measures = pytest.importorskip("ir_measures")
CON = duckdb.connect()


def random_data(seed: int, ties: bool, grades=(-1, 0, 0, 1, 1, 2, 3, 4)):
    """recs and truth tables, and {user: [grade of the item at each position]} and {user: all
    judged grades}: users "1".."n" (gdeval reads numeric topics), item ids d00..d59."""
    rng = random.Random(seed)
    recs, truth, order, judged = [], [], {}, {}
    for user in range(1, rng.randint(2, 12)):
        qid = str(user)
        docs = list(dict.fromkeys(f"d{rng.randint(0, 59):02d}" for _ in range(rng.randint(1, 30))))
        scores = [rng.randint(0, 5) if ties else rng.random() for _ in docs]
        grade = {d: rng.choice(grades) for d in docs if rng.random() < 0.7}
        grade.update({f"u{i}": rng.choice(grades) for i in range(rng.randint(0, 3))})  # not retrieved
        if not grade:
            grade["u9"] = 0
        recs += [(qid, d, float(s)) for d, s in zip(docs, scores, strict=True)]
        truth += [(qid, d, g) for d, g in grade.items()]
        ranked = sorted(zip(docs, scores, strict=True), key=lambda t: (-t[1], [-ord(c) for c in t[0]]))
        order[qid] = [grade.get(d, 0) for d, _ in ranked]
        judged[qid] = list(grade.values())
    recs_t = pa.table({"user_id": [r[0] for r in recs], "item_id": [r[1] for r in recs],
                       "score": [r[2] for r in recs]})  # fmt: skip
    truth_t = pa.table({"user_id": [t[0] for t in truth], "item_id": [t[1] for t in truth],
                        "relevance": [t[2] for t in truth]})  # fmt: skip
    return recs_t, truth_t, order, judged


def err_reference(grades: list[int], k: int | None, max_grade: float = 4) -> float:
    """Chapelle et al.'s ERR with gdeval's stopping probabilities (2^g - 1) / 2^max_grade."""
    score, reach = 0.0, 1.0
    for i, g in enumerate(grades[:k] if k else grades, start=1):
        r = (2 ** min(g, max_grade) - 1) / 2**max_grade if g > 0 else 0.0
        score += r * reach / i
        reach *= 1 - r
    return score


def close(a, b, tol=1e-9) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def evaluated(recs, truth, names) -> dict:
    rows = sqlmetrics.evaluate(CON, recs, names, truth=truth, per_user=True).to_pylist()
    return {row["user_id"]: row for row in rows}


def qrels_and_run(recs, truth):
    qrels = [ir_measures.Qrel(u, d, int(g)) for u, d, g in zip(*truth.to_pydict().values(), strict=True)]
    rows = sorted(zip(*recs.to_pydict().values(), strict=True), key=lambda r: (r[0], -r[2]))
    run = [ir_measures.ScoredDoc(u, d, s) for u, d, s in rows]  # trectools reads a sorted run
    return qrels, run


@pytest.mark.parametrize("seed", range(8))
def test_err_and_nerr_match_the_formula_and_gdeval(seed):
    recs, truth, order, judged = random_data(seed, ties=True)
    names = ["err@3", "ERR@10", "err", "nerr@3", "nerr@10", "nERR(max_grade=3)@5"]
    ours = evaluated(recs, truth, names)
    assert set(ours) == set(order)
    for user, grades in order.items():
        ideal = sorted(judged[user], reverse=True)
        for k in (3, 10, None):
            label = {3: "err@3", 10: "ERR@10", None: "err"}[k]
            assert close(ours[user][label], err_reference(grades, k)), (user, label)
        for k, m, label in [(3, 4, "nerr@3"), (10, 4, "nerr@10"), (5, 3, "nERR(max_grade=3)@5")]:
            best = err_reference(ideal, k, m)
            want = err_reference(grades, k, m) / best if best > 0 else 0.0
            assert close(ours[user][label], want), (user, label, ours[user][label], want)
    # ir_measures' ERR@10 (gdeval: topics with a relevant judgment, %.5f)
    qrels, run = qrels_and_run(recs, truth)
    theirs = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.ERR @ 10], qrels, run)}
    assert theirs and set(theirs) <= set(ours)
    wrong = {u: (ours[u]["ERR@10"], v) for u, v in theirs.items() if abs(ours[u]["ERR@10"] - v) > 5.000001e-6}
    assert not wrong, f"(sqlmetrics, gdeval) = {wrong}"


@pytest.mark.parametrize("seed", range(6))
def test_rbp_under_ir_measures_and_ranx_names_matches_them(seed):
    # no score ties (trectools averages over tied orders) and no negative grade (trectools
    # would count it as a negative gain, sqlmetrics' gains are 0 below 1)
    recs, truth, order, _ = random_data(seed, ties=False, grades=(0, 0, 1, 1, 2, 3, 4))
    names = ["RBP(p=0.8)", "RBP(p=0.5)", "RBP(p=0.8,rel=2)", "rbp.95", "rbp.8-l2", "rbp_gain@5"]
    ours = evaluated(recs, truth, names)
    qrels, run = qrels_and_run(recs, truth)
    from ir_measures import RBP

    # one measure per call: trectools' provider mixes up two RBPs asked together
    graded = [m for p in (0.8, 0.5) for m in ir_measures.trectools.iter_calc([RBP(p=p)], qrels, run)]
    binary = ir_measures.cwl_eval.iter_calc([RBP(p=0.8, rel=2)], qrels, run)
    labels = {str(RBP(p=0.8)): "RBP(p=0.8)", str(RBP(p=0.5)): "RBP(p=0.5)",
              str(RBP(p=0.8, rel=2)): "RBP(p=0.8,rel=2)"}  # fmt: skip
    checked = 0
    for metric in [*graded, *binary]:
        label = labels[str(metric.measure)]
        got = ours[metric.query_id][label]
        assert close(got, float(metric.value)), (metric, got)
        checked += 1
    assert checked >= len(order)
    # ranx: rbp.95 (p = 0.95, the grades >= 1 as gains), rbp.8-l2 (grades >= 2)
    from ranx import Qrels, Run, evaluate

    ranx_qrels = Qrels.from_dict({u: {d: int(g) for _, d, g in rows} for u, rows in _by_user(truth).items()})
    ranx_run = Run.from_dict({u: {d: s for _, d, s in rows} for u, rows in _by_user(recs).items()})
    for name in ("rbp.95", "rbp.8-l2"):
        theirs = evaluate(ranx_qrels, ranx_run, name, return_mean=False)
        for user, value in zip(ranx_qrels.get_query_ids(), theirs, strict=True):
            assert close(ours[user][name], float(value)), (name, user, ours[user][name], value)
    # rbp_gain@5: the same sum over the top 5
    for user, grades in order.items():
        want = 0.2 * sum(max(g, 0) * 0.8**i for i, g in enumerate(grades[:5]))
        assert close(ours[user]["rbp_gain@5"], want)


def _by_user(table: pa.Table) -> dict:
    rows: dict = {}
    for row in zip(*table.to_pydict().values(), strict=True):
        rows.setdefault(row[0], []).append(row)
    return rows


def test_peer_names_of_err_and_rbp():
    from sqlmetrics.names.metric_names import parse_metrics

    names = ["ERR@10", "nERR@5", "RBP(p=0.9)", "rbp.95", "rbp", "rbp.p=0.5"]
    parsed = {m.label: m for m in parse_metrics(names)}
    assert (parsed["ERR@10"].name, parsed["ERR@10"].k) == ("err", 10)
    assert (parsed["nERR@5"].name, parsed["nERR@5"].k) == ("nerr", 5)
    assert (parsed["RBP(p=0.9)"].name, parsed["RBP(p=0.9)"].param) == ("rbp_gain", 0.9)
    assert (parsed["rbp.95"].name, parsed["rbp.95"].param) == ("rbp_gain", 0.95)
    assert parsed["rbp"].name == "rbp" and parsed["rbp"].param is None  # trec_eval's, p = 0.9
    assert (parsed["rbp_p=0.5"].name, parsed["rbp_p=0.5"].param) == ("rbp", 0.5)
    with pytest.raises(sqlmetrics.UnknownMetricError, match="rbp.p=VALUE"):
        parse_metrics(["rbp.q=0.5"])
