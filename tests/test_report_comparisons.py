"""Reports with a [compare] section: each period's comparison rows (sqlmetrics.compare) in a
table of their own, written with the period's metrics in one transaction, idempotent; the means'
intervals; the whole range pooled; the example readout (warehouse_examples/daily_report.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date, datetime
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import sqlmetrics
from sqlmetrics import cli
from sqlmetrics.reports import (
    ReportConfigError,
    comparisons,
    config_from_dict,
    connect,
    period_of,
    periods_between,
    results_table,
    run_report,
)
from sqlmetrics.reports.runner import compare_periods
from tests import test_reports
from tests.test_reports import DAYS, GRADES, METRICS, ROOT

INPUTS = {"action": "event_type", "relevance": GRADES}
# the example warehouse of 300 users and 3 days, and a copy of it for each test
built_warehouse = test_reports.built_warehouse
warehouse = test_reports.warehouse


def make_config(warehouse: Path, compare: dict | None = None, **changes):
    """tests/test_reports.py's config of the example warehouse, with a [compare] section."""
    return test_reports.make_config(warehouse, compare={"baseline": "A", **(compare or {})}, **changes)


def stored(con, table: str) -> list[tuple]:
    return con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()


def day_inputs(con, day: date):
    return (
        con.table("recommendations").filter(f"day = DATE '{day}'"),
        con.table("events").filter(f"day = DATE '{day}'"),
    )


def per_user(con, recs, truth) -> dict[str, dict]:
    """model -> user -> {metric: value}, evaluate(per_user=True)'s values."""
    table = sqlmetrics.evaluate(con, recs, METRICS, truth=truth, by="model", per_user=True, **INPUTS)
    out: dict[str, dict] = {}
    for r in table.to_pylist():
        out.setdefault(r["model"], {})[r["user_id"]] = r
    return out


# --- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "section, message",
    [
        ({"baseline": None}, "missing key compare.baseline"),
        ({"tset": "t"}, "did you mean 'test'"),
        ({"test": "z"}, "test='z' is not one of"),
        ({"confidence": 1.5}, "confidence must be a number between 0 and 1"),
        ({"correction": "fdr"}, 'compare.correction = \'fdr\' is not one of "holm", "bonferroni", "bh"'),
        ({"replicates": 0}, "replicates must be a whole number"),
        ({"seed": -1}, "seed must be a whole number"),
        ({"baseline": ["A", "B"]}, "one value (a string or a number) for each"),
        ({"baseline": True}, "one value (a string or a number) for each"),
        ({"within": "country"}, "compare.within 'country' is not one of the report's by columns"),
        ({"within": "model"}, "set by"),
        ({"results_table": "sqlmetrics_results"}, "must differ from results_table"),
        ({"results_table": "a.b.c.d"}, "not a table name"),
    ],
)
def test_a_bad_compare_section_is_a_config_error(tmp_path, section, message):
    section = {k: v for k, v in {"baseline": "A", **section}.items() if v is not None}
    with pytest.raises(ReportConfigError) as info:
        config_from_dict({**make_config_dict(tmp_path), "compare": section})
    assert message in str(info.value)


def make_config_dict(tmp_path: Path) -> dict:
    return {"name": "r", "warehouse": str(tmp_path / "w.duckdb"), "recommendations": "recs",
            "time_column": "day", "metrics": ["ndcg@10"], "by": "model"}  # fmt: skip


def test_compare_needs_a_by_column_and_a_table(tmp_path):
    data = make_config_dict(tmp_path)
    with pytest.raises(ReportConfigError, match="set by"):
        config_from_dict({**data, "by": [], "compare": {"baseline": "A"}})
    with pytest.raises(ReportConfigError, match=r"\[compare\] must be a table"):
        config_from_dict({**data, "compare": "A"})


