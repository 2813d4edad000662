"""The example warehouse's simulation (warehouse_examples/make_warehouse.py) against numpy
references of its documented definitions: the logging policy's propensities (Plackett-Luce over
the served model's ranking), the click model, and the true values of the policies
(policy_values), on small warehouses built with the simulation's hidden tables kept."""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path

import duckdb
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module():
    spec = importlib.util.spec_from_file_location("mw", ROOT / "warehouse_examples" / "make_warehouse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MW = _module()


def _build(tmp_path_factory, name: str, **kwargs) -> duckdb.DuckDBPyConnection:
    path = tmp_path_factory.mktemp(name) / "warehouse.duckdb"
    MW.build(str(path), keep_hidden=True, **kwargs)
    return duckdb.connect(str(path), read_only=True)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    con = _build(tmp_path_factory, "tiny", users=50, days=2)
    yield con
    con.close()


@pytest.fixture(scope="module")
def medium(tmp_path_factory):
    """Enough slates (3,000) for the coarse statistical checks."""
    con = _build(tmp_path_factory, "medium", users=1500, days=2)
    yield con
    con.close()


def rows(con, sql: str) -> list[dict]:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


# ---- numpy references ------------------------------------------------------------------------


def pl_weights(n: int, temperature: float = MW.TEMPERATURE) -> np.ndarray:
    return np.arange(1, n + 1, dtype=float) ** (-1.0 / temperature)


def pl_marginals_brute(w: np.ndarray, slate: int) -> np.ndarray:
    """P(item i at position k) by enumerating every ordered slate (small n only)."""
    marginals = np.zeros((len(w), slate))
    for drawn in itertools.permutations(range(len(w)), slate):
        p, left = 1.0, w.sum()
        for j in drawn:
            p *= w[j] / left
            left -= w[j]
        for k, j in enumerate(drawn):
            marginals[j, k] += p
    return marginals


def pl_marginals_integral(w: np.ndarray, slate: int, h: float = 0.05) -> np.ndarray:
    """P(item i at position k) = integral over t > 0 of w_i exp(-w_i t) P(exactly k - 1 others
    drawn before t), the others drawn before t independently with probability 1 - exp(-w_j t)
    (the Gumbel form of Plackett-Luce), on a finer grid in log t than the warehouse's."""
    t = np.exp(np.arange(-40.0, 12.0 + math.log(len(w)), h))
    ahead = 1 - np.exp(-np.outer(t, w))
    marginals = np.zeros((len(w), slate))
    for i in range(len(w)):
        poisson_binomial = np.zeros((len(t), slate))
        poisson_binomial[:, 0] = 1
        for j in range(len(w)):
            if j != i:
                shifted = np.zeros_like(poisson_binomial)
                shifted[:, 1:] = poisson_binomial[:, :-1]
                poisson_binomial = poisson_binomial * (1 - ahead[:, [j]]) + shifted * ahead[:, [j]]
        marginals[i] = (w[i] * np.exp(-w[i] * t) * t * h) @ poisson_binomial
    return marginals


def marginals_table(con, n: int, slate: int) -> np.ndarray:
    table = np.zeros((n, slate))
    for r in rows(con, "SELECT rank, position, probability FROM logging_marginals"):
        table[r["rank"] - 1, r["position"] - 1] = r["probability"]
    return table


# ---- the logging policy's propensities ---------------------------------------------------------


def test_marginals_are_plackett_luce_exactly_on_a_small_candidate_set(tmp_path_factory):
    con = _build(tmp_path_factory, "small_slates", users=5, days=1, candidates=7, items=70, slate=4)
    try:
        table = marginals_table(con, 7, 4)
    finally:
        con.close()
    np.testing.assert_allclose(table, pl_marginals_brute(pl_weights(7), 4), rtol=0, atol=1e-10)


def test_marginals_of_the_default_warehouse(tiny):
    n, slate = 60, MW.SLATE
    table = marginals_table(tiny, n, slate)
    w = pl_weights(n)
    assert (table > 0).all() and (table <= 1).all()
    np.testing.assert_allclose(table.sum(axis=0), 1, atol=1e-10)  # each position holds one item
    assert (table.sum(axis=1) <= 1 + 1e-10).all()  # an item is shown at most once
    np.testing.assert_allclose(table[:, 0], w / w.sum(), atol=1e-12)
    total = w.sum()
    # position 2: the first draw j, then i among the rest
    second = np.array([sum(w[j] / total * w[i] / (total - w[j]) for j in range(n) if j != i)
                       for i in range(n)])  # fmt: skip
    np.testing.assert_allclose(table[:, 1], second, atol=1e-12)
    np.testing.assert_allclose(table, pl_marginals_integral(w, slate), atol=1e-10)


def test_impressions_propensities(tiny):
    n, slate = 60, MW.SLATE
    w = pl_weights(n)
    table = marginals_table(tiny, n, slate)
    logged = rows(tiny, "SELECT * FROM impressions ORDER BY day, user_id, position")
    slates = {}
    for r in logged:
        slates.setdefault((r["day"], r["user_id"]), []).append(r)
    assert len(slates) == 50 * 2
    for shown in slates.values():
        assert [r["position"] for r in shown] == list(range(1, slate + 1))
        assert len({r["item_id"] for r in shown}) == slate
        ranks = np.array([r["rank"] for r in shown])
        left = w.sum() - np.concatenate([[0], np.cumsum(w[ranks - 1])[:-1]])
        choice = w[ranks - 1] / left  # the Plackett-Luce probability of each draw
        for k, r in enumerate(shown):
            for column in ("pscore", "pscore_item_position", "pscore_cascade"):
                assert 0 < r[column] <= 1, (column, r)
            assert r["pscore_cascade"] == pytest.approx(np.prod(choice[: k + 1]), rel=1e-12)
            assert r["pscore"] == pytest.approx(np.prod(choice), rel=1e-12)
            assert r["pscore_item_position"] == pytest.approx(table[r["rank"] - 1, k], rel=1e-12)
        assert shown[-1]["pscore_cascade"] == shown[-1]["pscore"]
        assert all(a["pscore_cascade"] >= b["pscore_cascade"] for a, b in itertools.pairwise(shown))


def test_ranks_are_the_served_models_order(tiny):
    """rank: the served model's rank of the item among the day's candidates (score, then item id
    descending), the score its score."""
    wrong = tiny.execute("""
        SELECT count(*) FROM impressions i
        JOIN (SELECT day, user_id, model, item_id, score, row_number() OVER (
                         PARTITION BY day, user_id, model ORDER BY score DESC, item_id DESC) AS rank
              FROM recommendations) r USING (day, user_id, model, item_id)
        WHERE r.rank <> i.rank OR r.score <> i.score
    """).fetchone()[0]  # fmt: skip
    assert wrong == 0
    assert tiny.execute("SELECT count(*) FROM impressions").fetchone()[0] == 50 * 2 * MW.SLATE


def test_slates_are_drawn_from_the_logging_policy(medium):
    """The ranks logged at each position follow the marginals (a chi-square test by rank group)."""
    from scipy import stats

    table = marginals_table(medium, 60, MW.SLATE)
    slates = medium.execute("SELECT count(DISTINCT (day, user_id)) FROM impressions").fetchone()[0]
    groups = [(1, 1), (2, 3), (4, 7), (8, 15), (16, 30), (31, 60)]
    counts = {(r, k): c for r, k, c in medium.execute(
        "SELECT rank, position, count(*) FROM impressions GROUP BY ALL").fetchall()}  # fmt: skip
    for k in range(1, MW.SLATE + 1):
        observed = [sum(counts.get((r, k), 0) for r in range(lo, hi + 1)) for lo, hi in groups]
        expected = [slates * table[lo - 1 : hi, k - 1].sum() for lo, hi in groups]
        assert stats.chisquare(observed, expected).pvalue > 1e-4, (k, observed, expected)


# ---- the click model ------------------------------------------------------------------------


def test_clicks_and_purchases_follow_the_click_model(medium):
    """P(click) = position^-0.7 * activity * 0.5 * affinity^2; P(purchase | click) =
    0.15 * affinity: observed counts within 4.5 standard deviations of the expected ones, per
    position and in all."""
    by_position = rows(medium, """
        SELECT position, sum(click) AS clicks, sum(p) AS expected, sum(p * (1 - p)) AS variance,
               sum(purchase) AS purchases, sum(click * 0.15 * affinity) AS expected_purchases,
               sum(click * 0.15 * affinity * (1 - 0.15 * affinity)) AS purchase_variance
        FROM (SELECT *, pow(position, -0.7) * activity * 0.5 * pow(affinity, 2) AS p
              FROM impressions JOIN hidden_affinity USING (day, user_id, item_id)
              JOIN hidden_activity USING (user_id))
        GROUP BY position ORDER BY position
    """)  # fmt: skip
    assert len(by_position) == MW.SLATE
    for r in by_position:
        assert abs(r["clicks"] - r["expected"]) < 4.5 * math.sqrt(r["variance"]), r
        assert abs(r["purchases"] - r["expected_purchases"]) < 4.5 * math.sqrt(r["purchase_variance"]) + 1, r
    clicks = sum(r["clicks"] for r in by_position)
    expected = sum(r["expected"] for r in by_position)
    assert abs(clicks - expected) < 4.5 * math.sqrt(sum(r["variance"] for r in by_position))
    # the position effect: clicks per unit of attraction fall as position^-0.7
    first, last = by_position[0], by_position[-1]
    assert first["clicks"] / first["expected"] == pytest.approx(last["clicks"] / last["expected"], rel=0.5)


def test_every_click_is_a_view_event(medium):
    missing = medium.execute("""
        SELECT count(*) FROM impressions i WHERE click = 1 AND NOT EXISTS (
            SELECT 1 FROM events e WHERE e.day = i.day AND e.user_id = i.user_id AND e.item_id = i.item_id
              AND e.event_type = 'view')
    """).fetchone()[0]  # fmt: skip
    assert missing == 0


# ---- what was served, and the covariate ---------------------------------------------------------


def test_served_is_each_users_own_arm(tiny):
    assert tiny.execute("""
        SELECT count(*) FROM assignment s JOIN users u USING (user_id) WHERE s.arm <> u.model
    """).fetchone()[0] == 0  # fmt: skip
    counts = tiny.execute("SELECT count(*), count(DISTINCT (day, user_id)) FROM assignment").fetchone()
    assert counts == (100, 100)
    assert tiny.execute("""
        SELECT count(*) FROM impressions i JOIN assignment s USING (day, user_id) WHERE i.model <> s.arm
    """).fetchone()[0] == 0  # fmt: skip


def test_pre_period_is_a_covariate_of_the_test(medium):
    corr, users, missing = medium.execute("""
        SELECT corr(p.pre_views, coalesce(e.views, 0)), count(*),
               (SELECT count(*) FROM users) - (SELECT count(*) FROM pre_period)
        FROM pre_period p LEFT JOIN (SELECT user_id, count(*) AS views FROM events
                                     WHERE event_type = 'view' GROUP BY user_id) e USING (user_id)
    """).fetchone()  # fmt: skip
    assert corr > 0.3
    assert 0 < missing < 0.1 * 1500  # users who joined during the test have no pre-period


# ---- the true values ----------------------------------------------------------------------------


def test_policy_values_are_the_documented_expectations(tiny):
    """policy_values against numpy: per slate (day, user), the expected clicks (sum over positions
    k of k^-0.7 * activity * 0.5 * affinity^2 of the item there), DCG-weighted (each term / log2(k
    + 1)) and purchases (each term * 0.15 * affinity), for the top 10 of model A and of model B
    (score, then item id descending) and for the logging policy (each candidate weighted by its
    probability of each position: the marginals recomputed here), averaged over the slates of
    all users and of the users served each arm."""
    slate = MW.SLATE
    marginals = pl_marginals_integral(pl_weights(60), slate)
    activity = dict(tiny.execute("SELECT user_id, activity FROM hidden_activity").fetchall())
    arm = dict(tiny.execute("SELECT user_id, model FROM users").fetchall())
    affinity = {(d, u, i): a for d, u, i, a in tiny.execute(
        "SELECT day, user_id, item_id, affinity FROM hidden_affinity").fetchall()}  # fmt: skip
    lists: dict = {}
    scored = tiny.execute("SELECT day, model, user_id, item_id, score FROM recommendations").fetchall()
    for d, m, u, i, s in scored:
        lists.setdefault((d, u), {}).setdefault(m, []).append((s, i))
    k = np.arange(1, slate + 1)
    examination = k**-0.7
    values: dict = {}
    for (d, u), by_model in lists.items():
        for model, scored in by_model.items():
            order = sorted(scored, reverse=True)  # score, then item id, descending
            aff = np.array([affinity[(d, u, i)] for _, i in order])
            attraction = activity[u] * 0.5 * aff**2
            top = {
                "clicks": attraction[:slate] * examination,
                "clicks_dcg": attraction[:slate] * examination / np.log2(k + 1),
                "purchases": attraction[:slate] * examination * 0.15 * aff[:slate],
            }
            for metric, terms in top.items():
                values.setdefault((model, metric), []).append((arm[u], terms.sum()))
            if model == arm[u]:
                logging = {
                    "clicks": attraction @ (marginals @ examination),
                    "clicks_dcg": attraction @ (marginals @ (examination / np.log2(k + 1))),
                    "purchases": (attraction * 0.15 * aff) @ (marginals @ examination),
                }
                for metric, value in logging.items():
                    values.setdefault(("logging", metric), []).append((arm[u], value))
    stored = {(r["policy"], r["served"], r["metric"]): r for r in rows(tiny, "SELECT * FROM policy_values")}
    expected_rows = 0
    for (policy, metric), found in values.items():
        for served in ("all", "A", "B"):
            chosen = [v for a, v in found if served in ("all", a)]
            row = stored[(policy, served, metric)]
            assert row["slates"] == len(chosen)
            assert row["value"] == pytest.approx(np.mean(chosen), rel=1e-9), (policy, served, metric)
            expected_rows += 1
    assert len(stored) == expected_rows == 3 * 3 * 3


def test_model_b_is_truly_better_and_the_logging_policy_explores(tiny):
    value = dict(((p, m), v) for p, m, v in tiny.execute(
        "SELECT policy, metric, value FROM policy_values WHERE served = 'all'").fetchall())  # fmt: skip
    for metric in ("clicks", "clicks_dcg", "purchases"):
        assert value[("B", metric)] > value[("A", metric)] > value[("logging", metric)] > 0


def test_the_warehouse_is_the_same_on_every_build(tiny, tmp_path_factory):
    again = _build(tmp_path_factory, "again", users=50, days=2)
    try:
        for table in ("recommendations", "impressions", "events", "ratings", "predictions", "pre_period",
                      "policy_values"):  # fmt: skip
            query = f"SELECT * FROM {table} ORDER BY ALL"
            first, second = tiny.execute(query).fetchall(), again.execute(query).fetchall()
            assert len(first) == len(second), table
            for a, b in zip(first, second, strict=True):
                for x, y in zip(a, b, strict=True):  # sums of floats: to the last bits
                    assert x == (pytest.approx(y, rel=1e-12, abs=0) if isinstance(y, float) else y), table
    finally:
        again.close()
