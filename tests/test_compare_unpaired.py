"""compare()'s designs (docs/compare.md, "Designs"): the unpaired tests against scipy (Welch's t,
Mann-Whitney, the permutation test), a numpy reimplementation of the hashed replicates
(tests/compare_unpaired_reference.py), the relative interval and Hedges' g against numpy
references of their formulas, the sample-ratio check against scipy.stats.chisquare, and the
design rule with its errors."""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import scipy.stats

import sqlmetrics
from sqlmetrics.stats import unpaired
from tests import compare_unpaired_reference as uref
from tests.test_compare import METRICS, make_data

SCIPY_MC = 1e-10


def issue_reproducer():
    """Issue 34's log: 400 users, each served one arm (A: odd users, B: even)."""
    random.seed(5)
    con = duckdb.connect()
    con.execute("CREATE TABLE recs(user_id INT, model VARCHAR, item_id VARCHAR, score DOUBLE)")
    con.execute("CREATE TABLE truth(user_id INT, item_id VARCHAR, relevance INT)")
    recs, truth = [], []
    for u in range(400):
        arm = "A" if u % 2 else "B"
        recs += [(u, arm, f"i{random.randrange(50)}_{i}", random.random()) for i in range(20)]
        truth += [(u, f"i{random.randrange(50)}_{random.randrange(20)}", 1) for _ in range(3)]
    con.executemany("INSERT INTO recs VALUES (?, ?, ?, ?)", recs)
    con.executemany("INSERT INTO truth VALUES (?, ?, ?)", sorted(set(truth)))
    return con


def ab_data(users: int, seed: int = 1, models=("A", "B", "C"), shares=None):
    """Lists where each user is served one arm (user u: models[u % len] unless shares given)."""
    recs, truth = make_data(users, seed=seed, models=models)
    rng = np.random.default_rng(seed)
    if shares is None:
        arm_of = {u: models[u % len(models)] for u in range(users)}
    else:
        arm_of = {u: str(rng.choice(models, p=shares)) for u in range(users)}
    keep = pa.array(
        [arm_of[u] == m for u, m in zip(recs["user_id"].to_pylist(), recs["model"].to_pylist(), strict=True)]
    )
    return recs.filter(keep), truth


def arms(con, recs, truth, metrics=METRICS, **kw):
    rows = sqlmetrics.evaluate(con, recs, metrics, truth=truth, by="model", per_user=True, **kw).to_pylist()
    out: dict[str, dict] = {}
    for r in rows:
        out.setdefault(r["model"], {})[r["user_id"]] = r
    return out


def side(values, model, metric):
    users = sorted(u for u, r in values[model].items() if r[metric] is not None)
    return users, np.array([values[model][u][metric] for u in users])


@pytest.fixture(scope="module")
def ab():
    con = duckdb.connect()
    recs, truth = ab_data(360, seed=3)
    return con, recs, truth, arms(con, recs, truth)


def rows_of(table):
    return {(r["model"], r["metric"]): r for r in table.to_pylist()}


def test_the_issue_reproducer_is_unpaired_and_welch():
    con = issue_reproducer()
    out = sqlmetrics.compare(con, "recs", ["ndcg@10"], truth="truth", by="model", baseline="A").to_pylist()
    assert len(out) == 1
    r = out[0]
    values = arms(con, "recs", "truth", ["ndcg@10"])
    _, x = side(values, "B", "ndcg@10")
    _, y = side(values, "A", "ndcg@10")
    assert (
        (r["design"], r["users"], r["baseline_users"])
        == ("unpaired", len(x), len(y))
        == ("unpaired", 200, 200)
    )
    assert r["delta"] == pytest.approx(x.mean() - y.mean(), abs=1e-15)
    welch = scipy.stats.ttest_ind(x, y, equal_var=False)
    assert r["p_value"] == pytest.approx(welch.pvalue, abs=1e-10)
    ci = welch.confidence_interval(0.95)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert all(
        r[c] is not None for c in ("mean", "baseline_mean", "p_value", "ci_low", "effect_size", "srm_p_value")
    )


