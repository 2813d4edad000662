"""A plain-Python reference for the beyond-accuracy metrics, written from the published formulas.

Microsoft Recommenders' python_evaluation (recommenders/evaluation/python_evaluation.py,
pandas < 3) defines catalog_coverage, distributional_coverage, novelty, diversity and
serendipity on two data frames, `train_df` (user, item) and `reco_df` (user, item[, relevance]):

* pairs of a frame: the frame joined with itself on the user, keeping i1 <= i2 (self pairs too);
* co-occurrence similarity: per pair of train, count / (sqrt(c_i1) * sqrt(c_i2)), c_i the train
  rows of item i (train has no duplicate rows, so c_i is also the users of i); feature-vector
  similarity: the cosine dot / (norm1 * norm2) of every pair i1 <= i2 of the feature table;
* a pair looked up but absent from the similarity table has similarity 0 (fillna(0); pandas 3
  leaves NaN instead, which changes diversity and serendipity: pin pandas < 3 to compare);
* diversity: per user, the mean similarity of the reco pairs with i1 != i2, 1 minus it, then
  the mean over users (a user with one item has no pair and is absent);
* serendipity: per (user, reco item i), the mean over the user's train items j of
  sim(min(i, j), max(i, j)), (1 - it) * relevance, the mean over the user's items, the mean over
  users (users without train rows are absent: an inner join);
* novelty: the sum over reco items present in train of reco_count(i) * -log2(c_i / N), divided
  by the number of reco rows (N = train rows);
* catalog_coverage: distinct reco items / distinct train items;
* distributional_coverage: -sum p_i log2 p_i, p_i = reco_count(i) / reco rows.

This module computes the same numbers with lists and dicts, one user and one pair at a time,
plus the other beyond-accuracy metrics of sqlmetrics (fcp, fcp_surprise, gini, popularity,
personalization) by brute force, and sqlmetrics' extensions of the formulas (a recommended item
already in the user's history has similarity 1 with itself; a zero vector has similarity 0).
It imports nothing from sqlmetrics.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict

# --- Microsoft Recommenders' formulas -------------------------------------------------------


def _pairs_by_user(rows: list[tuple]) -> list[tuple]:
    """(user, i1, i2) for every two rows of one user with i1 <= i2, self pairs included."""
    items = defaultdict(list)
    for user, item in rows:
        items[user].append(item)
    return [
        (user, a, b) for user, its in items.items() for a in its for b in its if a <= b
    ]


def cooccurrence_similarity(train: list[tuple]) -> dict[tuple, float]:
    """{(i1, i2): sim} with i1 <= i2, for the pairs that co-occur in train."""
    counts = Counter((a, b) for _, a, b in _pairs_by_user(train))
    item_count = Counter(item for _, item in train)
    return {
        (a, b): n / (math.sqrt(item_count[a]) * math.sqrt(item_count[b]))
        for (a, b), n in counts.items()
    }


def feature_similarity(features: dict) -> dict[tuple, float]:
    """{(i1, i2): cosine} for every pair i1 <= i2 of the feature table (a zero vector: 0)."""
    sims = {}
    for a, b in itertools.combinations_with_replacement(sorted(features), 2):
        fa, fb = features[a], features[b]
        norms = math.sqrt(sum(x * x for x in fa)) * math.sqrt(sum(x * x for x in fb))
        sims[(a, b)] = sum(x * y for x, y in zip(fa, fb, strict=True)) / norms if norms > 0 else 0.0
    return sims


def _similarity(train, features):
    return cooccurrence_similarity(train) if features is None else feature_similarity(features)


def user_diversity(train, reco, features=None) -> dict:
    """{user: 1 - mean similarity of the user's reco pairs}; users with one item are absent."""
    sims = _similarity(train, features)
    per_user = defaultdict(list)
    for user, a, b in _pairs_by_user([(u, i) for u, i, *_ in reco]):
        if a != b:
            per_user[user].append(sims.get((a, b), 0.0))
    return {user: 1 - sum(v) / len(v) for user, v in per_user.items()}


def diversity(train, reco, features=None) -> float:
    values = user_diversity(train, reco, features)
    return sum(values.values()) / len(values)


def user_serendipity(train, reco, features=None) -> dict:
    """reco rows (user, item, relevance); {user: mean of (1 - mean sim to history) * relevance}."""
    sims = _similarity(train, features)
    history = defaultdict(list)
    for user, item in train:
        history[user].append(item)
    per_user = defaultdict(list)
    for user, item, relevance in reco:
        if user not in history:
            continue  # the inner join on the user drops users without history
        mean_sim = sum(
            1.0 if item == j else sims.get((min(item, j), max(item, j)), 0.0) for j in history[user]
        ) / len(history[user])
        per_user[user].append((1 - mean_sim) * relevance)
    return {user: sum(v) / len(v) for user, v in per_user.items()}


def serendipity(train, reco, features=None) -> float:
    values = user_serendipity(train, reco, features)
    return sum(values.values()) / len(values)


def novelty(train, reco) -> float:
    train_count = Counter(item for _, item in train)
    reco_count = Counter(item for _, item, *_ in reco)
    total = sum(
        n * -math.log2(train_count[item] / len(train))
        for item, n in reco_count.items()
        if item in train_count
    )
    return total / len(reco)


def catalog_coverage(train, reco) -> float:
    return len({item for _, item, *_ in reco}) / len({item for _, item in train})


def distributional_coverage(train, reco) -> float:
    counts = Counter(item for _, item, *_ in reco)
    return -sum((n / len(reco)) * math.log2(n / len(reco)) for n in counts.values())


# --- sqlmetrics' other beyond-accuracy metrics, by brute force -------------------------------


def fcp_counts(pairs: list[tuple]) -> tuple[int, int, int]:
    """pairs: [(grade, score)] of one user. (concordant, discordant, score ties) over the pairs
    with different grades."""
    nc = nd = ties = 0
    for (ra, sa), (rb, sb) in itertools.combinations(pairs, 2):
        if ra == rb:
            continue
        if ra < rb:
            (ra, sa), (rb, sb) = (rb, sb), (ra, sa)
        if sa > sb:
            nc += 1
        elif sa < sb:
            nd += 1
        else:
            ties += 1
    return nc, nd, ties


def fcp(per_user_pairs: dict) -> tuple[float | None, dict]:
    """Koren's pooled FCP and the per-user values (None without a comparable pair)."""
    counts = {user: fcp_counts(p) for user, p in per_user_pairs.items()}
    nc = sum(c[0] for c in counts.values())
    nd = sum(c[1] for c in counts.values())
    per_user = {u: (c[0] / (c[0] + c[1]) if c[0] + c[1] else None) for u, c in counts.items()}
    return (nc / (nc + nd) if nc + nd else None), per_user


def fcp_surprise(per_user_pairs: dict) -> float | None:
    """Surprise's accuracy.fcp, loop for loop: ordered pairs, est_i >= est_j counts discordant."""
    nc_u, nd_u = Counter(), Counter()
    for user, preds in per_user_pairs.items():
        for r0i, esti in preds:
            for r0j, estj in preds:
                if esti > estj and r0i > r0j:
                    nc_u[user] += 1
                if esti >= estj and r0i < r0j:
                    nd_u[user] += 1
    nc = sum(nc_u.values()) / len(nc_u) if nc_u else 0
    nd = sum(nd_u.values()) / len(nd_u) if nd_u else 0
    return nc / (nc + nd) if nc + nd else None


def gini(lists: dict, catalog: set) -> float | None:
    """Gini index over the catalog's items plus any recommended item outside it."""
    counts = Counter(item for items in lists.values() for item in items)
    universe = set(catalog) | set(counts)
    x = sorted(counts.get(item, 0) for item in universe)
    n, total = len(x), sum(x)
    if n < 2 or total == 0:
        return None
    return sum((2 * j - n - 1) * v for j, v in enumerate(x, start=1)) / ((n - 1) * total)


def popularity(lists: dict, history: list[tuple]) -> tuple[float, dict]:
    users_of = defaultdict(set)
    for user, item in history:
        users_of[item].add(user)
    per_user = {u: sum(len(users_of[i]) for i in items) / len(items) for u, items in lists.items()}
    return sum(per_user.values()) / len(per_user), per_user


def personalization(lists: dict) -> float | None:
    users = sorted(lists)
    pairs = list(itertools.combinations(users, 2))
    if not pairs:
        return None
    cosine = [
        len(set(lists[u]) & set(lists[v])) / math.sqrt(len(lists[u]) * len(lists[v]))
        for u, v in pairs
    ]
    return 1 - sum(cosine) / len(cosine)


def novelty_per_user(lists: dict, history: list[tuple]) -> dict:
    counts = Counter(item for _, item in history)
    return {
        u: sum(-math.log2(counts[i] / len(history)) if i in counts else 0.0 for i in items) / len(items)
        for u, items in lists.items()
    }
