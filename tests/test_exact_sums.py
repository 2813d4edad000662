"""Exact sums over the whole range of finite doubles (sql/exact_sum.sql.j2): each sum within
1e-15 of the correctly rounded sum (math.fsum), relative, and the same bits whatever the thread
count, the row order and the partitions. References: math.fsum, sklearn's ndcg_score, and the
definitions written out here with math.fsum (no number comes from the code under test)."""

from __future__ import annotations

import importlib
import math
import random

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from cross_engine import check_exact_sum_forms, graded_across
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score
from strategies import FAST

import sqlmetrics
from sqlmetrics.statement.exact_sums import with_exact_sums
from sqlmetrics.statement.templates import environment

CON = duckdb.connect()
REL = 1e-15


def close(actual: float, expected: float) -> bool:
    return actual == expected or abs(actual - expected) <= REL * abs(expected)


def exact_sum_sql(dialect: str = "duckdb", form: str = "fast", bound: int = 1, rounding: bool = False) -> str:
    template = ("{% import 'exact_sum.sql.j2' as sums with context %}"
                "{{ sums.exact_sum('x', bound, rounding=rounding) }}")
    return environment().from_string(template).render(
        dialect=dialect, exact_sums=form, bound=bound, rounding=rounding
    )


def duck_sum_in(form: str, values: list[float], bound: int = 1, rounding: bool = False) -> float:
    """exact_sum over one column of `values`, on DuckDB, in one form."""
    CON.register("exact_sum_input", pa.table({"x": pa.array(values, pa.float64())}))
    try:
        sql = f"SELECT {exact_sum_sql(form=form, bound=bound, rounding=rounding)} AS s FROM exact_sum_input"
        return CON.execute(sql).fetchall()[0][0]
    finally:
        CON.unregister("exact_sum_input")


def duck_sum(values: list[float]) -> float:
    """exact_sum over `values` as sqlmetrics runs it: the fast form, the wide one on a NaN."""
    return with_exact_sums(lambda form: pa.table({"s": [duck_sum_in(form, values)]}))["s"][0].as_py()


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
    return graded_across(seed, users=300, items=8, top_score=4, share=0.6, exponent=300)


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


# --- the fast form's window, and when the wide form runs ----------------------------------------


@FAST
@given(values=st.lists(st.floats(min_value=2.0**-8, max_value=1e7), min_size=1, max_size=40))
def test_fast_form_within_its_window(values):
    """Terms below 2^bound (26: scale 2^60), each a multiple of 2^-60 (every double from 2^-8
    up): the fast form answers (no NaN) within 2^-50 of fsum, in both signs."""
    want = math.fsum(values)
    for sign in (1, -1):
        got = duck_sum_in("fast", [sign * v for v in values], bound=26)
        assert abs(got - sign * want) <= 2.0**-50 * abs(want)


@pytest.mark.parametrize(("values", "bound"), [
    ([2.0**27, 1.0], 26),            # a term of 2^(bound + 1): times 2^k, above 10^26
    ([4.0, 0.5], 1),                 # ... of a bound of 1
    ([math.inf, 1.0], 26),           # not finite
    ([math.nan], 26),
    ([1e-30, 3e-31], 26),            # terms that are no multiples of 2^-60: rounded
    ([1e-3, -1e-3 + 1e-9], 26),     # a term that is no multiple of 2^-60 (-1e-3 + 1e-9)
])
def test_fast_form_gives_nan_outside_its_window(values, bound):
    assert math.isnan(duck_sum_in("fast", values, bound=bound))
    assert not math.isnan(duck_sum_in("wide", [v for v in values if not math.isnan(v)] or [0.0]))


@FAST
@given(values=st.lists(st.floats(min_value=-1.0, max_value=1.0), min_size=1, max_size=40))
def test_counted_fast_form_within_2_to_the_minus_50(values):
    """compare()'s form (rounding=True, bound 1: scale 2^85) takes rounded terms: it answers
    within 2^-50 of fsum, or NaN when they cancel to too little (and the wide form answers)."""
    got, want = duck_sum_in("fast", values, rounding=True), math.fsum(values)
    assert math.isnan(got) or abs(got - want) <= 2.0**-50 * abs(want)
    if abs(want) >= len(values) * 2.0**-32:
        assert not math.isnan(got)
    assert math.isnan(duck_sum_in("fast", [1e-20, -1e-20 + 1e-36], rounding=True))


def test_forms_with_cancelling_terms():
    """The check Spark and PostgreSQL run (tests/cross_engine.py), on DuckDB: a negative
    scaled term from 2^53 up is exact too (DuckDB converts such a HUGEINT to a double a unit
    off, so the exactness flag compares magnitudes)."""
    check_exact_sum_forms(lambda sql: CON.execute(sql).fetchall()[0][0], "duckdb")


def test_fast_form_keeps_exact_terms_of_any_count():
    """Terms whose scaled values are integers add no rounding, however many: 10^6 terms of 2^-80."""
    assert duck_sum_in("fast", [2.0**-80] * 10**6, bound=1) == 10**6 * 2.0**-80