def test_welch_hedges_relative_and_srm_against_references(ab):
    con, recs, truth, values = ab
    out = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A", confidence=0.9)
    assert out.column_names == ["model", *sqlmetrics.stats.compare.OUTPUT]  # (tests/test_compare.py)
    sizes = {m: len(values[m]) for m in ("A", "B", "C")}
    srm = scipy.stats.chisquare([sizes["A"], sizes["B"], sizes["C"]]).pvalue
    for (system, metric), r in rows_of(out).items():
        _, x = side(values, system, metric)
        _, y = side(values, "A", metric)
        n1, n0 = len(x), len(y)
        assert (r["design"], r["users"], r["baseline_users"]) == ("unpaired", n1, n0)
        assert (r["mean"], r["baseline_mean"]) == pytest.approx((x.mean(), y.mean()), abs=1e-15)
        welch = scipy.stats.ttest_ind(x, y, equal_var=False)
        assert r["p_value"] == pytest.approx(welch.pvalue, abs=1e-10)
        ci = welch.confidence_interval(0.9)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
        # Hedges' g
        sp = np.sqrt(((n1 - 1) * x.var(ddof=1) + (n0 - 1) * y.var(ddof=1)) / (n1 + n0 - 2))
        g = (1 - 3 / (4 * (n1 + n0) - 9)) * (x.mean() - y.mean()) / sp
        assert r["effect_size"] == pytest.approx(g, rel=1e-10)
        # the delta method for the ratio of two independent means
        ratio = x.mean() / y.mean()
        se = np.sqrt(x.var(ddof=1) / n1 / y.mean() ** 2 + x.mean() ** 2 * y.var(ddof=1) / n0 / y.mean() ** 4)
        z = scipy.stats.norm.ppf(0.95)
        assert r["relative_delta"] == pytest.approx(ratio - 1, rel=1e-12)
        assert (r["relative_ci_low"], r["relative_ci_high"]) == pytest.approx(
            (ratio - 1 - z * se, ratio - 1 + z * se), rel=1e-9
        )
        assert r["srm_p_value"] == pytest.approx(srm, abs=1e-12)
        assert (r["wins"], r["theta"], r["variance_reduction"]) == (None, None, None)
        assert (r["unpaired_system"], r["unpaired_baseline"]) == (n1, n0)


def test_expected_split_against_chisquare():
    con = duckdb.connect()
    recs, truth = ab_data(300, seed=8, models=("A", "B"), shares=[0.7, 0.3])
    values = arms(con, recs, truth)
    n_a, n_b = len(values["A"]), len(values["B"])
    kw = {"truth": truth, "by": "model", "baseline": "A"}
    for split in ({"A": 0.7, "B": 0.3}, {"A": 1, "B": 1}, None):
        out = sqlmetrics.compare(con, recs, ["ndcg@10"], expected_split=split, **kw).to_pylist()[0]
        shares = split or {"A": 1, "B": 1}
        total = n_a + n_b
        expected = [total * shares["A"] / sum(shares.values()), total * shares["B"] / sum(shares.values())]
        assert out["srm_p_value"] == pytest.approx(
            scipy.stats.chisquare([n_a, n_b], expected).pvalue, abs=1e-12
        )
    with pytest.raises(sqlmetrics.ConventionError, match="does not name the arm 'B'"):
        sqlmetrics.compare(con, recs, ["ndcg@10"], expected_split={"A": 1, "C": 1}, **kw)
    with pytest.raises(sqlmetrics.ConventionError, match="positive number"):
        sqlmetrics.compare(con, recs, ["ndcg@10"], expected_split={"A": 1, "B": -1}, **kw)


