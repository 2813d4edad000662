"""off_policy(baseline=<another target>): each estimate against the same estimator's estimate of
a second target on the same logged units, against the numpy reference
(tests/off_policy_reference.py: the paired comparison of the two targets' per-unit terms) on
random logs with exact Plackett-Luce propensities, 1e-9."""

from __future__ import annotations

import math
import warnings

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmetrics
from sqlmetrics import off_policy
from sqlmetrics.errors import ConventionError, InvalidDataError, UnknownTableError
from sqlmetrics.statement.exact_sums import with_exact_sums
from tests.off_policy_reference import (
    add_stochastic_target,
    log_arrays,
    paired,
    random_log,
    random_ranking,
    reference,
    stochastic_arrays,
    stochastic_arrays_of,
    unit_terms,
)
from tests.test_off_policy import ALL, STOCHASTIC, close, quiet
from tests.test_off_policy_engines import same

COMPARED = ("baseline_value", "delta", "delta_ci_low", "delta_ci_high", "p_value")


def assert_compared(got: pa.Table, log: dict, base_log: dict, estimators, label: str, **options) -> None:
    """Each row: the target's own columns (as without baseline=) and the comparison with the
    baseline target's estimate by the same estimator, as the reference computes them."""
    rows = {r["estimator"]: r for r in got.to_pylist()}
    assert list(rows) == list(estimators)
    confidence = options.pop("confidence", 0.95)
    for e in estimators:
        want = reference(log, e, confidence=confidence, **options)
        assert close(rows[e]["value"], want["value"]) and close(rows[e]["ci_low"], want["ci_low"]), e
        units, t = unit_terms(log, e, **options)
        base_units, base = unit_terms(base_log, e, **options)
        assert (units == base_units).all()
        want = paired(t, base, confidence)
        assert rows[e]["baseline"] == label
        # where both targets' terms agree to rounding (a self-normalized estimate of 2.0 on both
        # sides: differences of 1e-16), the p-value is a statistic of rounding noise, which two
        # orders of summation draw differently; the delta and its interval are still compared
        noise = np.max(np.abs(t - base), initial=0.0) <= 1e-12 * max(1.0, np.max(np.abs(t), initial=0.0))
        for f in COMPARED:
            if f == "p_value" and noise:
                continue
            assert close(rows[e][f], want[f]), (e, f, rows[e][f], want[f])


weights_strategy = st.sampled_from(["none", "dcg", [1.0, 0.5], [2.0, 1.0, 0.25, 3.0]])
clip_strategy = st.sampled_from([None, 2.0, 10.0])


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), units=st.integers(2, 25), items=st.integers(3, 5),
       length=st.integers(1, 3), position_weights=weights_strategy, clip=clip_strategy,
       graded=st.booleans(), confidence=st.sampled_from([0.9, 0.95]))
def test_ranking_against_ranking_equals_reference(seed, units, items, length, position_weights, clip,
                                                  graded, confidence):
    rng = np.random.default_rng(seed)
    impressions, target = random_log(rng, units, items, min(length, items),
                                     reward_levels=(0, 1, 2, -1) if graded else (0, 1))
    other = random_ranking(rng, impressions, items)
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), ALL,
                target=pa.Table.from_pylist(target), baseline=pa.Table.from_pylist(other),
                predicted_reward="predicted", position_weights=position_weights, clip=clip,
                confidence=confidence)
    assert_compared(got, log_arrays(impressions, target), log_arrays(impressions, other), ALL, "baseline",
                    position_weights=position_weights, clip=math.inf if clip is None else clip,
                    confidence=confidence)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), units=st.integers(2, 20), length=st.integers(1, 3),
       clip=clip_strategy)
