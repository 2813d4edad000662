"""`sqlmetrics off-policy`: off_policy() from the command line."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics.cli.main import main
from tests.off_policy_reference import random_log


@pytest.fixture
def db(tmp_path):
    impressions, target = random_log(np.random.default_rng(4), 30, 4, 2)
    path = str(tmp_path / "log.duckdb")
    con = duckdb.connect(path)
    for name, rows in (("impressions", impressions), ("target", target)):
        con.register("frame", pa.Table.from_pylist(rows))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
        con.unregister("frame")
    con.close()
    return path


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_json_output_is_off_policys(db, capsys):
    status = main(["off-policy", "impressions", "--db", db, "--target", "target",
                   "--estimators", "iips,snrips,logging", "--baseline", "logging",
                   "--position-weights", "dcg", "--clip", "5", "--format", "json"])
    assert status == 0
    printed = json.loads(capsys.readouterr().out)
    con = duckdb.connect(db, read_only=True)
    expected = sqlmetrics.off_policy(con, "impressions", ["iips", "snrips", "logging"], target="target",
                                     baseline="logging", position_weights="dcg", clip=5.0)
    assert printed == [{k: (None if v != v else v) for k, v in r.items()} for r in expected.to_pylist()]


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_within_segments(db, capsys):
    con = duckdb.connect(db)
    con.execute("CREATE VIEW shown AS SELECT *, user_id % 2 AS half FROM impressions")
    con.close()
    status = main(["off-policy", "shown", "--db", db, "--target", "target", "--estimators", "iips",
                   "--within", "half", "--format", "json"])
    assert status == 0
    printed = json.loads(capsys.readouterr().out)
    assert [(r["half"], r["estimator"]) for r in printed] == [(0, "iips"), (1, "iips")]
    assert main(["off-policy", "shown", "--db", db, "--target", "target", "--estimators", "iips",
                 "--within", "half", "--by", "half"]) == 2
    err = capsys.readouterr().err
    assert "name the column 'half' twice" in err and err.count("\n") == 1


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_readable_table_and_one_line_errors(db, capsys):
    assert main(["off-policy", "impressions", "--db", db, "--target", "target", "--estimators", "iips"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("estimator") and "[" in out
    assert main(["off-policy", "impressions", "--db", db, "--target", "target", "--estimators", "ips"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sqlmetrics: unknown estimator 'ips'") and err.count("\n") == 1
    assert main(["off-policy", "impressions", "--db", db, "--estimators", "iips", "--pscore-item-position",
                 "pscore_cascade", "--target", "target", "--position-weights", "x"]) == 2


@pytest.mark.filterwarnings("ignore::sqlmetrics.OffPolicyWarning")
def test_baseline_another_target(db, capsys):
    """--baseline SOURCE: another target ranking, as off_policy(baseline=) takes it."""
    status = main(["off-policy", "impressions", "--db", db, "--target", "target",
                   "--estimators", "iips,sniips", "--baseline", "target", "--format", "json"])
    assert status == 0
    printed = json.loads(capsys.readouterr().out)
    assert [(r["baseline"], r["delta"], r["p_value"]) for r in printed] == [("target", 0.0, 1.0)] * 2
