"""Reports with an [off_policy] section: each period's sqlmetrics.off_policy() rows, one per
(segment, target, estimator), in a table of their own, written with the period's metrics in one
transaction and idempotent as the other tables are; the HTML page charts each estimate with its
interval band; the example report (warehouse_examples/online_report.toml) has the section."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

import sqlmetrics
from sqlmetrics import cli
from sqlmetrics.reports import ReportConfigError, config_from_dict, connect, run_report
from sqlmetrics.reports import off_policy as estimates
from sqlmetrics.reports.runner import off_policy_period, off_policy_periods
from tests import test_reports
from tests.test_reports import DAYS, ROOT, day

built_warehouse = test_reports.built_warehouse
warehouse = test_reports.warehouse

SECTION = {"impressions": "impressions", "target_by": "model", "reward": "click", "user": ["user_id", "day"],
           "estimators": ["iips", "sniips", "logging"], "baseline": {"model": "A"}}


def make_config(warehouse: Path, section: dict | None = None, **changes):
    return test_reports.make_config(warehouse, off_policy={**SECTION, **(section or {})}, **changes)


def direct(con, d, model: str, impressions=None, target=None, **options):
    """off_policy() by hand on one day's slice of the example warehouse (or on the given inputs)."""
    if impressions is None:
        impressions = con.table("impressions").filter(f"day = DATE '{d}'")
    if target is None:
        target = con.table("recommendations").filter(f"day = DATE '{d}' AND model = '{model}'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
        return sqlmetrics.off_policy(con, impressions, ["iips", "sniips", "logging"], target=target,
                                     reward="click", user=["user_id", "day"], **options)


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_each_period_s_estimates_are_off_policy_s_rows_written_once(warehouse):
    config = make_config(warehouse)
    con = connect(warehouse)
    first = run_report(con, config, [day(d) for d in DAYS[:2]])
    assert [o.status for o in first] == ["written", "written"] and all(o.estimates == 6 for o in first)
    stored = estimates.read(con, "sqlmetrics_off_policy", "daily_ab").to_pylist()
    assert len(stored) == 12
    for d in DAYS[:2]:
        a = direct(con, d, "A").to_pylist()
        baseline = con.table("recommendations").filter(f"day = DATE '{d}' AND model = 'A'")
        b = direct(con, d, "B", baseline=baseline).to_pylist()
        rows = [r for r in stored if r["period_start"] == d]
        for want, model in [(r, "A") for r in a] + [(r, "B") for r in b]:
            [got] = [r for r in rows
                     if dict(r["target"]) == {"model": model} and r["estimator"] == want["estimator"]]
            assert got["segment"] == [] and got["test"] == "t" and got["confidence"] == 0.95
            for name in ("value", "ci_low", "ci_high", "units", "ess", "support", "delta", "delta_ci_low",
                         "delta_ci_high", "p_value", "baseline_value"):
                assert got[name] == want.get(name), (d, model, name)
            assert got["baseline"] == (None if model == "A" else "model=A")
    # a second run writes nothing; force rewrites the same rows
    assert [o.status for o in run_report(con, config, [day(DAYS[0])])] == ["skipped"]
    before = con.execute("SELECT * EXCLUDE (computed_at) FROM sqlmetrics_off_policy ORDER BY ALL").fetchall()
    assert [o.estimates for o in run_report(con, config, [day(DAYS[0])], force=True)] == [6]
    after = con.execute("SELECT * EXCLUDE (computed_at) FROM sqlmetrics_off_policy ORDER BY ALL").fetchall()
    assert after == before
    # a new section (another estimator) redoes the period: its hash differs
    changed = make_config(warehouse, {"estimators": ["iips"], "baseline": "logging"})
    assert changed.hash != config.hash
    assert [o.estimates for o in run_report(con, changed, [day(DAYS[0])])] == [4]  # iips, logging x A, B
    rows = estimates.read(con, "sqlmetrics_off_policy", "daily_ab", DAYS[0], DAYS[0]).to_pylist()
    assert sorted((dict(r["target"])["model"], r["estimator"], r["baseline"]) for r in rows) == [
        ("A", "iips", "logging"), ("A", "logging", "logging"),
        ("B", "iips", "logging"), ("B", "logging", "logging"),
    ]
    con.close()


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_a_failing_estimate_leaves_every_table_as_it_was(warehouse):
    con = connect(warehouse)
    run_report(con, make_config(warehouse), [day(DAYS[0])])
    tables = ("sqlmetrics_results", "sqlmetrics_off_policy")
    before = [con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables]
    broken = make_config(warehouse, {"columns": {"pscore_item_position": "pscore_cascade_missing"}})
    with pytest.raises(sqlmetrics.SqlMetricsError, match="^daily_ab 2026-11-01: iips, sniips need the"):
        run_report(con, broken, [day(DAYS[0])], force=True)
    after = [con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables]
    assert after == before
    con.close()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"impressions": None}, "missing key off_policy.'impressions'"),
        ({"estimators": ["ips"]}, "off_policy: unknown estimator 'ips'"),
        ({"baseline": "B"}, "off_policy.baseline = 'B': give an estimator"),
        ({"baseline": {"arm": "A"}}, "off_policy.baseline as a table gives a value of each"),
        ({"test": "wilcoxon"}, "off_policy: test = 'wilcoxon'"),
        ({"clip": 0}, "off_policy: clip= caps"),
        ({"columns": {"items": "x"}}, "unknown key off_policy.columns.'items'"),
        ({"results_table": "sqlmetrics_results"}, "off_policy.results_table must differ"),
        ({"grades": {"click": 1}}, "off_policy.grades needs off_policy.action"),
        ({"extra": 1}, "unknown key off_policy.'extra'"),
    ],
)
def test_a_bad_off_policy_section_is_a_config_error(tmp_path, section, message):
    data = {k: v for k, v in {**SECTION, **section}.items() if v is not None}
    with pytest.raises(ReportConfigError, match=re.escape(message)):
        config_from_dict({"name": "r", "warehouse": "w", "recommendations": "recs", "time_column": "day",
                          "metrics": ["ndcg@10"], "off_policy": data})


