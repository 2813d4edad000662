"""A numpy reference of the slate off-policy estimators, for tests/test_off_policy.py.

Part 1 (obp_*) computes each estimator the way Open Bandit Pipeline does
(obp/ope/estimators_slate.py, Saito et al. 2021): per-row terms summed over all rows and divided
by the number of slates; the self-normalized forms divide each row's weight by the mean weight
over all rows (snsips) or over the rows of its position (sniips, snrips); Cascade-DR adds the
control variate of Kiyohara et al. 2022. OBP's positions are 0-based; these take them 1-based.
OBP's own interval is a bootstrap of the per-slate sums of the terms (obp_bootstrap_interval).

Part 2 (reference) is what sqlmetrics.off_policy() documents on top (docs/off-policy.md):
position weights multiply the rewards (and the predicted rewards), clip= caps every importance
weight (np.minimum, as OBP's IPW does with lambda_), the interval is Student's t over per-unit
terms whose mean is the estimate (for the self-normalized forms, the delta method's linearised
terms), and the diagnostics.

Part 3 builds random logs with exact Plackett-Luce propensities.
"""

from __future__ import annotations

import math
from itertools import permutations

import numpy as np
from scipy import stats

# --- Part 1: OBP's arithmetic -------------------------------------------------------------


def n_slates(slate_id: np.ndarray) -> int:
    return np.unique(slate_id).shape[0]


def obp_ips(slate_id, reward, behavior, evaluation) -> float:
    """SlateStandardIPS (pscore), SlateIndependentIPS (pscore_item_position),
    SlateRewardInteractionIPS (pscore_cascade): sum(reward * e / b) / number of slates."""
    return float((reward * (evaluation / behavior)).sum() / n_slates(slate_id))


def obp_snsips(slate_id, reward, behavior, evaluation) -> float:
    """SelfNormalizedSlateStandardIPS: iw / iw.mean() over all rows."""
    iw = evaluation / behavior
    return float((reward * iw / iw.mean()).sum() / n_slates(slate_id))


def obp_sn_per_position(slate_id, reward, position, behavior, evaluation) -> float:
    """SelfNormalizedSlateIndependentIPS / ...RewardInteractionIPS: each row's weight over the
    mean weight of its position's rows. (A position whose weights are all 0 gives 0/0 = NaN in
    OBP; here it adds 0, as sqlmetrics documents.)"""
    terms = np.zeros_like(reward, dtype=float)
    for p in np.unique(position):
        idx = position == p
        iw = evaluation[idx] / behavior[idx]
        terms[idx] = reward[idx] * iw / iw.mean() if iw.mean() > 0 else 0.0
    return float(terms.sum() / n_slates(slate_id))


def obp_cascade_dr_terms(slate_id, position, reward, behavior_cascade, evaluation_cascade,
                         q_hat_logged, q_hat_expected) -> np.ndarray:
    """SlateCascadeDoublyRobust._estimate_round_rewards: iw * (r - q_hat(logged item)) +
    iw_prev * E_{pi_e}[q_hat], iw_prev the cascade weight of the position above (1 at the top).
    Rows sorted by (slate, position), as OBP's np.roll needs."""
    iw = evaluation_cascade / behavior_cascade
    iw_prev = np.roll(iw, 1)
    iw_prev[position == 1] = 1.0
    return iw * (reward - q_hat_logged) + iw_prev * q_hat_expected


def obp_bootstrap_interval(slate_id, terms, alpha=0.05, n_bootstrap_samples=10_000, random_state=0):
    """obp.utils.estimate_confidence_interval_by_bootstrap over the per-slate sums of the
    terms: the mean of resampled means and their alpha/2, 1 - alpha/2 percentiles."""
    per_slate = np.array([terms[slate_id == s].sum() for s in np.unique(slate_id)])
    rng = np.random.RandomState(random_state)
    boot = [np.mean(rng.choice(per_slate, size=per_slate.shape[0])) for _ in range(n_bootstrap_samples)]
    return {"mean": float(np.mean(boot)), "lower": float(np.percentile(boot, 100 * alpha / 2)),
            "upper": float(np.percentile(boot, 100 * (1 - alpha / 2)))}


# --- Part 2: sqlmetrics' documented estimates ---------------------------------------------

WEIGHT_KIND = {"sips": "s", "snsips": "s", "iips": "ip", "sniips": "ip", "rips": "c",
               "snrips": "c", "cascade-dr": "c", "dm": None, "logging": None}


def position_weight(position: np.ndarray, position_weights) -> np.ndarray:
    if position_weights in (None, "none"):
        return np.ones(len(position))
    if position_weights == "dcg":
        return 1.0 / np.log2(position + 1.0)
    w = np.asarray(position_weights, dtype=float)
    return np.where(position <= len(w), w[np.minimum(position, len(w)) - 1], 0.0)


