"""Reports of the intent-aware measures: the config's `subtopics` key reaches evaluate() (and
compare()), the stored values are evaluate()'s by hand, the whole range's pooled comparison
keys the judgements as it keys the pooled users, and subtopics with truth is a config error."""

from __future__ import annotations

import numpy as np
import pytest

from sqlmetrics import evaluate
from sqlmetrics.reports import ReportConfigError, connect, periods_between, run_report
from sqlmetrics.reports.runner import compare_periods
from tests import test_reports
from tests.test_reports import DAYS

built_warehouse = test_reports.built_warehouse
warehouse = test_reports.warehouse

METRICS = ["alpha_ndcg@10", "p_ia@5", "ap_ia", "err_ia@10", "nrbp", "ndcg@10"]


def judgements(warehouse) -> None:
    """A table of subtopic judgements from the events: a view is one subtopic, a purchase or a
    cart another; grades 1 to 3, all days (read whole, as the report reads its inputs)."""
    con = connect(warehouse)
    con.execute(
        "CREATE TABLE judgements AS SELECT user_id, CASE WHEN event_type = 'view' THEN 'look' "
        "ELSE 'buy' END AS subtopic, item_id, CASE event_type WHEN 'purchase' THEN 3 WHEN "
        "'add_to_cart' THEN 2 ELSE 1 END AS relevance FROM events"
    )
    con.close()


def config(warehouse, **changes):
    data = {"truth": None, "columns": {}, "grades": {}, "metrics": METRICS, "subtopics": "judgements"}
    return test_reports.make_config(warehouse, **{**data, **changes})


def test_a_report_stores_evaluate_s_values(warehouse):
    judgements(warehouse)
    con = connect(warehouse)
    outcomes = run_report(con, config(warehouse), periods_between("day", DAYS[0], DAYS[1]))
    assert [o.status for o in outcomes] == ["written", "written"]
    for day in DAYS[:2]:
        recs = con.sql(f"SELECT * FROM recommendations WHERE day = DATE '{day}'")
        expected = evaluate(con, recs, METRICS, subtopics="judgements", by="model").to_pylist()
        stored = con.execute(
            "SELECT segment['model'], metric || coalesce('@' || k, ''), value, users FROM "
            "sqlmetrics_results WHERE period_start = ? ORDER BY ALL", [day]
        ).fetchall()  # fmt: skip
        by_hand = sorted((r["model"], m, r[m], r["users"]) for r in expected for m in METRICS)
        assert len(stored) == len(by_hand) == 2 * len(METRICS)
        for got, want in zip(stored, by_hand, strict=True):
            assert got[:2] == want[:2] and got[3] == want[3]
            assert got[2] == pytest.approx(want[2], rel=1e-12, abs=1e-15)
        assert all(value > 0 for _, _, value, _ in stored)
    con.close()


def test_the_whole_range_keys_the_judgements_as_the_pooled_users(warehouse):
    """Each user of each day is a unit of the pooled comparison ('<day>|<user>'): the subtopic
    judgements are read once per day under the same keys, so the pooled delta is the mean of
    the days' per-user differences (not 0s of units without judgements)."""
    judgements(warehouse)
    report = config(warehouse, compare={"baseline": "A"}, metrics=["ap_ia", "err_ia@10"])
    con = connect(warehouse)
    pooled = compare_periods(con, report, periods_between("day", DAYS[0], DAYS[1])).to_pylist()
    differences: dict[str, list[float]] = {"ap_ia": [], "err_ia@10": []}
    for day in DAYS[:2]:
        recs = con.sql(f"SELECT * FROM recommendations WHERE day = DATE '{day}'")
        rows = evaluate(con, recs, list(differences), subtopics="judgements", by="model", per_user=True)
        values = {(r["model"], r["user_id"]): r for r in rows.to_pylist()}
        for model, user in sorted(values):
            if model == "B" and ("A", user) in values:
                for m in differences:
                    differences[m].append(values[("B", user)][m] - values[("A", user)][m])
    assert len(pooled) == 2
    for r in pooled:
        d = np.array(differences[r["metric"]])
        assert r["users"] == len(d) > 100
        assert r["delta"] == pytest.approx(float(d.mean()), abs=1e-12)
        assert r["mean"] > 0
    con.close()


def test_subtopics_with_truth_is_a_config_error_and_enters_the_hash(warehouse):
    with pytest.raises(ReportConfigError, match="give subtopics or truth, not both"):
        config(warehouse, truth="events")
    assert config(warehouse).hash != config(warehouse, subtopics="other").hash
    assert config(warehouse).options()["subtopics"] == "judgements"
