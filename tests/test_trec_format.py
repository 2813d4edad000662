"""`sqlmetrics evaluate RUN --truth QRELS --format trec` against trec_eval 10.0's own expected
outputs (tests/data/trec_eval, commands in its README.md): the expected file, kept to
the measures this version of sqlmetrics computes (decided from the registry at run time, so
each measure added later is diffed too), must equal sqlmetrics' output byte for byte."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from trec_eval_data import DATA

from sqlmetrics.cli import main
from sqlmetrics.errors import SqlMetricsError
from sqlmetrics.names.metric_names import parse_metrics
from sqlmetrics.names.peer_names import resolve

# (expected file, qrels, run, sqlmetrics options, trec_eval -m arguments or None: the default)
ALL_TREC = ["all_trec"]
MEAS_PARAMS = [
    "iprec_at_recall..10,.20,.25,.75,.50", "P.5,7,3", "recall.20,2000", "Rprec_mult.5.0,0.2,0.35",
    "utility.2,-1,0,0", "11pt_avg..25,.5,.75", "ndcg.1=3,2=9,4=4.5", "ndcg_cut.10,20,23.4",
    "success.2,5,20",
]  # fmt: skip
CASES = [
    ("out.test", "qrels.test", "results.test", [], None),
    ("out.comment.test", "qrels.comment.test", "results.comment.test", [], None),
    ("out.test.a", "qrels.test", "results.test", [], ALL_TREC),
    ("out.test.aq", "qrels.test", "results.test", ["--per-user"], ALL_TREC),
    ("out.test.aqc", "qrels.test", "results.trunc", ["--per-user", "--missing", "zero"], ALL_TREC),
    (
        "out.test.aqcM", "qrels.test", "results.trunc",
        ["--per-user", "--missing", "zero", "--max-per-user", "100"], ALL_TREC,
    ),  # fmt: skip
    (
        "out.test.aql", "qrels.rel_level", "results.test", ["--per-user", "--threshold", "2"],
        [*ALL_TREC, "relstring.20"],
    ),  # fmt: skip
    ("out.test.meas_params", "qrels.test", "results.test", ["--per-user"], MEAS_PARAMS),
]


def supported(measure: str) -> bool:
    """Whether sqlmetrics computes trec_eval's `measure` (runid: printed from the run's tag)."""
    if measure == "runid":
        return True
    found = resolve(measure)
    if found is None or len(found.names) != 1 or found.names[0].canonical is None:
        return False
    try:
        parse_metrics([found.names[0].canonical])
    except SqlMetricsError:
        return False
    return True


def accepted(argument: str) -> bool:
    try:
        parse_metrics([argument])
    except SqlMetricsError:
        return False
    return True


def run_cli(args: list[str], tmp_path: Path) -> str:
    out = tmp_path / "out.txt"
    assert main([*args, "--format", "trec", "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("expected_file, qrels, run, options, measures", CASES, ids=[c[0] for c in CASES])
def test_trec_format_equals_trec_eval(tmp_path, expected_file, qrels, run, options, measures):
    expected_lines = (DATA / expected_file).read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in expected_lines if supported(line.split("\t")[0].strip())]
    names = {line.split("\t")[0].strip() for line in kept}
    # not trivially small: today P, recall, ndcg_cut, map_cut, success, Rprec, runid at least
    floor = 35 if measures and measures[0] == "all_trec" else (5 if measures else 10)
    assert len(names) >= floor, sorted(names)
    args = ["evaluate", str(DATA / run), "--truth", str(DATA / qrels), *options]
    if measures is not None:
        wanted = [m for m in measures if accepted(m)]  # the -m arguments this version takes
        args += ["--metrics", ",".join(wanted)]
    produced = run_cli(args, tmp_path).splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(kept, produced, expected_file, "sqlmetrics"))
    assert diff == "", diff


def test_the_default_set_of_a_trec_run_is_official(tmp_path):
    args = ["evaluate", str(DATA / "results.test"), "--truth", str(DATA / "qrels.test")]
    default = run_cli(args, tmp_path)
    assert default == run_cli([*args, "--metrics", "official"], tmp_path)
    assert default.startswith("runid                 \tall\tSTANDARD\n")


def test_metrics_are_required_for_other_sources(tmp_path, capsys):
    recs = tmp_path / "recs.csv"
    recs.write_text("user_id,item_id,score,relevance\n1,a,0.5,1\n")
    assert main(["evaluate", str(recs)]) == 2
    assert "--metrics LIST is required" in capsys.readouterr().err


def test_trec_format_refuses_by(tmp_path, capsys):
    args = ["evaluate", str(DATA / "results.test"), "--truth", str(DATA / "qrels.test"), "--by", "run"]
    assert main([*args, "--format", "trec"]) == 2
    assert "--format trec" in capsys.readouterr().err


def test_trec_format_refuses_a_unit_of_several_columns(tmp_path, capsys):
    recs = tmp_path / "recs.csv"
    recs.write_text("user_id,day,item_id,score,relevance\n1,2,a,0.5,1\n")
    args = ["evaluate", str(recs), "--metrics", "P_5", "--user", "user_id,day", "--per-user"]
    assert main([*args, "--format", "trec"]) == 2
    assert "one qid" in capsys.readouterr().err


def test_max_per_user_cuts_the_run_in_trec_eval_order(tmp_path):
    """-M 100 on results.test: P_200 counts the hits of the first 100 documents over 200."""
    base = ["evaluate", str(DATA / "results.test"), "--truth", str(DATA / "qrels.test")]
    cut = run_cli([*base, "--metrics", "P_100,P_200", "--max-per-user", "100"], tmp_path)
    whole = run_cli([*base, "--metrics", "P_100,P_200"], tmp_path)
    p100 = float(whole.splitlines()[0].split("\t")[2])
    p200_cut = float(cut.splitlines()[1].split("\t")[2])
    assert p200_cut == pytest.approx(p100 / 2, abs=0.0001)