def test_the_hash_of_configs_without_the_section_is_unchanged(tmp_path):
    plain = test_reports.make_config(tmp_path / "w.duckdb")
    assert make_config(tmp_path / "w.duckdb").hash != plain.hash
    # (a config of before the section: its hash is the one it had, pinned by test_reports)
    assert "off_policy" not in plain.hash


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_the_example_report_writes_and_charts_the_estimates(warehouse, tmp_path, capsys):
    config = tmp_path / "online_report.toml"
    config.write_text((ROOT / "warehouse_examples" / "online_report.toml").read_text()
                      .replace('warehouse = "warehouse.duckdb"', f"warehouse = {str(warehouse)!r}"))
    page = tmp_path / "report.html"
    assert cli.main(["report", str(config), "--from", "2026-11-01", "--to", "2026-11-03", "-q",
                     "--html", str(page)]) == 0
    # a mean weight far from 1 (few slates a day here) is a warning line of the period
    assert "warning: online_ab 2026-11-01: sniips: the mean importance weight is" in capsys.readouterr().err
    con = connect(warehouse, read_only=True)
    rows = estimates.read(con, "sqlmetrics_off_policy", "online_ab").to_pylist()
    loaded = sqlmetrics.reports.load_config(config)
    assert off_policy_period(con, loaded, day(DAYS[2])).num_rows == 6
    con.close()
    assert len(rows) == 18 and {dict(r["target"])["model"] for r in rows} == {"A", "B"}
    html = page.read_text()
    assert '<section id="off-policy">' in html
    for estimator in ("iips", "sniips", "logging"):
        assert f'data-kind="off-policy" data-metric="{estimator}"' in html
    for estimator in ("iips", "sniips"):  # the deltas against model A, banded
        assert f'data-kind="off-policy-delta" data-metric="{estimator}"' in html
    section = html[html.index('<section id="off-policy">'):]
    section = section[: section.index("</section>")]
    assert section.count('class="band"') >= 2 * 3 + 2  # each estimate's band per target, each delta's
    assert "Shaded: each estimate&#x27;s 95% interval (t)." in section
    assert "Off-policy estimates of target recommendations by model from impressions" in section
    # the whole range: off_policy() over all the slates of the stored periods pooled, in a table
    whole = section[section.index('data-range="off-policy-whole"'):]
    whole = whole[: whole.index("</table>")]
    assert "whole range, 2026-11-01 to 2026-11-03 (3 periods, all slates pooled)" in whole
    con = connect(warehouse, read_only=True)
    pooled = off_policy_periods(con, loaded, [day(d) for d in DAYS]).to_pylist()
    con.close()
    assert whole.count("<tr>") == 1 + len(pooled) == 1 + 6
    for r in pooled:
        cells = (f"model={r['_t0']}", f'<td class="text">{r["estimator"]}',
                 f'<td class="num">{r["value"]:.4f}')
        named = "</td>".join(cells)
        assert named in whole, named


