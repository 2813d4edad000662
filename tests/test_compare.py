"""compare(): against scipy (t, Wilcoxon), statsmodels (corrections), a numpy reimplementation
of the hashed replicates (tests/compare_reference.py) and ranx's Fisher test; the per-unit
differences are evaluate(per_user=True)'s values."""

from __future__ import annotations

import builtins

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

import sqlmetrics
from sqlmetrics.stats.corrections import adjust
from tests import compare_reference as ref

METRICS = ["ndcg@10", "precision@5"]


def make_data(users: int, seed: int = 1, models=("A", "B", "C"), extra_users=0):
    rng = np.random.default_rng(seed)
    rows = {"model": [], "user_id": [], "item_id": [], "score": []}
    for m_i, model in enumerate(models):
        for u in range(users + (extra_users if m_i == 1 else 0)):
            for item in rng.choice(20, size=8, replace=False):
                rows["model"].append(model)
                rows["user_id"].append(u)
                rows["item_id"].append(int(item))
                rows["score"].append(float(rng.random() + 0.1 * m_i * (item % 3 == 0)))
    truth = {"user_id": [], "item_id": [], "relevance": []}
    for u in range(users + extra_users):
        for item in rng.choice(20, size=3, replace=False):
            truth["user_id"].append(u)
            truth["item_id"].append(int(item))
            truth["relevance"].append(int(rng.integers(1, 4)))
    return pa.table(rows), pa.table(truth)


def per_user(con, recs, truth, **kw):
    rows = sqlmetrics.evaluate(con, recs, METRICS, truth=truth, by="model", per_user=True, **kw).to_pylist()
    out = {}
    for r in rows:
        out.setdefault(r["model"], {})[r["user_id"]] = r
    return out


def paired(values, system, baseline, metric):
    users = sorted(set(values[system]) & set(values[baseline]))
    x = np.array([values[system][u][metric] for u in users])
    y = np.array([values[baseline][u][metric] for u in users])
    return users, x, y


@pytest.fixture(scope="module")
def data():
    con = duckdb.connect()
    recs, truth = make_data(120)
    return con, recs, truth, per_user(con, recs, truth)


def rows_of(table):
    return {(r["model"], r["metric"]): r for r in table.to_pylist()}