def recording_forms(monkeypatch) -> list[str]:
    """The forms every evaluate()/compare() statement runs in, from now on."""
    forms: list[str] = []

    def recorded(run):
        return with_exact_sums(lambda form: forms.append(form) or run(form))

    for module in ("sqlmetrics.api.evaluation", "sqlmetrics.stats.compare", "sqlmetrics.stats.intervals"):
        monkeypatch.setattr(importlib.import_module(module), "with_exact_sums", recorded)
    return forms


def ordinary_data() -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
    """200 users, two models, grades 0-5, lists of 5 to 20, a history and 32-dimensional unit
    item features."""
    rng = random.Random(3)
    recs, truth, history, features = [], [], [], []
    for user in range(200):
        for model in ("a", "b"):
            for item in rng.sample(range(300), rng.randint(5, 20)):
                recs.append({"user_id": user, "item_id": item, "score": rng.random(), "model": model})
        for item in rng.sample(range(300), 8):
            truth.append({"user_id": user, "item_id": item, "relevance": float(rng.randint(0, 5))})
            history.append({"user_id": user, "item_id": item})
    for item in range(300):
        vector = [rng.gauss(0, 1) for _ in range(32)]
        norm = math.sqrt(sum(v * v for v in vector))
        features.append({"item_id": item, "features": [v / norm for v in vector]})
    return tuple(pa.Table.from_pylist(rows) for rows in (recs, truth, history, features))


def test_ordinary_data_runs_once(monkeypatch):
    """Grades 0-5, exponential gains, tied scores, beyond-accuracy metrics with a history and
    item features, personalization over lists of different lengths, compare() and confidence=:
    every statement runs once, in the fast form."""
    forms = recording_forms(monkeypatch)
    recs, truth, history, features = ordinary_data()
    ranking = ["ndcg@10", "dcg@10", "idcg@10", "cg@5", "map@20", "mrr@20", "arhr@20", "recall@10",
               "precision@5", "bpref", "gm_map", "num_ret", "num_rel_ret", "judged@10", "11pt_avg"]
    tied = recs.set_column(2, "score", pa.array([round(s, 1) for s in recs["score"].to_pylist()]))
    for options in ({}, {"gain": "exponential"}, {"ties": "average"}, {"per_user": True}):
        metrics = [m for m in ranking if options.get("ties") != "average" or m.split("@")[0]
                   in ("ndcg", "dcg", "idcg", "cg", "recall", "precision")]
        sqlmetrics.evaluate(CON, tied, metrics, truth=truth, by="model", **options)
    beyond = ["novelty@10", "popularity@10", "diversity@10", "serendipity@10", "personalization@10",
              "catalog_coverage@10", "gini@10", "fcp"]
    sqlmetrics.evaluate(CON, recs, beyond, truth=truth, history=history, by="model")
    sqlmetrics.evaluate(CON, recs, ["diversity@10"], item_features=features, by="model")
    # personalization over lists of 1 to 5 from a long tail: most items in one list only
    rng = random.Random(5)
    tail = pa.Table.from_pylist([{"user_id": user, "item_id": item, "score": rng.random()}
                                 for user in range(300)
                                 for item in rng.sample(range(5000), rng.randint(1, 5))])
    sqlmetrics.evaluate(CON, tail, ["personalization@3", "personalization@5"])
    sqlmetrics.evaluate(CON, recs, ["ndcg@10", "dcg@10"], truth=truth, by="model", confidence=0.95)
    sqlmetrics.evaluate(CON, recs, ["ndcg@10", "map@10"], truth=truth, by="model", partitions=3)
    for test in ("t", "wilcoxon", "randomization", "bootstrap"):
        sqlmetrics.compare(CON, recs, ["ndcg@10", "dcg@10", "recall@10"], truth=truth, by="model",
                           baseline="a", test=test, replicates=200)
    assert forms and set(forms) == {"fast"}, str(forms)


def test_extreme_data_runs_again_in_the_wide_form(monkeypatch):
    """Each call runs in the fast form, then once in the wide form when a NaN says it must:
    compare()'s replicate tests too, whose two stages (the per-unit values, then the
    replicates on a private connection) run in the call's form."""
    forms = recording_forms(monkeypatch)
    recs, truth = recs_truth([67.0, 3.0])
    sqlmetrics.evaluate(CON, recs, ["dcg@2"], truth=truth, gain="exponential")
    two = pa.concat_tables([recs.append_column("model", pa.array(["a", "a"])),
                            recs.append_column("model", pa.array(["b", "b"]))])
    sqlmetrics.compare(CON, two, ["dcg@2"], truth=truth, gain="exponential", by="model", baseline="a")
    assert forms == ["fast", "wide", "fast", "wide"]
    # a grade of 1e-19 in the replicates of the randomization and bootstrap tests (their
    # quantized differences were a cast of the NaN, an error before the second run)
    tiny = truth.set_column(2, "relevance", pa.array([1e-19, 1.0]))
    for test in ("randomization", "bootstrap"):
        [row] = sqlmetrics.compare(CON, two, ["dcg@2"], truth=tiny, by="model", baseline="a",
                                   test=test, replicates=100).to_pylist()
        assert row["delta"] == 0.0 and row["users"] == 1
    assert forms[4:] == ["fast", "wide", "fast", "wide"]