@pytest.mark.parametrize("users", [360, 40, 12])
def test_mannwhitney_against_scipy(users):
    con = duckdb.connect()
    recs, truth = ab_data(users, seed=users)
    values = arms(con, recs, truth)
    out = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A", test="mannwhitney")
    for (system, metric), r in rows_of(out).items():
        _, x = side(values, system, metric)
        _, y = side(values, "A", metric)
        if np.all(np.concatenate([x, y]) == x[0]):
            assert r["p_value"] == 1
            continue
        assert r["p_value"] == pytest.approx(scipy.stats.mannwhitneyu(x, y).pvalue, abs=1e-10), (
            system,
            metric,
        )


def test_mann_whitney_exact_and_asymptotic_branches_against_scipy():
    # the sums the SQL returns, computed here, through both of scipy's branches
    rng = np.random.default_rng(0)
    for n1, n0, tied in [(3, 7, False), (8, 30, False), (5, 5, True), (9, 12, False), (40, 3, True)]:
        x = rng.integers(0, 6, n1).astype(float) if tied else rng.random(n1)
        y = rng.integers(0, 6, n0).astype(float) if tied else rng.random(n0)
        ranks = scipy.stats.rankdata(np.concatenate([x, y]))
        _, counts = np.unique(np.concatenate([x, y]), return_counts=True)
        p = unpaired.mann_whitney(n1, n0, 2 * ranks[:n1].sum(), float((counts**3 - counts).sum()))
        assert p == pytest.approx(scipy.stats.mannwhitneyu(x, y).pvalue, abs=1e-12), (n1, n0, tied)


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_replicates_against_numpy_reference(ab, test):
    con, recs, truth, values = ab
    out = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A", test=test,
                             replicates=300, seed=11)  # fmt: skip
    for (system, metric), r in rows_of(out).items():
        u1, x = side(values, system, metric)
        u0, y = side(values, "A", metric)
        if test == "randomization":
            assert r["p_value"] == pytest.approx(uref.permutation_p(u1, x, u0, y, 11, 300), abs=1e-12)
            welch = scipy.stats.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
            assert (r["ci_low"], r["ci_high"]) == pytest.approx((welch.low, welch.high), abs=1e-12)
        else:
            p, lo, hi = uref.bootstrap(u1, x, u0, y, 11, 300, 0.95, buckets=uref.BUCKETS_PER_ARM)
            assert (r["p_value"], r["ci_low"], r["ci_high"]) == pytest.approx((p, lo, hi), abs=1e-12)


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_replicates_do_not_depend_on_the_scale_of_the_values(ab, test):
    """The replicates' integers are scaled per comparison (2^e from its largest |v|, as the
    paired design's): grades scaled by 1e-12 (every value of dcg below 2^-32, which a fixed
    2^32 scale rounded to 0) or by 1e12 (values near 2^43) give the same p-value, an interval
    scaled by as much, and the numpy reference's numbers."""
    con, recs, truth, _ = ab

    def run(scale):
        grades = pa.array([float(g) * scale for g in truth.column("relevance").to_pylist()])
        scaled = truth.set_column(truth.schema.get_field_index("relevance"), "relevance", grades)
        out = sqlmetrics.compare(con, recs, ["dcg@10"], truth=scaled, by="model", baseline="A",
                                 test=test, replicates=200, seed=3)  # fmt: skip
        return out.to_pylist(), arms(con, recs, scaled, ["dcg@10"])

    base, _ = run(1.0)
    assert all(r["p_value"] < 1 for r in base)
    for scale in (1e-12, 1e12):
        rows, values = run(scale)
        for row, expected in zip(rows, base, strict=True):
            assert row["p_value"] == pytest.approx(expected["p_value"], abs=1e-12), (scale, row["model"])
            for column in ("ci_low", "ci_high"):
                assert row[column] == pytest.approx(expected[column] * scale, rel=1e-9), (scale, column)
            u1, x = side(values, row["model"], "dcg@10")
            u0, y = side(values, "A", "dcg@10")
            if test == "randomization":
                assert row["p_value"] == pytest.approx(uref.permutation_p(u1, x, u0, y, 3, 200), abs=1e-12)
            else:
                p, lo, hi = uref.bootstrap(u1, x, u0, y, 3, 200, 0.95, buckets=uref.BUCKETS_PER_ARM)
                assert (row["p_value"], row["ci_low"], row["ci_high"]) == pytest.approx((p, lo, hi), rel=1e-9)


