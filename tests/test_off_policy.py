"""off_policy() against the numpy reference of OBP's estimators (tests/off_policy_reference.py)
on random logs with exact Plackett-Luce propensities, and its errors."""

from __future__ import annotations

import inspect
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
from sqlmetrics.errors import ConventionError, InvalidDataError, MissingColumnError
from tests.off_policy_reference import (
    log_arrays,
    obp_cascade_dr_terms,
    obp_ips,
    obp_sn_per_position,
    obp_snsips,
    random_log,
    reference,
    stochastic_arrays,
)

ALL = ["sips", "iips", "rips", "snsips", "sniips", "snrips", "cascade-dr", "dm", "logging"]
STOCHASTIC = ["sips", "iips", "rips", "snsips", "sniips", "snrips", "cascade-dr", "logging"]
FIELDS = ("value", "ci_low", "ci_high", "ess", "max_weight", "mean_weight", "support", "clipped")


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def assert_rows(got: pa.Table, log: dict, estimators, **options) -> None:
    rows = {r["estimator"]: r for r in got.to_pylist()}
    assert list(rows) == list(estimators)
    for e in estimators:
        want = reference(log, e, **options)
        assert rows[e]["units"] == want["units"], e
        for f in FIELDS:
            assert close(rows[e][f], want[f]), (e, f, rows[e][f], want[f])


