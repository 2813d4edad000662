"""Properties that hold whatever the data: bounds, perfect rankings, determinism (threads,
input row order), and the aggregate as the mean of the per-user values."""

from __future__ import annotations

import math
import random

import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import CUTOFF_METRICS, TIE_AVERAGED
from strategies import FAST, GRADES, batch

import sqlmetrics

CON = duckdb.connect()
# each example a batch of 1 to 8 random evaluations (strategies.batch: ~40 per test)
SETTINGS = settings(FAST, max_examples=10)
KS = (1, 3, 5)
BOUNDED = ("ndcg", "precision", "recall", "hit_rate", "mrr", "map", "mar", "r_precision")

conventions = st.fixed_dictionaries(
    {
        "ties": st.sampled_from(["item_desc", "item_asc", "trec_eval", "average"]),
        "gain": st.sampled_from(["linear", "exponential"]),
        "empty": st.sampled_from(["zero", "skip"]),
        "missing": st.sampled_from(["skip", "zero"]),
        "ap_denominator": st.sampled_from(["relevant", "min_k"]),
        "threshold": st.sampled_from([1, 2]),
    }
)


def metrics_for(ties: str) -> list[str]:
    names = TIE_AVERAGED if ties == "average" else CUTOFF_METRICS
    return [f"{n}@{k}" for n in names for k in KS] + ([] if ties == "average" else ["r_precision"])


def evaluate(data, metrics, *, per_user, recs=None, truth=None, con=CON, **options):
    recs = data.recs_table() if recs is None else recs
    truth = data.truth_table() if truth is None else truth
    by = "model" if data.grouped else None
    return sqlmetrics.evaluate(con, recs, metrics, truth=truth, by=by, per_user=per_user, **options)


@SETTINGS
@given(data=batch(), options=conventions)
def test_bounds(data, options):
    metrics = metrics_for(options["ties"])
    rows = evaluate(data, metrics, per_user=True, **options).to_pylist()
    for row in rows:
        for m in metrics:
            value = row[m]
            assert value is not None and math.isfinite(value), (m, row)
            assert value >= 0, (m, row)
            if m.split("@")[0] in BOUNDED:
                assert value <= 1 + 1e-12, (m, row)
        for k in KS:
            assert row[f"dcg@{k}"] <= row[f"idcg@{k}"] * (1 + 1e-12), row
            assert row[f"ndcg@{k}"] <= 1 + 1e-12, row


@st.composite
def perfect_rankings(draw):
    """Single-table rows whose scores sort the items by relevance, with no tied scores."""
    rows = []
    for user in draw(st.lists(st.integers(1, 9), min_size=1, max_size=5, unique=True)):
        grades = draw(st.lists(st.sampled_from(GRADES), min_size=1, max_size=8))
        grades[0] = draw(st.integers(1, 3))  # at least one positive gain
        # distinct scores, higher for higher grades (equal grades get any distinct scores)
        for n, grade in enumerate(sorted(grades)):
            rows.append({"user_id": user, "item_id": f"i{draw(st.integers(0, 99))}_{n}",
                         "score": n / 10, "relevance": grade})
    return draw(st.permutations(rows))


@SETTINGS
@given(
    rows=perfect_rankings(),
    ties=st.sampled_from(["item_desc", "item_asc", "trec_eval", "average"]),
    gain=st.sampled_from(["linear", "exponential"]),
    truth_mode=st.booleans(),
)
def test_perfect_ranking_has_ndcg_one(rows, ties, gain, truth_mode):
    metrics = [f"ndcg@{k}" for k in (1, 2, 3, 5, 10)]
    table = pa.Table.from_pylist(list(rows))
    if truth_mode:
        recs = table.select(["user_id", "item_id", "score"])
        truth = table.select(["user_id", "item_id", "relevance"])
    else:
        recs, truth = table, None
    result = sqlmetrics.evaluate(CON, recs, metrics, truth=truth, ties=ties, gain=gain, per_user=True)
    for row in result.to_pylist():
        for m in metrics:
            assert row[m] is not None and math.isclose(row[m], 1.0, rel_tol=1e-12), (m, row)


def assert_identical(expected: list[dict], actual: list[dict], what: str) -> None:
    """Equal to the last bit; a difference beyond rounding is reported as such first."""
    assert len(expected) == len(actual), what
    for a, b in zip(expected, actual, strict=True):
        assert a.keys() == b.keys(), what
        for column, value in a.items():
            other = b[column]
            if isinstance(value, float) and isinstance(other, float):
                assert math.isclose(value, other, rel_tol=1e-12, abs_tol=1e-15), (
                    f"{what}: {column} differs beyond rounding: {value!r} vs {other!r} in {a}"
                )
    differences = [
        (column, a[column], b[column], {c: a[c] for c in ("model", "user_id") if c in a})
        for a, b in zip(expected, actual, strict=True)
        for column in a
        if a[column] != b[column]
    ]
    assert not differences, f"{what}: not bitwise identical, e.g. {differences[:3]}"