@pytest.mark.parametrize("buckets", [1, 16])
def test_bootstrap_buckets_of_many_units_against_numpy_reference(ab, monkeypatch, buckets):
    monkeypatch.setattr(sqlmetrics.stats.draws, "UNPAIRED_BOOTSTRAP_BUCKETS", buckets)
    con, recs, truth, values = ab
    out = sqlmetrics.compare(con, recs, ["ndcg@10"], truth=truth, by="model", baseline="A",
                             test="bootstrap", replicates=200, seed=2)  # fmt: skip
    for (system, metric), r in rows_of(out).items():
        u1, x = side(values, system, metric)
        u0, y = side(values, "A", metric)
        expected = uref.bootstrap(u1, x, u0, y, 2, 200, 0.95, buckets=buckets)
        assert (r["p_value"], r["ci_low"], r["ci_high"]) == pytest.approx(expected, abs=1e-12)


def test_randomization_within_monte_carlo_error_of_scipy_permutation_test(ab):
    con, recs, truth, values = ab
    reps = 2000
    out = sqlmetrics.compare(con, recs, ["ndcg@10"], truth=truth, by="model", baseline="A",
                             test="randomization", replicates=reps)  # fmt: skip
    for r in out.to_pylist():
        _, x = side(values, r["model"], "ndcg@10")
        _, y = side(values, "A", "ndcg@10")
        res = scipy.stats.permutation_test(
            (x, y), lambda a, b, axis: a.mean(axis=axis) - b.mean(axis=axis),
            permutation_type="independent", n_resamples=reps, vectorized=True, rng=0,
        )  # fmt: skip
        p = res.pvalue
        se = np.sqrt(2 * max(p * (1 - p), 1e-3) * 2 / reps)  # two estimates; 2 sides of a two-sided p
        assert abs(r["p_value"] - p) < 5 * se + 2 / reps, (r["p_value"], p)


@pytest.mark.parametrize("test", ["t", "mannwhitney", "randomization", "bootstrap"])
def test_swapping_system_and_baseline(ab, test):
    con, recs, truth, _ = ab
    two = recs.filter(pa.compute.is_in(recs.column("model"), pa.array(["A", "B"])))
    kw = {"truth": truth, "by": "model", "test": test, "replicates": 200}
    ab_, ba = (sqlmetrics.compare(con, two, METRICS, baseline=b, **kw).to_pylist() for b in ("A", "B"))
    for r, s in zip(ab_, ba, strict=True):
        assert r["delta"] == -s["delta"] and (r["users"], r["baseline_users"]) == (
            s["baseline_users"],
            s["users"],
        )
        if test in ("randomization", "bootstrap"):
            continue  # the draws depend on which side is the system's: swapped, other replicates
        assert r["p_value"] == pytest.approx(s["p_value"], abs=1e-12)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((-s["ci_high"], -s["ci_low"]), abs=1e-12)


