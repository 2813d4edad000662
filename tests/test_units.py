"""Units of evaluation with several key columns: user=["user_id", "day"] evaluates one ranked
list per (user, day), joined to truth on every key column.

Checked against the plain-Python reference (tests/reference.py, whose users are the key
tuples) and pytrec_eval (qid = the key's values joined), per unit and aggregated, under every
convention, on random data whose units share their first key column (strategies.UNIT_KEYS:
integer, text and DATE key columns); and by the identity that evaluating (user, day) units by
day is evaluating each day on its own."""

from __future__ import annotations

import datetime
import json
import math
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import pytrec_eval
from cross_engine import CASES, DUCKDB, case_id, check_engine, metric_names
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FAST, UNIT_KEYS, cutoffs, unit_batch

import sqlmetrics

# each example a batch of 1 to 8 random evaluations (strategies.batch: ~12 per case)
SETTINGS = settings(FAST, max_examples=4)
ROOT = Path(__file__).resolve().parent.parent


# ---- against the reference and trec_eval --------------------------------------------------------


@pytest.mark.parametrize("conventions", CASES, ids=case_id)
@SETTINGS
@given(data=unit_batch(), ks=cutoffs, with_r_precision=st.booleans())
def test_matches_reference(conventions, data, ks, with_r_precision):
    """Per unit (every key column in the result) and per group, = the reference with tuple keys."""
    metrics = metric_names(ks, conventions.get("ties", "item_desc"), with_r_precision)
    check_engine(DUCKDB, data, metrics, conventions)


def _qid(key: tuple) -> str:
    return "|".join(str(part) for part in key)


@pytest.mark.parametrize("ties", ["item_desc", "trec_eval"])
@settings(FAST, max_examples=7)
@given(
    data=unit_batch(string_ids=True, grouped=False),
    ks=cutoffs,
    threshold=st.sampled_from([1, 2]),
)
def test_matches_trec_eval(ties, data, ks, threshold):
    """trec_eval's queries are the units: qid = the key's values joined; per query and the mean."""
    judged = data.recs if data.truth is None else data.truth
    run: dict[str, dict[str, float]] = {}
    for row in data.recs:
        run.setdefault(_qid(row["user"]), {})[row["item"]] = row["score"]
    qrels: dict[str, dict[str, int]] = {}
    for row in judged:
        qrels.setdefault(_qid(row["user"]), {})[row["item"]] = int(row["relevance"])
    cut = ",".join(str(k) for k in ks)
    measures = {f"ndcg_cut.{cut}", f"P.{cut}", f"recall.{cut}", f"map_cut.{cut}", "recip_rank", "Rprec"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=threshold).evaluate(run)
    pairs = {"recip_rank": "mrr@1000", "Rprec": "r_precision"}
    for k in ks:
        pairs.update({f"ndcg_cut_{k}": f"ndcg@{k}", f"P_{k}": f"precision@{k}",
                      f"recall_{k}": f"recall@{k}", f"map_cut_{k}": f"map@{k}"})  # fmt: skip
    options = dict(truth=data.truth_table(), user=data.key, ties=ties, threshold=threshold)
    rows = sqlmetrics.evaluate(DUCKDB, data.recs_table(), list(pairs.values()), per_user=True, **options)
    actual = {_qid(tuple(row[c] for c in data.key)): row for row in rows.to_pylist()}
    assert set(actual) == set(expected), "evaluated units differ from trec_eval's queries"
    for qid, values in expected.items():
        wrong = {
            trec: (actual[qid][ours], values[trec])
            for trec, ours in pairs.items()
            if not math.isclose(actual[qid][ours], values[trec], rel_tol=1e-9, abs_tol=1e-9)
        }
        assert not wrong, f"unit {qid}: (sqlmetrics, trec_eval) = {wrong}"
    means = sqlmetrics.evaluate(DUCKDB, data.recs_table(), list(pairs.values()), **options).to_pylist()
    if expected:
        assert means[0]["users"] == len(expected)
        for trec, ours in pairs.items():
            mean = math.fsum(v[trec] for v in expected.values()) / len(expected)
            assert math.isclose(means[0][ours], mean, rel_tol=1e-9, abs_tol=1e-9), (ours, trec)