def quiet(*args, **kwargs) -> pa.Table:
    """off_policy() on random logs, whose few slates leave mean weights far from 1."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
        return off_policy(*args, **kwargs)


weights_strategy = st.sampled_from(["none", "dcg", [1.0, 0.5], [2.0, 1.0, 0.25, 3.0]])
clip_strategy = st.sampled_from([None, 2.0, 10.0])


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), units=st.integers(2, 25), items=st.integers(3, 5),
       length=st.integers(1, 3), position_weights=weights_strategy, clip=clip_strategy,
       graded=st.booleans())
def test_ranking_target_equals_reference(seed, units, items, length, position_weights, clip, graded):
    rng = np.random.default_rng(seed)
    impressions, target = random_log(rng, units, items, min(length, items),
                                     reward_levels=(0, 1, 2, -1) if graded else (0, 1))
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), ALL,
                target=pa.Table.from_pylist(target), predicted_reward="predicted",
                position_weights=position_weights, clip=clip)
    assert_rows(got, log_arrays(impressions, target), ALL,
                position_weights=position_weights, clip=math.inf if clip is None else clip)


# without dm and cascade-dr, a ranking target's weights come from its hits alone
# (sql/off_policy/hits.sql.j2); longer slates than above, so that prefixes break anywhere
FROM_HITS = [e for e in ALL if e not in ("dm", "cascade-dr")]


def shorter_slates(impressions: list[dict], length: int) -> list[dict]:
    """Slates of 1 to `length` rows in one log (the top of each), so that the hits form's parts
    per slate length (the rows per position, the A / B of positions 1..L) are tested."""
    return [r for r in impressions if r["position"] <= 1 + r["user_id"] % length]


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), units=st.integers(2, 25), items=st.integers(3, 6),
       length=st.integers(1, 5), position_weights=weights_strategy, clip=clip_strategy,
       graded=st.booleans())
def test_ranking_target_from_hits_equals_reference(seed, units, items, length, position_weights, clip,
                                                  graded):
    rng = np.random.default_rng(seed)
    impressions, target = random_log(rng, units, items, min(length, items),
                                     reward_levels=(0, 1, 2, -1) if graded else (0, 1))
    impressions = shorter_slates(impressions, min(length, items))
    log, ranking = pa.Table.from_pylist(impressions), pa.Table.from_pylist(target)
    assert "_hits AS" in sqlmetrics.off_policy_sql(duckdb.connect(), log, FROM_HITS, target=ranking)
    got = quiet(duckdb.connect(), log, FROM_HITS, target=ranking, position_weights=position_weights,
                clip=clip)
    assert_rows(got, log_arrays(impressions, target), FROM_HITS,
                position_weights=position_weights, clip=math.inf if clip is None else clip)


@pytest.mark.parametrize("seed", [3, 4])
def test_the_hits_give_what_every_row_gives(seed):
    """The two forms of a ranking target's sums, from its hits and from every shown item (which
    dm asks for), agree on every column, with segments, a rewards table, clip= and weights."""
    rng = np.random.default_rng(seed)
    impressions, target = random_log(rng, 40, 6, 5, reward_levels=(0, 1, 2, -1))
    impressions = shorter_slates(impressions, 5)
    for r in impressions:
        r["device"] = [None, "phone", "web"][r["user_id"] % 7 % 3]
    target += [{"user_id": 999, "item_id": 1, "score": 1.0, "predicted": 0.5}]  # not in the log
    events = pa.Table.from_pylist([
        {"user_id": r["user_id"], "item_id": r["item_id"], "grade": r["reward"]}
        for r in impressions if r["reward"] != 0 and r["position"] != 2
    ])
    con = duckdb.connect()
    con.register("log", pa.Table.from_pylist(impressions))
    con.register("ranking", pa.Table.from_pylist(target))
    con.register("events", events)
    for options in ({}, {"rewards": "events", "relevance": "grade", "clip": 3.0, "position_weights": "dcg"},
                    {"by": "device", "position_weights": [1.0, 0.5, 0.25]}):
        options = {"target": "ranking", "predicted_reward": "predicted", **options}
        assert "_hits AS" in sqlmetrics.off_policy_sql(con, "log", FROM_HITS, **options)
        assert "_hits AS" not in sqlmetrics.off_policy_sql(con, "log", FROM_HITS + ["dm"], **options)
        sparse = quiet(con, "log", FROM_HITS, **options).to_pylist()
        dense = [r for r in quiet(con, "log", FROM_HITS + ["dm"], **options).to_pylist()
                 if r["estimator"] != "dm"]
        assert len(sparse) == len(dense) == len(FROM_HITS) * (3 if "by" in options else 1)
        for a, b in zip(sparse, dense, strict=True):
            assert a.keys() == b.keys()
            for name, value in a.items():
                if isinstance(value, float):
                    assert math.isclose(value, b[name], rel_tol=1e-12, abs_tol=1e-12), (options, a, name)
                else:
                    assert value == b[name], (options, name)


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), units=st.integers(2, 25), length=st.integers(1, 3),
       position_weights=weights_strategy, clip=clip_strategy)
def test_stochastic_target_equals_reference(seed, units, length, position_weights, clip):
    rng = np.random.default_rng(seed)
    impressions, _ = random_log(rng, units, 4, length)
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), STOCHASTIC,
                target_pscore="target_pscore", target_pscore_item_position="target_pscore_item_position",
                target_pscore_cascade="target_pscore_cascade", predicted_reward="predicted",
                target_predicted_reward="target_predicted",
                position_weights=position_weights, clip=clip)
    assert_rows(got, stochastic_arrays(impressions), STOCHASTIC,
                position_weights=position_weights, clip=math.inf if clip is None else clip)


def test_reference_is_obp_arithmetic():
    """The reference's unweighted, unclipped values are OBP's own arithmetic."""
    rng = np.random.default_rng(7)
    impressions, _ = random_log(rng, 60, 4, 3)
    log = stochastic_arrays(impressions)
    sid, pos, r = log["unit"], log["position"], log["reward"]
    assert close(reference(log, "sips")["value"], obp_ips(sid, r, log["b_s"], log["e_s"]))
    assert close(reference(log, "iips")["value"], obp_ips(sid, r, log["b_ip"], log["e_ip"]))
    assert close(reference(log, "rips")["value"], obp_ips(sid, r, log["b_c"], log["e_c"]))
    assert close(reference(log, "snsips")["value"], obp_snsips(sid, r, log["b_s"], log["e_s"]))
    for e, k in (("sniips", "ip"), ("snrips", "c")):
        want = obp_sn_per_position(sid, r, pos, log["b_" + k], log["e_" + k])
        assert close(reference(log, e)["value"], want)
    terms = obp_cascade_dr_terms(sid, pos, r, log["b_c"], log["e_c"], log["q"], log["q_e"])
    assert close(reference(log, "cascade-dr")["value"], terms.sum() / 60)


def test_unbiased_on_a_simulation():
    """With exact propensities, iips and rips average to the target's true value (a sanity check
    of the reference's propensities, not of the SQL)."""
    rng = np.random.default_rng(3)
    impressions, _ = random_log(rng, 3000, 4, 2)
    log = stochastic_arrays(impressions)
    for kind in ("s", "ip", "c"):
        w = log["e_" + kind] / log["b_" + kind]
        assert abs(w.mean() - 1) < 0.1, kind