def test_a_bad_compare_section_exits_2_with_one_line(tmp_path, capsys):
    path = tmp_path / "r.toml"
    path.write_text(
        (ROOT / "warehouse_examples" / "daily_report.toml").read_text().replace('test = "t"', 'test = "z"')
    )
    code = cli.main(["report", str(path), "--date", "2026-11-01"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "test='z'" in err and "Traceback" not in err


def test_the_section_and_its_options(tmp_path):
    config = make_config(tmp_path / "w.duckdb", {"correction": "none", "test": "bootstrap", "seed": 3})
    assert config.compare.options() == {
        "by": ["model"], "baseline": "A", "within": None, "test": "bootstrap", "confidence": 0.95,
        "correction": None, "replicates": 10_000, "seed": 3, "design": "auto", "covariate": None,
        "expected_split": None,
    }  # fmt: skip
    assert config.compare.results_table == "sqlmetrics_comparisons"
    two = config_from_dict(
        {**make_config_dict(tmp_path), "by": ["country", "arm", "model"],
         "compare": {"baseline": ["x", 1], "within": "country"}}
    )  # fmt: skip
    assert two.compare.systems == ("arm", "model") and two.compare.options()["baseline"] == ("x", 1)


def test_the_config_hash_follows_the_section(tmp_path):
    base = make_config(tmp_path / "w.duckdb")
    assert base.hash == make_config(tmp_path / "w.duckdb", {"results_table": "elsewhere"}).hash
    assert base.hash != make_config(tmp_path / "w.duckdb", {"test": "wilcoxon"}).hash
    assert base.hash != make_config(tmp_path / "w.duckdb", {"confidence": 0.9}).hash
    # the keys added with compare()'s designs enter the hash only when set otherwise than their
    # defaults (an older config keeps its hash, and its periods stay done)
    assert base.hash == make_config(tmp_path / "w.duckdb", {"design": "auto"}).hash
    for changed in ({"design": "paired"}, {"covariate": "pre"}, {"expected_split": {"A": 1, "B": 1}}):
        assert base.hash != make_config(tmp_path / "w.duckdb", changed).hash
    without = dict(make_config_dict(tmp_path), metrics=METRICS, by=["model"])
    assert base.hash != config_from_dict(without).hash  # the section adds the means' intervals


# --- the comparisons table --------------------------------------------------------------------


def test_each_period_s_comparisons_are_compare_s_rows_and_the_means_have_their_intervals(warehouse):
    config = make_config(warehouse)
    con = connect(warehouse)
    outcomes = run_report(con, config, periods_between("day", DAYS[0], DAYS[-1]))
    assert [(o.status, o.rows, o.comparisons) for o in outcomes] == [("written", 10, 5)] * 3
    rows = comparisons.read(con, "sqlmetrics_comparisons", "daily_ab").to_pylist()
    means = results_table.read(con, "sqlmetrics_results", "daily_ab").to_pylist()
    assert len(rows) == 15 and all(r["config_hash"] == config.hash for r in rows + means)
    for day in DAYS:
        recs, truth = day_inputs(con, day)
        expected = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A", **INPUTS)
        mine = [r for r in rows if r["period_start"] == day]
        for want in expected.to_pylist():
            name, k = want["metric"].split("@")
            (got,) = [r for r in mine if (r["metric"], r["k"]) == (name, int(k))]
            assert dict(got["system"]) == {"model": "B"} and dict(got["baseline"]) == {"model": "A"}
            assert dict(got["segment"]) == {} and (got["test"], got["confidence"], got["correction"]) == (
                "t",
                0.95,
                "holm",
            )
            for column in comparisons.STATISTICS:
                assert got[column] == want[column], column
        # independently: scipy on evaluate()'s per-user values of that day
        values = per_user(con, recs, truth)
        paired = sorted(set(values["A"]) & set(values["B"]))
        for m in METRICS:
            name, k = m.split("@")
            (got,) = [r for r in mine if (r["metric"], r["k"]) == (name, int(k))]
            x = np.array([values["B"][u][m] for u in paired])
            y = np.array([values["A"][u][m] for u in paired])
            assert got["users"] == len(paired)
            assert got["delta"] == pytest.approx(float(np.mean(x - y)), abs=1e-12)
            assert got["p_value"] == pytest.approx(scipy.stats.ttest_rel(x, y).pvalue, abs=1e-10)
            for model in ("A", "B"):  # the means' t intervals in the results table
                (mean,) = [
                    r for r in means
                    if r["period_start"] == day and dict(r["segment"]) == {"model": model}
                    and (r["metric"], r["k"]) == (name, int(k))
                ]  # fmt: skip
                all_units = np.array([r[m] for r in values[model].values()])
                ci = scipy.stats.t.interval(
                    0.95, len(all_units) - 1, loc=all_units.mean(), scale=scipy.stats.sem(all_units)
                )
                assert (mean["ci_low"], mean["ci_high"]) == pytest.approx(ci, abs=1e-12)
    con.close()


def test_a_second_run_writes_nothing_and_force_rewrites(warehouse):
    config = make_config(warehouse)
    con = connect(warehouse)
    first, later = (datetime.fromisoformat(f"2026-11-0{d}T06:00:00+00:00") for d in (4, 5))
    periods = periods_between("day", DAYS[0], DAYS[1])
    run_report(con, config, periods, now=lambda: first)
    before = {t: stored(con, t) for t in ("sqlmetrics_results", "sqlmetrics_comparisons")}
    again = run_report(con, config, periods, now=lambda: later)
    assert [(o.status, o.rows, o.comparisons) for o in again] == [("skipped", 0, 0)] * 2
    assert {t: stored(con, t) for t in before} == before
    forced = run_report(con, config, periods, force=True, now=lambda: later)
    assert [(o.status, o.comparisons) for o in forced] == [("written", 5)] * 2
    after = stored(con, "sqlmetrics_comparisons")
    stamp = list(comparisons.COLUMNS).index("computed_at")
    assert len(after) == len(before["sqlmetrics_comparisons"]) == 10
    assert [r[:stamp] for r in after] == [r[:stamp] for r in before["sqlmetrics_comparisons"]]
    assert {r[stamp] for r in after} == {later.replace(tzinfo=None)}
    # a period whose comparisons are gone (a dropped row) is not done: both tables are rewritten
    con.execute("DELETE FROM sqlmetrics_comparisons WHERE period_start = DATE '2026-11-02'").fetchall()
    assert [o.status for o in run_report(con, config, periods)] == ["skipped", "written"]
    assert len(stored(con, "sqlmetrics_comparisons")) == 10 and len(stored(con, "sqlmetrics_results")) == 20
    con.close()


def test_a_failure_writing_the_comparisons_leaves_both_tables_as_they_were(warehouse, monkeypatch):
    config = make_config(warehouse)
    con = connect(warehouse)
    run_report(con, config, [period_of("day", DAYS[0])])
    before = {t: stored(con, t) for t in ("sqlmetrics_results", "sqlmetrics_comparisons")}
    real = results_table._insert

    def fail_on_comparisons(con, context, parameters):
        if context["insert"] == "reports/insert_comparisons.sql.j2":
            raise RuntimeError("disk on fire after the metrics")
        return real(con, context, parameters)

    monkeypatch.setattr(results_table, "_insert", fail_on_comparisons)
    with pytest.raises(RuntimeError, match="disk on fire"):
        run_report(con, config, [period_of("day", DAYS[0])], force=True)
    assert {t: stored(con, t) for t in before} == before
    con.close()


def test_a_results_table_made_before_the_intervals_gets_them(warehouse):
    con = connect(warehouse)
    con.execute(
        "CREATE TABLE sqlmetrics_results (report VARCHAR NOT NULL, period_start DATE NOT NULL, "
        "period_end DATE NOT NULL, segment MAP(VARCHAR, VARCHAR) NOT NULL, metric VARCHAR NOT NULL, "
        "k INTEGER, value DOUBLE, users BIGINT NOT NULL, computed_at TIMESTAMP NOT NULL, "
        "sqlmetrics_version VARCHAR NOT NULL, config_hash VARCHAR NOT NULL)"
    ).fetchall()
    con.execute(
        "INSERT INTO sqlmetrics_results VALUES ('old', DATE '2026-10-01', DATE '2026-10-02', MAP {}, "
        "'ndcg', 10, 0.5, 3, TIMESTAMP '2026-10-02 06:00:00', '0.0.1', 'abc')"
    ).fetchall()
    run_report(con, make_config(warehouse), [period_of("day", DAYS[0])])
    rows = con.execute("SELECT report, ci_low, ci_high FROM sqlmetrics_results ORDER BY report").fetchall()
    assert rows[0][0] == "daily_ab" and all(r[1] < r[2] for r in rows[:-1])
    assert rows[-1] == ("old", None, None)
    con.close()


def test_a_foreign_table_under_the_comparisons_name_is_refused(warehouse):
    con = connect(warehouse)
    con.execute("CREATE TABLE sqlmetrics_comparisons (x INTEGER)").fetchall()
    with pytest.raises(sqlmetrics.reports.ResultsTableError, match="not a sqlmetrics comparisons table"):
        run_report(con, make_config(warehouse), [period_of("day", DAYS[0])])
    con.close()


def test_within_compares_inside_each_segment(tmp_path):
    path = tmp_path / "w.duckdb"
    con = connect(path)
    con.execute(
        "CREATE TABLE recs AS SELECT DATE '2026-11-01' AS day, CASE WHEN u % 2 = 0 THEN 'DE' ELSE 'FR' END "
        "AS country, m AS model, u AS user_id, i AS item_id, hash(u, i, m) % 100 AS score "
        "FROM range(40) a(u), range(6) b(i), (VALUES ('A'), ('B')) c(m)"
    ).fetchall()
    con.execute(
        "CREATE TABLE truth AS SELECT DATE '2026-11-01' AS day, u AS user_id, i AS item_id "
        "FROM range(40) a(u), range(6) b(i) WHERE hash(u, i) % 3 = 0"
    ).fetchall()
    config = config_from_dict(
        {"name": "w", "warehouse": str(path), "recommendations": "recs", "truth": "truth",
         "time_column": "day", "metrics": ["ndcg@3", "recall@3"], "by": ["country", "model"],
         "compare": {"baseline": "A", "within": "country", "results_table": "main.cmp"}}
    )  # fmt: skip
    run_report(con, config, [period_of("day", DAYS[0])])
    rows = comparisons.read(con, "main.cmp", "w").to_pylist()
    expected = sqlmetrics.compare(
        con, "recs", ["ndcg@3", "recall@3"], truth="truth", by="model", within="country", baseline="A"
    ).to_pylist()
    assert len(rows) == len(expected) == 4
    for got, want in zip(rows, expected, strict=True):
        assert dict(got["segment"]) == {"country": want["country"]} and dict(got["system"]) == {"model": "B"}
        assert all(got[c] == want[c] for c in comparisons.STATISTICS)
    con.close()


# --- the whole range, the command line and the example readout --------------------------------


def test_the_whole_range_pools_every_user_of_every_period(warehouse):
    config = make_config(warehouse)
    con = connect(warehouse)
    pooled = compare_periods(con, config, periods_between("day", DAYS[0], DAYS[-1])).to_pylist()
    differences: dict[str, list[float]] = {m: [] for m in METRICS}
    for day in DAYS:  # a user of two days is two units, as in the days' own comparisons
        values = per_user(con, *day_inputs(con, day))
        for u in sorted(set(values["A"]) & set(values["B"])):
            for m in METRICS:
                differences[m].append(values["B"][u][m] - values["A"][u][m])
    for r in pooled:
        d = np.array(differences[r["metric"]])
        assert r["users"] == len(d) > 600
        assert r["delta"] == pytest.approx(float(d.mean()), abs=1e-12)
        assert r["p_value"] == pytest.approx(scipy.stats.ttest_1samp(d, 0).pvalue, abs=1e-10)
        ci = scipy.stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=scipy.stats.sem(d))
        assert (r["ci_low"], r["ci_high"]) == pytest.approx(ci, abs=1e-12)
    con.close()


def test_the_command_line_prints_the_comparisons_and_the_example_readout_runs(warehouse, tmp_path, capsys):
    config = tmp_path / "daily.toml"
    config.write_text(
        (ROOT / "warehouse_examples" / "daily_report.toml").read_text()
        .replace('warehouse = "warehouse.duckdb"', f"warehouse = {str(warehouse)!r}")
    )  # fmt: skip
    assert cli.main(["report", str(config), "--from", "2026-11-01", "--to", "2026-11-03"]) == 0
    out, err = capsys.readouterr()
    assert "3 written (30 rows and 15 comparisons)" in err
    assert "against A (t test):" in out and out.count("2026-11-02  B      ndcg@10") == 1
    assert cli.main(["report", str(config), "--from", "2026-11-01", "--to", "2026-11-03", "-q"]) == 0
    assert capsys.readouterr() == ("", "")

    done = subprocess.run(
        [sys.executable, str(ROOT / "warehouse_examples" / "daily_report.py"), "--config", str(config)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    table = [line.split() for line in lines if line.startswith("B ")]
    assert [row[1] for row in table] == METRICS
    con = connect(warehouse, read_only=True)
    stored_rows = comparisons.read(con, "sqlmetrics_comparisons", "daily_ab").to_pylist()
    con.close()
    for row in table:
        name, k = row[1].split("@")
        days = [r for r in stored_rows if (r["metric"], r["k"]) == (name, int(k))]
        assert int(row[2]) == len(days) == 3
        ahead = sum(1 for r in days if r["p_adjusted"] < 0.05 and r["delta"] > 0)
        assert int(row[3]) == ahead
        assert int(row[-1]) == sum(r["users"] for r in days)  # users pooled over the days
        latest = days[-1]
        assert row[5] == f"{latest['delta']:+.4f}"


def test_the_page_says_why_the_whole_range_is_missing(warehouse, tmp_path):
    """Periods stored, their rows gone from the sources (retention): the page is still written,
    the latest period's comparisons from the table, the whole range's cells empty, and why."""
    config = tmp_path / "daily.toml"
    config.write_text(
        (ROOT / "warehouse_examples" / "daily_report.toml").read_text()
        .replace('warehouse = "warehouse.duckdb"', f"warehouse = {str(warehouse)!r}")
    )  # fmt: skip
    assert cli.main(["report", str(config), "--date", "2026-11-01", "-q"]) == 0
    con = connect(warehouse)
    con.execute("DELETE FROM recommendations WHERE model = 'B'").fetchall()
    con.close()
    page = tmp_path / "report.html"
    assert cli.main(["report", str(config), "--date", "2026-11-02", "-q", "--html", str(page)]) == 2
    assert cli.main(["report", str(config), "--date", "2026-11-01", "-q", "--html", str(page)]) == 0
    html = page.read_text()
    latest = html.split('<table class="summary" data-range="latest">', 1)[1].split("</table>", 1)[0]
    whole = html.split('<table class="summary" data-range="whole">', 1)[1].split("</table>", 1)[0]
    assert latest.count("<tr>") == 1 + len(METRICS)
    assert "not computed: no system to compare with baseline=" in whole and "<td" not in whole
    # the verdict speaks of the latest period then
    assert '<p class="verdict">Against A, latest period, 2026-11-01: model=B ' in html


def test_the_whole_range_pools_units_of_several_key_columns(warehouse):
    """user = ["user_id", "day"]: within a period the day is one value, so the pooled units are
    the same as with the user alone, and so is every number."""
    con = connect(warehouse)
    periods = periods_between("day", DAYS[0], DAYS[-1])
    alone = compare_periods(con, make_config(warehouse), periods)
    keyed = make_config(warehouse, columns={"action": "event_type", "user": ["user_id", "day"]})
    assert compare_periods(con, keyed, periods).to_pylist() == alone.to_pylist()
    con.close()


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"metrics": ["ndcg@10", "num_rel"]}, "num_rel"),  # a sum has no interval of a mean
        ({"metrics": ["ndcg@10", "precision@10"], "conventions": {"profile": "recommenders"}},
         "different conventions"),
    ],
)  # fmt: skip
def test_compare_refuses_what_has_no_interval_of_one_mean(tmp_path, changes, message):
    """[compare] stores each mean's interval: the config is refused at once, not every period."""
    with pytest.raises(ReportConfigError, match=message):
        config_from_dict({**make_config_dict(tmp_path), **changes, "compare": {"baseline": "A"}})
    config_from_dict({**make_config_dict(tmp_path), **changes})  # (fine without [compare])


