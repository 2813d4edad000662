"""Exact sums over the whole range of finite doubles (sql/exact_sum.sql.j2): each sum within
1e-15 of the correctly rounded sum (math.fsum), relative, and the same bits whatever the thread
count, the row order and the partitions. References: math.fsum, sklearn's ndcg_score, and the
definitions written out here with math.fsum (no number comes from the code under test)."""

from __future__ import annotations

import math
import random

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score
from strategies import FAST

import sqlmetrics
from sqlmetrics.templates import environment

CON = duckdb.connect()
REL = 1e-15


def close(actual: float, expected: float) -> bool:
    return actual == expected or abs(actual - expected) <= REL * abs(expected)


def exact_sum_sql(dialect: str = "duckdb") -> str:
    template = "{% import 'exact_sum.sql.j2' as sums with context %}{{ sums.exact_sum('x') }}"
    return environment().from_string(template).render(dialect=dialect)


def duck_sum(values: list[float], con: duckdb.DuckDBPyConnection = CON) -> float:
    """exact_sum over one column of `values`, on DuckDB."""
    con.register("exact_sum_input", pa.table({"x": pa.array(values, pa.float64())}))
    try:
        return con.execute(f"SELECT {exact_sum_sql()} AS s FROM exact_sum_input").fetchall()[0][0]
    finally:
        con.unregister("exact_sum_input")


def recs_truth(grades: list[float], scores: list[float] | None = None) -> tuple[pa.Table, pa.Table]:
    """One user whose items 0, 1, ... are listed in this order (or by `scores`), with these grades."""
    n = len(grades)
    scores = scores if scores is not None else [float(n - i) for i in range(n)]
    recs = pa.table({"user_id": [1] * n, "item_id": list(range(n)), "score": scores})
    truth = pa.table({"user_id": [1] * n, "item_id": list(range(n)), "relevance": grades})
    return recs, truth


def dcg(gains: list[float], k: int | None = None) -> float:
    return math.fsum(g / math.log2(i + 1) for i, g in enumerate(gains[:k], start=1))


# --- the reproducers ----------------------------------------------------------------


def test_exponential_gain_from_grade_67():
    """2^67 - 1 is above 1e20: the DECIMAL(38, 18) sum raised ConversionException."""
    grades = [67.0, 100.0, 3.0]
    recs, truth = recs_truth(grades)
    [row] = sqlmetrics.evaluate(CON, recs, ["dcg@3", "idcg@3", "ndcg@3", "cg@3"], truth=truth,
                                gain="exponential").to_pylist()
    gains = [2.0**g - 1 for g in grades]
    assert close(row["dcg@3"], dcg(gains))
    assert close(row["idcg@3"], dcg(sorted(gains, reverse=True)))
    assert close(row["ndcg@3"], dcg(gains) / dcg(sorted(gains, reverse=True)))
    assert close(row["cg@3"], math.fsum(gains))


@pytest.mark.parametrize("scale", [1e20, 1e100, 1e300, 1.7e308 / 4])
def test_large_grades_cg_dcg_idcg(scale):
    grades = [scale, scale / 3, scale * 0.5]
    recs, truth = recs_truth(grades)
    [row] = sqlmetrics.evaluate(CON, recs, ["cg@2", "dcg@3", "idcg@3", "ndcg@3"], truth=truth).to_pylist()
    assert close(row["cg@2"], math.fsum(grades[:2]))
    assert close(row["dcg@3"], dcg(grades))
    assert close(row["idcg@3"], dcg(sorted(grades, reverse=True)))
    assert close(row["ndcg@3"], dcg(grades) / dcg(sorted(grades, reverse=True)))


@pytest.mark.parametrize("grades", [
    [67.0, 3.0, 0.0, 70.0, 1.0],                       # exponential gains above 1e20
    [3e-15, 1e-15, 0.0, 2e-15, 1e-15],                 # grades scaled by 1e-15
])
def test_average_ties_ndcg_against_sklearn(grades):
    """ties='average' ndcg against sklearn's ndcg_score (which averages over tied orders)."""
    scores = [1.0, 1.0, 0.5, 0.5, 0.5]
    recs, truth = recs_truth(grades, scores)
    exponential = grades[0] > 1
    gains = [2.0**g - 1 for g in grades] if exponential else grades
    for k in (1, 2, 4, 5):
        [row] = sqlmetrics.evaluate(CON, recs, [f"ndcg@{k}"], truth=truth, ties="average",
                                    gain="exponential" if exponential else "linear").to_pylist()
        expected = ndcg_score([gains], [scores], k=k)
        assert math.isclose(row[f"ndcg@{k}"], expected, rel_tol=1e-12), (k, row, expected)


def test_dcg_of_a_tiny_grade():
    """A grade of 1e-19 had no digit left in 18 decimals: dcg was 0."""
    recs, truth = recs_truth([0.0, 1e-19, 3e-300])
    [row] = sqlmetrics.evaluate(CON, recs, ["dcg@3", "cg@3"], truth=truth, threshold=1e-300).to_pylist()
    assert close(row["dcg@3"], dcg([0.0, 1e-19, 3e-300]))
    assert close(row["cg@3"], math.fsum([1e-19, 3e-300]))
    assert row["dcg@3"] > 0