# ---- (user, day) by day = each day on its own -------------------------------------------------

DAYS = [datetime.date(2026, 11, 1) + datetime.timedelta(days=i) for i in range(3)]


@st.composite
def daily_logs(draw):
    """recs (user_id, day, model, item_id, score) and truth (user_id, day, item_id, relevance):
    users on several days, items and grades drawn per (user, day)."""
    recs, truth = [], []
    for user in draw(st.lists(st.integers(1, 4), min_size=1, max_size=4, unique=True)):
        for day in draw(st.lists(st.sampled_from(DAYS), min_size=1, max_size=3, unique=True)):
            for model in draw(st.lists(st.sampled_from(["A", "B"]), min_size=0, max_size=2, unique=True)):
                items = draw(st.lists(st.integers(1, 6), min_size=1, max_size=5, unique=True))
                for item in items:
                    score = draw(st.sampled_from([0.0, 0.5, 1.0]))
                    recs.append({"user_id": user, "day": day, "model": model, "item_id": item,
                                 "score": score})  # fmt: skip
            if draw(st.booleans()) or not recs:
                items = draw(st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True))
                for item in items:
                    truth.append({"user_id": user, "day": day, "item_id": item,
                                  "relevance": draw(st.sampled_from([-1, 0, 1, 2]))})  # fmt: skip
    key = [("user_id", pa.int64()), ("day", pa.date32()), ("item_id", pa.int64())]
    recs_schema = pa.schema([*key, ("model", pa.string()), ("score", pa.float64())])
    truth_schema = pa.schema([*key, ("relevance", pa.int64())])
    if not recs:
        return None, None
    return pa.Table.from_pylist(recs, recs_schema), pa.Table.from_pylist(truth, truth_schema)


@pytest.mark.parametrize(
    "conventions", [{}, {"missing": "zero"}, {"empty": "skip", "ties": "average"}], ids=case_id
)
@settings(FAST, max_examples=15)
@given(logs=daily_logs(), per_user=st.booleans())
def test_by_day_equals_each_day_alone(conventions, logs, per_user):
    recs, truth = logs
    if recs is None:
        return
    metrics = ["ndcg@3", "recall@2", "hit_rate@1"] + ([] if conventions.get("ties") else ["map@3"])
    together = sqlmetrics.evaluate(
        DUCKDB, recs, metrics, truth=truth, user=["user_id", "day"], by=["day", "model"],
        per_user=per_user, **conventions,
    ).to_pylist()
    alone = []
    for day in DAYS:
        day_recs = recs.filter(pc.equal(recs["day"], day))
        if day_recs.num_rows == 0:
            continue
        day_truth = truth.filter(pc.equal(truth["day"], day)).drop_columns(["day"])
        rows = sqlmetrics.evaluate(
            DUCKDB, day_recs.drop_columns(["day"]), metrics, truth=day_truth, by="model",
            per_user=per_user, **conventions,
        ).to_pylist()
        alone += [{"day": day, **row} for row in rows]
    assert [list(r) for r in together[:1]] == [list(r) for r in alone[:1]]  # the same columns
    key = ("day", "model", "user_id") if per_user else ("day", "model")
    by_key = lambda rows: {tuple(r[c] for c in key): r for r in rows}  # noqa: E731
    assert by_key(together) == by_key(alone)


# ---- the result, the conventions and the inputs ---------------------------------------------------