def unit_terms(log: dict, estimator: str, position_weights=None, clip=math.inf):
    """(unit ids, per-unit terms) whose mean is the estimate. log: per-row arrays unit,
    position (1-based), reward, b_s/b_ip/b_c (logging propensities), e_s/e_ip/e_c (target),
    q (predicted reward of the logged item), q_e (the target's expected predicted reward at the
    position given the logged items above), q_dm (the predicted reward of the target's own item
    at the position)."""
    unit, pos = log["unit"], log["position"]
    lam = position_weight(pos, position_weights)
    r = lam * log["reward"]
    units = np.unique(unit)
    n = len(units)
    idx = np.searchsorted(units, unit)

    def per_unit(row_terms):
        return np.bincount(idx, weights=row_terms, minlength=n)

    if estimator == "logging":
        return units, per_unit(r)
    if estimator == "dm":
        return units, per_unit(lam * log["q_dm"])
    kind = WEIGHT_KIND[estimator]
    u = np.minimum(log["e_" + kind] / log["b_" + kind], clip)
    if estimator in ("sips", "iips", "rips"):
        return units, per_unit(r * u)
    if estimator == "cascade-dr":
        order = np.lexsort((pos, unit))
        assert (order == np.arange(len(unit))).all(), "rows sorted by (unit, position)"
        u_prev = np.roll(u, 1)
        u_prev[pos == 1] = 1.0
        return units, per_unit(u * (r - lam * log["q"]) + u_prev * lam * log["q_e"])
    # self-normalized: V = sum over groups g of a_g c_g / b_g (a, b, c: means over units of the
    # unit's sums of r u, u and 1 over its rows in g); the linearised per-unit term
    # H_i = sum over its rows of (c/b) r u - (a c / b^2) u + a / b has mean V exactly, and its
    # t interval is the delta method's
    group = np.zeros(len(pos), dtype=int) if estimator == "snsips" else pos
    h = np.zeros(len(pos))
    for g in np.unique(group):
        rows = group == g
        a, b, c = (r * u)[rows].sum() / n, u[rows].sum() / n, rows.sum() / n
        if b > 0:
            h[rows] = (c / b) * r[rows] * u[rows] - (a * c / b**2) * u[rows] + a / b
    return units, per_unit(h)


def reference(log: dict, estimator: str, position_weights=None, clip=math.inf, confidence=0.95) -> dict:
    """One output row of off_policy() for one segment."""
    _, t = unit_terms(log, estimator, position_weights, clip)
    n = len(t)
    value = float(t.mean())
    ci_low = ci_high = None
    if n >= 2:
        sd = t.std(ddof=1)
        half = stats.t.ppf((1 + confidence) / 2, n - 1) * sd / math.sqrt(n)
        ci_low, ci_high = value - half, value + half
    row = {"estimator": estimator, "value": value, "ci_low": ci_low, "ci_high": ci_high, "units": n,
           "ess": None, "max_weight": None, "mean_weight": None, "support": None, "clipped": None}
    kind = WEIGHT_KIND[estimator]
    if kind is not None:
        w = log["e_" + kind] / log["b_" + kind]
        unit = log["unit"]
        if kind == "s":  # one weight per slate
            _, first = np.unique(unit, return_index=True)
            w, unit = w[first], unit[first]
        u = np.minimum(w, clip)
        m = len(w)
        row.update(
            ess=float(u.sum() ** 2 / (u**2).sum()) * n / m if (u**2).sum() > 0 else 0.0,
            max_weight=float(w.max()), mean_weight=float(w.mean()),
            support=len(np.unique(unit[u > 0])) / n, clipped=float((w > clip).sum() / m),
        )
    return row


# --- Part 3: random logs with exact Plackett-Luce propensities ------------------------------


def plackett_luce_slates(scores: np.ndarray, length: int):
    """Every ordered slate of `length` distinct items with its Plackett-Luce probability under
    softmax sampling without replacement: yields (slate, [p(item at k | items above)])."""
    weights = np.exp(scores - scores.max())
    for slate in permutations(range(len(scores)), length):
        left = weights.sum()
        steps = []
        for item in slate:
            steps.append(weights[item] / left)
            left -= weights[item]
        yield slate, steps