def test_stochastic_targets_against_each_other_and_a_ranking(seed, units, length, clip):
    """A stochastic target against a stochastic baseline (baseline= a mapping of the target_*
    keywords to its columns), and against a ranking."""
    rng = np.random.default_rng(seed)
    impressions, target = random_log(rng, units, 4, length)
    add_stochastic_target(rng, impressions, 4, "b")
    own = {"target_pscore": "target_pscore", "target_pscore_item_position": "target_pscore_item_position",
           "target_pscore_cascade": "target_pscore_cascade", "target_predicted_reward": "target_predicted"}
    other = {"target_pscore": "b_pscore", "target_pscore_item_position": "b_pscore_item_position",
             "target_pscore_cascade": "b_pscore_cascade", "target_predicted_reward": "b_predicted"}
    table, clipped = pa.Table.from_pylist(impressions), math.inf if clip is None else clip
    got = quiet(duckdb.connect(), table, STOCHASTIC, **own, baseline=other, predicted_reward="predicted",
                clip=clip)
    assert_compared(got, stochastic_arrays(impressions), stochastic_arrays_of(impressions, "b"),
                    STOCHASTIC, "baseline", clip=clipped)
    con = duckdb.connect()
    con.register("ranking_frame", pa.Table.from_pylist(target))
    con.execute("CREATE TABLE ranking AS SELECT * FROM ranking_frame")
    estimators = ["iips", "snrips", "sips", "logging"]
    got = quiet(con, table, estimators, **own, baseline="ranking", clip=clip)
    assert_compared(got, stochastic_arrays(impressions), log_arrays(impressions, target), estimators,
                    "ranking", clip=clipped)


def test_segments_and_the_bootstrap():
    """by=: each segment's units compared on their own; test='bootstrap': each delta's interval
    and p from compare()'s bucketed Poisson bootstrap of the per-unit differences."""
    from tests import compare_reference as cref

    rng = np.random.default_rng(17)
    impressions, target = random_log(rng, 40, 4, 2, reward_levels=(0, 1, 2))
    other = random_ranking(rng, impressions, 4)
    for r in impressions:
        r["device"] = "phone" if r["user_id"] % 2 else "web"
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), ["iips", "sniips"],
                target=pa.Table.from_pylist(target), baseline=pa.Table.from_pylist(other), by="device")
    for device in ("phone", "web"):
        part = [r for r in impressions if r["device"] == device]
        units = {r["user_id"] for r in part}
        mine = log_arrays(part, [t for t in target if t["user_id"] in units])
        theirs = log_arrays(part, [t for t in other if t["user_id"] in units])
        assert_compared(pa.Table.from_pylist([r for r in got.to_pylist() if r["device"] == device]),
                        mine, theirs, ["iips", "sniips"], "baseline")
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), ["iips", "snrips"],
                target=pa.Table.from_pylist(target), baseline=pa.Table.from_pylist(other),
                test="bootstrap", replicates=300, seed=5)
    mine, theirs = log_arrays(impressions, target), log_arrays(impressions, other)
    for r in got.to_pylist():
        units, t = unit_terms(mine, r["estimator"])
        _, base = unit_terms(theirs, r["estimator"])
        _, lo, hi = cref.bootstrap(units, t, 5, 300, 0.95)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((lo, hi), abs=1e-12), r["estimator"]
        p, lo, hi = cref.bootstrap(units, t - base, 5, 300, 0.95)
        assert (r["delta_ci_low"], r["delta_ci_high"], r["p_value"]) == pytest.approx((lo, hi, p), abs=1e-12)
        assert close(r["delta"], (t - base).mean()) and close(r["baseline_value"], base.mean())


def test_same_target_is_no_difference_and_errors():
    impressions, target = random_log(np.random.default_rng(2), 10, 4, 2)
    log, ranking = pa.Table.from_pylist(impressions), pa.Table.from_pylist(target)
    con = duckdb.connect()
    got = quiet(con, log, ["iips", "snrips"], target=ranking, baseline=ranking).to_pylist()
    assert all(r["delta"] == 0 and r["p_value"] == 1.0 and r["delta_ci_low"] == 0 for r in got)
    alone = quiet(con, log, ["iips", "snrips"], target=ranking)
    assert pa.Table.from_pylist(got).select(alone.column_names).equals(alone)
    with pytest.raises(UnknownTableError, match=r"^baseline='A' is neither an estimator \(sips, .*\) nor a "
                       r"target ranking: baseline: no table or view named 'A'"):
        off_policy(con, log, ["iips"], target=ranking, baseline="A")
    doubled = pa.concat_tables([ranking, ranking.slice(0, 1)])
    with pytest.raises(InvalidDataError, match="^baseline: an item of user_id = 0 has two rows"):
        off_policy(con, log, ["iips"], target=ranking, baseline=doubled)
    with pytest.raises(ConventionError, match="baseline= as a mapping gives a stochastic target's columns"):
        off_policy(con, log, ["iips"], target=ranking, baseline={"pscore": "x"})
    empty = log.slice(0, 0)
    got = off_policy(con, empty, ["iips"], target=ranking, baseline=ranking)
    assert got.num_rows == 0 and "delta" in got.column_names