def test_design_rule_and_its_errors(ab):
    con, recs, truth, _ = ab
    kw = {"truth": truth, "by": "model", "baseline": "A"}
    paired_recs, paired_truth = make_data(40, seed=2)
    out = sqlmetrics.compare(con, paired_recs, METRICS, truth=paired_truth, by="model", baseline="A")
    assert set(out.column("design").to_pylist()) == {"paired"}
    assert out.column("baseline_users").to_pylist() == out.column("users").to_pylist()
    assert set(out.column("srm_p_value").to_pylist()) == {None}
    # a mix: 40 units on both sides, 5 on one
    mixed, mixed_truth = make_data(40, seed=5, models=("A", "B"), extra_users=5)
    with pytest.raises(
        sqlmetrics.ConventionError,
        match=r"design='auto' found .* on both sides .* one side only.*design='paired'.*design='unpaired'",
    ):
        sqlmetrics.compare(con, mixed, METRICS, truth=mixed_truth, by="model", baseline="A")
    both = sqlmetrics.compare(
        con, mixed, METRICS, truth=mixed_truth, by="model", baseline="A", design="unpaired"
    )
    assert both.column("users").to_pylist() == [45, 45] and both.column("baseline_users").to_pylist() == [
        40,
        40,
    ]
    with pytest.raises(sqlmetrics.ConventionError, match="design='paired': no unit has values on both sides"):
        sqlmetrics.compare(con, recs, METRICS, design="paired", **kw)
    with pytest.raises(sqlmetrics.ConventionError, match="test='wilcoxon' pairs units"):
        sqlmetrics.compare(con, recs, METRICS, test="wilcoxon", **kw)
    with pytest.raises(sqlmetrics.ConventionError, match="test='mannwhitney' compares independent samples"):
        sqlmetrics.compare(
            con, paired_recs, METRICS, truth=paired_truth, by="model", baseline="A", test="mannwhitney"
        )
    for options, message in [
        ({"design": "unpaired", "test": "wilcoxon"}, "is a paired test"),
        ({"design": "paired", "test": "mannwhitney"}, "is an unpaired test"),
        ({"design": "crossover"}, "design='crossover' is not one of"),
        ({"design": "paired", "covariate": "x"}, "covariate= .CUPED."),
    ]:
        with pytest.raises(sqlmetrics.ConventionError, match=message):
            sqlmetrics.compare(con, recs, METRICS, **{**kw, **options})


def test_no_row_of_nulls_for_a_comparison_without_units(ab):
    con, recs, truth, _ = ab
    # the baseline has no unit in segment 'de': a ConventionError naming it, never a row of NULLs
    users, models = recs["user_id"].to_pylist(), recs["model"].to_pylist()
    country = pa.array(["fr" if m == "A" or u % 2 else "de" for u, m in zip(users, models, strict=True)])
    with pytest.raises(
        sqlmetrics.ConventionError,
        match="the comparison country='de', model='B' with the baseline has no unit on one of its sides",
    ):
        sqlmetrics.compare(con, recs.append_column("country", country), METRICS, truth=truth, by="model",
                           baseline="A", within="country")  # fmt: skip


def test_paired_relative_interval_has_the_covariance_term():
    con = duckdb.connect()
    recs, truth = make_data(80, seed=4)
    from tests.test_compare import paired, per_user

    values = per_user(con, recs, truth)
    out = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A")
    for r in out.to_pylist():
        _, x, y = paired(values, r["model"], "A", r["metric"])
        n = len(x)
        ratio = x.mean() / y.mean()
        cov = np.cov(x, y, ddof=1)
        var = (cov[0, 0] - 2 * ratio * cov[0, 1] + ratio**2 * cov[1, 1]) / n / y.mean() ** 2
        z = scipy.stats.norm.ppf(0.975)
        expected = (ratio - 1 - z * np.sqrt(var), ratio - 1 + z * np.sqrt(var))
        assert (r["relative_ci_low"], r["relative_ci_high"]) == pytest.approx(expected, rel=1e-9)


def covariate_table(values, metric, rng, missing=0.0, balance=False):
    """A pre-period covariate per unit: the unit's metric plus noise (some units without one);
    balance: the same mean on every arm (OLS with the arm and CUPED then coincide exactly)."""
    rows = {"user_id": [], "pre": []}
    for units in values.values():
        xs = {u: r[metric] + rng.normal(0, 0.2) for u, r in units.items() if rng.random() >= missing}
        if balance:
            mean = np.mean(list(xs.values()))
            xs = {u: x - mean + 1.0 for u, x in xs.items()}
        rows["user_id"] += list(xs)
        rows["pre"] += list(xs.values())
    return pa.table(rows)