def test_largest_cutoff_keeps_every_digit():
    """k = 2^31 - 1 (the whole list): 1 / tied weights and discounts far below 1e-9 stay exact."""
    k = 2**31 - 1
    grades = [3e-12, 0.0, 7e-13, 1e-14]
    recs, truth = recs_truth(grades, [1.0, 1.0, 1.0, 0.0])
    [row] = sqlmetrics.evaluate(CON, recs, [f"dcg@{k}", f"ndcg@{k}"], truth=truth, ties="average").to_pylist()
    # the three tied items share positions 1..3: each gain's expected discount is their mean
    shared = math.fsum(1 / math.log2(p + 1) for p in (1, 2, 3)) / 3
    expected_dcg = math.fsum([3e-12 * shared, 7e-13 * shared, 1e-14 / math.log2(5)])
    assert close(row[f"dcg@{k}"], expected_dcg)
    assert math.isclose(row[f"ndcg@{k}"], ndcg_score([grades], [[1.0, 1.0, 1.0, 0.0]]), rel_tol=1e-14)


# --- the sum itself ---------------------------------------------------------------------------

MAGNITUDE = st.floats(min_value=1e-300, max_value=1e300)


@FAST
@given(values=st.lists(MAGNITUDE, min_size=1, max_size=40))
def test_sum_of_one_sign_is_fsum(values):
    """Terms of one sign (every metric's terms and values): within 1e-15 of math.fsum."""
    assert close(duck_sum(values), math.fsum(values))
    assert close(duck_sum([-v for v in values]), -math.fsum(values))


@FAST
@given(values=st.lists(MAGNITUDE | MAGNITUDE.map(lambda v: -v), min_size=1, max_size=40))
def test_sum_of_mixed_signs(values):
    """Terms of both signs (the beyond metrics' dot products, compare()'s differences): within
    1e-15 of fsum when they do not cancel, and always within n^2 * 2^-120 of the largest term
    (docs/how-it-works.md)."""
    got, want = duck_sum(values), math.fsum(values)
    largest = max(abs(v) for v in values)
    assert abs(got - want) <= REL * abs(want) + len(values) ** 2 * 2.0**-120 * largest
    if abs(want) >= largest * 2.0**-60:
        assert close(got, want)


def test_sum_edges():
    assert duck_sum([]) == 0.0
    assert duck_sum([5e-324, 5e-324, 5e-324]) == 1.5e-323
    assert duck_sum([2.0**1023, 2.0**1023 * (1 - 2**-53), -(2.0**1023)]) == 2.0**1023 * (1 - 2**-53)
    assert duck_sum([0.1] * 10) == math.fsum([0.1] * 10)
    assert duck_sum([1e300, 1e-300]) == 1e300
    assert duck_sum([math.inf, 1.0]) == math.inf
    assert math.isnan(duck_sum([math.inf, -math.inf]))


# --- the same bits whatever the schedule ------------------------------------------------------


def wide_data(seed: int) -> tuple[pa.Table, pa.Table]:
    """300 users of 8 items, grades across the whole double range."""
    rng = random.Random(seed)
    recs, truth = [], []
    for user in range(300):
        for item in range(8):
            recs.append((user, item, float(rng.randint(0, 4))))
            if rng.random() < 0.6:
                truth.append((user, item, 10.0 ** rng.uniform(-300, 300)))
    def table(names: list[str], rows: list[tuple]) -> pa.Table:
        return pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})

    return table(["user_id", "item_id", "score"], recs), table(["user_id", "item_id", "relevance"], truth)


METRICS = ["ndcg@5", "dcg@5", "idcg@5", "cg@8", "map@5", "mrr@8"]


def evaluate(con, recs, truth, **options):
    return sqlmetrics.evaluate(con, recs, METRICS, truth=truth, threshold=1e-300, **options).to_pylist()


def test_same_bits_across_threads_row_orders_and_partitions():
    recs, truth = wide_data(7)
    con = duckdb.connect()
    con.execute("SET threads = 1")
    base = evaluate(con, recs, truth)
    con.execute("SET threads = 2")
    assert evaluate(con, recs, truth) == base
    order = np.random.default_rng(3).permutation(recs.num_rows)
    shuffled = recs.take(order), truth.take(np.random.default_rng(4).permutation(truth.num_rows))
    assert evaluate(con, *shuffled) == base
    assert evaluate(con, recs, truth, partitions=3) == base
    assert evaluate(con, *shuffled, partitions=3) == base


def test_means_against_fsum():
    """The mean over users is the exactly rounded sum of the per-user values, divided."""
    recs, truth = wide_data(11)
    per_user = evaluate(CON, recs, truth, per_user=True)
    [mean] = evaluate(CON, recs, truth)
    for m in METRICS:
        assert close(mean[m], math.fsum(row[m] for row in per_user) / len(per_user)), m