# ---- a stochastic target: its propensities are columns of the impressions -------------------

STOCHASTIC_COLUMNS = {"target_pscore_item_position": "b_pip", "target_pscore_cascade": "b_cascade"}
STOCHASTIC = {"impressions": "stochastic_impressions", "reward": "click", "user": ["user_id", "day"],
              "estimators": ["iips", "sniips", "rips", "logging"], "baseline": "logging", "by": "model",
              "columns": STOCHASTIC_COLUMNS}


def stochastic_target(warehouse: Path) -> None:
    """A stochastic target's propensities beside the logging policy's (valid: within [0, 1])."""
    con = connect(warehouse)
    con.execute("CREATE VIEW stochastic_impressions AS SELECT *, least(1.0, pscore_item_position * 1.5) "
                "AS b_pip, least(1.0, pscore_cascade * 1.2) AS b_cascade FROM impressions")
    con.close()


def direct_stochastic(con, impressions, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
        return sqlmetrics.off_policy(con, impressions, STOCHASTIC["estimators"], reward="click", by="model",
                                     user=["user_id", "day"], baseline="logging",
                                     **{k: v for k, v in STOCHASTIC_COLUMNS.items()}, **options)


def assert_stored(rows: list[dict], want: list[dict], target: dict) -> None:
    """The stored rows are off_policy()'s: one per (segment, estimator), every statistic."""
    assert len(rows) == len(want)
    for w in want:
        [got] = [r for r in rows if dict(r["segment"]) == {"model": w["model"]}
                 and r["estimator"] == w["estimator"] and dict(r["target"]) == target]
        for name in estimates.STATISTICS:
            assert got[name] == w[name], (w["model"], w["estimator"], name)


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_a_stochastic_target_s_estimates_are_off_policy_s_rows(warehouse):
    stochastic_target(warehouse)
    config = test_reports.make_config(warehouse, off_policy=STOCHASTIC)
    assert config.off_policy.target is None
    con = connect(warehouse)
    outcomes = run_report(con, config, [day(d) for d in DAYS[:2]])
    assert [o.status for o in outcomes] == ["written", "written"]
    stored = estimates.read(con, "sqlmetrics_off_policy", "daily_ab").to_pylist()
    for d in DAYS[:2]:
        want = direct_stochastic(con, con.table("stochastic_impressions").filter(f"day = DATE '{d}'"))
        assert want.num_rows == 8 and set(want.column("model").to_pylist()) == {"A", "B"}
        assert_stored([r for r in stored if r["period_start"] == d], want.to_pylist(), {})
    con.close()


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_a_stochastic_target_against_another_one(warehouse):
    """baseline = a table of target_* columns: another stochastic target, each estimate against
    its estimate by the same estimator on the same slates (off_policy()'s baseline= mapping)."""
    stochastic_target(warehouse)
    other = {"target_pscore_item_position": "pscore_item_position", "target_pscore_cascade": "pscore_cascade"}
    section = {**STOCHASTIC, "baseline": other, "estimators": ["iips", "snrips"]}
    config = test_reports.make_config(warehouse, off_policy=section)
    assert config.off_policy.baseline_columns == other and config.off_policy.baseline is None
    con = connect(warehouse)
    run_report(con, config, [day(DAYS[0])])
    stored = estimates.read(con, "sqlmetrics_off_policy", "daily_ab").to_pylist()
    impressions = con.table("stochastic_impressions").filter(f"day = DATE '{DAYS[0]}'")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
        want = sqlmetrics.off_policy(con, impressions, ["iips", "snrips"], reward="click", by="model",
                                     user=["user_id", "day"], baseline=other, **STOCHASTIC_COLUMNS)
    label = "target_pscore_cascade=pscore_cascade, target_pscore_item_position=pscore_item_position"
    want = [{**w, "baseline": label} for w in want.to_pylist()]
    assert all(w["delta"] is not None for w in want)
    assert_stored(stored, want, {})
    # the logging policy's own propensities as the baseline: its weights are 1, its iips the mean reward
    logging = sqlmetrics.off_policy(con, impressions, ["logging"], reward="click", by="model",
                                    user=["user_id", "day"]).to_pylist()
    for r in stored:
        if r["estimator"] == "iips":
            [mean] = [x["value"] for x in logging if x["model"] == dict(r["segment"])["model"]]
            assert r["baseline_value"] == pytest.approx(mean, rel=1e-12)
    con.close()


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"target": "recs"}, "gives a stochastic target (its propensities in the impressions), but the "
                             "section also gives target (a target ranking)"),
        ({"target_by": "model"}, "but the section also gives target_by"),
        ({"baseline": {"model": "A"}}, "but the section also gives baseline as a table of target_by values"),
    ],
)
def test_a_stochastic_target_with_a_ranking_is_a_config_error(section, message):
    with pytest.raises(ReportConfigError, match=re.escape(message)):
        config_from_dict({"name": "r", "warehouse": "w", "recommendations": "recs", "time_column": "day",
                          "metrics": ["ndcg@10"], "off_policy": {**STOCHASTIC, **section}})


