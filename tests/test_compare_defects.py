"""compare()'s defects of issue 33, item 3 (i, j, j2, j3, k, l, n): each test fails without
its fix."""

from __future__ import annotations

import decimal
import threading

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics
from tests.test_compare import make_data


@pytest.fixture(scope="module")
def small():
    recs, truth = make_data(40, models=("A", "B"))
    return recs, truth


# ---- j: the caller's decimal context ------------------------------------------------------------


def test_the_callers_decimal_context_is_left_alone(small):
    """compare() computes its Poisson thresholds and percentile positions in a decimal context
    of its own: the calling thread's precision is unchanged, and a low one changes nothing."""
    recs, truth = small
    results = {}

    def call(precision):
        decimal.getcontext().prec = precision
        out = sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", truth=truth, by="model",
                                 baseline="A", test="bootstrap", replicates=200, confidence=0.9)
        results[precision] = (decimal.getcontext().prec, out.to_pylist())

    for precision in (28, 3):  # each in a thread of its own: a fresh decimal context
        thread = threading.Thread(target=call, args=(precision,))
        thread.start()
        thread.join()
    assert results[28][0] == 28
    assert results[3][0] == 3
    assert results[3][1] == results[28][1]


# ---- j3: a by or within column named like an output column --------------------------------------


@pytest.mark.parametrize(
    ("option", "name"),
    [("by", "metric"), ("by", "users"), ("by", "p_value"), ("by", "Delta"), ("within", "wins")],
)
def test_a_column_named_like_an_output_column_is_refused(small, option, name):
    """Without the check, by="metric" came back as the metric labels in place of the systems."""
    recs, truth = small
    recs = recs.append_column(name, recs.column("model"))
    if option == "by":
        kwargs = {"by": name}
    else:
        kwargs = {"by": "model", "within": name}
        recs = recs.set_column(recs.schema.get_field_index(name), name, pa.array(["x"] * len(recs)))
    with pytest.raises(sqlmetrics.ConventionError, match=f"{option}={name!r}: the result would have two"):
        sqlmetrics.compare(duckdb.connect(), recs, "ndcg@10", truth=truth, baseline="A", **kwargs)
