"""A plain-Python reference implementation of sqlmetrics' metrics and conventions.

Written from the definitions only (no sqlmetrics import), to be slow and obvious:

* a user's list is sorted in Python with the chosen tie order;
* ties="average" enumerates every order of the tied items (brute force) and averages;
* every metric is computed from the list of relevance grades the user sees, top first.

Rows are plain dicts: recs rows {"user", "item", "score"[, "group"][, "relevance"]},
truth rows {"user", "item", "relevance"}.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

CUTOFF_METRICS = (
    "cg", "dcg", "idcg", "ndcg", "precision", "recall", "f1", "hit_rate", "mrr", "arhr", "map",
    "mar",
)
ALL_METRICS = (*CUTOFF_METRICS, "r_precision")
# Metrics defined under ties="average" (the others are order statistics that it refuses).
TIE_AVERAGED = ("cg", "dcg", "idcg", "ndcg", "precision", "recall", "f1", "hit_rate", "arhr")


def parse(label: str) -> tuple[str, int | None]:
    """'ndcg@10' -> ('ndcg', 10); 'r_precision' -> ('r_precision', None)."""
    name, _, k = label.partition("@")
    return name, (int(k) if k else None)


def gain_of(rel: float, gain: str) -> float:
    if rel <= 0:
        return 0.0
    return float(rel) if gain == "linear" else 2.0**rel - 1.0


def dcg_of(gains: list[float]) -> float:
    return sum(g / math.log2(i + 1) for i, g in enumerate(gains, start=1))


def metric(
    label: str,
    seen: list[float],
    truth_rels: list[float],
    *,
    threshold: float = 1,
    gain: str = "linear",
    ap_denominator: str = "relevant",
    short_lists: str = "pad",
    positions: list[int] | None = None,
) -> float:
    """One metric for one user.

    seen: the relevance grade of each item of the user's list, top first (0 if unjudged).
    truth_rels: the grades of ALL the user's truth rows (recommended or not).
    positions: each seen item's position (default 1, 2, ...; ties="evidently" shares them).
    short_lists="evidently": precision@k and f1@k over min(k, N); map@k and mar@k add the last
    item again, with precision@N (recall@N), at each position N + 1 .. k (Evidently's).
    """
    name, k = parse(label)
    relevant = [r >= threshold for r in seen]
    R = sum(1 for r in truth_rels if r >= threshold)

    if name == "r_precision":
        return sum(relevant[:R]) / R if R else 0.0

    placed = list(zip(positions or range(1, len(seen) + 1), seen, strict=True))
    top = [(p, r) for p, r in placed if k is None or p <= k]  # (position, grade) in the top k
    hits = sorted(p for p, r in top if r >= threshold)  # hit positions
    ideal = sorted((gain_of(r, gain) for r in truth_rels), reverse=True)[:k]
    shown = min(k, len(seen)) if short_lists == "evidently" else k  # precision@k's k
    # Evidently's repeats of the last item past the list's end (k - N of them, if it is a hit)
    repeats = max(k - len(seen), 0) if short_lists == "evidently" and seen and relevant[-1] else 0

    if name == "cg":
        return sum(gain_of(r, gain) for _, r in top)
    if name == "dcg":
        return sum(gain_of(r, gain) / math.log2(p + 1) for p, r in top)
    if name == "idcg":
        return dcg_of(ideal)
    if name == "ndcg":
        idcg = dcg_of(ideal)
        return sum(gain_of(r, gain) / math.log2(p + 1) for p, r in top) / idcg if idcg > 0 else 0.0
    if name == "precision":
        return len(hits) / shown if shown else 0.0
    if name == "recall":
        return len(hits) / R if R else 0.0
    if name == "f1":  # the harmonic mean of precision@k and recall@k
        p, r = (len(hits) / shown if shown else 0.0), (len(hits) / R if R else 0.0)
        return 2 * p * r / (p + r) if p + r else 0.0
    if name == "hit_rate":
        return 1.0 if hits else 0.0
    if name == "mrr":
        return 1.0 / hits[0] if hits else 0.0
    if name == "arhr":
        return sum(1.0 / p for p in hits)
    if name == "map":
        denominator = R if ap_denominator == "relevant" else min(R, k)
        # the n-th hit, at position p, has precision@p = n / p
        total = sum(n / p for n, p in enumerate(hits, start=1))
        total += repeats * len(hits) / len(seen) if repeats else 0.0
        return total / denominator if denominator else 0.0
    if name == "mar":
        # the n-th hit has recall@p = n / R
        if not R:
            return 0.0
        return (sum(n / R for n, _ in enumerate(hits, start=1)) + repeats * len(hits) / R) / R
    raise ValueError(f"unknown metric {label!r}")


def ranking(scores: dict, ties: str) -> list:
    """The user's items, best first, under an exact tie order."""
    if ties == "item_desc":
        return sorted(scores, key=lambda item: (scores[item], item), reverse=True)
    if ties == "item_asc":
        return sorted(scores, key=lambda item: (-scores[item], item))
    if ties == "trec_eval":
        return sorted(scores, key=lambda item: (scores[item], str(item)), reverse=True)
    raise ValueError(f"not an exact tie order: {ties!r}")


def evidently_positions(scores: dict) -> dict:
    """ties="evidently": pandas' rank(ascending=False) (the mean of a tie group's positions)
    cut to an integer, shared by the group."""
    ranked = ranking(scores, "item_desc")
    first = {}
    for position, item in enumerate(ranked, start=1):
        first.setdefault(scores[item], position)
    size = {s: sum(1 for v in scores.values() if v == s) for s in first}
    return {item: int((2 * first[scores[item]] + size[scores[item]] - 1) / 2) for item in scores}


def all_orders(scores: dict) -> list[list]:
    """Every order of the items that respects the scores: tied items in any order."""
    groups = [
        [item for item in scores if scores[item] == s]
        for s in sorted(set(scores.values()), reverse=True)
    ]
    orders = []
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        orders.append([item for part in parts for item in part])
    return orders


def user_metrics(
    scores: dict,
    judgments: dict,
    metrics: list[str],
    *,
    ties: str = "item_desc",
    threshold: float = 1,
    gain: str = "linear",
    ap_denominator: str = "relevant",
    short_lists: str = "pad",
) -> dict[str, float]:
    """Every requested metric for one user: scores {item: score}, judgments {item: rel}."""
    options = {
        "threshold": threshold, "gain": gain, "ap_denominator": ap_denominator,
        "short_lists": short_lists,
    }  # fmt: skip
    truth_rels = list(judgments.values())
    if ties == "evidently":
        for m in metrics:
            if parse(m)[0] not in TIE_AVERAGED:
                raise ValueError(f"{m} is not defined under ties='evidently'")
        at = evidently_positions(scores)
        order = ranking(scores, "item_desc")
        seen = [judgments.get(item, 0) for item in order]
        return {m: metric(m, seen, truth_rels, positions=[at[i] for i in order], **options) for m in metrics}
    if ties != "average":
        seen = [judgments.get(item, 0) for item in ranking(scores, ties)]
        return {m: metric(m, seen, truth_rels, **options) for m in metrics}
    for m in metrics:
        if parse(m)[0] not in TIE_AVERAGED:
            raise ValueError(f"{m} is not defined under ties='average'")
    # The expectation over all tie orders. Metrics only depend on the grades seen, so every
    # distinct sequence of grades is counted as often as it occurs among the orders.
    counts: dict[tuple, int] = defaultdict(int)
    for order in all_orders(scores):
        counts[tuple(judgments.get(item, 0) for item in order)] += 1
    total = sum(counts.values())
    return {
        m: sum(n * metric(m, list(seen), truth_rels, **options) for seen, n in counts.items()) / total
        for m in metrics
    }


def combine_truth(truth: list[dict], how: str = "error") -> list[dict]:
    """One row per (user, item) of a truth that may repeat pairs (an event log), as the
    truth_duplicates convention reads it: "error" refuses a repeated pair, "max" keeps its
    highest grade, "sum" adds its grades up."""
    grades: dict[tuple, list[float]] = defaultdict(list)
    for row in truth:
        grades[(row["user"], row["item"])].append(row["relevance"])
    if how == "error" and any(len(g) > 1 for g in grades.values()):
        raise ValueError("a (user, item) pair occurs twice in the truth")
    pick = {"error": max, "max": max, "sum": sum}[how]
    return [{"user": u, "item": i, "relevance": pick(g)} for (u, i), g in grades.items()]


def evaluate(
    recs: list[dict],
    metrics: list[str],
    truth: list[dict] | None = None,
    *,
    ties: str = "item_desc",
    threshold: float = 1,
    gain: str = "linear",
    empty: str = "zero",
    missing: str = "skip",
    ap_denominator: str = "relevant",
    truth_duplicates: str = "error",
    short_lists: str = "pad",
) -> tuple[dict, dict]:
    """Evaluate like sqlmetrics.evaluate.

    Returns (per_user, aggregate): per_user maps (group, user) to {metric: value};
    aggregate maps group to {"users": n, metric: mean}. The group is None without groups
    (rows without a "group" key).
    """
    lists: dict[tuple, dict] = defaultdict(dict)  # (group, user) -> {item: score}
    for row in recs:
        lists[(row.get("group"), row["user"])][row["item"]] = row["score"]

    evaluated: dict[tuple, tuple[dict, dict]] = {}  # (group, user) -> (scores, judgments)
    if truth is None:
        # single-table mode: the user's own rows are the truth
        judgments: dict[tuple, dict] = defaultdict(dict)
        for row in recs:
            judgments[(row.get("group"), row["user"])][row["item"]] = row["relevance"]
        for key, scores in lists.items():
            evaluated[key] = (scores, judgments[key])
    else:
        by_user: dict = defaultdict(dict)
        for row in combine_truth(truth, truth_duplicates):
            by_user[row["user"]][row["item"]] = row["relevance"]
        for (group, user), scores in lists.items():
            if user in by_user:  # recs users without truth are not evaluated
                evaluated[(group, user)] = (scores, by_user[user])
        if missing == "zero":  # truth users absent from a group's recs: an empty list
            for group in {group for group, _ in lists}:
                for user, judged in by_user.items():
                    evaluated.setdefault((group, user), ({}, judged))

    if empty == "skip":
        evaluated = {
            key: (scores, judged)
            for key, (scores, judged) in evaluated.items()
            if any(r >= threshold for r in judged.values())
        }

    per_user = {
        key: user_metrics(
            scores, judged, metrics, ties=ties, threshold=threshold, gain=gain,
            ap_denominator=ap_denominator, short_lists=short_lists,
        )
        for key, (scores, judged) in evaluated.items()
    }
    aggregate: dict = {}
    for group in sorted({group for group, _ in per_user}, key=repr):
        rows = [values for (g, _), values in per_user.items() if g == group]
        aggregate[group] = {"users": len(rows)}
        for m in metrics:
            aggregate[group][m] = math.fsum(row[m] for row in rows) / len(rows)
    return per_user, aggregate