# --- compare()'s designs in reports -----------------------------------------------------------


def test_a_comparisons_table_of_before_the_designs_is_migrated(warehouse):
    con = connect(warehouse)
    old = [n for n in comparisons.COLUMNS if n not in comparisons.DESIGN_COLUMNS]
    types = {"wins": "BIGINT NOT NULL", "ties": "BIGINT NOT NULL", "losses": "BIGINT NOT NULL"}
    con.execute(
        "CREATE TABLE sqlmetrics_comparisons ("
        + ", ".join(f"{n} {types.get(n, comparisons.COLUMNS[n])}" for n in old) + ")"
    ).fetchall()  # fmt: skip
    values = {n: None for n in old} | {
        "report": "old", "period_start": date(2026, 10, 1), "period_end": date(2026, 10, 2),
        "segment": {}, "system": {"model": "B"}, "baseline": {"model": "A"}, "metric": "ndcg",
        "k": 10, "test": "t", "confidence": 0.95, "users": 7, "wins": 1, "ties": 2, "losses": 4,
        "unpaired_system": 0, "unpaired_baseline": 0, "computed_at": datetime(2026, 10, 2),
        "sqlmetrics_version": "0", "config_hash": "x",
    }  # fmt: skip
    marks = ", ".join("?" for _ in old)
    con.execute(f"INSERT INTO sqlmetrics_comparisons VALUES ({marks})", [values[n] for n in old]).fetchall()
    run_report(con, make_config(warehouse), [period_of("day", DAYS[0])])
    found = {r[0]: r[1] for r in con.execute("DESCRIBE sqlmetrics_comparisons").fetchall()}
    assert found == comparisons.COLUMNS
    old_row = con.execute(
        "SELECT design, users, baseline_users, srm_p_value FROM sqlmetrics_comparisons WHERE report = 'old'"
    ).fetchall()
    assert old_row == [("paired", 7, 7, None)]
    assert {r[0] for r in con.execute("SELECT design FROM sqlmetrics_comparisons").fetchall()} == {"paired"}
    con.close()


