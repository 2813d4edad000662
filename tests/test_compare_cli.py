"""`sqlmetrics compare`: the same numbers as sqlmetrics.compare(), in every format."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sqlmetrics
from sqlmetrics.cli import main
from tests.test_compare import make_data


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    recs, truth = make_data(80, seed=3)
    arms = [{"A": 1, "B": 2, "C": 3}[m] for m in recs.column("model").to_pylist()]
    recs = recs.append_column("arm", pa.array(arms))
    pq.write_table(recs, folder / "recs.parquet")
    pq.write_table(truth, folder / "truth.parquet")
    expected = sqlmetrics.compare(
        duckdb.connect(), recs, ["ndcg@10", "recall@5"], truth=truth, by="model", baseline="A"
    )
    return folder, expected


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_csv_and_json_equal_the_api(files, capsys):
    folder, expected = files
    common = [str(folder / "recs.parquet"), "--truth", str(folder / "truth.parquet"), "--by", "model",
              "--baseline", "A", "--metrics", "ndcg@10,recall@5"]  # fmt: skip
    status, out, err = run(capsys, "compare", *common, "--format", "csv")
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["model"] for r in rows] == expected.column("model").to_pylist()
    for r, e in zip(rows, expected.to_pylist(), strict=True):
        assert float(r["p_value"]) == pytest.approx(e["p_value"], rel=1e-12)
        assert float(r["delta"]) == pytest.approx(e["delta"], rel=1e-12)
    status, out, _ = run(capsys, "compare", *common, "--format", "json")
    assert status == 0 and [r["p_adjusted"] for r in json.loads(out)] == pytest.approx(
        expected.column("p_adjusted").to_pylist(), rel=1e-12
    )
    status, _, _ = run(capsys, "compare", *common, "-o", str(folder / "out.parquet"))
    assert status == 0 and pq.read_table(folder / "out.parquet").equals(expected)
    status, _, err = run(capsys, "compare", *common, "--partitions", "3", "-o", str(folder / "p.parquet"))
    assert status == 0 and pq.read_table(folder / "p.parquet").equals(expected)
    assert err.count("partition ") >= 3  # a progress line per partition
    status, _, err = run(capsys, "compare", *common, "--partitions", "0")
    assert status == 2 and "partitions must be a whole number" in err and len(err.strip().splitlines()) == 1


def test_readable_table_marks_significant_rows(files, capsys):
    folder, expected = files
    status, out, _ = run(
        capsys, "compare", str(folder / "recs.parquet"), "--truth", str(folder / "truth.parquet"),
        "--by", "model", "--baseline", "A", "--metrics", "ndcg@10,recall@5",
    )  # fmt: skip
    assert status == 0
    lines = out.splitlines()
    body = lines[2 : 2 + expected.num_rows]
    marks = [line.endswith("*") for line in body]
    assert marks == [p < 0.05 for p in expected.column("p_adjusted").to_pylist()]
    assert lines[-1] == "* p_adjusted < 0.05"


def test_latex_and_numeric_baseline(files, capsys):
    folder, expected = files
    status, out, err = run(
        capsys, "compare", str(folder / "recs.parquet"), "--truth", str(folder / "truth.parquet"),
        "--by", "arm", "--baseline", "1", "--metrics", "ndcg@10,recall@5", "--format", "latex",
        "--correction", "none",
    )  # fmt: skip
    assert status == 0, err
    assert out.startswith("\\begin{tabular}") and "ndcg@10" in out and "recall@5" in out
    assert out.count("\\\\") == 1 + expected.num_rows


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--baseline", "Z"], "not a value"),
        (["--baseline", "A", "--test", "nope"], "invalid choice"),
        (["--baseline", "A", "--confidence", "2"], "confidence"),
    ],
)
def test_errors_are_one_line_exit_2(files, capsys, extra, message):
    folder, _ = files
    status, _, err = run(
        capsys, "compare", str(folder / "recs.parquet"), "--truth", str(folder / "truth.parquet"),
        "--by", "model", "--metrics", "ndcg@10", *extra,
    )  # fmt: skip
    assert status == 2 and len(err.strip().splitlines()) == 1 and message in err


def test_the_unpaired_design_covariate_and_expected_split(tmp_path, capsys):
    from tests.test_compare_unpaired import ab_data

    recs, truth = ab_data(300, seed=8, models=("A", "B"), shares=[0.7, 0.3])
    pre = pa.table({"user_id": list(range(300)), "pre": [float(u % 7) for u in range(300)]})
    for name, table in (("recs", recs), ("truth", truth), ("pre", pre)):
        pq.write_table(table, tmp_path / f"{name}.parquet")
    common = [str(tmp_path / "recs.parquet"), "--truth", str(tmp_path / "truth.parquet"), "--by", "model",
              "--baseline", "A", "--metrics", "ndcg@10", "--design", "unpaired", "--test", "mannwhitney",
              "--covariate", str(tmp_path / "pre.parquet")]  # fmt: skip
    kw = {"truth": truth, "by": "model", "baseline": "A", "design": "unpaired", "test": "mannwhitney",
          "covariate": pre}  # fmt: skip
    status, _, err = run(capsys, "compare", *common, "-o", str(tmp_path / "out.parquet"))
    expected = sqlmetrics.compare(duckdb.connect(), recs, ["ndcg@10"], **kw)
    assert status == 0 and pq.read_table(tmp_path / "out.parquet").equals(expected)
    assert expected.column("theta").to_pylist()[0] is not None
    # a 70/30 split against equal shares: one warning line; against its own split, none
    assert "warning: sample-ratio mismatch: srm_p_value" in err and len(err.strip().splitlines()) == 1
    status, out, err = run(capsys, "compare", *common, "--expected-split", "A=0.7,B=0.3", "--format", "json")
    split = sqlmetrics.compare(duckdb.connect(), recs, ["ndcg@10"], expected_split={"A": 0.7, "B": 0.3}, **kw)
    assert status == 0 and err == ""
    srm = split.column("srm_p_value").to_pylist()[0]
    assert json.loads(out)[0]["srm_p_value"] == pytest.approx(srm, rel=1e-12)
    for bad, message in (("A0.7", "ARM=SHARE"), ("A=0.7,C=0.3", "does not name the arm 'B'")):
        status, _, err = run(capsys, "compare", *common, "--expected-split", bad)
        assert status == 2 and message in err and len(err.strip().splitlines()) == 1, err
    status, _, err = run(capsys, "compare", *common[:-4], "--design", "paired")
    assert status == 2 and "design='paired': no unit has values on both sides" in err