def test_rewards_table_graded_as_truth():
    log = pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "b", "a"], "position": [1, 2, 1, 2],
                    "pscore_item_position": [0.5] * 4})
    target = pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "a", "b"], "score": [2, 1, 2, 1]})
    events = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "a", "a"], "event": ["buy", "view", "view"]})
    rows = off_policy(duckdb.connect(), log, ["iips", "logging"], target=target, rewards=events,
                      action="event", relevance={"buy": 3, "view": 1}).to_pylist()
    # iips: user 1 shows a then b as the target ranks them (weight 2 each); a's grade is 3
    assert [r["value"] for r in rows] == [3.0, 2.0]
    assert rows[0]["mean_weight"] == 1.0 and rows[0]["support"] == 0.5


def test_segments():
    rng = np.random.default_rng(11)
    impressions, target = random_log(rng, 20, 4, 2)
    for r in impressions:
        r["device"] = "phone" if r["user_id"] % 2 else "web"
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), ["iips", "snrips"],
                target=pa.Table.from_pylist(target), by="device")
    for device in ("phone", "web"):
        part = [r for r in impressions if r["device"] == device]
        units = {r["user_id"] for r in part}
        sub = log_arrays(part, [t for t in target if t["user_id"] in units])
        rows = {r["estimator"]: r for r in got.to_pylist() if r["device"] == device}
        for e in ("iips", "snrips"):
            assert close(rows[e]["value"], reference(sub, e)["value"]), (device, e)


def test_within_gives_segments_as_by_does():
    """within= (compare()'s name for segments) segments as by= does: its columns first."""
    rng = np.random.default_rng(12)
    impressions, target = random_log(rng, 30, 4, 2)
    for r in impressions:
        r["device"] = "phone" if r["user_id"] % 2 else "web"
        r["country"] = "fr" if r["user_id"] % 3 else "de"
    con = duckdb.connect()
    con.register("log", pa.Table.from_pylist(impressions))
    con.register("ranking", pa.Table.from_pylist(target))
    estimators = ["iips", "snrips", "logging"]
    by = quiet(con, "log", estimators, target="ranking", by=["country", "device"])
    within = quiet(con, "log", estimators, target="ranking", within="country", by="device")
    assert within.column_names == by.column_names and within.to_pylist() == by.to_pylist()
    only = quiet(con, "log", estimators, target="ranking", within=["device"])
    assert only.to_pylist() == quiet(con, "log", estimators, target="ranking", by="device").to_pylist()
    for twice in ("device", "DEVICE"):
        with pytest.raises(ConventionError, match="name the column 'device' twice"):
            off_policy(con, "log", estimators, target="ranking", within=twice, by=["device"])
    with pytest.raises(MissingColumnError, match="has no within column 'nope'"):
        off_policy(con, "log", estimators, target="ranking", within="nope")


def test_a_baselines_nan_prediction_is_named_the_baselines():
    log = small_log(tp=[0.5] * 4, q=[0.5] * 4, tq=[0.5, float("inf"), 0.5, 0.5])
    with pytest.raises(InvalidDataError) as info:
        off_policy(duckdb.connect(), log, ["cascade-dr"], target=TARGET_Q, predicted_reward="q",
                   baseline={"target_pscore_cascade": "tp", "target_predicted_reward": "tq"})
    assert str(info.value) == ("impressions: the baseline's target_predicted_reward = inf for "
                               "user_id = 1, position = 2: not a finite number")


def small_log(**changes):
    data = {"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "b", "a"], "position": [1, 2, 1, 2],
            "pscore": [0.5, 0.5, 0.5, 0.5], "pscore_item_position": [0.5] * 4,
            "pscore_cascade": [0.5, 0.5, 0.5, 0.5], "reward": [1, 0, 0, 1]}
    data.update(changes)
    return pa.table(data)