def served_arms(warehouse: Path, share_a: float) -> None:
    """A view of each user's own arm: user u is served A when u % 10 < 10 * share_a, else B."""
    con = connect(warehouse)
    cut = round(10 * share_a)
    con.execute(
        "CREATE VIEW skewed AS SELECT * FROM recommendations WHERE "
        f"(model = 'A') = (user_id % 10 < {cut})"
    ).fetchall()  # fmt: skip
    con.close()


def test_an_unpaired_report_and_its_sample_ratio_warning(warehouse, tmp_path, capsys):
    served_arms(warehouse, 0.7)
    base = (ROOT / "warehouse_examples" / "daily_report.toml").read_text()
    base = base.replace('warehouse = "warehouse.duckdb"', f"warehouse = {str(warehouse)!r}")
    base = base.replace('recommendations = "recommendations"', 'recommendations = "skewed"')
    for split, warned in (("", True), ("expected_split = {A = 0.7, B = 0.3}\n", False)):
        path = tmp_path / "r.toml"
        path.write_text(base + f'design = "unpaired"\n{split}')
        code = cli.main(["report", str(path), "--date", str(DAYS[0]), "--force"])
        err = capsys.readouterr().err
        assert code == 0, err
        lines = [line for line in err.splitlines() if line.startswith("warning:")]
        assert bool(lines) == warned, err
        if warned:
            assert len(lines) == 1 and "sample-ratio mismatch: srm_p_value" in lines[0]
    # the page names the design and flags the period (written first without the split)
    path.write_text(base + 'design = "unpaired"\n')
    page = tmp_path / "page.html"
    assert cli.main(["report", str(path), "--date", str(DAYS[0]), "--force", "--html", str(page)]) == 0
    html = page.read_text()
    assert "t test (unpaired)" in html
    assert f'<p class="srm">Sample-ratio mismatch (srm_p_value &lt; 0.001) in {DAYS[0]}' in html
    con = connect(warehouse)
    rows = comparisons.read(con, "sqlmetrics_comparisons", "daily_ab").to_pylist()
    assert {r["design"] for r in rows} == {"unpaired"}
    # the stored row is compare()'s on the period's served lists
    recs, truth = (con.table(t).filter(f"day = DATE '{DAYS[0]}'") for t in ("skewed", "events"))
    direct = sqlmetrics.compare(con, recs, METRICS, truth=truth, by="model", baseline="A", design="unpaired",
                                **INPUTS).to_pylist()  # fmt: skip
    by_metric = {(r["metric"], r["k"]): r for r in rows}
    for d in direct:
        name, _, k = d["metric"].partition("@")
        stored_row = by_metric[(name, int(k))]
        same = ("users", "baseline_users", "delta", "p_value", "srm_p_value")
        assert all(stored_row[c] == d[c] for c in same)
    con.close()


