"""Parity with trec_eval 10.0 on its own test collection (usnistgov/trec_eval, test/).

Each expected output was produced by trec_eval (commands in the data dir's README.md); here
sqlmetrics computes the same measures from the same inputs and every per-query value and the
`all` mean must agree to the 4 decimals trec_eval prints.

    out.test.aq       trec_eval -m all_trec -q     qrels.test       results.test
    out.test.aqc      trec_eval -m all_trec -q -c  qrels.test       results.trunc    missing="zero"
    out.test.aql      trec_eval -m all_trec -q -l2 qrels.rel_level  results.test     threshold=2
    out.comment.test  trec_eval                    qrels.comment.test results.comment.test
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pytest
from trec_eval_data import DATA
from trec_eval_expected import Expected, query_ids, read_trec_eval_output

import sqlmetrics

# trec_eval prints %6.4f: a value agrees when it is within half a unit of the 4th decimal.
TOLERANCE = 0.00005 + 1e-12

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)

# trec_eval measure -> sqlmetrics metric name. recip_rank and map have no cutoff in trec_eval;
# with k at least the longest list (checked below) mrr@k and map@k are the same quantity.
LONGEST_LIST = 1000
OURS: dict[str, str] = {
    **{f"ndcg_cut_{k}": f"ndcg@{k}" for k in CUTOFFS},
    **{f"P_{k}": f"precision@{k}" for k in CUTOFFS},
    **{f"recall_{k}": f"recall@{k}" for k in CUTOFFS},
    **{f"map_cut_{k}": f"map@{k}" for k in CUTOFFS},
    "recip_rank": f"mrr@{LONGEST_LIST}",
    "Rprec": "r_precision",
}
ALL_TREC_MEASURES = tuple(OURS)

# The default trec_eval measures (out.comment.test) that sqlmetrics computes.
COMMENT_MEASURES = (*(f"P_{k}" for k in CUTOFFS), "map", "recip_rank", "Rprec")
OURS_WITH_MAP = {**OURS, "map": f"map@{LONGEST_LIST}"}


@dataclass(frozen=True)
class Case:
    expected: str  # trec_eval output file
    qrels: str
    run: str
    threshold: int = 1  # trec_eval -l N
    missing: str = "skip"  # trec_eval -c: "zero"


CASES = {
    "aq": Case("out.test.aq", "qrels.test", "results.test"),
    "aqc": Case("out.test.aqc", "qrels.test", "results.trunc", missing="zero"),
    "aql": Case("out.test.aql", "qrels.rel_level", "results.test", threshold=2),
    "comment": Case("out.comment.test", "qrels.comment.test", "results.comment.test"),
}
ALL_TREC_CASES = ("aq", "aqc", "aql")


def data_dir() -> Path:
    """trec_eval's test collection, in the repository (tests/data/trec_eval)."""
    return DATA


@dataclass(frozen=True)
class Computed:
    expected: Expected
    per_user: dict[str, dict[str, float]]  # qid -> metric -> value
    mean: dict[str, float]  # metric -> mean over users, and "users"
    longest_list: int


@functools.cache
def compute(case_name: str) -> Computed:
    """Run sqlmetrics once per case, for every measure of ours the expected file contains."""
    case = CASES[case_name]
    root = data_dir()
    expected = read_trec_eval_output(root / case.expected)
    present = {measure for measure, _ in expected}
    metrics = list(dict.fromkeys(OURS_WITH_MAP[m] for m in OURS_WITH_MAP if m in present))
    run = sqlmetrics.read_run(root / case.run)
    qrels = sqlmetrics.read_qrels(root / case.qrels)
    options = {"truth": qrels, "threshold": case.threshold, "missing": case.missing}
    con = duckdb.connect()
    try:
        rows = sqlmetrics.evaluate(con, run, metrics, per_user=True, **options).to_pylist()
        (mean,) = sqlmetrics.evaluate(con, run, metrics, **options).to_pylist()
    finally:
        con.close()
    per_user: dict[str, dict[str, float]] = {}
    for row in rows:
        qid = row.pop("user_id")
        assert qid not in per_user, f"two rows for user {qid!r}"
        per_user[qid] = row
    counts = pc.value_counts(run["user_id"]).field("counts")
    longest = pc.max(counts).as_py()
    return Computed(expected, per_user, mean, longest)


def mismatches(computed: Computed, measure: str) -> list[str]:
    """Every (qid, ours, trec_eval) that disagrees beyond trec_eval's printed precision."""
    column = OURS_WITH_MAP[measure]
    problems = []
    for (m, qid), want in sorted(computed.expected.items()):
        if m != measure:
            continue
        if qid == "all":
            got = computed.mean[column]
        elif qid not in computed.per_user:
            problems.append(f"{measure} {qid}: no row from sqlmetrics, trec_eval {want:.4f}")
            continue
        else:
            got = computed.per_user[qid][column]
        if got is None or not abs(got - want) <= TOLERANCE:
            problems.append(f"{measure} {qid}: sqlmetrics {got!r} ({column}), trec_eval {want:.4f}")
    return problems


def check_measure(case_name: str, measure: str) -> None:
    computed = compute(case_name)
    assert (measure, "all") in computed.expected, (
        f"{CASES[case_name].expected} has no 'all' line for {measure}"
    )
    if measure in ("recip_rank", "map"):
        # mrr@1000 / map@1000 stand for the uncut measures only if no list is longer.
        assert computed.longest_list <= LONGEST_LIST
    problems = mismatches(computed, measure)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("measure", ALL_TREC_MEASURES)
@pytest.mark.parametrize("case_name", ALL_TREC_CASES)
def test_all_trec_measure_matches(case_name: str, measure: str) -> None:
    computed = compute(case_name)
    # -q prints one line per evaluated query for each measure, and `all`.
    assert query_ids(computed.expected, measure) == set(computed.per_user), (
        f"{measure}: trec_eval's queries differ from the users sqlmetrics evaluated"
    )
    check_measure(case_name, measure)


@pytest.mark.parametrize("measure", COMMENT_MEASURES)
def test_comment_collection_measure_matches(measure: str) -> None:
    # Default measures: `all` only. 301 queries in the run, 31 with qrels; docnos contain '#',
    # and the run's rank column does not follow trec_eval's tie order (sqlmetrics ignores it).
    check_measure("comment", measure)


@pytest.mark.parametrize("case_name", [*ALL_TREC_CASES, "comment"])
def test_number_of_queries_matches_num_q(case_name: str) -> None:
    computed = compute(case_name)
    num_q = computed.expected[("num_q", "all")]
    assert computed.mean["users"] == num_q
    assert len(computed.per_user) == num_q


def test_cases_cover_every_expected_per_query_measure() -> None:
    """Guard against a silently empty parametrization: each all_trec file lists each measure
    of ours for every query, and the measure lists are the ones the tests name."""
    for case_name in ALL_TREC_CASES:
        expected = compute(case_name).expected
        for measure in ALL_TREC_MEASURES:
            assert query_ids(expected, measure), f"{case_name}: no per-query {measure} lines"
    assert len(ALL_TREC_MEASURES) == 4 * len(CUTOFFS) + 2
