"""The command line's own words: its help offers only what the command takes, points where
the answer is, and its advice names options (not the API's keywords)."""

from __future__ import annotations

import csv
import datetime
import io
import shutil

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics.cli import main
from sqlmetrics.cli import report as report_cli
from tests.test_cli import ROOT, logs  # noqa: F401 - the example warehouse's fixture
from tests.test_compare import make_data


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wording")
    recs, truth = make_data(30, seed=9, models=("A", "B"))
    models = recs.column("model").to_pylist()
    day = {"A": datetime.date(2024, 1, 1), "B": datetime.date(2024, 1, 2)}
    recs = recs.append_column("day", pa.array([day[m] for m in models], pa.date32()))
    recs = recs.append_column("is_a", pa.array([m == "A" for m in models]))
    recs = recs.append_column("arm", pa.array([{"A": 1, "B": 2}[m] for m in models]))
    pq.write_table(recs, folder / "recs.parquet")
    pq.write_table(truth, folder / "truth.parquet")
    expected = sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", truth=truth, by="model", baseline="A")
    return folder, expected


def test_compare_help_offers_no_per_user_and_points_to_docs_compare(capsys):
    status, out, _ = run(capsys, "compare", "--help")
    assert status == 0
    assert "--per-user" not in out
    assert "docs/compare.md" in out and "README" not in out
    flat = " ".join(out.split())
    assert (
        "which (user, item) pairs are checked for duplicates: those that reach the top k, or every row"
        in flat
    )
    status, out, _ = run(capsys, "evaluate", "--help")
    assert status == 0 and "--per-user" in out  # evaluate keeps it


def test_compare_rejects_per_user_as_an_unknown_option(files, capsys):
    folder, _ = files
    status, _, err = run(
        capsys,
        "compare",
        folder / "recs.parquet",
        "--truth",
        folder / "truth.parquet",
        "--by",
        "model",
        "--baseline",
        "A",
        "--metrics",
        "ndcg@10",
        "--per-user",
    )
    assert status == 2 and len(err.strip().splitlines()) == 1 and "unrecognized arguments: --per-user" in err


@pytest.mark.parametrize(
    "by, baseline, shown",
    [("day", "2024-01-01", "2024-01-02"), ("is_a", "true", "false"), ("is_a", "TRUE", "false")],
)
def test_compare_takes_a_date_or_boolean_baseline(files, capsys, by, baseline, shown):
    folder, expected = files
    status, out, err = run(
        capsys,
        "compare",
        folder / "recs.parquet",
        "--truth",
        folder / "truth.parquet",
        "--by",
        by,
        "--baseline",
        baseline,
        "--metrics",
        "ndcg@10",
        "--format",
        "csv",
    )
    assert status == 0, err
    [row] = list(csv.DictReader(io.StringIO(out)))
    assert row[by] == shown
    # the same numbers as by model
    assert float(row["delta"]) == pytest.approx(expected.column("delta")[0].as_py(), rel=1e-15)


@pytest.mark.parametrize(
    "by, baseline, message",
    [
        ("day", "2024-13-01", "--baseline '2024-13-01': the by column is DATE, give a date, YYYY-MM-DD"),
        ("is_a", "1", "--baseline '1': the by column is BOOLEAN, give true or false"),
        ("arm", "x", "--baseline 'x': the by column is BIGINT, give a number"),
        ("model,day", "A,yesterday", "--baseline 'yesterday': the by column is DATE"),
    ],
)
def test_compare_baseline_of_the_wrong_type_is_one_line(files, capsys, by, baseline, message):
    folder, _ = files
    status, _, err = run(
        capsys,
        "compare",
        folder / "recs.parquet",
        "--truth",
        folder / "truth.parquet",
        "--by",
        by,
        "--baseline",
        baseline,
        "--metrics",
        "ndcg@10",
    )
    assert status == 2 and len(err.strip().splitlines()) == 1 and message in err, err


def test_compare_within_the_by_column_says_so(files, capsys):
    folder, _ = files
    status, _, err = run(
        capsys,
        "compare",
        folder / "recs.parquet",
        "--truth",
        folder / "truth.parquet",
        "--by",
        "model",
        "--within",
        "model",
        "--baseline",
        "A",
        "--metrics",
        "ndcg@10",
    )
    assert status == 2 and "within='model' is also a by column" in err


@pytest.mark.parametrize("command", ["evaluate", "sql", "compare"])
@pytest.mark.parametrize(
    "extra, message",
    [
        (
            [],
            "and no --truth was given; pass --truth SOURCE (user, item[, relevance] rows), or --relevance "
            "COL, or --action COL with --relevance purchase=3,view=1",
        ),
        (
            ["--action", "model"],
            "--action model needs --relevance with the grade of each action, e.g. "
            "--relevance purchase=3,view=1",
        ),
        (["--action", "model", "--relevance", "grade"], "--action model needs --relevance with the grade"),
        (
            ["--relevance", "A=1,B=2"],
            "--relevance A=1,B=2 grades actions: name their column with --action COL",
        ),
    ],
)
def test_relevance_advice_is_in_the_command_lines_words(files, capsys, command, extra, message):
    folder, _ = files
    by = ["--by", "model", "--baseline", "A"] if command == "compare" else []
    status, _, err = run(capsys, command, folder / "recs.parquet", "--metrics", "ndcg@10", *by, *extra)
    assert status == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert "relevance={" not in err and "truth=" not in err and "action=" not in err


def test_report_of_one_period_says_1_period(logs, capsys, tmp_path, monkeypatch):  # noqa: F811
    warehouse = tmp_path / "warehouse.duckdb"
    shutil.copy(logs / "warehouse.duckdb", warehouse)
    monkeypatch.setattr(report_cli, "_today", lambda zone: datetime.date(2026, 11, 3))
    config = ROOT / "warehouse_examples" / "daily_report.toml"
    status, _, err = run(capsys, "report", config, "--db", warehouse, "--html", tmp_path / "r.html")
    assert status == 0, err
    assert ": 1 period: 1 written (" in err and "1 periods" not in err
    page = (tmp_path / "r.html").read_text()
    assert "(1 period)" in page and "1 periods" not in page


def test_compare_prints_a_p_below_1e_300_as_such():
    from sqlmetrics.cli.compare import readable

    row = {"model": "B", "metric": "ndcg@10", "users": 10, "baseline_mean": 0.5, "mean": 0.6, "delta": 0.1}
    row |= {"ci_low": 0.05, "ci_high": 0.15, "p_value": 0.0, "p_adjusted": 5e-310}
    text = readable(pa.Table.from_pylist([row]), 0.05)
    assert text.count("< 1e-300") == 2 and "0.000e+00" not in text