def exact_propensities(scores: np.ndarray, slate: tuple, length: int) -> tuple[float, list, list]:
    """(pscore of the slate, pscore_item_position per position, pscore_cascade per position)
    under Plackett-Luce sampling over `scores`, by enumerating every slate (small catalogues)."""
    marginal = np.zeros((len(scores), length))
    prefix = [0.0] * length
    p_slate = 0.0
    for other, steps in plackett_luce_slates(scores, length):
        p = float(np.prod(steps))
        for k, item in enumerate(other):
            marginal[item, k] += p
        if other == slate:
            p_slate = p
        for k in range(length):
            if other[: k + 1] == slate[: k + 1]:
                prefix[k] += p
    # (the prefix probabilities are also the product of the first steps: a check of both)
    return p_slate, [float(marginal[item, k]) for k, item in enumerate(slate)], prefix


def random_log(rng: np.random.Generator, units: int, items: int, length: int, reward_levels=(0, 1)):
    """A log of `units` slates of `length` items (of `items`) sampled by Plackett-Luce over random
    logging scores, with their exact propensities, random graded rewards, and a deterministic
    target ranking (random scores with ties) of each unit's items. Returns (impressions rows,
    target rows) as lists of dicts."""
    impressions, target = [], []
    for u in range(units):
        scores = rng.normal(size=items)
        weights = np.exp(scores - scores.max())
        left, slate = list(range(items)), []
        for _ in range(length):
            p = weights[left] / weights[left].sum()
            slate.append(left.pop(int(rng.choice(len(left), p=p))))
        p_slate, p_ip, p_c = exact_propensities(scores, tuple(slate), length)
        for k, item in enumerate(slate):
            impressions.append({
                "user_id": u, "item_id": item, "position": k + 1, "pscore": p_slate,
                "pscore_item_position": p_ip[k], "pscore_cascade": p_c[k],
                "reward": float(rng.choice(reward_levels)), "predicted": float(rng.uniform(0, 1)),
            })
        # the target: some of the items, scored on a coarse grid (ties), half the time near the
        # logging policy's own order (so that it agrees with some slates)
        shown = rng.permutation(items)[: rng.integers(1, items + 1)]
        near = rng.random() < 0.5
        for item in shown:
            score = float(np.round(scores[item])) if near else float(rng.integers(0, 3))
            target.append({"user_id": u, "item_id": int(item), "score": score,
                           "predicted": float(rng.uniform(0, 1))})
        # a stochastic target too: Plackett-Luce over other scores, its exact propensities of
        # the logged slate, and an expected predicted reward per position
        e_slate, e_ip, e_c = exact_propensities(rng.normal(size=items), tuple(slate), length)
        for k in range(length):
            impressions[-length + k].update(
                target_pscore=e_slate, target_pscore_item_position=e_ip[k],
                target_pscore_cascade=e_c[k], target_predicted=float(rng.uniform(0, 1)))
    return impressions, target


def target_ranks(target: list[dict], ties: str = "item_desc") -> dict:
    """{(unit, item): 1-based rank} of a deterministic ranking: score descending, then the item
    descending (ties='item_desc'; 'item_asc': ascending; 'trec_eval': as text, descending)."""
    ranks: dict = {}
    by_unit: dict = {}
    for row in target:
        by_unit.setdefault(row["user_id"], []).append(row)
    for u, rows in by_unit.items():
        if ties == "item_asc":
            key = lambda r: (-r["score"], r["item_id"])  # noqa: E731
            ordered = sorted(rows, key=key)
        elif ties == "trec_eval":
            ordered = sorted(rows, key=lambda r: (r["score"], str(r["item_id"])), reverse=True)
        else:
            ordered = sorted(rows, key=lambda r: (r["score"], r["item_id"]), reverse=True)
        for k, row in enumerate(ordered):
            ranks[(u, row["item_id"])] = k + 1
    return ranks


def stochastic_arrays(impressions: list[dict]) -> dict:
    """The per-row arrays of unit_terms() for the stochastic target of random_log()."""
    rows = sorted(impressions, key=lambda r: (r["user_id"], r["position"]))

    def a(name):
        return np.array([r[name] for r in rows])

    return {"unit": a("user_id"), "position": a("position"), "reward": a("reward"),
            "b_s": a("pscore"), "b_ip": a("pscore_item_position"), "b_c": a("pscore_cascade"),
            "e_s": a("target_pscore"), "e_ip": a("target_pscore_item_position"),
            "e_c": a("target_pscore_cascade"), "q": a("predicted"), "q_e": a("target_predicted")}


