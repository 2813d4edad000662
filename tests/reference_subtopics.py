"""A numpy reference of the intent-aware measures, from the papers' formulas with ndeval's
conventions, for tests/test_subtopics_properties.py: with intent weights too, which ndeval
(and pyndeval, the other oracle) does not take.

Agrawal et al. 2009 (WSDM, "Diversifying search results"): M-IA@k = sum over intents s of
P(s | q) M_s@k. Here P(s | q) = w_s / W over the unit's N subtopics with a relevant item
(uniform 1/N without weights: ndeval's), and M_s is, for subtopic s alone (binary relevance,
c_si = the items relevant to s above position i):
  P_s@k = |relevant to s in the top k| / k
  AP_s = (1 / R_s) sum over positions i of the items relevant to s of (c_si + 1) / i
  ERR_s@k = sum_{i<=k, relevant} (1 - alpha)^c_si / i, over sum_{i<=k} (1 - alpha)^(i-1) / i
           (ndeval's "collection-independent" normalization)
alpha-nDCG@k (Clarke et al. 2008) over ndeval's greedy ideal list, and NRBP (Clarke et al.
2009), both uniform over the N subtopics."""

from __future__ import annotations

import math

import numpy as np


def relevant_sets(judgements: list[tuple], threshold: float = 1) -> dict:
    """{subtopic: set of items} relevant from (subtopic, item, grade) rows: the highest grade of
    a (subtopic, item) >= threshold and > 0; subtopics without a relevant item left out."""
    best: dict = {}
    for subtopic, item, grade in judgements:
        best[(subtopic, item)] = max(grade, best.get((subtopic, item), grade))
    out: dict = {}
    for (subtopic, item), grade in best.items():
        if grade >= threshold and grade > 0:
            out.setdefault(subtopic, set()).add(item)
    return out


def greedy_ideal(relevant: dict, alpha: float = 0.5) -> list:
    """ndeval's greedy ideal list: at each position the item of the largest gain given those
    above, among the items relevant to a subtopic; ties to the larger item."""
    items = sorted({i for s in relevant.values() for i in s})
    gain = {s: 1.0 for s in relevant}
    order: list = []
    while len(order) < len(items):
        left = [i for i in items if i not in order]
        scores = {i: sum(gain[s] for s in relevant if i in relevant[s]) for i in left}
        pick = max(left, key=lambda i: (scores[i], i))
        order.append(pick)
        for s in relevant:
            if pick in relevant[s]:
                gain[s] *= 1 - alpha
    return order


def _matrix(ranking: list, relevant: dict) -> tuple[list, np.ndarray]:
    subtopics = sorted(relevant)
    rel = np.array([[item in relevant[s] for item in ranking] for s in subtopics], dtype=float)
    return subtopics, rel.reshape(len(subtopics), len(ranking))


def _alpha_dcg(ranking: list, relevant: dict, k: int, alpha: float) -> float:
    _, rel = _matrix(ranking[:k], relevant)
    above = np.cumsum(rel, axis=1) - rel  # c_si
    gains = (rel * (1 - alpha) ** above).sum(axis=0)
    return float((gains / np.log2(np.arange(2, len(gains) + 2))).sum())


def measures(
    ranking: list,
    judgements: list[tuple],
    *,
    weights: dict | None = None,
    threshold: float = 1,
    k: int = 5,
    alpha: float = 0.5,
    beta: float = 0.5,
) -> dict[str, float]:
    """alpha_ndcg@k, p_ia@k, ap_ia, err_ia@k and nrbp of one unit's ranked list (best first)."""
    relevant = relevant_sets(judgements, threshold)
    names = ("alpha_ndcg", "p_ia", "ap_ia", "err_ia", "nrbp")
    if not relevant:
        return dict.fromkeys(names, 0.0)
    subtopics, rel = _matrix(ranking, relevant)
    n = len(subtopics)
    w = np.array([1.0 if weights is None else weights[s] for s in subtopics])
    p = w / w.sum()  # P(s | unit)
    above = np.cumsum(rel, axis=1) - rel
    positions = np.arange(1, len(ranking) + 1)
    r_s = np.array([len(relevant[s]) for s in subtopics], dtype=float)
    p_s = rel[:, :k].sum(axis=1) / k
    ap_s = (rel * (above + 1) / positions).sum(axis=1) / r_s
    norm = sum((1 - alpha) ** (i - 1) / i for i in range(1, k + 1))
    err_s = (rel[:, :k] * (1 - alpha) ** above[:, :k] / positions[:k]).sum(axis=1) / norm
    nrbp = (1 - (1 - alpha) * beta) / n * float((rel * (1 - alpha) ** above * beta ** (positions - 1)).sum())
    dcg = _alpha_dcg(ranking, relevant, k, alpha)
    ideal = _alpha_dcg(greedy_ideal(relevant, alpha), relevant, k, alpha)
    return {
        "alpha_ndcg": dcg / ideal if dcg > 0 else 0.0,
        "p_ia": float(p @ p_s),
        "ap_ia": float(p @ ap_s),
        "err_ia": float(p @ err_s),
        "nrbp": nrbp,
    }


def close(a: float | None, b: float, tol: float = 1e-9) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=tol, abs_tol=tol)