def test_the_online_report_and_the_readout_of_both_designs(warehouse, tmp_path):
    configs = []
    for name in ("daily_report", "online_report"):
        path = tmp_path / f"{name}.toml"
        path.write_text(
            (ROOT / "warehouse_examples" / f"{name}.toml").read_text()
            .replace('warehouse = "warehouse.duckdb"', f"warehouse = {str(warehouse)!r}")
        )  # fmt: skip
        assert cli.main(["report", str(path), "--from", "2026-11-01", "--to", "2026-11-02", "-q"]) == 0
        configs += ["--config", str(path)]
    done = subprocess.run(
        [sys.executable, str(ROOT / "warehouse_examples" / "daily_report.py"), *configs],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "daily_ab: each model against A, paired, t test," in done.stdout
    assert "online_ab: each model against A, unpaired, t test with CUPED," in done.stdout
    con = connect(warehouse, read_only=True)
    rows = comparisons.read(con, "sqlmetrics_comparisons", "online_ab").to_pylist()
    assert {r["design"] for r in rows} == {"unpaired"} and all(r["theta"] is not None for r in rows)
    # the whole range pools every user of every day, each with their covariate
    config = sqlmetrics.reports.load_config(configs[-1])
    pooled = compare_periods(con, config, periods_between("day", DAYS[0], DAYS[1])).to_pylist()
    con.close()
    assert all(r["design"] == "unpaired" and r["variance_reduction"] > 0 for r in pooled)
    day_users = sum(r["users"] + r["baseline_users"] for r in rows if r["metric"] == "ndcg")
    assert sum(r["users"] + r["baseline_users"] for r in pooled if r["metric"] == "ndcg@10") == day_users