D1, D2 = datetime.date(2026, 11, 1), datetime.date(2026, 11, 2)
RECS = pa.table({
    "user_id": [1, 1, 1, 1, 2],
    "day": [D1, D1, D2, D2, D1],
    "item_id": ["a", "b", "a", "b", "c"],
    "score": [0.9, 0.8, 0.7, 0.9, 0.5],
    "model": ["A", "A", "A", "A", "A"],
})  # fmt: skip
TRUTH = pa.table({"user_id": [1, 1, 2], "day": [D1, D2, D1], "item_id": ["b", "a", "c"]})


def test_per_unit_rows_have_every_key_column_in_order():
    table = sqlmetrics.evaluate(DUCKDB, RECS, ["mrr@2"], truth=TRUTH, user=["day", "user_id"], per_user=True)
    assert table.column_names == ["day", "user_id", "mrr@2"]
    # user 1 on day 1 has b second (1/2), on day 2 a second (1/2); user 2 has c first (1)
    assert table.to_pylist() == [
        {"day": D1, "user_id": 1, "mrr@2": 0.5},
        {"day": D1, "user_id": 2, "mrr@2": 1.0},
        {"day": D2, "user_id": 1, "mrr@2": 0.5},
    ]
    means = sqlmetrics.evaluate(DUCKDB, RECS, ["mrr@2"], truth=TRUTH, user=("user_id", "day"))
    assert means.to_pylist() == [{"users": 3, "mrr@2": pytest.approx(2 / 3)}]
    # by a key column: it is shown once, as the by column
    by_day = sqlmetrics.evaluate(
        DUCKDB, RECS, ["mrr@2"], truth=TRUTH, user=["user_id", "day"], by="day", per_user=True
    )
    assert by_day.column_names == ["day", "user_id", "mrr@2"]


def test_missing_zero_adds_truth_units_in_their_own_day_only():
    """missing='zero' gives a truth unit absent from recs a 0, in every group of its own day."""
    truth = pa.concat_tables([TRUTH, pa.table({"user_id": [3], "day": [D2], "item_id": ["z"]})])
    rows = sqlmetrics.evaluate(
        DUCKDB, RECS, ["hit_rate@2"], truth=truth, user=["user_id", "day"], by=["day", "model"],
        missing="zero", per_user=True,
    ).to_pylist()
    assert [(r["day"], r["user_id"], r["hit_rate@2"]) for r in rows] == [
        (D1, 1, 1.0), (D1, 2, 1.0), (D2, 1, 1.0), (D2, 3, 0.0),
    ]


def test_partitions_give_the_same_bits():
    options = dict(truth=TRUTH, user=["user_id", "day"], by="model")
    for per_user in (False, True):
        one = sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2", "map@2"], per_user=per_user, **options)
        split = sqlmetrics.evaluate(
            DUCKDB, RECS, ["ndcg@2", "map@2"], per_user=per_user, partitions=3, **options
        )
        assert split.equals(one)


def test_sql_runs_elsewhere_and_renders_for_every_dialect():
    con = duckdb.connect()
    con.register("r", RECS)
    con.execute("CREATE TABLE recs AS SELECT * FROM r")
    con.register("t", TRUTH)
    con.execute("CREATE TABLE truth AS SELECT * FROM t")
    options = dict(truth="truth", user=["user_id", "day"], by="model", per_user=True)
    text = sqlmetrics.sql(con, "recs", ["ndcg@2"], **options)
    assert con.sql(text).to_arrow_table().equals(sqlmetrics.evaluate(con, "recs", ["ndcg@2"], **options))
    for dialect in ("spark", "postgres", "bigquery", "snowflake"):
        text = sqlmetrics.sql(con, "recs", ["ndcg@2", "diversity@2"], dialect=dialect,
                              history="truth", **options)  # fmt: skip
        assert "_u1" in text