def rows_of_text(con, impressions, estimators, label, by=None, **options) -> pa.Table:
    """off_policy_sql()'s one statement for baseline= another target, run on con, as
    off_policy()'s rows (sqlmetrics.stats.off_policy._table_against_target)."""
    from sqlmetrics.stats.off_policy import _table_against_target

    def run(form: str) -> pa.Table:
        text = sqlmetrics.off_policy_sql(con, impressions, estimators, by=by, exact_sums=form, **options)
        assert ";" not in text and text.lstrip().upper().startswith("WITH")
        return con.sql(text).to_arrow_table()

    result = with_exact_sums(run)  # (the fast form's NaN: the wide form, as off_policy() runs it)
    segments = [by] if by else []
    return _table_against_target(result, estimators, segments, options.get("confidence", 0.95), label)


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), units=st.integers(2, 20), length=st.integers(1, 3),
       segmented=st.booleans(), clip=clip_strategy, position_weights=weights_strategy)
def test_off_policy_sql_against_a_target_is_one_statement(seed, units, length, segmented, clip,
                                                          position_weights):
    """off_policy_sql(baseline=<another target>): one statement (the estimates and compare()'s
    comparison of both targets' per-unit terms, inline), whose rows give off_policy()'s (1e-12):
    a ranking against a ranking, a stochastic target against a stochastic one and a ranking."""
    rng = np.random.default_rng(seed)
    impressions, target = random_log(rng, units, 4, length)
    add_stochastic_target(rng, impressions, 4, "b")
    for row in impressions:
        row["device"] = ["phone", "web", None][row["user_id"] % 3]
    other = random_ranking(rng, impressions, 4)
    con = duckdb.connect()
    for name, rows in (("log", impressions), ("ranking", target), ("other", other)):
        con.register(f"{name}_frame", pa.Table.from_pylist(rows))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
    by = "device" if segmented else None
    common = {"clip": clip, "position_weights": position_weights, "predicted_reward": "predicted"}
    own = {"target_pscore": "target_pscore", "target_pscore_item_position": "target_pscore_item_position",
           "target_pscore_cascade": "target_pscore_cascade", "target_predicted_reward": "target_predicted"}
    b_own = {"target_pscore": "b_pscore", "target_pscore_item_position": "b_pscore_item_position",
             "target_pscore_cascade": "b_pscore_cascade", "target_predicted_reward": "b_predicted"}
    cases = [
        (ALL, {"target": "ranking", "baseline": "other"}, "other"),
        (STOCHASTIC, {**own, "baseline": b_own}, "baseline"),
        (["iips", "snrips", "sips", "logging"], {**own, "baseline": "ranking"}, "ranking"),
    ]
    for estimators, options, label in cases:
        options = {**common, **options}
        want = quiet(con, "log", estimators, by=by, **options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
            same(want, rows_of_text(con, "log", estimators, label, by=by, **options), 1e-12)


def test_off_policy_sql_against_a_target_of_an_empty_log():
    impressions, target = random_log(np.random.default_rng(3), 4, 4, 2)
    con = duckdb.connect()
    con.register("log", pa.Table.from_pylist(impressions).slice(0, 0))
    con.register("ranking", pa.Table.from_pylist(target))
    got = rows_of_text(con, "log", ["iips"], "ranking", target="ranking", baseline="ranking")
    assert got.num_rows == 0 and "delta" in got.column_names


def test_off_policy_sql_against_a_target_refuses_the_bootstrap():
    """The one statement compares the two targets with the t interval only: test='bootstrap'
    is refused there (off_policy() runs it), not silently answered with the t statement."""
    impressions, target = random_log(np.random.default_rng(5), 4, 4, 2)
    con = duckdb.connect()
    con.register("log", pa.Table.from_pylist(impressions))
    con.register("ranking", pa.Table.from_pylist(target))
    with pytest.raises(ConventionError, match="t interval only"):
        sqlmetrics.off_policy_sql(con, "log", ["iips"], target="ranking", baseline="ranking",
                                  test="bootstrap")