def run_with_threads(con, threads, call):
    con.execute(f"SET threads={threads}").fetchall()
    try:
        return call()
    finally:
        con.execute("RESET threads").fetchall()


# 15, not 40: these few rows fit one row group, so DuckDB's second thread has little to do here;
# the parallel schedules are exercised by the test on larger data below
@settings(SETTINGS, max_examples=4)
@given(data=batch(), options=conventions)
def test_same_result_with_one_or_two_threads(data, options):
    metrics = metrics_for(options["ties"])
    for per_user in (True, False):
        one, two = (
            run_with_threads(CON, n, lambda p=per_user: evaluate(data, metrics, per_user=p, **options))
            for n in (1, 2)
        )
        assert one.schema == two.schema
        assert_identical(one.to_pylist(), two.to_pylist(), f"threads=1 vs threads=2, per_user={per_user}")


def large_inputs(seed: int, users: int = 4000, items: int = 30):
    """Enough rows (~120k recs, ~80k truth) for DuckDB to split the work between threads."""
    rng = random.Random(seed)
    recs = {"user_id": [], "item_id": [], "score": []}
    truth = {"user_id": [], "item_id": [], "relevance": []}
    for user in range(users):
        for item in rng.sample(range(100), items):
            recs["user_id"].append(user)
            recs["item_id"].append(item)
            recs["score"].append(rng.randrange(8) / 4)
        for item in rng.sample(range(100), rng.randrange(1, 40)):
            truth["user_id"].append(user)
            truth["item_id"].append(item)
            truth["relevance"].append(rng.choice(GRADES))
    return pa.table(recs), pa.table(truth)


@pytest.mark.parametrize("ties", ["item_desc", "average"])
def test_same_result_with_one_or_two_threads_on_larger_data(ties):
    """Parallel scans and aggregations only happen on more than one row group; a 2-thread
    run is repeated since a parallel schedule can differ from run to run."""
    recs, truth = large_inputs(seed=7)
    metrics = metrics_for(ties)
    con = duckdb.connect()
    try:
        for per_user in (True, False):
            def call(per_user=per_user):
                table = sqlmetrics.evaluate(con, recs, metrics, truth=truth, ties=ties, per_user=per_user)
                return table.to_pylist()

            one = run_with_threads(con, 1, call)
            for attempt in range(3):
                two = run_with_threads(con, 2, call)
                assert_identical(
                    one, two, f"threads=1 vs threads=2 (run {attempt + 1}), per_user={per_user}"
                )
    finally:
        con.close()


@SETTINGS
@given(data=batch(), options=conventions, shuffle=st.data())
def test_input_row_order_does_not_matter(data, options, shuffle):
    metrics = metrics_for(options["ties"])
    recs_rows = shuffle.draw(st.permutations(data.recs), label="recs order")
    truth_rows = None
    if data.truth is not None:
        truth_rows = shuffle.draw(st.permutations(data.truth), label="truth order")
    for per_user in (True, False):
        before = evaluate(data, metrics, per_user=per_user, **options).to_pylist()
        after = evaluate(
            data, metrics, per_user=per_user, recs=data.recs_table(list(recs_rows)),
            truth=data.truth_table(None if truth_rows is None else list(truth_rows)), **options,
        ).to_pylist()
        assert_identical(before, after, f"shuffled input rows, per_user={per_user}")


@SETTINGS
@given(data=batch(), options=conventions)
def test_aggregate_is_the_mean_of_per_user_values(data, options):
    metrics = metrics_for(options["ties"])
    per_user = evaluate(data, metrics, per_user=True, **options).to_pylist()
    aggregate = evaluate(data, metrics, per_user=False, **options).to_pylist()
    groups: dict = {}
    for row in per_user:
        groups.setdefault(row.get("model"), []).append(row)
    if not data.grouped and not groups:
        assert [row["users"] for row in aggregate] == [0]
        return
    assert {row.get("model") for row in aggregate} == set(groups)
    for row in aggregate:
        users = groups[row.get("model")]
        assert row["users"] == len(users)
        for m in metrics:
            values = [u[m] for u in users]
            assert None not in values, (m, users)
            mean = math.fsum(values) / len(values)
            assert math.isclose(row[m], mean, rel_tol=1e-12, abs_tol=1e-15), (m, row[m], mean)