def test_input_checks_name_every_key_column():
    dup = pa.table({"user_id": [1, 1], "day": [D1, D1], "item_id": ["a", "a"], "score": [0.5, 0.4]})
    with pytest.raises(
        sqlmetrics.DuplicateRowError,
        match=r"has a duplicate \(user_id, day, item_id\) for user_id = 1, day = 2026-11-01, item_id = a$",
    ):
        sqlmetrics.evaluate(DUCKDB, dup, ["ndcg@2"], truth=TRUTH, user=["user_id", "day"])
    null_day = pa.table(
        {"user_id": [1], "day": pa.array([None], pa.date32()), "item_id": ["a"], "score": [0.5]}
    )
    with pytest.raises(sqlmetrics.InvalidDataError, match=r"^recs \(recs Table\) has a NULL day$"):
        sqlmetrics.evaluate(DUCKDB, null_day, ["ndcg@2"], truth=TRUTH, user=["user_id", "day"])
    truth_dup = pa.table({"user_id": [1, 1], "day": [D2, D2], "item_id": ["b", "b"]})
    with pytest.raises(sqlmetrics.DuplicateRowError, match=r"truth .* for user_id = 1, day = 2026-11-02"):
        sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=truth_dup, user=["user_id", "day"])
    # the same pair on two days is no duplicate
    sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=TRUTH, user=["user_id", "day"], duplicates="all")
    with pytest.raises(sqlmetrics.MissingColumnError, match="truth .* has no user column 'day'"):
        sqlmetrics.evaluate(
            DUCKDB, RECS, ["ndcg@2"], truth=TRUTH.drop_columns(["day"]), user=["user_id", "day"]
        )
    text_day = TRUTH.set_column(1, "day", pa.array(["x", "y", "z"]))
    with pytest.raises(sqlmetrics.ColumnTypeError, match="the user columns do not compare"):
        sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=text_day, user=["user_id", "day"])
    for bad in ([], ["user_id", "USER_ID"], ["user_id", "item_id"]):
        with pytest.raises(sqlmetrics.ConventionError):
            sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=TRUTH, user=bad)


# ---- beyond-accuracy: history on the key columns it has ------------------------------------------

HISTORY = pa.table({"user_id": [1, 1, 1, 2, 3], "item_id": ["a", "z", "b", "c", "a"]})
BEYOND = ["novelty@2", "popularity@2", "diversity@2", "serendipity@2", "fcp", "personalization@2",
          "catalog_coverage@2", "gini@2", "ndcg@2"]  # fmt: skip


def test_history_without_the_day_is_the_users_whole_history():
    """A (user, day) unit meets the user's whole history: evaluated by day, each day equals that
    day evaluated alone with the same history."""
    options = dict(truth=TRUTH, history=HISTORY, user=["user_id", "day"], by="day")
    together = sqlmetrics.evaluate(DUCKDB, RECS, BEYOND, **options).to_pylist()
    for row in together:
        day = row["day"]
        alone = sqlmetrics.evaluate(
            DUCKDB, RECS.filter(pc.equal(RECS["day"], day)).drop_columns(["day"]), BEYOND,
            truth=TRUTH.filter(pc.equal(TRUTH["day"], day)).drop_columns(["day"]), history=HISTORY,
        ).to_pylist()
        assert alone == [{k: v for k, v in row.items() if k != "day"}]


def test_history_with_the_day_is_joined_on_it():
    history = pa.table({"user_id": [1, 1, 1, 2], "day": [D1, D2, D2, D1], "item_id": ["a", "z", "b", "c"]})
    per_unit = sqlmetrics.evaluate(
        DUCKDB, RECS, ["serendipity@2"], truth=TRUTH, history=history, user=["user_id", "day"],
        per_user=True, item_features=pa.table({"item_id": ["a", "b", "c", "z"],
                                               "features": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0]]}),
    ).to_pylist()  # fmt: skip
    # user 1 on day 1: list (a, b), history {a}; b is relevant: 1 - cos(b, a) = 1, a is not: 0
    # -> 0.5. On day 2: list (b, a), history {z, b}; a is relevant: 1 - (cos(a, z) + cos(a, b))
    # / 2 = 1 - (1 + 0) / 2 = 0.5, b is not -> 0.25. User 2, day 1: list (c), history {c}:
    # c is relevant, 1 - sim(c, c) = 0 -> 0.
    assert [r["serendipity@2"] for r in per_unit] == [0.5, 0.25, 0.0]