def test_columns_and_t_test_against_scipy(data):
    con, recs, truth, values = data
    out = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A")
    assert out.column_names == [
        "model", "metric", "design", "users", "baseline_users", "baseline_mean", "mean", "delta",
        "relative_delta", "relative_ci_low", "relative_ci_high", "ci_low", "ci_high", "p_value",
        "p_adjusted", "effect_size", "wins", "ties", "losses", "unpaired_system",
        "unpaired_baseline", "srm_p_value", "theta", "variance_reduction",
    ]  # fmt: skip
    assert [(r["model"], r["metric"]) for r in out.to_pylist()] == [
        ("B", "ndcg@10"), ("B", "precision@5"), ("C", "ndcg@10"), ("C", "precision@5")
    ]
    rows = rows_of(out)
    for (system, metric), r in rows.items():
        users, x, y = paired(values, system, "A", metric)
        d = x - y
        assert r["users"] == len(users)
        assert r["delta"] == pytest.approx(d.mean(), abs=1e-15)
        assert r["mean"] == pytest.approx(x.mean(), abs=1e-15)
        assert r["baseline_mean"] == pytest.approx(y.mean(), abs=1e-15)
        assert r["relative_delta"] == pytest.approx(d.mean() / y.mean(), rel=1e-12)
        assert abs(r["p_value"] - scipy.stats.ttest_rel(x, y).pvalue) < 1e-10
        ci = scipy.stats.ttest_rel(x, y).confidence_interval(0.95)
        assert r["ci_low"] == pytest.approx(ci.low, abs=1e-10)
        assert r["ci_high"] == pytest.approx(ci.high, abs=1e-10)
        assert r["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-10)
        assert (r["wins"], r["ties"], r["losses"]) == (
            int((x > y).sum()), int((x == y).sum()), int((x < y).sum())
        )
    p = [r["p_value"] for r in out.to_pylist()]
    assert out.column("p_adjusted").to_pylist() == pytest.approx(
        list(multipletests(p, method="holm")[1]), abs=1e-15
    )


@pytest.mark.parametrize("users", [120, 30, 10])
def test_wilcoxon_against_scipy(users):
    con = duckdb.connect()
    recs, truth = make_data(users, seed=users)
    values = per_user(con, recs, truth)
    out = sqlmetrics.compare(
        con, recs, METRICS, truth=truth, by="model", baseline="A", test="wilcoxon"
    )
    for (system, metric), r in rows_of(out).items():
        _, x, y = paired(values, system, "A", metric)
        if np.all(x == y):
            assert r["p_value"] == 1
            continue
        assert abs(r["p_value"] - scipy.stats.wilcoxon(x, y).pvalue) < 1e-10, (system, metric)


def test_wilcoxon_ties_and_zeros_above_50():
    # precision@5 differences are multiples of 0.2: many zeros and ties in the normal approximation
    con = duckdb.connect()
    recs, truth = make_data(200, seed=7)
    values = per_user(con, recs, truth)
    out = sqlmetrics.compare(
        con, recs, ["precision@5"], truth=truth, by="model", baseline="A", test="wilcoxon"
    )
    for r in out.to_pylist():
        _, x, y = paired(values, r["model"], "A", "precision@5")
        assert (x == y).any()
        assert abs(r["p_value"] - scipy.stats.wilcoxon(x, y).pvalue) < 1e-10


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_replicates_against_numpy_reference(data, test):
    con, recs, truth, values = data
    out = sqlmetrics.compare(
        con, recs, METRICS, truth=truth, by="model", baseline="A", test=test, replicates=500, seed=42
    )
    for (system, metric), r in rows_of(out).items():
        users, x, y = paired(values, system, "A", metric)
        if test == "randomization":
            assert r["p_value"] == pytest.approx(ref.randomization_p(users, x - y, 42, 500), abs=1e-12)
        else:
            p, lo, hi = ref.bootstrap(users, x - y, 42, 500, 0.95)
            assert r["p_value"] == pytest.approx(p, abs=1e-12)
            assert r["ci_low"] == pytest.approx(lo, abs=1e-12)
            assert r["ci_high"] == pytest.approx(hi, abs=1e-12)


@pytest.mark.parametrize("buckets", [1, 16])
def test_bootstrap_buckets_of_many_units_against_numpy_reference(data, monkeypatch, buckets):
    # 120 users in 16 buckets (or one): what every bucket holds above 2^16 users, where each
    # replicate's weights are drawn per bucket and weigh the sum of its users' differences
    monkeypatch.setattr(sqlmetrics.stats.draws, "BOOTSTRAP_BUCKETS", buckets)
    con, recs, truth, values = data
    out = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A",
                             test="bootstrap", replicates=400, seed=7)  # fmt: skip
    for (system, metric), r in rows_of(out).items():
        users, x, y = paired(values, system, "A", metric)
        p, lo, hi = ref.bootstrap(users, x - y, 7, 400, 0.95, buckets=buckets)
        assert (r["p_value"], r["ci_low"], r["ci_high"]) == pytest.approx((p, lo, hi), abs=1e-12)


@pytest.mark.parametrize("test", ["randomization", "bootstrap"])
def test_same_seed_same_result_on_any_thread_count(data, test):
    _, recs, truth, _ = data
    results = []
    for threads in (1, 2):
        con = duckdb.connect()
        con.execute(f"SET threads = {threads}")
        results.append(
            sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A",
                               test=test, replicates=300, seed=3).to_pylist()
        )  # fmt: skip
    assert results[0] == results[1]


def test_hash_draws_are_fair():
    # signs and Poisson weights of the reference draws (the same as the SQL's, see above)
    h = ref.draws(range(2000), 0, 200)
    signs = ref.sign_bits(range(2000), 0, 200).astype(bool)
    assert abs(signs.mean() - 0.5) < 0.01
    # replicates are not copies of each other: correlation of signs between replicates ~ 0
    c = np.corrcoef(signs[:50].astype(float))
    assert np.abs(c[np.triu_indices(50, 1)]).max() < 0.12
    w = ref.poisson_weights(h)
    assert abs(w.mean() - 1) < 0.01 and abs(w.var() - 1) < 0.02


