"""compare()'s by, within and baseline (a baseline of every by column's type: text, number,
DATE, TIMESTAMP, BOOLEAN), the names that would clash in the result refused, and effect_size
where docs/compare.md says it is NULL."""

from __future__ import annotations

import datetime

import duckdb
import pyarrow as pa
import pytest

import sqlmetrics
from sqlmetrics.errors import ConventionError
from sqlmetrics.stats.compare import baseline_from_text
from tests.test_compare import make_data

METRICS = ["ndcg@10", "recall@5"]
DAYS = {"A": datetime.date(2024, 1, 1), "B": datetime.date(2024, 1, 2), "C": datetime.date(2024, 1, 3)}


@pytest.fixture(scope="module")
def data():
    recs, truth = make_data(40, seed=5)
    models = recs.column("model").to_pylist()
    recs = recs.append_column("day", pa.array([DAYS[m] for m in models], pa.date32()))
    recs = recs.append_column(
        "at", pa.array([datetime.datetime.combine(DAYS[m], datetime.time(9, 30)) for m in models])
    )
    recs = recs.append_column("is_a", pa.array([m == "A" for m in models]))
    expected = sqlmetrics.compare(duckdb.connect(), recs, METRICS, truth=truth, by="model", baseline="A")
    return recs, truth, expected


def numbers(table: pa.Table) -> pa.Table:
    return table.drop_columns([table.column_names[0]])


@pytest.mark.parametrize(
    "by, baseline, systems",
    [
        ("day", DAYS["A"], [DAYS["B"], DAYS["C"]]),
        ("at", datetime.datetime(2024, 1, 1, 9, 30), None),
    ],
)
def test_a_date_or_timestamp_by_column_takes_its_baseline(data, by, baseline, systems):
    recs, truth, expected = data
    got = sqlmetrics.compare(duckdb.connect(), recs, METRICS, truth=truth, by=by, baseline=baseline)
    # the days stand for the models one for one: the same comparison, to the last bit
    assert numbers(got).equals(numbers(expected))
    if systems:
        assert sorted(set(got.column(by).to_pylist())) == systems


def test_a_boolean_by_column_takes_its_baseline(data):
    recs, truth, _ = data
    two = recs.filter(pa.compute.not_equal(recs["model"], "C"))
    expected = sqlmetrics.compare(duckdb.connect(), two, METRICS, truth=truth, by="model", baseline="A")
    got = sqlmetrics.compare(duckdb.connect(), two, METRICS, truth=truth, by="is_a", baseline=True)
    assert got.column("is_a").to_pylist() == [False, False] and numbers(got).equals(numbers(expected))
    # B as the baseline: the deltas change sign
    flipped = sqlmetrics.compare(duckdb.connect(), two, METRICS, truth=truth, by="is_a", baseline=False)
    assert flipped.column("delta").to_pylist() == [-d for d in expected.column("delta").to_pylist()]


@pytest.mark.parametrize(
    "by, baseline, message",
    [
        ("day", "2024-01-01", "is text, but the by column 'day' is DATE"),
        ("day", datetime.datetime(2024, 1, 1), "the by column 'day' is DATE"),
        ("at", datetime.date(2024, 1, 1), "the by column 'at' is TIMESTAMP"),
        ("at", datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc), "with a time zone"),
        ("is_a", 1, "a boolean baseline needs a BOOLEAN by column"),
        ("model", True, "a boolean baseline needs a BOOLEAN by column"),
        ("day", True, "a boolean baseline needs a BOOLEAN by column"),
        ("model", DAYS["A"], "the by column 'model' is VARCHAR"),
    ],
)
def test_a_baseline_of_another_type_is_refused(data, by, baseline, message):
    recs, truth, _ = data
    with pytest.raises(ConventionError, match=message.replace("(", r"\(")):
        sqlmetrics.compare(duckdb.connect(), recs, METRICS, truth=truth, by=by, baseline=baseline)