# ---- compare() pairs per unit --------------------------------------------------------------------


@pytest.mark.parametrize("test", ["t", "wilcoxon", "bootstrap", "randomization"])
def test_compare_pairs_units(test):
    """compare() over (user, session) units = over one text column holding 'user|session',
    the unit's text that its draws hash."""
    recs = pa.table({
        "model": ["A", "A", "B", "B", "A", "B", "A", "B", "A", "B"],
        "user_id": [1, 1, 1, 1, 1, 1, 2, 2, 2, 2],
        "session": ["x", "x", "x", "x", "y", "y", "x", "x", "y", "y"],
        "item_id": ["a", "b", "a", "b", "c", "c", "a", "a", "b", "d"],
        "score": [2, 1, 1, 2, 1, 1, 1, 1, 1, 1],
    })  # fmt: skip
    truth = pa.table(
        {"user_id": [1, 1, 2, 2], "session": ["x", "y", "x", "y"], "item_id": ["a", "c", "a", "d"]}
    )

    def joined(table):
        text = pc.binary_join_element_wise(pc.cast(table["user_id"], pa.string()), table["session"], "|")
        return table.drop_columns(["user_id", "session"]).append_column("unit", text)

    options = dict(by="model", baseline="A", test=test, replicates=200)
    metrics = ["mrr@2", "ndcg@2"]
    units = sqlmetrics.compare(DUCKDB, recs, metrics, truth=truth, user=["user_id", "session"], **options)
    single = sqlmetrics.compare(DUCKDB, joined(recs), metrics, truth=joined(truth), user="unit", **options)
    assert units.equals(single)
    assert units.column("users").to_pylist() == [4, 4]


# ---- by columns that truth has too --------------------------------------------------------------