def log_arrays(impressions: list[dict], target: list[dict], ties: str = "item_desc") -> dict:
    """The per-row arrays of unit_terms() for a deterministic target ranking: the target's
    propensity of a logged item at its position is 1 when it ranks it there; of the top-k prefix,
    1 when it ranks each of them there; of the slate, 1 when it ranks the whole slate so."""
    ranks = target_ranks(target, ties)
    predicted = {(r["user_id"], r["item_id"]): r["predicted"] for r in target}
    at_rank = {(u, k): i for (u, i), k in ranks.items()}
    rows = sorted(impressions, key=lambda r: (r["user_id"], r["position"]))
    unit = np.array([r["user_id"] for r in rows])
    e_ip = np.array([1.0 if ranks.get((r["user_id"], r["item_id"])) == r["position"] else 0.0 for r in rows])
    e_c = np.zeros(len(rows))
    e_s = np.zeros(len(rows))
    for u in np.unique(unit):
        idx = np.flatnonzero(unit == u)
        e_c[idx] = np.minimum.accumulate(e_ip[idx])
        e_s[idx] = e_ip[idx].min()
    q_dm = np.array([predicted.get((r["user_id"], at_rank.get((r["user_id"], r["position"]))), 0.0)
                     for r in rows])
    return {
        "unit": unit, "position": np.array([r["position"] for r in rows]),
        "reward": np.array([r["reward"] for r in rows]),
        "b_s": np.array([r["pscore"] for r in rows]),
        "b_ip": np.array([r["pscore_item_position"] for r in rows]),
        "b_c": np.array([r["pscore_cascade"] for r in rows]),
        "e_s": e_s, "e_ip": e_ip, "e_c": e_c,
        "q": np.array([r["predicted"] for r in rows]),
        # the deterministic target's next item given a matching prefix is its own item at the
        # position (the term is multiplied by 0 wherever the prefix does not match)
        "q_e": q_dm, "q_dm": q_dm,
    }


# --- Part 4: one target against another (baseline=) ----------------------------------------


def paired(t: np.ndarray, base: np.ndarray, confidence: float = 0.95) -> dict:
    """The comparison columns of off_policy(baseline=...) for one segment and estimator, from the
    two per-unit terms on the same units (unit_terms(), in the same unit order): the difference
    of the means, the t interval of the differences D_i = t_i - base_i (for the self-normalized
    forms, the linearised terms': the delta method of the difference) and the paired t-test's p
    (scipy.stats.ttest_rel; 1 when every difference is 0)."""
    d = t - base
    n = len(d)
    row = {"baseline_value": float(base.mean()), "delta": float(d.mean()),
           "delta_ci_low": None, "delta_ci_high": None, "p_value": None}
    if n >= 2:
        sd = d.std(ddof=1)
        half = stats.t.ppf((1 + confidence) / 2, n - 1) * sd / math.sqrt(n)
        row.update(delta_ci_low=float(d.mean() - half), delta_ci_high=float(d.mean() + half))
        row["p_value"] = float(stats.ttest_rel(t, base).pvalue) if sd > 0 else (1.0 if d.mean() == 0 else 0.0)
    return row


def random_ranking(rng: np.random.Generator, impressions: list[dict], items: int) -> list[dict]:
    """Another deterministic target ranking of each logged unit: some of its items on a coarse
    grid of scores (ties), with a predicted reward each."""
    rows = []
    for u in sorted({r["user_id"] for r in impressions}):
        for item in rng.permutation(items)[: rng.integers(1, items + 1)]:
            rows.append({"user_id": u, "item_id": int(item), "score": float(rng.integers(0, 3)),
                         "predicted": float(rng.uniform(0, 1))})
    return rows


def add_stochastic_target(rng: np.random.Generator, impressions: list[dict], items: int, prefix: str) -> None:
    """Another stochastic target's exact Plackett-Luce propensities of each logged slate (and an
    expected predicted reward per position), as columns <prefix>_pscore, <prefix>_pscore_item_position,
    <prefix>_pscore_cascade, <prefix>_predicted of the impressions rows."""
    slates: dict = {}
    for r in impressions:
        slates.setdefault(r["user_id"], []).append(r)
    for rows in slates.values():
        rows.sort(key=lambda r: r["position"])
        slate = tuple(r["item_id"] for r in rows)
        e_slate, e_ip, e_c = exact_propensities(rng.normal(size=items), slate, len(slate))
        for k, r in enumerate(rows):
            r.update({f"{prefix}_pscore": e_slate, f"{prefix}_pscore_item_position": e_ip[k],
                      f"{prefix}_pscore_cascade": e_c[k], f"{prefix}_predicted": float(rng.uniform(0, 1))})


def stochastic_arrays_of(impressions: list[dict], prefix: str) -> dict:
    """stochastic_arrays() of the target whose columns add_stochastic_target() wrote."""
    renamed = [{**r, "target_pscore": r[f"{prefix}_pscore"],
                "target_pscore_item_position": r[f"{prefix}_pscore_item_position"],
                "target_pscore_cascade": r[f"{prefix}_pscore_cascade"],
                "target_predicted": r[f"{prefix}_predicted"]} for r in impressions]
    return stochastic_arrays(renamed)