@pytest.mark.parametrize("test", ["t", "mannwhitney", "randomization", "bootstrap"])
def test_cuped_against_numpy_reference(ab, test):
    con, recs, truth, values = ab
    rng = np.random.default_rng(1)
    covariate = covariate_table(values, "ndcg@10", rng, missing=0.2)
    cov = dict(zip(covariate["user_id"].to_pylist(), covariate["pre"].to_pylist(), strict=True))
    out = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A", test=test,
                             covariate=covariate, replicates=200, seed=4)  # fmt: skip
    for (system, metric), r in rows_of(out).items():
        u1, y1 = side(values, system, metric)
        u0, y0 = side(values, "A", metric)
        theta, (a1, a0) = uref.cuped([[cov.get(u) for u in u1], [cov.get(u) for u in u0]], [y1, y0])
        assert r["theta"] == pytest.approx(theta, rel=1e-9, abs=1e-12)
        assert r["delta"] == pytest.approx(a1.mean() - a0.mean(), abs=1e-12)
        assert (r["mean"], r["baseline_mean"]) == pytest.approx((a1.mean(), a0.mean()), abs=1e-12)
        ss = lambda v: ((v - v.mean()) ** 2).sum()  # noqa: E731
        assert r["variance_reduction"] == pytest.approx(1 - (ss(a1) + ss(a0)) / (ss(y1) + ss(y0)), rel=1e-9)
        if test == "t":
            welch = scipy.stats.ttest_ind(a1, a0, equal_var=False)
            assert r["p_value"] == pytest.approx(welch.pvalue, abs=1e-10)
            ci = welch.confidence_interval(0.95)
            assert (r["ci_low"], r["ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-12)
        elif test == "mannwhitney":
            assert r["p_value"] == pytest.approx(scipy.stats.mannwhitneyu(a1, a0).pvalue, abs=1e-10)
        elif test == "randomization":
            assert r["p_value"] == pytest.approx(uref.permutation_p(u1, a1, u0, a0, 4, 200), abs=1e-12)
        else:
            p, lo, hi = uref.bootstrap(u1, a1, u0, a0, 4, 200, 0.95, buckets=uref.BUCKETS_PER_ARM)
            assert (r["p_value"], r["ci_low"], r["ci_high"]) == pytest.approx((p, lo, hi), abs=1e-9)
    ndcg = [r for r in out.to_pylist() if r["metric"] == "ndcg@10"]
    assert all(r["variance_reduction"] > 0.3 for r in ndcg)  # a covariate of the metric itself


def test_cuped_against_statsmodels_ols(ab):
    sm = pytest.importorskip("statsmodels.api")
    con, recs, truth, values = ab
    two = recs.filter(pa.compute.is_in(recs.column("model"), pa.array(["A", "B"])))
    values = {m: values[m] for m in ("A", "B")}
    covariate = covariate_table(values, "ndcg@10", np.random.default_rng(2), balance=True)
    cov = dict(zip(covariate["user_id"].to_pylist(), covariate["pre"].to_pylist(), strict=True))
    r = sqlmetrics.compare(con, two, ["ndcg@10"], truth=truth, by="model", baseline="A",
                           covariate=covariate).to_pylist()[0]  # fmt: skip
    u1, y1 = side(values, "B", "ndcg@10")
    u0, y0 = side(values, "A", "ndcg@10")
    x = np.array([cov[u] for u in u1 + u0])
    treated = np.r_[np.ones(len(u1)), np.zeros(len(u0))]
    fit = sm.OLS(np.r_[y1, y0], sm.add_constant(np.c_[treated, x - x.mean()])).fit()
    # the arms' covariate means are equal: the pooled theta is the regression's slope, and the
    # CUPED difference the regression's effect of the arm
    assert r["theta"] == pytest.approx(fit.params[2], rel=1e-9)
    assert r["delta"] == pytest.approx(fit.params[1], abs=1e-12)
    # theta is also the slope of Y on X over the units of both arms
    assert r["theta"] == pytest.approx(sm.OLS(np.r_[y1, y0], sm.add_constant(x)).fit().params[1], rel=1e-9)


def test_covariate_errors(ab):
    con, recs, truth, _ = ab
    kw = {"truth": truth, "by": "model", "baseline": "A"}
    bad = [
        (pa.table({"user_id": [1, 2], "a": [1.0, 2.0], "b": [1.0, 2.0]}), "one numeric column"),
        (pa.table({"user_id": [1, 2], "a": ["x", "y"]}), "one numeric column"),
        (pa.table({"uid": [1, 2], "a": [1.0, 2.0]}), "user"),
    ]
    for table, message in bad:
        with pytest.raises(sqlmetrics.SqlMetricsError, match=message):
            sqlmetrics.compare(con, recs, METRICS, covariate=table, **kw)
    twice = pa.table({"user_id": [1, 1, 2], "a": [1.0, 2.0, 3.0]})
    with pytest.raises(sqlmetrics.DuplicateRowError, match="covariate: 1 unit"):
        sqlmetrics.compare(con, recs, METRICS, covariate=twice, **kw)


@pytest.mark.parametrize("test", ["t", "mannwhitney", "randomization", "bootstrap"])
def test_partitions_and_segments_give_the_same_table(ab, test):
    con, recs, truth, values = ab
    recs = recs.append_column("half", pa.array([u % 2 for u in recs["user_id"].to_pylist()]))
    kw = {"truth": truth, "by": "model", "baseline": "A", "test": test, "replicates": 100, "seed": 3}
    whole = sqlmetrics.compare(con, recs, METRICS, within="half", **kw)
    assert whole.num_rows == 8 and set(whole.column("design").to_pylist()) == {"unpaired"}
    assert sqlmetrics.compare(con, recs, METRICS, within="half", partitions=3, **kw).equals(whole)
    if test == "t":
        for r in whole.to_pylist():
            x = [v[r["metric"]] for u, v in values[r["model"]].items() if u % 2 == r["half"]]
            y = [v[r["metric"]] for u, v in values["A"].items() if u % 2 == r["half"]]
            welch = scipy.stats.ttest_ind(x, y, equal_var=False)
            assert r["p_value"] == pytest.approx(welch.pvalue, abs=1e-10)


def test_units_of_several_key_columns_and_text_keys(ab):
    con, recs, truth, values = ab
    day = lambda t: t.append_column("day", pa.array(["mon"] * t.num_rows))  # noqa: E731
    out = sqlmetrics.compare(con, day(recs), METRICS, truth=day(truth), by="model", baseline="A",
                             user=["user_id", "day"], test="bootstrap", replicates=100)  # fmt: skip
    for (system, metric), r in rows_of(out).items():
        u1, x = side(values, system, metric)
        u0, y = side(values, "A", metric)
        # the draws hash the key columns' texts joined by '|'
        keys1, keys0 = [f"{u}|mon" for u in u1], [f"{u}|mon" for u in u0]
        p, lo, hi = uref.bootstrap(keys1, x, keys0, y, 0, 100, 0.95, buckets=uref.BUCKETS_PER_ARM)
        assert (r["p_value"], r["ci_low"], r["ci_high"]) == pytest.approx((p, lo, hi), abs=1e-12)


@pytest.fixture(scope="module")
def statements(ab):
    """The contexts of compare()'s statement for each unpaired test, with a covariate."""
    con, recs, truth, values = ab
    captured = []
    real = sqlmetrics.stats.compare.render

    def capture(name, context):
        if name == "compare/compare.sql.j2":
            captured.append(dict(context))
        return real(name, context)

    covariate = covariate_table(values, "ndcg@10", np.random.default_rng(0))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sqlmetrics.stats.compare, "render", capture)
        for test in ("t", "mannwhitney", "randomization", "bootstrap"):
            sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A", test=test,
                               covariate=covariate, replicates=50)  # fmt: skip
    return captured


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake", "spark", "postgres"])
def test_the_unpaired_statement_renders_and_parses_in_every_dialect(statements, dialect):
    """The statement of each unpaired test (with a covariate) rendered for another dialect
    parses with sqlglot in that dialect (BigQuery and Snowflake cannot run here)."""
    sqlglot = pytest.importorskip("sqlglot")
    from sqlmetrics.statement import templates

    # (design='auto' runs a replicate test's paired statement first: the unpaired ones are these)
    unpaired = [c for c in statements if c["unpaired_test"]]
    assert {c["unpaired_test"] for c in unpaired} == {"t", "mannwhitney", "randomization", "bootstrap"}
    for context in unpaired:
        text = templates.render(
            "compare/compare.sql.j2", {**context, "dialect": dialect, "per_user_sql": "SELECT 1"}
        )
        assert "unpaired_summary" in text and "covariate_theta" in text
        sqlglot.parse_one(text, read=dialect)