def test_randomization_within_monte_carlo_error_of_ranx(data):
    ranx = pytest.importorskip("ranx")
    from ranx.statistical_tests import fisher_randomization_test

    con, recs, truth, values = data
    out = sqlmetrics.compare(
        con, recs, ["ndcg@10"], truth=truth, by="model", baseline="A", test="randomization", replicates=4000
    )
    assert ranx
    for r in out.to_pylist():
        _, x, y = paired(values, r["model"], "A", "ndcg@10")
        p_ranx, _ = fisher_randomization_test(y, x, n_permutations=4000, max_p=0.05, random_seed=0)
        # two independent Monte-Carlo estimates of one p: their difference has sd <= sqrt(2 p (1 - p) / 4000)
        se = np.sqrt(2 * max(p_ranx * (1 - p_ranx), 1e-4) / 4000)
        assert abs(r["p_value"] - p_ranx) < 5 * se + 1 / 4000


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization", "bootstrap"])
def test_a_system_against_itself(test):
    recs, truth = make_data(60, models=("A",))
    copy = recs.set_column(0, "model", pa.array(["B"] * recs.num_rows))
    both = pa.concat_tables([recs, copy])
    out = sqlmetrics.compare(duckdb.connect(), both, METRICS, truth=truth, by="model", baseline="A",
                             test=test, replicates=200)  # fmt: skip
    for r in out.to_pylist():
        assert r["delta"] == 0 and r["losses"] == r["wins"] == 0 and r["ties"] == r["users"] == 60
        assert r["p_value"] == 1 and r["ci_low"] == 0 and r["ci_high"] == 0


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization", "bootstrap"])
def test_swapping_system_and_baseline(data, test):
    con, recs, truth, _ = data
    two = recs.filter(pa.compute.is_in(recs.column("model"), pa.array(["A", "B"])))
    kw = {"truth": truth, "by": "model", "test": test, "replicates": 300}
    ab = sqlmetrics.compare(con, two, METRICS, baseline="A", **kw)
    ba = sqlmetrics.compare(con, two, METRICS, baseline="B", **kw)
    assert ab.num_rows == ba.num_rows == 2
    for r, s in zip(ab.to_pylist(), ba.to_pylist(), strict=True):
        assert r["delta"] == -s["delta"]
        assert r["ci_low"] == pytest.approx(-s["ci_high"], abs=1e-15)
        assert r["ci_high"] == pytest.approx(-s["ci_low"], abs=1e-15)
        assert r["p_value"] == pytest.approx(s["p_value"], abs=1e-15)
        assert (r["wins"], r["losses"]) == (s["losses"], s["wins"])


def test_unpaired_counts_and_missing_zero():
    con = duckdb.connect()
    recs, truth = make_data(40, seed=5, models=("A", "B"), extra_users=5)  # B has 5 more users
    # (design='auto' refuses the mix: tests/test_compare_unpaired.py)
    out = sqlmetrics.compare(con, recs, ["ndcg@10"], truth=truth, by="model", baseline="A",
                             design="paired").to_pylist()[0]  # fmt: skip
    assert (out["users"], out["unpaired_system"], out["unpaired_baseline"]) == (40, 5, 0)
    zero = sqlmetrics.compare(con, recs, ["ndcg@10"], truth=truth, by="model", baseline="A", missing="zero")
    values = per_user(con, recs, truth, missing="zero")
    users, x, y = paired(values, "B", "A", "ndcg@10")
    row = zero.to_pylist()[0]
    assert (row["users"], row["unpaired_system"], row["unpaired_baseline"]) == (45, 0, 0)
    assert row["delta"] == pytest.approx((x - y).mean(), abs=1e-15)


def test_within_segments():
    con = duckdb.connect()
    recs, truth = make_data(60, seed=9, models=("A", "B"))
    country = pa.array(["de" if u % 2 else "fr" for u in recs.column("user_id").to_pylist()])
    recs = recs.append_column("country", country)
    out = sqlmetrics.compare(con, recs, ["ndcg@10"], truth=truth, by="model", baseline="A", within="country")
    assert out.column_names[:3] == ["country", "model", "metric"]
    values = per_user(con, recs, truth)
    for r in out.to_pylist():
        users = [u for u in values["B"] if (u % 2 == 1) == (r["country"] == "de")]
        d = [values["B"][u]["ndcg@10"] - values["A"][u]["ndcg@10"] for u in users]
        assert r["users"] == len(users) == 30
        assert r["delta"] == pytest.approx(np.mean(d), abs=1e-15)


@given(st.lists(st.one_of(st.none(), st.floats(0, 1)), min_size=1, max_size=12),
       st.sampled_from(["holm", "bonferroni", "bh"]))  # fmt: skip
