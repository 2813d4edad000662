"""off_policy() against Open Bandit Pipeline itself (obp 0.5.7, tests/obp_run.py), on OBP's
SyntheticSlateBanditDataset and on the random Plackett-Luce logs of tests/off_policy_reference.py.

OBP requires Python < 3.11 (and torch, which its estimators do not use): it runs in a venv of
its own that $SQLMETRICS_OBP_PYTHON names (docs/testing.md; .ci/run builds it where a Python 3.10
is found); without it these tests are skipped with that reason (issue 35: "skipping with a
reason elsewhere")."""

from __future__ import annotations

import json
import math
import os
import subprocess
import warnings
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import sqlmetrics
from tests.off_policy_reference import random_log, target_ranks

IPS = ["sips", "iips", "rips", "snsips", "sniips", "snrips"]


def run_obp(cases: list[dict]) -> list[dict]:
    python = os.environ.get("SQLMETRICS_OBP_PYTHON")
    if not python:
        pytest.skip("OBP (obp 0.5.7) needs Python < 3.11 in a venv of its own: set "
                    "SQLMETRICS_OBP_PYTHON to its interpreter (docs/testing.md)")
    done = subprocess.run([python, str(Path(__file__).parent / "obp_run.py")], input=json.dumps(cases),
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def ours(impressions: pa.Table, estimators, **options) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
        rows = sqlmetrics.off_policy(duckdb.connect(), impressions, estimators, **options).to_pylist()
    return {r["estimator"]: r["value"] for r in rows}


@pytest.mark.parametrize("structure", ["cascade_additive", "standard_additive", "independent"])
def test_obps_synthetic_slate_dataset(structure):
    spec = {"n_unique_action": 6, "len_list": 3, "reward_structure": structure, "seed": 7, "n_rounds": 400}
    result = run_obp([{"synthetic": spec}])[0]
    log = result["log"]
    impressions = pa.table({
        "user_id": log["slate_id"], "item_id": log["action"],
        "position": [p + 1 for p in log["position"]], "reward": log["reward"],
        "pscore": log["pscore"], "pscore_item_position": log["pscore_item_position"],
        "pscore_cascade": log["pscore_cascade"], "target_pscore": log["e_pscore"],
        "target_pscore_item_position": log["e_pscore_item_position"],
        "target_pscore_cascade": log["e_pscore_cascade"],
    })  # fmt: skip
    got = ours(impressions, IPS, target_pscore="target_pscore",
               target_pscore_item_position="target_pscore_item_position",
               target_pscore_cascade="target_pscore_cascade")
    for e in IPS:
        assert math.isclose(got[e], result["estimates"][e], rel_tol=1e-9, abs_tol=1e-12), e


def predicted(unit: int, item: int, position: int) -> float:
    """One predicted reward per (unit, item, position), as OBP's q_hat has."""
    return (math.sin(unit * 12.9898 + item * 78.233 + position * 37.719) * 43758.5453) % 1.0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_logs_with_a_ranking_target(seed):
    rng = np.random.default_rng(seed)
    units, items, length = 60, 5, 3
    impressions, target = random_log(rng, units, items, length, reward_levels=(0, 1, 2))
    # OBP's action distribution sums to 1 at every position: the target ranks at least `length`
    # items of every unit (the missing ones below its own, scored -1)
    for u in range(units):
        ranked = {t["item_id"] for t in target if t["user_id"] == u}
        missing = [a for a in range(items) if a not in ranked][: max(0, length - len(ranked))]
        target += [{"user_id": u, "item_id": a, "score": -1.0} for a in missing]
    ranks = target_ranks(target)
    for r in impressions:
        r["predicted"] = predicted(r["user_id"], r["item_id"], r["position"])
    for t in target:
        t["predicted"] = predicted(t["user_id"], t["item_id"], ranks[(t["user_id"], t["item_id"])])
    rows = sorted(impressions, key=lambda r: (r["user_id"], r["position"]))
    at_rank = {(u, k): i for (u, i), k in ranks.items()}
    # the target's propensities (1 or 0) as OBP takes them, and its action distribution: its own
    # item at each rank (OBP multiplies it by 0 wherever the logged prefix above is not its own)
    e_ip = [1.0 if ranks.get((r["user_id"], r["item_id"])) == r["position"] else 0.0 for r in rows]
    e_c, e_s = [], []
    for u in range(units):
        own = e_ip[u * length:(u + 1) * length]
        e_c += list(np.minimum.accumulate(own))
        e_s += [min(own)] * length
    q_hat = [predicted(u, a, k + 1) for u in range(units) for k in range(length) for a in range(items)]
    dist = [1.0 if at_rank.get((u, k + 1)) == a else 0.0
            for u in range(units) for k in range(length) for a in range(items)]
    log = {
        "slate_id": [r["user_id"] for r in rows], "action": [r["item_id"] for r in rows],
        "reward": [r["reward"] for r in rows], "position": [r["position"] - 1 for r in rows],
        "pscore": [r["pscore"] for r in rows],
        "pscore_item_position": [r["pscore_item_position"] for r in rows],
        "pscore_cascade": [r["pscore_cascade"] for r in rows], "e_pscore": e_s,
        "e_pscore_item_position": e_ip, "e_pscore_cascade": e_c, "q_hat": q_hat, "action_dist": dist,
        "len_list": length, "n_unique_action": items,
    }  # fmt: skip
    want = run_obp([{"log": log}])[0]["estimates"]
    got = ours(pa.Table.from_pylist(impressions), [*IPS, "cascade-dr"],
               target=pa.Table.from_pylist(target), predicted_reward="predicted")
    # without cascade-dr, the ranking's weights come from its hits (sql/off_policy/hits.sql.j2)
    from_hits = ours(pa.Table.from_pylist(impressions), IPS, target=pa.Table.from_pylist(target))
    for e in [*IPS, "cascade-dr"]:
        if math.isnan(want[e]):  # OBP's 0/0 where a position has no weight; sqlmetrics adds 0
            continue
        assert math.isclose(got[e], want[e], rel_tol=1e-9, abs_tol=1e-12), (e, got[e], want[e])
        if e in from_hits:
            assert math.isclose(from_hits[e], want[e], rel_tol=1e-9, abs_tol=1e-12), (e, from_hits[e])