@pytest.mark.parametrize(
    "text, column_type, value",
    [
        ("2024-01-02", "DATE", datetime.date(2024, 1, 2)),
        ("2024-01-02 09:30:00", "TIMESTAMP", datetime.datetime(2024, 1, 2, 9, 30)),
        ("TRUE", "BOOLEAN", True),
        ("false", "BOOLEAN", False),
        ("7", "BIGINT", 7),
        ("7.5", "DOUBLE", 7.5),
        ("1.0", "INTEGER", 1.0),
    ],
)
def test_baseline_from_text(text, column_type, value):
    got = baseline_from_text(text, column_type)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text, column_type", [("yes", "BOOLEAN"), ("2024-13-01", "DATE"), ("x", "BIGINT")])
def test_baseline_from_text_refuses_what_is_not_a_value(text, column_type):
    with pytest.raises(ConventionError, match=f"the by column is {column_type}"):
        baseline_from_text(text, column_type)


@pytest.mark.parametrize(
    "within, message",
    [
        ("model", "within='model' is also a by column"),
        ("MODEL", "within='MODEL' is also a by column"),
        (["day", "day"], "within= names the column 'day' twice"),
    ],
)
def test_within_the_by_column_says_so(data, within, message):
    recs, truth, _ = data
    with pytest.raises(ConventionError, match=message) as caught:
        sqlmetrics.compare(
            duckdb.connect(), recs, METRICS, truth=truth, by="model", baseline="A", within=within
        )
    assert "user, item or score" not in str(caught.value)


def test_a_user_column_named_like_a_metric_is_refused(data):
    """The unit's column named like a requested metric took the metric's name in the per-user
    rows (the metric became `ndcg@10_1`) and compare() averaged the user ids as the metric."""
    recs, truth, expected = data
    renamed = recs.rename_columns(["recall@5" if c == "user_id" else c for c in recs.column_names])
    truth_renamed = truth.rename_columns(["recall@5" if c == "user_id" else c for c in truth.column_names])
    con = duckdb.connect()
    for call in (
        lambda: sqlmetrics.compare(
            con, renamed, METRICS, truth=truth_renamed, by="model", baseline="A", user="recall@5"
        ),
        lambda: sqlmetrics.evaluate(
            con, renamed, METRICS, truth=truth_renamed, user="recall@5", per_user=True
        ),
        lambda: sqlmetrics.evaluate(
            con, renamed, ["RECALL@5"], truth=truth_renamed, user="recall@5", per_user=True
        ),
    ):
        with pytest.raises(
            ConventionError, match="two columns named 'recall@5' \\(this user column and the metric"
        ):
            call()
    # the means have no user column: nothing clashes, and the numbers are the user_id's
    means = sqlmetrics.evaluate(con, renamed, METRICS, truth=truth_renamed, user="recall@5", by="model")
    assert means.equals(sqlmetrics.evaluate(con, recs, METRICS, truth=truth, by="model"))
    # renamed in a view, as the message says: the comparison of the user_id column
    other = renamed.rename_columns(["u" if c == "recall@5" else c for c in renamed.column_names])
    truth_other = truth_renamed.rename_columns(
        ["u" if c == "recall@5" else c for c in truth_renamed.column_names]
    )
    got = sqlmetrics.compare(con, other, METRICS, truth=truth_other, by="model", baseline="A", user="u")
    assert got.select(expected.column_names).equals(expected)


@pytest.mark.parametrize(
    "b_first, users, effect",
    [
        ("x", [1, 2], None),  # every d = -0.5: sd(d) = 0, mean(d) / sd(d) is infinite: NULL
        ("a", [1, 2], 0.0),  # every d = 0: 0
        ("x", [1], None),  # one user: sd(d) undefined: NULL
    ],
)
def test_effect_size_is_null_where_docs_compare_md_says(b_first, users, effect):
    rows = []
    for u in users:
        rows += [("A", u, "a", 2.0), ("A", u, "x", 1.0)]
        rows += [("B", u, b_first, 2.0), ("B", u, "x" if b_first == "a" else "a", 1.0)]
    recs = pa.Table.from_pylist(
        [dict(zip(["model", "user_id", "item_id", "score"], r, strict=True)) for r in rows]
    )
    truth = pa.table({"user_id": users, "item_id": ["a"] * len(users)})
    row = sqlmetrics.compare(
        duckdb.connect(), recs, "mrr@2", truth=truth, by="model", baseline="A"
    ).to_pylist()[0]
    assert row["users"] == len(users) and row["effect_size"] == effect