@settings(max_examples=60, deadline=None)
def test_corrections_against_statsmodels(pvalues, method):
    tested = [p for p in pvalues if p is not None]
    got = adjust(pvalues, method)
    assert [g is None for g in got] == [p is None for p in pvalues]
    if tested:
        expected = multipletests(tested, method={"bh": "fdr_bh"}.get(method, method))[1]
        assert [g for g in got if g is not None] == pytest.approx(list(expected), abs=1e-12)


def test_bad_arguments(data):
    con, recs, truth, _ = data
    bad = [
        ({"test": "z"}, "test="),
        ({"correction": "sidak"}, "correction="),
        ({"confidence": 1.5}, "confidence"),
        ({"replicates": 0}, "replicates"),
        ({"baseline": 3}, "is a number"),
        ({"baseline": "Z"}, "not a value"),
        ({"baseline": ("A", "B")}, "one value per column"),
    ]
    for options, message in bad:
        kw = {"truth": truth, "by": "model", "baseline": "A", **options}
        with pytest.raises(sqlmetrics.SqlMetricsError, match=message):
            sqlmetrics.compare(con, recs, METRICS, **kw)


def test_missing_scipy_names_the_extra(data, monkeypatch):
    con, recs, truth, _ = data
    real_import = builtins.__import__

    def no_scipy(name, *args, **kwargs):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    with pytest.raises(sqlmetrics.SqlMetricsError, match=r"pip install 'sqlmetrics\[stats\]'"):
        sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A")


@pytest.mark.parametrize("by", [None, "model"])
def test_evaluate_confidence_intervals(data, by):
    con, recs, truth, values = data
    if by is None:  # one model's lists, without the column
        recs = recs.filter(pa.compute.equal(recs.column("model"), "A")).drop_columns(["model"])
    plain = sqlmetrics.evaluate(con, recs, METRICS, truth=truth, by=by)
    out = sqlmetrics.evaluate(con, recs, METRICS, truth=truth, by=by, confidence=0.9)
    names = (["model"] if by else []) + ["users"]
    for m in METRICS:
        names += [m, f"{m}_ci_low", f"{m}_ci_high"]
    assert out.column_names == names
    for column in plain.column_names:  # the means are evaluate()'s, to the bit
        assert out.column(column).to_pylist() == plain.column(column).to_pylist()
    for r in out.to_pylist():
        models = [r["model"]] if by else ["A"]
        for m in METRICS:
            x = np.array([v[m] for model in models for v in values[model].values()])
            ci = scipy.stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=scipy.stats.sem(x))
            assert (r[f"{m}_ci_low"], r[f"{m}_ci_high"]) == pytest.approx(ci, abs=1e-12)


def test_evaluate_confidence_refusals(data):
    con, recs, truth, _ = data
    for options in ({"per_user": True}, {"partitions": 2}, {"confidence": 2}):
        with pytest.raises(sqlmetrics.ConventionError):
            sqlmetrics.evaluate(con, recs, METRICS, truth=truth, **{"confidence": 0.95, **options})
    with pytest.raises(sqlmetrics.ConventionError, match="confidence"):
        sqlmetrics.sql(con, "t", METRICS, confidence=0.95)


@st.composite
def two_systems(draw):
    """Random lists of two systems A and B for 2..12 users (B's its own, or A's copy), and truth."""
    users = draw(st.integers(2, 12))
    same = draw(st.booleans())
    rows = {"model": [], "user_id": [], "item_id": [], "score": []}
    truth = {"user_id": [], "item_id": [], "relevance": []}
    for u in range(users):
        lists = {}
        lists["A"] = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True))
        other = st.lists(st.integers(0, 9), min_size=1, max_size=5, unique=True)
        lists["B"] = lists["A"] if same else draw(other)
        for model, items in lists.items():
            for rank, item in enumerate(items):
                rows["model"].append(model)
                rows["user_id"].append(u)
                rows["item_id"].append(item)
                rows["score"].append(float(10 - rank))
        for item in draw(st.lists(st.integers(0, 9), min_size=1, max_size=3, unique=True)):
            truth["user_id"].append(u)
            truth["item_id"].append(item)
            truth["relevance"].append(draw(st.integers(1, 3)))
    return pa.table(rows), pa.table(truth), same