# ---- the whole range: all the slates of its periods pooled -----------------------------------


def pooled_by_hand(con, table: str, days):
    """A table's rows of the days, each unit of each day its own: user_id read as '<day>|<user_id>'."""
    listed = ", ".join(f"DATE '{d}'" for d in days)
    return con.sql(f"SELECT * REPLACE (CAST(day AS VARCHAR) || '|' || CAST(user_id AS VARCHAR) AS user_id) "
                   f"FROM {table} WHERE day IN ({listed})")


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_the_whole_range_pools_the_slates_of_its_periods(warehouse):
    """off_policy_periods() over several periods: one off_policy() over all their slates, each
    slate of each period a unit (as [compare] pools the users of a range), equal to off_policy()
    by hand on the periods' rows pooled; a target ranking by target_by against a baseline
    target, and a stochastic target."""
    stochastic_target(warehouse)
    con = connect(warehouse)
    days = DAYS[:3]
    config = make_config(warehouse)
    got = off_policy_periods(con, config, [day(d) for d in days]).to_pylist()
    impressions = pooled_by_hand(con, "impressions", days)
    recs = pooled_by_hand(con, "recommendations", days)
    a = direct(con, None, "A", impressions=impressions, target=recs.filter("model = 'A'"))
    b = direct(con, None, "B", impressions=impressions, target=recs.filter("model = 'B'"),
               baseline=recs.filter("model = 'A'"))
    one_day = direct(con, days[0], "B")
    assert a.column("units").to_pylist()[0] > one_day.column("units").to_pylist()[0]
    for model, want in (("A", a), ("B", b)):
        for w in want.to_pylist():
            [r] = [r for r in got if r["_t0"] == model and r["estimator"] == w["estimator"]]
            for name in estimates.STATISTICS:
                if name != "baseline":
                    assert r[name] == w.get(name), (model, w["estimator"], name)
            assert r["baseline"] == (None if model == "A" else "model=A")
    stochastic = test_reports.make_config(warehouse, off_policy=STOCHASTIC)
    got = off_policy_periods(con, stochastic, [day(d) for d in days])
    want = direct_stochastic(con, pooled_by_hand(con, "stochastic_impressions", days))
    assert_stored([{**r, "segment": {"model": r["model"]}, "target": {}} for r in got.to_pylist()],
                  want.to_pylist(), {})
    con.close()
