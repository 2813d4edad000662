"""truth_duplicates: a truth with repeated (user, item) rows, as an event log has, against the
plain-Python reference (tests/reference.py, whose combine_truth() de-duplicates in its own
way), on random data: repeated rows with graded, negative and fractional grades, a binary
truth, action grades, every convention that reads the grades, and the metrics beyond accuracy
and compare() that read the truth too."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FAST, batch, cutoffs
from test_against_reference import close, metric_names

import sqlmetrics

CON = duckdb.connect()
# each example a batch of 1 to 8 random evaluations (strategies.batch: ~12 per case)
SETTINGS = settings(FAST, max_examples=4)
REPEATED_GRADES = (-1, 0, 0.5, 1, 1, 2, 3)  # a second row's grade: any, fractional too

CASES = [
    pytest.param({}, id="defaults"),
    pytest.param({"threshold": 2}, id="threshold-2"),
    pytest.param({"threshold": 2.5, "empty": "skip"}, id="threshold-2.5-empty-skip"),
    pytest.param({"gain": "exponential", "missing": "zero"}, id="exp-missing-zero"),
    pytest.param({"ties": "average", "threshold": 3}, id="average-threshold-3"),
    pytest.param({"ap_denominator": "min_k", "ties": "trec_eval"}, id="min_k-trec_eval"),
]


@st.composite
def event_data(draw):
    """batch() in truth mode, then some truth rows repeated (up to 3 more times, each
    copy with its own grade) and the rows shuffled."""
    data = draw(batch(single_table=False))
    truth = list(data.truth)
    for row in data.truth:
        for _ in range(draw(st.sampled_from((0, 0, 1, 1, 2, 3)))):
            truth.append({**row, "relevance": draw(st.sampled_from(REPEATED_GRADES))})
    data.truth = list(draw(st.permutations(truth)))
    return data


@st.composite
def long_event_data(draw):
    """event_data() with every truth row repeated 5 to 8 more times: users of more than 32
    truth rows, where DuckDB's check for a repeated item hashes the list instead of comparing
    each item with those before it (inputs/checks.sql.j2's repeats())."""
    data = draw(batch(single_table=False))
    truth = list(data.truth)
    for row in data.truth:
        for _ in range(draw(st.integers(5, 8))):
            truth.append({**row, "relevance": draw(st.sampled_from(REPEATED_GRADES))})
    data.truth = list(draw(st.permutations(truth)))
    return data


def truth_table(data, rows=None) -> pa.Table:
    rows = data.truth if rows is None else rows
    return pa.table({
        "user_id": pa.array([r["user"] for r in rows], pa.int64()),
        "item_id": pa.array([r["item"] for r in rows], data.item_type),
        "relevance": pa.array([r["relevance"] for r in rows], pa.float64()),
    })  # fmt: skip


def has_repeats(rows) -> bool:
    pairs = [(r["user"], r["item"]) for r in rows]
    return len(set(pairs)) < len(pairs)


def check(data, metrics, conventions, how, truth=None, expected_truth=None):
    """sqlmetrics with truth_duplicates=how equals the reference, per user and per group."""
    truth = truth_table(data) if truth is None else truth
    expected_users, expected_groups = reference.evaluate(
        data.recs, metrics, data.truth if expected_truth is None else expected_truth,
        truth_duplicates=how, **conventions,
    )  # fmt: skip
    by = "model" if data.grouped else None
    options = dict(truth=truth, by=by, truth_duplicates=how, **conventions)
    rows = sqlmetrics.evaluate(CON, data.recs_table(), metrics, per_user=True, **options).to_pylist()
    actual = {(row.get("model"), row["user_id"]): row for row in rows}
    assert len(actual) == len(rows) and set(actual) == set(expected_users)
    for key, expected in expected_users.items():
        wrong = {m: (actual[key][m], expected[m]) for m in metrics if not close(actual[key][m], expected[m])}
        assert not wrong, f"{key}: (sqlmetrics, reference) = {wrong}"
    rows = sqlmetrics.evaluate(CON, data.recs_table(), metrics, **options).to_pylist()
    if not expected_groups:
        assert all(row["users"] == 0 for row in rows)
        return
    groups = {row.get("model"): row for row in rows}
    assert set(groups) == set(expected_groups)
    for group, expected in expected_groups.items():
        assert groups[group]["users"] == expected["users"]
        wrong = {
            m: (groups[group][m], expected[m]) for m in metrics if not close(groups[group][m], expected[m])
        }
        assert not wrong, f"group {group}: (sqlmetrics, reference) = {wrong}"


@pytest.mark.parametrize("how", ["max", "sum"])
@pytest.mark.parametrize("conventions", CASES)
@SETTINGS
@given(data=event_data(), ks=cutoffs)
def test_repeated_truth_rows_match_the_reference(how, conventions, data, ks):
    metrics = metric_names(ks, conventions.get("ties", "item_desc"), with_r_precision=True)
    check(data, metrics, conventions, how)


@pytest.mark.parametrize("conventions", [CASES[0], CASES[1], CASES[3]])
@settings(SETTINGS, max_examples=3)
@given(data=long_event_data(), ks=cutoffs)
def test_long_truth_lists_with_repeats_match_the_reference(conventions, data, ks):
    """'max' over users of many truth rows (6 items, each up to 9 times: over 32 rows)."""
    metrics = metric_names(ks, "item_desc", with_r_precision=True)
    check(data, metrics, conventions, "max")


@SETTINGS
@given(data=event_data(), ks=cutoffs)
def test_error_refuses_a_repeated_pair_and_changes_nothing_else(data, ks):
    metrics = metric_names(ks, "item_desc", with_r_precision=True)
    if has_repeats(data.truth):
        with pytest.raises(sqlmetrics.DuplicateRowError, match="truth_duplicates='max'"):
            by = "model" if data.grouped else None
            sqlmetrics.evaluate(CON, data.recs_table(), metrics, truth=truth_table(data), by=by)
        with pytest.raises(ValueError):
            reference.combine_truth(data.truth, "error")
    else:
        check(data, metrics, {}, "error")


@pytest.mark.parametrize("how", ["max", "sum"])
@SETTINGS
@given(data=event_data(), ks=cutoffs, threshold=st.sampled_from([1, 2, 3]))
def test_binary_truth_deduplicates_or_counts(how, data, ks, threshold):
    """A truth of (user, item) rows alone: every row is relevant with grade 1, so "max" just
    de-duplicates and "sum" grades a pair by its number of rows."""
    binary = pa.table({
        "user_id": pa.array([r["user"] for r in data.truth], pa.int64()),
        "item_id": pa.array([r["item"] for r in data.truth], data.item_type),
    })  # fmt: skip
    ones = [{**r, "relevance": 1} for r in data.truth]
    metrics = metric_names(ks, "item_desc", with_r_precision=True)
    check(data, metrics, {"threshold": threshold}, how, truth=binary, expected_truth=ones)


ACTIONS = {"purchase": 3, "add_to_cart": 2, "view": 1, "dislike": -2}


@pytest.mark.parametrize("how", ["error", "max", "sum"])
@SETTINGS
@given(data=event_data(), ks=cutoffs, threshold=st.sampled_from([1, 2, 4]))
def test_action_grades(how, data, ks, threshold):
    """Actions graded by relevance={...}: several actions on one pair keep the highest grade
    (the rule of action grades, under "error" and "max"), or add up under "sum"; an action
    that is not graded adds 0."""
    names = [*ACTIONS, "share"]  # "share" is not graded
    rows = [{**r, "action": names[i % len(names)]} for i, r in enumerate(data.truth)]
    events = pa.table({
        "user_id": pa.array([r["user"] for r in rows], pa.int64()),
        "item_id": pa.array([r["item"] for r in rows], data.item_type),
        "event_type": [r["action"] for r in rows],
    })  # fmt: skip
    graded = [{**r, "relevance": ACTIONS.get(r["action"], 0)} for r in rows]
    metrics = metric_names(ks, "item_desc", with_r_precision=True)
    by = "model" if data.grouped else None
    options = dict(truth=events, by=by, action="event_type", relevance=ACTIONS, threshold=threshold)
    actual = sqlmetrics.evaluate(
        CON, data.recs_table(), metrics, per_user=True, truth_duplicates=how, **options
    )
    expected, _ = reference.evaluate(
        data.recs, metrics, graded, threshold=threshold, truth_duplicates="sum" if how == "sum" else "max"
    )
    got = {(row.get("model"), row["user_id"]): row for row in actual.to_pylist()}
    assert set(got) == set(expected)
    for key, values in expected.items():
        wrong = {m: (got[key][m], values[m]) for m in metrics if not close(got[key][m], values[m])}
        assert not wrong, f"{key}: (sqlmetrics, reference) = {wrong}"


def combined_table(data, how) -> pa.Table:
    """The reference's de-duplicated truth, as a table sqlmetrics reads without repeats."""
    return truth_table(data, reference.combine_truth(data.truth, how))


@pytest.mark.parametrize("how", ["max", "sum"])
@settings(SETTINGS, max_examples=3)
@given(data=event_data(), threshold=st.sampled_from([1, 2]))
def test_beyond_accuracy_metrics_read_the_combined_grades(how, data, threshold):
    """fcp (which reads the truth itself) and serendipity (through the relevant items) see
    the grades the convention makes: the same numbers as over the reference's de-duplicated
    truth (each metric is checked against its own reference in test_beyond_accuracy.py)."""
    history = pa.table({
        "user_id": pa.array([r["user"] for r in data.recs], pa.int64()),
        "item_id": pa.array([r["item"] for r in data.recs], data.item_type),
    })  # fmt: skip
    metrics = ["fcp", "fcp_surprise", "serendipity@3", "novelty@2", "ndcg@3"]
    by = "model" if data.grouped else None
    options = dict(history=history, by=by, threshold=threshold)
    actual = sqlmetrics.evaluate(
        CON, data.recs_table(), metrics, truth=truth_table(data), truth_duplicates=how, **options
    )
    expected = sqlmetrics.evaluate(
        CON, data.recs_table(), metrics, truth=combined_table(data, how), **options
    )
    assert actual.schema == expected.schema
    for a, e in zip(actual.to_pylist(), expected.to_pylist(), strict=True):
        assert all(close(a[k], v) if isinstance(v, float) else a[k] == v for k, v in e.items()), (a, e)
    per_user = dict(truth_duplicates=how, per_user=True, **options)
    actual = sqlmetrics.evaluate(
        CON, data.recs_table(), ["fcp", "serendipity@3"], truth=truth_table(data), **per_user
    )
    per_user.pop("truth_duplicates")
    expected = sqlmetrics.evaluate(
        CON, data.recs_table(), ["fcp", "serendipity@3"], truth=combined_table(data, how), **per_user
    )
    for a, e in zip(actual.to_pylist(), expected.to_pylist(), strict=True):
        assert all(close(a[k], v) if isinstance(v, float) else a[k] == v for k, v in e.items()), (a, e)


@pytest.mark.parametrize("how", ["max", "sum"])
@settings(SETTINGS, max_examples=2)
@given(data=event_data())
def test_partitions_and_sql_follow_the_convention(how, data):
    metrics = ["ndcg@3", "map@3", "recall@2"]
    by = "model" if data.grouped else None
    options = dict(truth=truth_table(data), truth_duplicates=how, by=by)
    whole = sqlmetrics.evaluate(CON, data.recs_table(), metrics, **options).to_pylist()
    users = len({r["user"] for r in data.recs} | {r["user"] for r in data.truth})
    if users >= 2:
        assert (
            sqlmetrics.evaluate(CON, data.recs_table(), metrics, partitions=2, **options).to_pylist() == whole
        )
    con = duckdb.connect()
    con.register("recs_view", data.recs_table())
    con.register("truth_view", truth_table(data))
    con.execute(
        "CREATE TABLE recs AS SELECT * FROM recs_view; CREATE TABLE truth AS SELECT * FROM truth_view"
    )
    text = sqlmetrics.sql(con, "recs", metrics, truth="truth", truth_duplicates=how, by=by)
    assert con.sql(text).to_arrow_table().to_pylist() == whole


def test_compare_takes_the_convention():
    """compare() pairs the per-user values that evaluate() makes under the convention: the same
    rows as over the reference's de-duplicated truth."""
    recs = pa.table({
        "model": ["A"] * 3 + ["B"] * 3 + ["A"] * 2 + ["B"] * 2,
        "user_id": [1, 1, 1, 1, 1, 1, 2, 2, 2, 2],
        "item_id": ["a", "b", "c", "a", "b", "c", "a", "d", "a", "d"],
        "score": [3, 2, 1, 1, 2, 3, 2, 1, 1, 2],
    })  # fmt: skip
    rows = [
        {"user": 1, "item": "a", "relevance": 1}, {"user": 1, "item": "a", "relevance": 1},
        {"user": 1, "item": "c", "relevance": 2}, {"user": 2, "item": "d", "relevance": 1},
        {"user": 2, "item": "d", "relevance": 1}, {"user": 2, "item": "a", "relevance": 1},
    ]  # fmt: skip
    truth = pa.Table.from_pylist(
        [{"user_id": r["user"], "item_id": r["item"], "relevance": r["relevance"]} for r in rows]
    )
    options = dict(by="model", baseline="A", test="bootstrap", replicates=200)
    for how in ("max", "sum"):
        combined = pa.Table.from_pylist([
            {"user_id": r["user"], "item_id": r["item"], "relevance": r["relevance"]}
            for r in reference.combine_truth(rows, how)
        ])  # fmt: skip
        actual = sqlmetrics.compare(CON, recs, ["ndcg@3"], truth=truth, truth_duplicates=how, **options)
        assert (
            actual.to_pylist()
            == sqlmetrics.compare(CON, recs, ["ndcg@3"], truth=combined, **options).to_pylist()
        )
    with pytest.raises(sqlmetrics.DuplicateRowError, match="truth_duplicates='max'"):
        sqlmetrics.compare(CON, recs, ["ndcg@3"], truth=truth, **options)


def test_sum_then_threshold_by_hand():
    """Two views (1 + 1) of item b reach threshold 2 under "sum", never under "max"."""
    recs = pa.table({"user_id": [1, 1], "item_id": ["a", "b"], "score": [2.0, 1.0]})
    truth = pa.table({"user_id": [1, 1, 1], "item_id": ["b", "b", "a"], "relevance": [1, 1, 0.5]})
    common = dict(truth=truth, threshold=2)
    summed = sqlmetrics.evaluate(CON, recs, ["precision@2", "cg@2"], truth_duplicates="sum", **common)
    highest = sqlmetrics.evaluate(CON, recs, ["precision@2", "cg@2"], truth_duplicates="max", **common)
    assert summed.to_pylist() == [{"users": 1, "precision@2": 0.5, "cg@2": 2.5}]
    assert highest.to_pylist() == [{"users": 1, "precision@2": 0.0, "cg@2": 1.5}]


def test_a_nan_grade_is_named_under_sum():
    recs = pa.table({"user_id": [1], "item_id": ["b"], "score": [1.0]})
    truth = pa.table({"user_id": [1, 1], "item_id": ["b", "b"], "relevance": [float("nan"), 1.0]})
    with pytest.raises(sqlmetrics.InvalidDataError, match="NaN or infinite relevance for user_id = 1$"):
        sqlmetrics.evaluate(CON, recs, ["ndcg@1"], truth=truth, truth_duplicates="sum")


def test_an_unknown_value_is_a_convention_error():
    recs = pa.table({"user_id": [1], "item_id": ["b"], "score": [1.0], "relevance": [1]})
    with pytest.raises(sqlmetrics.ConventionError, match="truth_duplicates='first' is not one of"):
        sqlmetrics.evaluate(CON, recs, ["ndcg@1"], truth_duplicates="first")


def test_cross_engine_check_on_duckdb():
    """The check the Spark and PostgreSQL tests run (tests/cross_engine.py), here on DuckDB
    against the reference, so that it is known to hold before an engine runs it."""
    from cross_engine import check_truth_duplicates

    check_truth_duplicates(duckdb.connect())


def test_command_line_option(tmp_path, capsys):
    import json

    import pyarrow.parquet as pq

    from sqlmetrics.cli import main

    recs = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]})
    truth = pa.table({"user_id": [1, 1, 2, 2], "item_id": ["b", "b", "c", "c"], "relevance": [1, 2, 1, 1]})
    pq.write_table(recs, tmp_path / "recs.parquet")
    pq.write_table(truth, tmp_path / "truth.parquet")
    args = ["evaluate", str(tmp_path / "recs.parquet"), "--truth", str(tmp_path / "truth.parquet")]
    args += ["--metrics", "cg@2,precision@2", "--threshold", "2", "--format", "json"]
    assert main(args) == 2
    assert "truth_duplicates='max'" in capsys.readouterr().err
    for how in ("max", "sum"):
        assert main([*args, "--truth-duplicates", how]) == 0
        printed = json.loads(capsys.readouterr().out)
        expected = sqlmetrics.evaluate(
            CON, recs, ["cg@2", "precision@2"], truth=truth, threshold=2, truth_duplicates=how
        )
        assert printed == expected.to_pylist()
    # max: user 1 sees a (0) and b (2), user 2 c (1); sum: b (3) and c (2)
    assert [r["cg@2"] for r in expected.to_pylist()] == [(3 + 2) / 2]