TARGET = pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "a", "b"], "score": [2, 1, 2, 1]})
TARGET_Q = TARGET.append_column("q", pa.array([0.5] * 4))  # with a predicted reward


@pytest.mark.parametrize(
    ("changes", "estimators", "error", "message"),
    [
        ({"pscore_item_position": [0.5, 0.0, 0.5, 0.5]}, ["iips"], InvalidDataError,
         "impressions: pscore_item_position = 0.0 for user_id = 1, position = 2: a logging "
         "propensity must be in (0, 1] (iips, sniips divide by it)"),
        ({"pscore_cascade": [0.5, 1.5, 0.5, 0.5]}, ["rips"], InvalidDataError,
         "pscore_cascade = 1.5 for user_id = 1, position = 2"),
        ({"pscore": [0.5, None, 0.5, 0.5]}, ["sips"], InvalidDataError, "pscore = None for user_id = 1"),
        ({"pscore": [0.5, 0.25, 0.5, 0.5]}, ["sips"], InvalidDataError,
         "impressions: pscore differs between the rows of user_id = 1"),
        ({"position": [1, 3, 1, 2]}, ["iips"], InvalidDataError,
         "impressions: the positions of user_id = 1 are not 1, 2, ..."),
        ({"position": [0, 1, 1, 2]}, ["iips"], InvalidDataError, "impressions: position 0 for user_id = 1"),
        ({"item_id": ["a", "a", "b", "a"]}, ["iips"], InvalidDataError,
         "impressions: an item is shown twice in the slate of user_id = 1"),
    ],
)
def test_invalid_inputs(changes, estimators, error, message):
    with pytest.raises(error) as info:
        off_policy(duckdb.connect(), small_log(**changes), estimators, target=TARGET)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("log", "options", "message"),
    [
        (small_log(), {"target": pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "a", "b"],
                                           "score": [2, None, 2, 1]})},
         "target: an item of user_id = 1 has two rows, or a NULL, NaN or infinite score"),
        # NaN or infinite values: the hits form never reads a reward where the weight is 0, so
        # such a value is an error (as in evaluate()), not a NaN of one form only
        (small_log(), {"target": pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "a", "b"],
                                           "score": [2, float("nan"), 2, 1]})},
         "target: an item of user_id = 1 has two rows, or a NULL, NaN or infinite score"),
        (small_log(), {"target": pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "a", "b"],
                                           "score": [2, 1, 2, 1], "q": [0.5, 0.5, float("inf"), 0.5]}),
                       "predicted_reward": "q", "estimators": ["dm"], "q": [0.5] * 4},
         "target: an item of user_id = 2 has two rows, or a NULL, NaN or infinite score"),
        (small_log(reward=[1, 0, float("inf"), 1]), {"target": TARGET},
         "impressions: reward = inf for user_id = 2, position = 1: not a finite number"),
        (small_log(q=[0.5, float("nan"), 0.5, 0.5]), {"target": TARGET_Q, "predicted_reward": "q",
                                                      "estimators": ["cascade-dr"]},
         "impressions: predicted_reward = nan for user_id = 1, position = 2: not a finite number"),
        (small_log(), {"target": TARGET, "rewards": pa.table({"user_id": [1, 2], "item_id": ["a", "b"],
                                                              "grade": [1.0, float("-inf")]}),
                       "relevance": "grade"},
         "rewards: a NaN or infinite grade for an item of user_id = 2"),
        (small_log(item_id=["a", None, "b", "a"]), {"target": TARGET},
         "impressions: an item is shown twice in the slate of user_id = 1"),
        (small_log(position=[1, None, 1, 2]), {"target": TARGET},
         "impressions: position None for user_id = 1: positions start at 1"),
        (small_log(tp=[0.5, 1.5, 0.5, 0.5]), {"target_pscore_item_position": "tp"},
         "impressions: target_pscore_item_position = 1.5 for user_id = 1, position = 2: a target "
         "propensity must be in [0, 1]"),
    ],
)
def test_the_screen_passes_every_problem_to_the_checks(log, options, message):
    """off_policy() runs checks.sql.j2 (which words the error) only where the cheap screen
    (screen.sql.j2) suspects a problem: each problem of the checks is suspected, clean
    inputs are not (the cases above the ones of test_invalid_inputs and
    test_duplicate_rewards_and_target_rows)."""
    from sqlmetrics.engines import for_connection
    from sqlmetrics.statement.templates import render
    from sqlmetrics.stats.off_policy import _context

    con = duckdb.connect()
    options = dict(options)
    estimators = options.pop("estimators", ["iips"])
    clean_columns = {"tp": [0.5] * 4, "q": options.pop("q", [0.5] * 4)}
    with pytest.raises(InvalidDataError) as info:
        off_policy(con, log, estimators, **options)
    assert message in str(info.value) and "\n" not in str(info.value)
    engine = for_connection(con, describe_only=False)
    defaults = {name: p.default for name, p in inspect.signature(off_policy).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    clean = {**defaults, **options, "target": TARGET if "target" in options else None,
             "rewards": None, "relevance": None}
    if "predicted_reward" in options and "target" in options:
        clean["target"] = TARGET_Q
    cases = ((log, {**defaults, **options}, True), (small_log(**clean_columns), clean, False))
    for data, keywords, suspected in cases:
        context = _context(engine, "duckdb", data, estimators, keywords)[0]
        screened = engine.run(render("off_policy/screen.sql.j2", context)).column(0)[0].as_py()
        assert (screened > 0) is suspected


def test_a_long_slate_whose_positions_start_late_is_an_error():
    """Positions 53..112: no position adds to the screen's sum of powers of two (it reads
    positions 1 to 52), so only its length makes the screen suspect the slate."""
    n = 60
    log = pa.table({"user_id": [1] * n, "item_id": [f"i{k}" for k in range(n)],
                    "position": list(range(53, 53 + n)), "pscore_item_position": [0.5] * n,
                    "reward": [1] * n})
    target = pa.table({"user_id": [1] * n, "item_id": [f"i{k}" for k in range(n)],
                       "score": [float(n - k) for k in range(n)]})
    with pytest.raises(InvalidDataError, match="the positions of user_id = 1 are not 1, 2"):
        quiet(duckdb.connect(), log, ["iips"], target=target)


def test_repeated_positions_in_short_and_long_slates():
    """The positions check without a count of distinct positions: a repeat between the smallest
    and the largest position, in a slate of 3 and in one longer than 52 (counted), and a valid
    long slate, which passes."""
    con = duckdb.connect()

    def log(positions):
        n = len(positions)
        return pa.table({"user_id": [1] * n, "item_id": [f"i{k}" for k in range(n)],
                         "position": positions, "pscore_item_position": [0.5] * n, "reward": [1] * n})

    target = pa.table({"user_id": [1] * 60, "item_id": [f"i{k}" for k in range(60)],
                       "score": [float(60 - k) for k in range(60)]})
    for positions in ([1, 3, 3], [*range(1, 59), 58, 60]):
        with pytest.raises(InvalidDataError, match="the positions of user_id = 1 are not 1, 2"):
            quiet(con, log(positions), ["iips"], target=target)
    got = quiet(con, log(list(range(1, 61))), ["iips"], target=target)
    assert got.column("value").to_pylist() == [120.0]  # 60 rows, each weight 1 / 0.5


def test_missing_propensity_names_the_estimator():
    log = small_log().drop_columns(["pscore_cascade"])
    with pytest.raises(MissingColumnError, match=r"^rips, snrips need the logging policy's pscore_cascade"):
        off_policy(duckdb.connect(), log, ["iips", "rips", "snrips"], target=TARGET)


def test_option_errors():
    con, log = duckdb.connect(), small_log()
    for kwargs, match in [
        ({"estimators": ["ips"]}, "unknown estimator 'ips'"),
        ({"clip": 0}, "clip= caps"),
        ({"position_weights": "ndcg"}, "position_weights='ndcg'"),
        ({"ties": "average"}, "must be deterministic"),
        ({"estimators": ["dm"]}, "dm needs target= a ranking with a predicted_reward="),
        ({"estimators": ["cascade-dr"]}, "cascade-dr needs predicted_reward="),
    ]:
        options = {"estimators": ["iips"], "target": TARGET, **kwargs}
        with pytest.raises(ConventionError, match=match):
            off_policy(con, log, **options)
    with pytest.raises(ConventionError, match="give the target policy"):
        off_policy(con, log, ["iips"])


def test_duplicate_rewards_and_target_rows():
    con = duckdb.connect()
    events = pa.table({"user_id": [1, 1], "item_id": ["a", "a"], "relevance": [1, 2]})
    with pytest.raises(InvalidDataError, match="rewards: two rows for one item of user_id = 1"):
        off_policy(con, small_log(), ["iips"], target=TARGET, rewards=events)
    got = off_policy(con, small_log(), ["logging"], target=TARGET, rewards=events, truth_duplicates="sum")
    assert got.column("value").to_pylist() == [1.5]  # user 1: a graded 1 + 2, user 2: nothing
    doubled = pa.concat_tables([TARGET, TARGET.slice(0, 1)])
    with pytest.raises(InvalidDataError, match="target: an item of user_id = 1 has two rows"):
        off_policy(con, small_log(), ["iips"], target=doubled)


def test_warns_when_mean_weight_is_far_from_one():
    log = small_log(pscore_item_position=[0.1] * 4)
    with pytest.warns(sqlmetrics.OffPolicyWarning, match="iips: the mean importance weight is 5"):
        off_policy(duckdb.connect(), log, ["iips"], target=TARGET)


def test_unit_in_target_but_not_in_log_is_ignored():
    extra = pa.concat_tables([TARGET, pa.table({"user_id": [9], "item_id": ["z"], "score": [1]})])
    con = duckdb.connect()
    a = off_policy(con, small_log(), ["iips", "rips"], target=TARGET)
    b = off_policy(con, small_log(), ["iips", "rips"], target=extra)
    assert a.equals(b)


def example_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "warehouse_examples" / "make_warehouse.py"
    spec = importlib.util.spec_from_file_location("make_warehouse", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_marginals_are_plackett_luces():
    """The example's exact item-position marginals equal the enumeration of every slate."""
    from tests.off_policy_reference import plackett_luce_slates

    rng = np.random.default_rng(2)
    w = np.exp(rng.normal(size=(3, 6)))
    marginals = example_module().plackett_luce_marginals(w)
    for u in range(3):
        enumerated = np.zeros((6, 3))
        for slate, steps in plackett_luce_slates(np.log(w[u]), 3):
            for k, item in enumerate(slate):
                enumerated[item, k] += np.prod(steps)
        np.testing.assert_allclose(marginals[u], enumerated, rtol=0, atol=1e-12)


def test_the_docs_example_table_is_what_the_example_prints(tmp_path):
    from pathlib import Path

    example = example_module()
    db = str(tmp_path / "ope.duckdb")
    example.write_ope(db, example.simulate_ope(example.OPE_USERS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
        table = example.ope_report(db)
    docs = (Path(__file__).resolve().parents[1] / "docs" / "off-policy.md").read_text()
    assert table in docs
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in table.splitlines()}
    truth = float(rows["**true value of B**"][1].strip("*"))
    assert float(rows["naive: B's top 3 judged by the logged clicks"][1]) < truth / 2
    for e in ("sips", "iips", "rips", "snsips", "sniips", "snrips"):
        low, high = map(float, rows[e][2].split(" to "))
        assert low <= truth <= high, e


@pytest.mark.parametrize("seed", [0, 1])
def test_baseline_is_the_paired_comparison_of_per_unit_terms(seed):
    """baseline=: each estimate minus the baseline's on the same units, with the paired t interval
    and scipy's ttest_rel p (compare()'s), against the reference's per-unit terms."""
    from scipy import stats

    from tests.off_policy_reference import unit_terms

    rng = np.random.default_rng(seed)
    impressions, target = random_log(rng, 30, 4, 3, reward_levels=(0, 1, 2))
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), ["iips", "snrips", "sips"],
                target=pa.Table.from_pylist(target), baseline="logging", position_weights="dcg")
    rows = {r["estimator"]: r for r in got.to_pylist()}
    assert list(rows) == ["iips", "snrips", "sips", "logging"]
    log = log_arrays(impressions, target)
    _, base = unit_terms(log, "logging", "dcg")
    for e in ("iips", "snrips", "sips"):
        _, t = unit_terms(log, e, "dcg")
        d = t - base
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d))
        r = rows[e]
        assert r["baseline"] == "logging" and close(r["baseline_value"], base.mean())
        assert close(r["delta"], d.mean()), e
        assert close(r["delta_ci_low"], d.mean() - half) and close(r["delta_ci_high"], d.mean() + half)
        assert close(r["p_value"], stats.ttest_rel(t, base).pvalue), e
    assert rows["logging"]["delta"] is None and rows["logging"]["baseline"] == "logging"
    with pytest.raises(sqlmetrics.UnknownTableError, match="^baseline='A' is neither an estimator"):
        off_policy(duckdb.connect(), small_log(), ["iips"], target=TARGET, baseline="A")