def test_a_by_column_in_truth_outside_the_unit_is_refused():
    with pytest.raises(sqlmetrics.ConventionError) as caught:
        sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=TRUTH, by=["day", "model"])
    message = str(caught.value)
    assert "\n" not in message
    assert "'day'" in message and "user=['user_id', 'day']" in message and "leave it out of truth" in message
    # matched as the engines match names (without case)
    upper = TRUTH.rename_columns(["user_id", "DAY", "item_id"])
    with pytest.raises(sqlmetrics.ConventionError, match="'DAY'"):
        sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=upper, by="day")
    with pytest.raises(sqlmetrics.ConventionError, match="'day'"):
        sqlmetrics.compare(DUCKDB, RECS, ["ndcg@2"], truth=TRUTH, by="model", within="day", baseline="A")
    # both fixes work
    sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=TRUTH, by=["day", "model"], user=["user_id", "day"])
    sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=TRUTH.drop_columns(["day"]), by=["day", "model"])
    # single-table mode has no truth to cross; an action truth is checked alike
    sqlmetrics.evaluate(DUCKDB, RECS.append_column("relevance", pa.array([1] * 5)), ["ndcg@2"], by="day")
    events = TRUTH.append_column("event_type", pa.array(["view", "purchase", "view"]))
    with pytest.raises(sqlmetrics.ConventionError, match="'day'"):
        sqlmetrics.evaluate(DUCKDB, RECS, ["ndcg@2"], truth=events, action="event_type",
                            relevance={"purchase": 3, "view": 1}, by="day")  # fmt: skip


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "sqlmetrics", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_cli_user_list_and_the_ambiguity_error(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(RECS, tmp_path / "recs.parquet")
    pq.write_table(TRUTH, tmp_path / "truth.parquet")
    done = _cli("evaluate", "recs.parquet", "--truth", "truth.parquet", "-m", "mrr@2",
                "--user", "user_id,day", "--per-user", "--format", "json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {"user_id": 1, "day": "2026-11-01", "mrr@2": 0.5},
        {"user_id": 1, "day": "2026-11-02", "mrr@2": 0.5},
        {"user_id": 2, "day": "2026-11-01", "mrr@2": 1.0},
    ]
    failed = _cli(
        "evaluate", "recs.parquet", "--truth", "truth.parquet", "-m", "mrr@2", "--by", "day", cwd=tmp_path
    )
    assert failed.returncode == 2
    assert len(failed.stderr.strip().splitlines()) == 1
    assert "by='day'" in failed.stderr and "leave it out of truth" in failed.stderr


def _report_config(tmp_path: Path, user: str) -> Path:
    warehouse = tmp_path / "w.duckdb"
    con = duckdb.connect(str(warehouse))
    con.register("r", RECS)
    con.execute("CREATE TABLE recs AS SELECT * FROM r")
    con.register("t", TRUTH)
    con.execute("CREATE TABLE events AS SELECT * FROM t")
    con.close()
    config = tmp_path / "r.toml"
    config.write_text(
        f'name = "r"\nwarehouse = "{warehouse}"\nrecommendations = "recs"\ntruth = "events"\n'
        f'time_column = "day"\nperiod = "1 month"\nmetrics = ["mrr@2"]\nby = ["day"]\n'
        f"[columns]\nuser = {user}\n"
    )
    return config


def test_report_config_user_list_and_the_ambiguity_error(tmp_path):
    from sqlmetrics.reports.config import load_config

    config = _report_config(tmp_path, '"user_id"')
    failed = _cli("report", str(config), "--date", "2026-11-02", "-q", cwd=tmp_path)
    assert failed.returncode == 2
    assert len(failed.stderr.strip().splitlines()) == 1 and "by='day'" in failed.stderr

    (tmp_path / "ok").mkdir()
    config = _report_config(tmp_path / "ok", '["user_id", "day"]')
    assert load_config(config).options()["user"] == ["user_id", "day"]
    done = _cli("report", str(config), "--date", "2026-11-02", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    con = duckdb.connect(str(tmp_path / "ok" / "w.duckdb"))
    values = con.execute("SELECT segment['day'], value, users FROM sqlmetrics_results ORDER BY 1").fetchall()
    # day 1: units (1, d1) 0.5 and (2, d1) 1.0; day 2: (1, d2) 0.5
    assert values == [("2026-11-01", 0.75, 2), ("2026-11-02", 0.5, 1)]


def test_report_config_one_column_in_a_list_is_that_column():
    from sqlmetrics.reports.config import config_from_dict

    base = {"name": "r", "warehouse": "w", "recommendations": "recs", "time_column": "day",
            "metrics": ["ndcg@10"]}  # fmt: skip
    plain = config_from_dict({**base, "columns": {"user": "user_id"}})
    listed = config_from_dict({**base, "columns": {"user": ["user_id"]}})
    assert listed.hash == plain.hash and listed.options()["user"] == "user_id"
    with pytest.raises(sqlmetrics.SqlMetricsError, match="columns.user"):
        config_from_dict({**base, "columns": {"user": []}})
    with pytest.raises(sqlmetrics.SqlMetricsError, match="columns.user"):
        config_from_dict({**base, "columns": {"user": ["user_id", 3]}})


def test_one_key_column_in_a_list_is_that_column():
    recs = ("recs", {"user_id": "INTEGER", "item_id": "VARCHAR", "score": "DOUBLE"})
    truth = ("truth", {"user_id": "INTEGER", "item_id": "VARCHAR"})
    one = sqlmetrics.sql(None, recs, ["ndcg@10"], truth=truth, user=["user_id"])
    assert one == sqlmetrics.sql(None, recs, ["ndcg@10"], truth=truth)


def test_key_kinds_cover_integer_text_and_date():
    types = {str(t) for key in UNIT_KEYS.values() for _, t, _ in key}
    assert types == {"int64", "string", "date32[day]"}


# ---- the other dialects' text -----------------------------------------------------------------------


def _unit_variants():
    unit = {"truth": "truth", "user": ["user_id", "day"]}
    yield ["ndcg@2", "map@2", "r_precision"], {**unit, "by": ["day", "model"], "per_user": True}
    yield ["ndcg@2", "hit_rate@2"], {**unit, "missing": "zero", "by": ["model", "day"], "ties": "average"}
    yield ["ndcg@2", "recall@2"], {**unit, "duplicates": "all", "rank": "pos"}
    yield ["fcp", "novelty@2", "diversity@2", "serendipity@2", "personalization@2", "gini@2", "ndcg@2"], \
        {**unit, "history": "history", "by": "model"}  # fmt: skip
    yield ["fcp", "novelty@2", "serendipity@2", "recall@2"], {**unit, "history": "history", "per_user": True}


@pytest.mark.parametrize("dialect", ["spark", "postgres", "bigquery", "snowflake"])
def test_every_dialect_parses_units(dialect):
    import sqlglot

    con = duckdb.connect()
    con.register("r", RECS.append_column("pos", pa.array([1, 2, 2, 1, 1])))
    con.execute("CREATE TABLE recs AS SELECT * FROM r")
    con.register("t", TRUTH)
    con.execute("CREATE TABLE truth AS SELECT * FROM t")
    con.register("h", HISTORY)
    con.execute("CREATE TABLE history AS SELECT * FROM h")
    for metrics, options in _unit_variants():
        text = sqlmetrics.sql(con, "recs", metrics, dialect=dialect, **options)
        statements = sqlglot.parse(text, read=dialect, error_level=sqlglot.ErrorLevel.RAISE)
        assert len(statements) == 1 and statements[0].key == "select", (options, text)


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake"])
@settings(FAST, max_examples=3)
@given(data=unit_batch(), ks=cutoffs, conventions=st.sampled_from(CASES))
def test_bigquery_and_snowflake_text_computes_the_same(dialect, data, ks, conventions):
    """Their text, translated by sqlglot and run in DuckDB, gives evaluate()'s numbers."""
    import sqlglot
    from cross_engine import assert_close_tables

    metrics = metric_names(ks, conventions.get("ties", "item_desc"), True)
    options = dict(by="model" if data.grouped else None, user=data.key, **conventions)
    expected = sqlmetrics.evaluate(DUCKDB, data.recs_table(), metrics, truth=data.truth_table(), **options)
    con = duckdb.connect()
    con.register("recs_frame", data.recs_table())
    con.execute("CREATE TABLE recs AS SELECT * FROM recs_frame")
    if data.truth is not None:
        con.register("truth_frame", data.truth_table())
        con.execute("CREATE TABLE truth AS SELECT * FROM truth_frame")
    truth = None if data.truth is None else "truth"
    text = sqlmetrics.sql(con, "recs", metrics, truth=truth, dialect=dialect, **options)
    actual = con.sql(sqlglot.transpile(text, read=dialect, write="duckdb")[0]).to_arrow_table()
    assert_close_tables(actual.cast(expected.schema), expected)


def test_partitions_count_units_of_every_key_column():
    """--partitions is refused above the distinct units of recs and truth together: here
    (1, d1), (1, d2), (2, d1) and truth's (3, d1), four although there are three users."""
    from sqlmetrics.statement.partitions import units_sql

    con = duckdb.connect()
    con.register("r", RECS)
    truth = pa.concat_tables([TRUTH, pa.table({"user_id": [3], "day": [D1], "item_id": ["x"]})])
    con.register("t", truth)
    key = ['"user_id"', '"day"']
    sql = units_sql({"source": "r", "unit": key}, {"source": "t", "unit": key}, ["HUGEINT", None])
    assert con.execute(sql).fetchall() == [(4, 5)]