def _report_config(**conventions):
    from sqlmetrics.reports.config import config_from_dict

    return config_from_dict({
        "name": "r", "warehouse": "w.duckdb", "recommendations": "recs", "truth": "events",
        "time_column": "day", "metrics": ["ndcg@10"], "conventions": conventions,
    })  # fmt: skip


def test_report_config_and_its_hash():
    """[conventions] truth_duplicates reaches evaluate(); the default leaves the hash of the
    configs written before it existed as it was (their periods are not redone)."""
    import hashlib
    import json

    assert _report_config(truth_duplicates="sum").options()["truth_duplicates"] == "sum"
    default = _report_config()
    assert default.options()["truth_duplicates"] == "error"
    assert _report_config(truth_duplicates="error").hash == default.hash
    assert _report_config(truth_duplicates="max").hash != default.hash
    assert _report_config(truth_duplicates="sum").hash not in (
        default.hash,
        _report_config(truth_duplicates="max").hash,
    )
    # the hash as it was computed before truth_duplicates, spelled out here
    before = {
        "recommendations": "recs", "truth": "events", "time_column": "day",
        "truth_time_column": "day", "period": "day", "metrics": ["ndcg@10"], "by": [],
        "columns": {}, "grades": {},
        "conventions": {
            "ap_denominator": "relevant", "duplicates": "top_k", "empty": "zero", "gain": "linear",
            "missing": "skip", "threshold": 1, "ties": "item_desc",
        },
    }  # fmt: skip
    text = json.dumps(before, sort_keys=True, separators=(",", ":"))
    assert default.hash == hashlib.sha256(text.encode()).hexdigest()
    with pytest.raises(sqlmetrics.SqlMetricsError, match="truth_duplicates='first' is not one of"):
        _report_config(truth_duplicates="first")
