"""Reports of the measures over item groups and the other beyond-accuracy metrics: the config's
history, catalog, item_features (features) and baseline keys reach evaluate() (issue 37 item 5),
the stored values are evaluate()'s by hand, and a bad value is one line."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from sqlmetrics import evaluate
from sqlmetrics.errors import SqlMetricsError
from sqlmetrics.reports import ReportConfigError, connect, period_of, periods_between, run_report
from sqlmetrics.reports.runner import POOLED_PERIOD, compare_periods
from tests import test_reports
from tests.test_reports import DAYS, GRADES

built_warehouse = test_reports.built_warehouse
warehouse = test_reports.warehouse

METRICS = ["calibration@10", "rbo@10", "group_ee_l@10", "awrf@10", "novelty@10", "ndcg@10"]


def genres(con, tmp_path) -> str:
    """A Parquet file of (item_id, genres): multi-hot vectors of 4 genres, some items none."""
    path = tmp_path / "genres.parquet"
    con.execute(
        "COPY (SELECT item_id, list_transform(range(4), lambda d: CAST((item_id + d) % 3 = 0 "
        f"AS FLOAT)) AS genres FROM items) TO '{path}' (FORMAT parquet)"
    )
    return str(path)


def config(warehouse, tmp_path, **changes):
    con = connect(warehouse)
    path = genres(con, tmp_path)
    con.close()
    inputs = {"history": "history", "item_features": path, "features": "genres", "baseline": "A"}
    return test_reports.make_config(warehouse, metrics=METRICS, **{**inputs, **changes}), path


def test_a_report_of_calibration_rbo_and_group_exposure_stores_evaluate_s_values(warehouse, tmp_path):
    report, path = config(warehouse, tmp_path)
    con = connect(warehouse)
    outcomes = run_report(con, report, periods_between("day", DAYS[0], DAYS[1]))
    assert [o.status for o in outcomes] == ["written", "written"]
    for day in DAYS[:2]:
        recs = con.sql(f"SELECT * FROM recommendations WHERE day = DATE '{day}'")
        truth = con.sql(f"SELECT * FROM events WHERE day = DATE '{day}'")
        expected = evaluate(
            con, recs, METRICS, truth=truth, by="model", baseline="A", history="history",
            item_features=path, features="genres", action="event_type", relevance=GRADES,
        ).to_pylist()  # fmt: skip
        stored = con.execute(
            "SELECT segment['model'], metric || '@' || k, value, users FROM sqlmetrics_results "
            "WHERE period_start = ? ORDER BY ALL", [day]
        ).fetchall()  # fmt: skip
        by_hand = sorted(
            (row["model"], metric, row[metric], row["users"]) for row in expected for metric in METRICS
        )
        assert len(stored) == len(by_hand) == 2 * len(METRICS)
        for got, want in zip(stored, by_hand, strict=True):
            assert got[:2] == want[:2] and got[3] == want[3]
            assert got[2] == pytest.approx(want[2], rel=1e-12, abs=1e-15)
        assert {m: v for model, m, v, _ in stored if model == "A"}["rbo@10"] == pytest.approx(1.0)
    con.close()


def test_the_inputs_enter_the_hash_only_when_given(warehouse, tmp_path):
    report, path = config(warehouse, tmp_path)
    other, _ = config(warehouse, tmp_path, history="events")
    assert report.hash != other.hash
    plain = test_reports.make_config(warehouse)
    assert plain.hash == test_reports.make_config(warehouse, metrics=test_reports.METRICS).hash
    assert "inputs" not in plain.options() and "baseline" not in plain.options()
    assert report.options()["item_features"] == path and report.options()["baseline"] == "A"


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"history": 3}, "history must be a non-empty string"),
        ({"item_features": ""}, "item_features must be a non-empty string"),
        ({"baseline": ["A", "B"]}, "baseline must give one value (a string or a number) for each"),
        ({"baseline": True}, "baseline must give one value"),
        ({"baseline": None}, "rbo@10 compares each system's lists with a reference system's"),
        ({"metrics": ["calibration@10"]}, "no rbo metric is in metrics"),
        ({"by": []}, "for each of the report's by columns (none: set by)"),
        ({"compare": {"baseline": "A"}}, "[compare] cannot compare rbo@10"),
        ({"histroy": "history"}, "did you mean 'history'"),
    ],
)
def test_a_bad_input_or_baseline_is_a_config_error(warehouse, tmp_path, changes, message):
    data = {"history": "history", "item_features": "item_features", "baseline": "A"}
    data = {k: v for k, v in {**data, **changes}.items() if v is not None}
    with pytest.raises(ReportConfigError, match=None) as caught:
        test_reports.make_config(warehouse, metrics=data.pop("metrics", METRICS), **data)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_features_without_item_features_is_a_config_error(warehouse):
    with pytest.raises(ReportConfigError, match="features names a column of item_features"):
        test_reports.make_config(warehouse, metrics=["diversity@10"], features="genres")
    with pytest.raises(ReportConfigError, match="genre_weight names a column of item_genres"):
        test_reports.make_config(warehouse, metrics=["calibration@10"], history="history", genre_weight="w")


def test_a_report_reads_the_genres_as_rows(warehouse, tmp_path):
    """item_genres (with genre and genre_weight) reaches evaluate(): the same values as the
    vectors of the same genres."""
    con = connect(warehouse)
    path = tmp_path / "genre_rows.parquet"
    con.execute(
        "COPY (SELECT item_id, 'g' || d AS kind, 2.0 AS w FROM items, range(4) t(d) "
        f"WHERE (item_id + d) % 3 = 0) TO '{path}' (FORMAT parquet)"
    )
    con.close()
    vectors, _ = config(warehouse, tmp_path, name="vectors")
    rows = test_reports.make_config(warehouse, name="rows", metrics=METRICS, history="history",
                                    item_genres=str(path), genre="kind", genre_weight="w",
                                    baseline="A")  # fmt: skip
    assert rows.options()["genre_weight"] == "w" and rows.hash != vectors.hash
    target = test_reports.make_config(warehouse, metrics=["awrf@10"], item_genres=str(path),
                                      group_target="events")  # (only parsed here)
    assert target.options()["group_target"] == "events"
    con = connect(warehouse)
    for report in (vectors, rows):
        run_report(con, report, [period_of("day", DAYS[0])])
    stored = con.execute(
        "SELECT report, segment['model'], metric, k, value FROM sqlmetrics_results ORDER BY ALL"
    ).fetchall()
    con.close()
    by_report = {r: [row[1:] for row in stored if row[0] == r] for r in ("rows", "vectors")}
    assert len(by_report["rows"]) == 2 * len(METRICS)
    for a, b in zip(by_report["rows"], by_report["vectors"], strict=True):
        assert a[:3] == b[:3] and a[3] == pytest.approx(b[3], rel=1e-12, abs=1e-15)


def test_a_missing_input_fails_the_period_in_one_line(warehouse):
    report = test_reports.make_config(warehouse, metrics=["calibration@10"], item_features="item_features")
    con = connect(warehouse)
    with pytest.raises(Exception, match="calibration@10 needs the users' history") as caught:
        run_report(con, report, [period_of("day", DAYS[0])])
    assert "\n" not in str(caught.value)
    con.close()


def test_a_bad_baseline_exits_2_with_one_line(tmp_path, capsys):
    from sqlmetrics import cli
    from tests.test_reports import ROOT

    text = (ROOT / "warehouse_examples" / "daily_report.toml").read_text()
    without_compare = text.split("\n[compare]")[0]
    text = 'baseline = ["A", "B"]\n' + without_compare.replace('metrics = ["ndcg@10"', 'metrics = ["rbo@10"')
    path = tmp_path / "r.toml"
    path.write_text(text)
    code = cli.main(["report", str(path), "--date", "2026-11-01"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "baseline must give one value (a string or a number) for each of the report's by columns" in err


POOLED = ["novelty@10", "popularity@10", "calibration@10", "serendipity@10", "diversity@10"]


@pytest.mark.parametrize("similarity", ["features", "history"])
def test_the_whole_range_reads_the_history_of_each_pooled_user(warehouse, tmp_path, similarity):
    """Each user of each day is a unit of the pooled comparison: the history (keyed by the user
    alone) is each unit's user's, and its item counts are the whole history's once (not once per
    day: popularity@10 counts history users), so the pooled delta is the mean of the days'
    per-user differences of evaluate() (with item_features the similarity is the vectors', without
    it the history's co-occurrence)."""
    con = connect(warehouse)
    path = genres(con, tmp_path)
    features = {} if similarity == "history" else {"item_features": path, "features": "genres"}
    metrics = [m for m in POOLED if features or not m.startswith("calibration")]  # (its genres)
    report = test_reports.make_config(warehouse, metrics=metrics, history="history",
                                      compare={"baseline": "A"}, **features)  # fmt: skip
    pooled = compare_periods(con, report, periods_between("day", DAYS[0], DAYS[-1])).to_pylist()
    differences: dict[str, list[float]] = {m: [] for m in metrics}
    for day in DAYS:  # a user of two days is two units, as in the days' own comparisons
        recs = con.sql(f"SELECT * FROM recommendations WHERE day = DATE '{day}'")
        truth = con.sql(f"SELECT * FROM events WHERE day = DATE '{day}'")
        rows = evaluate(con, recs, metrics, truth=truth, by="model", history="history", per_user=True,
                        action="event_type", relevance=GRADES, **features).to_pylist()  # fmt: skip
        values = {(r["model"], r["user_id"]): r for r in rows}
        for model, user in sorted(values):
            if model == "B" and ("A", user) in values:
                for m in metrics:  # (paired where both have a value: a user without history has none)
                    b, a = values[("B", user)][m], values[("A", user)][m]
                    if a is not None and b is not None:
                        differences[m].append(b - a)
    assert sorted(r["metric"] for r in pooled) == sorted(metrics)
    for r in pooled:
        d = np.array(differences[r["metric"]])
        assert r["users"] == len(d) > 300
        assert r["delta"] == pytest.approx(float(d.mean()), abs=1e-12)
        assert r["p_value"] == pytest.approx(scipy.stats.ttest_1samp(d, 0).pvalue, abs=1e-10)
        assert r["mean"] != 0 and d.std() > 0
    con.close()


@pytest.mark.parametrize("role", ["recommendations", "history"])
def test_an_input_with_the_pooled_period_column_is_refused_in_one_line(warehouse, role):
    con = connect(warehouse)
    source = {"recommendations": "recommendations", "history": "history"}[role]
    con.execute(f"CREATE VIEW clash AS SELECT *, 1 AS {POOLED_PERIOD} FROM {source}")
    inputs = {"recommendations": "recommendations", "history": "history", role: "clash"}
    report = test_reports.make_config(warehouse, metrics=["novelty@10"], compare={"baseline": "A"}, **inputs)
    days = periods_between("day", DAYS[0], DAYS[1])
    with pytest.raises(SqlMetricsError, match=f"has a column '{POOLED_PERIOD}', the name the whole") as e:
        compare_periods(con, report, days)
    assert "\n" not in str(e.value) and "(clash)" in str(e.value)
    assert compare_periods(con, report, days[:1]).num_rows == 1  # (one period: nothing added)
    con.close()