def test_unit_of_several_columns_rank_column_and_empty_log():
    """user= of two columns (a slate per (user, day)), a target given by rank=, and a log with
    no rows (no output rows)."""
    rng = np.random.default_rng(9)
    impressions, target = random_log(rng, 12, 4, 2)
    ranks = log_arrays(impressions, target)  # the reference on user_id alone
    want = {e: reference(ranks, e)["value"] for e in ("iips", "rips")}
    for rows in (impressions, target):
        for r in rows:
            r["day"], r["user_id"] = r["user_id"] % 3, r["user_id"] // 3
    order = {}
    for t in sorted(target, key=lambda t: (t["user_id"], t["day"], -t["score"], -t["item_id"])):
        key = (t["user_id"], t["day"])
        order[key] = order.get(key, 0) + 1
        t["rank"] = order[key]
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), ["iips", "rips"],
                target=pa.Table.from_pylist(target), user=["user_id", "day"], rank="rank")
    for r in got.to_pylist():
        assert close(r["value"], want[r["estimator"]]) and r["units"] == 12
    empty = pa.Table.from_pylist(impressions).slice(0, 0)
    assert off_policy(duckdb.connect(), empty, ["iips"], target=pa.Table.from_pylist(target),
                      user=["user_id", "day"]).num_rows == 0
    with pytest.raises(sqlmetrics.ColumnTypeError, match="impressions 'item_id' is BIGINT but target"):
        off_policy(duckdb.connect(), empty, ["iips"], target=TARGET)