def test_the_readme_s_comparing_models_runs_against_the_example_warehouse(tmp_path, monkeypatch):
    """The README's "Comparing models" block, verbatim, on a fresh example warehouse (after the
    Quick start's `events`): the A/B test unpaired with CUPED; and the shadow comparison's bias
    that the text states (each model wins on the users it served)."""
    import ast
    import re
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    part = re.search(r"^### Comparing models\n(.*?)(?=^### )", readme, flags=re.M | re.S).group(1)
    blocks = re.findall(r"^```python\n(.*?)^```", part, flags=re.M | re.S)
    assert blocks
    subprocess.run([sys.executable, str(root / "warehouse_examples" / "make_warehouse.py"), "--users", "1500",
                    "--db", str(tmp_path / "warehouse.duckdb")], check=True, capture_output=True)  # fmt: skip
    monkeypatch.chdir(tmp_path)
    con = duckdb.connect("warehouse.duckdb")
    day = "day = DATE '2026-11-07'"
    events = con.sql(f"SELECT user_id, item_id, event_type FROM events WHERE {day}")  # (the Quick start's)
    namespace = {"con": con, "sqlmetrics": sqlmetrics, "events": events}
    tables = []
    for block in blocks:
        for statement in ast.parse(block).body:
            code = ast.get_source_segment(block, statement)
            if isinstance(statement, ast.Expr):
                tables.append(eval(code, namespace))
            else:
                exec(code, namespace)
    (online,) = (t.to_pylist() for t in tables)
    assert {r["design"] for r in online} == {"unpaired"} and online[0]["variance_reduction"] > 0
    assert online[0]["srm_p_value"] > 0.001 and online[0]["ci_low"] > 0
    grades = {"action": "event_type", "relevance": {"purchase": 3, "add_to_cart": 2, "view": 1}}
    lists = con.sql(f"SELECT * FROM shadow WHERE {day}")
    shadow = sqlmetrics.compare(con, lists, ["ndcg@10"], truth=events, by="model", baseline="A",
                                within="served_model", **grades).to_pylist()  # fmt: skip
    by_arm = {r["served_model"]: r for r in shadow}
    assert {r["design"] for r in shadow} == {"paired"}
    assert by_arm["A"]["ci_high"] < 0 < by_arm["B"]["ci_low"]  # each model wins on its own users
    assert by_arm["A"]["delta"] < online[0]["ci_low"] and online[0]["ci_high"] < by_arm["B"]["delta"]
    con.close()
