"""Short numpy references of the papers' formulas for the measures over item groups (issue 37,
item 4), written from the papers, not from the SQL: calibration (Steck 2018), rank-biased
overlap (Webber et al. 2010), expected exposure (Diaz et al. 2020)."""

from __future__ import annotations

import itertools

import numpy as np


def genre_distribution(items, genres: dict) -> np.ndarray | None:
    """Steck's p(g|i) averaged over `items` (each once, weight 1): p(g|i) = w_ig / sum_g w_ig
    for the item's genre weights w; items without a genre (no weights, or all 0) are left out.
    None when no item has a genre."""
    rows = [genres[i] / genres[i].sum() for i in items if i in genres and genres[i].sum() > 0]
    return np.mean(rows, axis=0) if rows else None


def calibration(history_items, top_items, genres: dict, alpha: float = 0.01) -> float | None:
    """Steck (RecSys 2018) eq. 5: C_KL(p || q~) = sum_g p(g|u) log(p(g|u) / q~(g|u)),
    q~ = (1 - alpha) q + alpha p; p from the distinct history items, q from the top-k list with
    uniform rank weights (q = 0 when no list item has a genre). None without p."""
    p = genre_distribution(set(history_items), genres)
    if p is None:
        return None
    q = genre_distribution(list(top_items), genres)
    if q is None:
        q = np.zeros_like(p)
    mixed = (1 - alpha) * q + alpha * p
    support = p > 0
    return float(np.sum(p[support] * np.log(p[support] / mixed[support])))


def _overlaps(short: list, long: list) -> list[int]:
    """X_d = |S[:d] & L[:d]| for d = 1 .. len(long) (S[:d] is all of S past its end)."""
    return [len(set(short[:d]) & set(long[:d])) for d in range(1, len(long) + 1)]


def rbo_ext(first: list, second: list, p: float) -> float:
    """Webber, Moffat and Zobel (TOIS 2010) eq. 32, RBO_EXT of lists of uneven lengths
    s <= l: (1-p)/p (sum_{d=1}^{l} X_d/d p^d + sum_{d=s+1}^{l} X_s (d-s)/(s d) p^d)
    + ((X_l - X_s)/l + X_s/s) p^l."""
    short, long = sorted((first, second), key=len)
    s, l = len(short), len(long)  # noqa: E741 - the paper's names
    x = _overlaps(short, long)
    x_s, x_l = x[s - 1], x[l - 1]
    seen = sum(x[d - 1] / d * p**d for d in range(1, l + 1))
    tail = sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * (seen + tail) + ((x_l - x_s) / l + x_s / s) * p**l


def rbo_sum(first: list, second: list, p: float) -> float:
    """eq. 7, RBO evaluated to depth s, the shorter list's length: (1-p) sum_{d=1}^{s} p^(d-1) A_d,
    A_d = X_d / d."""
    short, long = sorted((first, second), key=len)
    x = _overlaps(short, long)
    return (1 - p) * sum(p ** (d - 1) * x[d - 1] / d for d in range(1, len(short) + 1))


def expected_exposure(ranking: list, grades: dict, k: int | None, gamma: float = 0.5,
                      threshold: float = 1, groups: dict | None = None) -> tuple[float, float, float] | None:
    """Diaz et al. (CIKM 2020), one deterministic ranking (one sample), the RBP browsing model:
    (EE-L, EE-D, EE-R) = (||e - e*||^2, ||e||^2, e . e*). e_d = gamma^(rank-1) for the top k
    (0 elsewhere); e*_d is the mean of e over every ranking that puts the relevant items (grade
    >= threshold) first by grade descending, the equally graded ones in any order, estimated
    here by enumerating those orders (not by the paper's closed form). With `groups` ({item:
    its groups}): the same over the groups' summed exposures."""
    top = ranking if k is None else ranking[:k]
    e = {d: gamma**i for i, d in enumerate(top)}
    relevant = sorted((d for d, g in grades.items() if g >= threshold), key=lambda d: -grades[d])
    levels: dict = {}
    for d in relevant:
        levels.setdefault(grades[d], []).append(d)
    target: dict = {}
    start = 0
    for grade in sorted(levels, reverse=True):
        members = levels[grade]
        orders = list(itertools.permutations(members))
        for order in orders:
            for i, d in enumerate(order):
                target[d] = target.get(d, 0.0) + gamma ** (start + i) / len(orders)
        start += len(members)
    if groups is not None:
        # Diaz et al. section 5 (expeval's group.py): the exposures of the relevant items summed
        # per group of theirs, over the groups of the relevant items; None without any
        keys = {g for d in target for g in groups.get(d, ())}
        if not keys:
            return None
        e = {g: sum(v for d, v in e.items() if d in target and g in groups.get(d, ())) for g in keys}
        target = {g: sum(v for d, v in target.items() if g in groups.get(d, ())) for g in keys}
    items = set(e) | set(target)
    loss = sum((e.get(d, 0.0) - target.get(d, 0.0)) ** 2 for d in items)
    disparity = sum(v * v for v in e.values())
    relevance = sum(e.get(d, 0.0) * target.get(d, 0.0) for d in items)
    return loss, disparity, relevance


def awrf(top_items, groups: dict, n_groups_of: list, target=None) -> float | None:
    """Attention-weighted rank fairness as the TREC Fair Ranking track computes it (2021
    metrics.py qr_awrf; 2022 wptrec/metrics/awrf.py), in doubles: the attention of rank i,
    1 / log2(max(i, 2)), times the item's group weights (groups[item], a vector over the groups
    `n_groups_of` lists; items without one are dropped, keeping their ranks), summed; then
    1 - JS distance^2 against the uniform target, by scipy's jensenshannon (natural logarithm,
    both vectors normalized), the track's own function. None when no item of the list has a
    group of positive weight. target: the target's weights over the same groups
    (scipy normalizes them), uniform without."""
    from scipy.spatial.distance import jensenshannon

    exposure = np.zeros(len(n_groups_of))
    for rank, item in enumerate(top_items, start=1):
        if item in groups:
            exposure += groups[item] / np.log2(max(rank, 2))
    if exposure.sum() <= 0:
        return None
    if target is None:
        target = np.full(len(n_groups_of), 1 / len(n_groups_of))
    return float(1 - jensenshannon(exposure, target) ** 2)