def test_an_input_error_leaves_the_callers_transaction_open():
    con = duckdb.connect()
    con.execute("BEGIN")
    con.execute("CREATE TABLE mine AS SELECT 1 AS x")
    with pytest.raises(InvalidDataError, match="pscore_item_position = 0.0"):
        off_policy(con, small_log(pscore_item_position=[0.5, 0.0, 0.5, 0.5]), ["iips"], target=TARGET)
    assert con.execute("SELECT x FROM mine").fetchall() == [(1,)]
    con.execute("COMMIT")


def test_bootstrap_intervals_are_compares_bucketed_poisson_bootstrap():
    """test='bootstrap': the interval of each value is compare()'s bootstrap of the per-unit terms
    (against zeros), the delta's and its p against the baseline's terms, as the numpy reference of
    compare()'s draws computes them (tests/compare_reference.py)."""
    from tests import compare_reference as cref
    from tests.off_policy_reference import unit_terms

    rng = np.random.default_rng(21)
    impressions, target = random_log(rng, 40, 4, 2, reward_levels=(0, 1, 2))
    got = quiet(duckdb.connect(), pa.Table.from_pylist(impressions), ["iips", "snrips"],
                target=pa.Table.from_pylist(target), baseline="logging", test="bootstrap",
                replicates=300, seed=5)
    log = log_arrays(impressions, target)
    units, base = unit_terms(log, "logging")
    for r in got.to_pylist():
        _, t = unit_terms(log, r["estimator"])
        _, lo, hi = cref.bootstrap(units, t, 5, 300, 0.95)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx((lo, hi), abs=1e-12), r["estimator"]
        if r["estimator"] != "logging":
            p, lo, hi = cref.bootstrap(units, t - base, 5, 300, 0.95)
            compared = (r["delta_ci_low"], r["delta_ci_high"], r["p_value"])
            assert compared == pytest.approx((lo, hi, p), abs=1e-12)
    with pytest.raises(ConventionError, match="test='wilcoxon'"):
        off_policy(duckdb.connect(), small_log(), ["iips"], target=TARGET, test="wilcoxon")