@given(two_systems(), st.sampled_from(["t", "wilcoxon", "randomization", "bootstrap"]))
@settings(max_examples=12, deadline=None)
def test_invariants_on_random_systems(systems, test):
    recs, truth, same = systems
    con = duckdb.connect()
    kw = {"truth": truth, "by": "model", "test": test, "replicates": 64, "seed": 1}
    ab = sqlmetrics.compare(con, recs, METRICS, baseline="A", **kw).to_pylist()
    ba = sqlmetrics.compare(con, recs, METRICS, baseline="B", **kw).to_pylist()
    for r, s in zip(ab, ba, strict=True):
        assert r["delta"] == -s["delta"] and (r["wins"], r["losses"]) == (s["losses"], s["wins"])
        assert r["p_value"] == pytest.approx(s["p_value"], abs=1e-12)
        if r["ci_low"] is not None:
            assert (r["ci_low"], r["ci_high"]) == pytest.approx((-s["ci_high"], -s["ci_low"]), abs=1e-12)
        if same:
            assert r["delta"] == 0 and r["ties"] == r["users"] and r["p_value"] == 1


def test_compare_takes_evaluates_keywords_with_the_same_defaults():
    """compare() spells out evaluate()'s input keywords (for type hints and help()); they must
    not drift apart."""
    import inspect

    ours = inspect.signature(sqlmetrics.compare).parameters
    theirs = inspect.signature(sqlmetrics.evaluate).parameters
    # evaluate's, not compare's (evaluate's baseline= is rbo@k's reference, compare's its own)
    own = {"by", "baseline", "per_user", "partitions", "progress", "confidence"}
    keyword_only = inspect.Parameter.KEYWORD_ONLY
    shared = [name for name in theirs if name not in own and theirs[name].kind is keyword_only]
    assert shared, "evaluate() has no keyword-only parameters"
    for name in shared:
        assert name in ours, f"compare() lacks evaluate()'s keyword {name!r}"
        assert ours[name].default == theirs[name].default, name


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization", "bootstrap"])
def test_partitions_give_the_same_table_to_the_last_bit(data, test):
    """partitions=N evaluates the units in N hash slices; the comparison of their per-unit values
    must not change a bit of any column (sums, ranks and replicate draws alike)."""
    con, recs, truth, values = data
    kw = {"truth": truth, "by": "model", "baseline": "A", "test": test, "replicates": 300, "seed": 7}
    whole = sqlmetrics.compare(con, recs, METRICS, **kw)
    for partitions in (2, 5):
        assert sqlmetrics.compare(con, recs, METRICS, partitions=partitions, **kw).equals(whole)
    # within segments too (the small segments take Wilcoxon's exact path, from the differences)
    recs_w = recs.append_column("half", pa.array([u % 2 for u in recs.column("user_id").to_pylist()]))
    small = sqlmetrics.compare(con, recs_w.filter(pa.compute.less(recs_w["user_id"], 40)), METRICS,
                               within="half", **kw)  # fmt: skip
    again = sqlmetrics.compare(con, recs_w.filter(pa.compute.less(recs_w["user_id"], 40)), METRICS,
                               within="half", partitions=3, **kw)  # fmt: skip
    assert again.equals(small) and small.num_rows == 8
    # and what the partitions compared are evaluate()'s per-unit values: scipy's t-test p
    if test == "t":
        for r in whole.to_pylist():
            _, x, y = paired(values, r["model"], "A", r["metric"])
            assert r["p_value"] == pytest.approx(scipy.stats.ttest_rel(x, y).pvalue, abs=1e-10)


def test_partitions_are_checked_like_evaluate_s(data):
    con, recs, truth, _ = data
    kw = {"truth": truth, "by": "model", "baseline": "A"}
    for partitions in (0, "2", True):
        with pytest.raises(sqlmetrics.ConventionError, match="partitions must be a whole number"):
            sqlmetrics.compare(con, recs, METRICS, partitions=partitions, **kw)


def test_only_the_baseline_or_no_baseline_is_a_sqlmetrics_error(data):
    con, recs, truth, _ = data
    only_a = recs.filter(pa.compute.equal(recs["model"], "A"))
    with pytest.raises(sqlmetrics.SqlMetricsError, match="no system to compare with baseline='A'"):
        sqlmetrics.compare(con, only_a, METRICS, truth=truth, by="model", baseline="A")
    with pytest.raises(sqlmetrics.SqlMetricsError, match="baseline='Z' is not a value of model"):
        sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="Z")
