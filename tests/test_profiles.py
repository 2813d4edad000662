"""Convention profiles (sqlmetrics/names/profiles.py) against the tools they name, on random data
without the behaviours no profile can reproduce (ties in score, except for scikit-learn, whose
tie rule is defined): ranx and scikit-learn (installed with the tests), Spark MLlib (the
session of the run), Microsoft Recommenders (its own functions, run by the interpreter named by
SQLMETRICS_RECOMMENDERS_PYTHON, since it needs pandas < 3), Evidently (SQLMETRICS_EVIDENTLY_PYTHON).
Each tool's numbers come from the tool itself, never from sqlmetrics.
"""

from __future__ import annotations

import functools
import json
import math
import random
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
import reference
from peers import run_cases

import sqlmetrics
from sqlmetrics import ConventionError
from sqlmetrics.cli import main
from sqlmetrics.names.profiles import PROFILES, conventions_by_metric
from sqlmetrics.reports.config import ReportConfigError, config_from_dict

HERE = Path(__file__).resolve().parent
SEEDS = range(12)
K = 3
BIG = 1000  # a cutoff beyond every list: the whole list


def close(a, b, what=""):
    assert a is not None and b is not None, what
    assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (what, a, b)


def random_data(seed: int, ties: bool = False, min_list: int = 1):
    """recs (user, item, score) and truth (user, item, relevance 0..3): users with recs and no
    truth, truth and no recs, truth with grade 0 only, truth never recommended. Scores are
    distinct within a user unless `ties`."""
    rng = random.Random(seed)
    items = list(range(100, 115))
    recs, truth = [], []
    for user in range(1, rng.randint(4, 14) + 1):
        has_recs, has_truth = rng.random() > 0.15, rng.random() > 0.1
        if not (has_recs or has_truth):
            has_truth = True
        if has_recs:
            listed = rng.sample(items, rng.randint(min_list, 8))
            pool = rng.choices(range(4), k=len(listed)) if ties else rng.sample(range(1000), len(listed))
            recs += [(user, item, score / 10) for item, score in zip(listed, pool, strict=True)]
        if has_truth:
            judged = rng.sample(items, rng.randint(1, 6))
            zero_only = rng.random() < 0.15
            truth += [(user, item, 0 if zero_only else rng.choice([0, 0, 1, 2, 3])) for item in judged]
    return recs, truth


def arrow(names: str, rows: list[tuple]) -> pa.Table:
    """A table of these comma-separated columns from a list of tuples."""
    return pa.table({name: [row[n] for row in rows] for n, name in enumerate(names.split(","))})


def tables(recs, truth):
    return arrow("user_id,item_id,score", recs), arrow("user_id,item_id,relevance", truth)


def per_user(table: pa.Table, metric: str) -> dict:
    return {row["user_id"]: row[metric] for row in table.to_pylist() if row[metric] is not None}


# --- ranx ------------------------------------------------------------------------------------

RANX = {  # ranx's name -> sqlmetrics' name
    f"precision@{K}": f"precision@{K}",
    f"recall@{K}": f"recall@{K}",
    f"ndcg@{K}": f"ndcg@{K}",
    f"ndcg_burges@{K}": f"ndcg@{K}",  # with gain="exponential"
    f"map@{K}": f"map@{K}",
    f"hit_rate@{K}": f"hit_rate@{K}",
    "mrr": f"mrr@{BIG}",
    "r-precision": "r_precision",
}


@pytest.mark.parametrize("seed", SEEDS)
def test_ranx_profile_is_ranx(seed):
    ranx = pytest.importorskip("ranx")
    recs, truth = random_data(seed)
    qrels_dict: dict = {}
    for u, i, g in truth:
        qrels_dict.setdefault(str(u), {})[str(i)] = g
    qrels = ranx.Qrels(qrels_dict)
    run_dict: dict = {}
    for u, i, s in recs:
        run_dict.setdefault(str(u), {})[str(i)] = s
    run = ranx.Run(run_dict).make_comparable(qrels)  # without it ranx refuses the run
    ranx.evaluate(qrels, run, list(RANX))
    r, t = tables(recs, truth)
    con = duckdb.connect()
    linear = [m for name, m in RANX.items() if not name.startswith("ndcg_burges")]
    ours = sqlmetrics.evaluate(con, r, linear, truth=t, per_user=True, profile="ranx")
    burges = sqlmetrics.evaluate(
        con, r, [f"ndcg@{K}"], truth=t, per_user=True, profile="ranx", gain="exponential"
    )
    means = sqlmetrics.evaluate(con, r, linear, truth=t, profile="ranx").to_pylist()[0]
    assert means["users"] == len(qrels.keys())
    for name, metric in RANX.items():
        values = per_user(burges if name.startswith("ndcg_burges") else ours, metric)
        assert set(values) == {int(q) for q in qrels.keys()}, name
        for q, expected in run.scores[name].items():
            close(values[int(q)], float(expected), (seed, name, q))
        if not name.startswith("ndcg_burges"):
            close(means[metric], float(run.mean_scores[name]), (seed, name))


# --- scikit-learn ----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_sklearn_profile_is_sklearn_with_ties(seed):
    metrics_module = pytest.importorskip("sklearn.metrics")
    recs, truth = random_data(seed, ties=True, min_list=2)
    grades = {(u, i): g for u, i, g in truth}
    rows = [(u, i, s, grades.get((u, i), 0)) for u, i, s in recs]
    table = arrow("user_id,item_id,score,relevance", rows)
    con = duckdb.connect()
    ks = [1, K, BIG]
    names = [f"{m}@{k}" for m in ("ndcg", "dcg") for k in ks]
    ours = sqlmetrics.evaluate(con, table, names, per_user=True, profile="sklearn")
    mean = sqlmetrics.evaluate(con, table, names, profile="sklearn").to_pylist()[0]
    lists: dict = {}
    for u, _, s, g in rows:
        y_true, y_score = lists.setdefault(u, ([], []))
        y_true.append(g)
        y_score.append(s)
    for name in names:
        metric, k = name.split("@")
        function = metrics_module.ndcg_score if metric == "ndcg" else metrics_module.dcg_score
        expected = {u: float(function([yt], [ys], k=int(k))) for u, (yt, ys) in lists.items()}
        values = per_user(ours, name)
        assert set(values) == set(expected)
        for u in expected:
            close(values[u], expected[u], (seed, name, u))
        close(mean[name], sum(expected.values()) / len(expected), (seed, name))


# --- Spark MLlib ----------------------------------------------------------------------------


def test_spark_profile_is_mllib_ranking_evaluator(spark):
    from pyspark.ml.evaluation import RankingEvaluator

    con = duckdb.connect()
    for seed in SEEDS[:4]:
        recs, truth = random_data(seed)
        r, t = tables(recs, truth)
        # Spark's input: one row per truth user, its labels (the rows at or above the threshold,
        # possibly none) and its predictions in order (none for a user without recs)
        labels: dict = {}
        for u, i, g in truth:
            labels.setdefault(u, [])
            if g >= 1:
                labels[u].append(float(i))
        predicted: dict = {}
        for u, i, _ in sorted(recs, key=lambda row: (row[0], -row[2])):
            predicted.setdefault(u, []).append(float(i))
        frame = spark.createDataFrame(
            [(predicted.get(u, []), labels[u]) for u in labels],
            "prediction array<double>, label array<double>",
        )
        checks = {
            f"precision@{K}": ("precisionAtK", K),
            f"recall@{K}": ("recallAtK", K),
            f"ndcg@{K}": ("ndcgAtK", K),
            f"map@{K}": ("meanAveragePrecisionAtK", K),
            f"map@{BIG}": ("meanAveragePrecision", K),
        }
        ours = sqlmetrics.evaluate(con, r, list(checks), truth=t, profile="spark").to_pylist()[0]
        assert ours["users"] == len(labels)
        for name, (spark_name, k) in checks.items():
            expected = RankingEvaluator(metricName=spark_name, k=k).evaluate(frame)
            close(ours[name], expected, (seed, name))
    # and the statement of metrics under different conventions runs on Spark itself
    recs, truth = random_data(5)
    r = arrow("user_id,item_id,score,model", [(u, i, s, "AB"[(u + i) % 2]) for u, i, s in recs])
    t = arrow("user_id,item_id,relevance", truth)
    for per_user_rows in (False, True):
        options = {"truth": t, "by": "model", "per_user": per_user_rows, "profile": "recommenders"}
        metrics = [f"recall@{K}", f"ndcg@{K}", f"map@{K}"]
        on_spark = sqlmetrics.evaluate(spark, r, metrics, **options).to_pylist()
        on_duckdb = sqlmetrics.evaluate(con, r, metrics, **options).to_pylist()
        assert [list(row) for row in on_spark] == [list(row) for row in on_duckdb]
        for mine, theirs in zip(on_spark, on_duckdb, strict=True):
            for column, value in theirs.items():
                if isinstance(value, float):
                    close(mine[column], value, column)
                else:
                    assert mine[column] == value, column


@pytest.mark.parametrize("dialect", ["spark", "postgres", "bigquery", "snowflake"])
def test_metrics_under_different_conventions_render_for_every_dialect(dialect):
    sqlglot = pytest.importorskip("sqlglot")
    recs = ("recs", {"user_id": "BIGINT", "item_id": "VARCHAR", "score": "DOUBLE", "model": "VARCHAR"})
    truth = ("truth", {"user_id": "BIGINT", "item_id": "VARCHAR", "relevance": "INTEGER"})
    for per_user_rows in (False, True):
        text = sqlmetrics.sql(
            None, recs, ["precision@3", "ndcg@3"], truth=truth, by="model", per_user=per_user_rows,
            profile="recommenders", dialect=dialect,
        )  # fmt: skip
        assert text.count("_c1") > 1
        sqlglot.parse_one(text, read=dialect)


# --- Microsoft Recommenders -----------------------------------------------------------------


@functools.cache
def recommenders_numbers() -> dict:
    """Recommenders' numbers for every seed, from one run of its interpreter."""
    cases = []
    for seed in SEEDS:
        recs, truth = random_data(seed)
        ordered = sorted(recs, key=lambda row: (row[0], -row[2]))  # what Recommenders' `map` expects
        cases.append({"truth": truth, "pred": ordered, "k": K})
    variable, tool = "SQLMETRICS_RECOMMENDERS_PYTHON", "Microsoft Recommenders (pandas < 3)"
    return dict(zip(SEEDS, run_cases(variable, tool, "recommenders_run.py", cases), strict=True))


@pytest.mark.xdist_group("recommenders")  # one worker runs Recommenders for all seeds
@pytest.mark.parametrize("seed", SEEDS)
def test_recommenders_profile_is_microsoft_recommenders(seed):
    expected = recommenders_numbers()[seed]
    recs, truth = random_data(seed)
    r, t = tables(recs, truth)
    con = duckdb.connect()
    metrics = [f"precision@{K}", f"ndcg@{K}", f"recall@{K}", f"map@{K}", f"map@{BIG}"]
    ours = sqlmetrics.evaluate(con, r, metrics, truth=t, profile="recommenders").to_pylist()[0]
    # the column order asked for, with ndcg's own count of users (every truth user)
    assert list(ours) == ["users", *metrics[:2], f"ndcg@{K}_users", *metrics[2:]]
    assert ours["users"] == len({u for u, _, _ in recs} & {u for u, _, _ in truth})
    assert ours[f"ndcg@{K}_users"] == len({u for u, _, _ in truth})
    for ours_name, theirs in [
        (f"precision@{K}", "precision"),
        (f"recall@{K}", "recall"),
        (f"map@{K}", "map_at_k"),
        (f"map@{BIG}", "map"),
        (f"ndcg@{K}", "ndcg_binary"),
    ]:
        close(ours[ours_name], expected[theirs], (seed, ours_name))
    for gain, theirs in (("linear", "ndcg_raw"), ("exponential", "ndcg_exp")):
        [row] = sqlmetrics.evaluate(
            con, r, [f"ndcg@{K}", f"precision@{K}"], truth=t, profile="recommenders", gain=gain
        ).to_pylist()
        close(row[f"ndcg@{K}"], expected[theirs], (seed, gain))
        close(row[f"precision@{K}"], expected["precision"], (seed, gain))  # never reads ratings


# --- Evidently ------------------------------------------------------------------------------


def evidently_case(seed: int, ties: bool) -> tuple[list, list[int]]:
    """Evidently's frame (rows of user, item, score, target) and its cutoffs for a seed."""
    # Evidently's single frame: each user's list with its target, sorted by score (its MAP reads
    # the last row of the top k in the frame's order). Lists of 1 to 8 items at K = 3 and at
    # a K beyond most lists: P@k divides by min(list length, k) and MAP repeats the last item
    # past a list's end (short_lists="evidently"). With score ties, a tie group shares the floor
    # of its mean position (ties="evidently"), whatever the order of its rows in the frame
    # (item ascending here; sqlmetrics' own rule is item descending); Evidently's MAP then
    # depends on that order, so it is left out
    recs, truth = random_data(seed, ties=ties)
    grades = {(u, i): g for u, i, g in truth}
    ordered = sorted(recs, key=lambda row: (row[0], -row[2], row[1]))
    rows = [(u, i, s, grades.get((u, i), 0)) for u, i, s in ordered]
    if not any(row[3] > 0 for row in rows):  # Evidently fails on a frame without a relevant row
        rows[0] = (*rows[0][:3], 1)
    # Evidently fails at a k beyond every position in the lists of users with a relevant row
    clicked = {r[0] for r in rows if r[3] > 0}
    last = max(
        max(reference.evidently_positions({i: s for u, i, s, _ in rows if u == user}).values())
        for user in clicked
    )
    return rows, sorted({min(K, last), last})


EVIDENTLY_CASES = [(seed, ties) for seed in SEEDS for ties in (False, True)]


@functools.cache
def evidently_numbers() -> dict:
    """Evidently's numbers for every case, from one run of its interpreter."""
    cases = [dict(zip(("rows", "ks"), evidently_case(*case), strict=True)) for case in EVIDENTLY_CASES]
    numbers = run_cases("SQLMETRICS_EVIDENTLY_PYTHON", "Evidently", "evidently_run.py", cases)
    return dict(zip(EVIDENTLY_CASES, numbers, strict=True))


# one worker runs Evidently's interpreter (seconds: importing Evidently, a report per k) for all
# the cases, not each worker its own (pytest-xdist's --dist loadgroup)
@pytest.mark.xdist_group("evidently")
@pytest.mark.parametrize(("seed", "ties"), EVIDENTLY_CASES,
                         ids=[f"{s}-{'score-ties' if t else 'distinct-scores'}" for s, t in EVIDENTLY_CASES])
def test_evidently_profile_is_evidently(seed, ties):
    expected = evidently_numbers()[(seed, ties)]
    rows, ks = evidently_case(seed, ties)
    table = arrow("user_id,item_id,score,relevance", rows)
    names = ("precision", "recall", "ndcg") if ties else ("precision", "recall", "map", "ndcg")
    ours = sqlmetrics.evaluate(
        duckdb.connect(), table, [f"{name}@{k}" for k in ks for name in names], profile="evidently"
    ).to_pylist()[0]
    for k in ks:
        for name in names:
            close(ours[f"{name}@{k}"], expected[str(k)][name], (seed, k, name))


def test_short_lists_evidently_by_hand():
    """Evidently's reading of a list shorter than k, on the example of docs/conventions.md
    (Evidently 0.7.23 gives P@5 0.35 and MAP@5 1.5 on it; the test above runs it)."""
    second = [(2, item, 1 - n / 10, int(n == 0)) for n, item in enumerate("cdefg")]
    rows = [(1, "a", 0.9, 0), (1, "b", 0.8, 1), *second]
    table = arrow("user_id,item_id,score,relevance", rows)
    con = duckdb.connect()
    metrics = ["precision@5", "f1@5", "map@5", "mar@5", "recall@5", "ndcg@5", "map", "precision@1"]
    users = sqlmetrics.evaluate(con, table, metrics, per_user=True, short_lists="evidently").to_pylist()
    # user 1: [0, 1] at k = 5: P = 1/2; F1 = 2 * 1 / (2 + 1); AP = (1/2 + 3 * 1/2) / 1;
    # AR = (1 + 3 * 1) / 1; no change without @k or where the list is long enough
    assert users[0] == {"user_id": 1, "precision@5": 0.5, "f1@5": 2 / 3, "map@5": 2.0,
                        "mar@5": 4.0, "recall@5": 1.0, "ndcg@5": 1 / math.log2(3), "map": 0.5,
                        "precision@1": 0.0}  # fmt: skip
    assert users[1] == {"user_id": 2, "precision@5": 0.2, "f1@5": 1 / 3, "map@5": 1.0, "mar@5": 1.0,
                        "recall@5": 1.0, "ndcg@5": 1.0, "map": 1.0, "precision@1": 1.0}  # fmt: skip
    [mean] = sqlmetrics.evaluate(con, table, ["precision@5", "map@5"], profile="evidently").to_pylist()
    assert mean == {"users": 2, "precision@5": 0.35, "map@5": 1.5}
    padded = sqlmetrics.evaluate(con, table, ["precision@5", "map@5"], profile="evidently", short_lists="pad")
    assert padded.to_pylist() == [{"users": 2, "precision@5": 0.2, "map@5": 0.75}]
    # an empty list (missing="zero"): 0, not a division by zero
    truth = pa.table({"user_id": [3], "item_id": ["x"], "relevance": [1]})
    recs = arrow("user_id,item_id,score", [row[:3] for row in rows])
    [row] = sqlmetrics.evaluate(
        con, recs, ["precision@5", "f1@5", "map@5"], truth=truth, missing="zero", short_lists="evidently"
    ).to_pylist()
    assert row == {"users": 1, "precision@5": 0.0, "f1@5": 0.0, "map@5": 0.0}


def test_cli_and_report_short_lists(tmp_path, capsys):
    rows = [(1, "a", 0.9, 0), (1, "b", 0.8, 1)]
    import pyarrow.parquet as pq

    pq.write_table(arrow("user_id,item_id,score,relevance", rows), tmp_path / "recs.parquet")
    args = ["evaluate", str(tmp_path / "recs.parquet"), "--metrics", "precision@4,map@4", "--format", "json"]
    assert main([*args, "--short-lists", "evidently"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"users": 1, "precision@4": 0.5, "map@4": 1.5}]
    assert main([*args, "--short-lists", "short"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    base = {"name": "r", "warehouse": "w.duckdb", "recommendations": "recs", "time_column": "day",
            "metrics": ["precision@10"]}  # fmt: skip
    plain = config_from_dict(base)
    # the default keeps the hash of the configs written before short_lists existed
    assert config_from_dict({**base, "conventions": {"short_lists": "pad"}}).hash == plain.hash
    evidently = config_from_dict({**base, "conventions": {"short_lists": "evidently"}})
    assert evidently.hash != plain.hash and evidently.options()["short_lists"] == "evidently"


# --- what a profile is ----------------------------------------------------------------------


def test_every_profile_is_in_the_conventions_table():
    text = (HERE.parent / "docs" / "conventions.md").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| convention |"))
    assert [p for p in PROFILES if f'`"{p}"`' not in header] == []


def test_explicit_keywords_override_a_profile():
    [c] = conventions_by_metric("spark", {"gain": "linear", "ties": None}, ["ndcg"])
    assert (c.gain, c.ap_denominator, c.missing) == ("linear", "min_k", "zero")
    # a per-metric choice too: Recommenders' ndcg over every truth user, unless missing= is given
    ndcg, precision = conventions_by_metric("recommenders", {"missing": "skip"}, ["ndcg", "precision"])
    assert ndcg.missing == precision.missing == "skip"
    recs, truth = random_data(3)
    r, t = tables(recs, truth)
    con = duckdb.connect()
    metrics = [f"ndcg@{K}", f"precision@{K}", f"map@{K}"]
    overridden = sqlmetrics.evaluate(con, r, metrics, truth=t, profile="recommenders", missing="skip")
    spelled_out = sqlmetrics.evaluate(
        con, r, metrics, truth=t, threshold="any", gain="binary", ap_denominator="min_k"
    )
    assert overridden.to_pylist() == spelled_out.to_pylist()  # one group: no ndcg@k_users
    plain = sqlmetrics.evaluate(con, r, metrics, truth=t)
    assert sqlmetrics.evaluate(con, r, metrics, truth=t, profile="ranx", missing="skip").equals(plain)
    assert sqlmetrics.evaluate(con, r, metrics, truth=t, profile="trec_eval").equals(plain)


def test_an_unknown_profile_is_a_convention_error():
    r, t = tables(*random_data(1))
    con = duckdb.connect()
    with pytest.raises(ConventionError, match=r"profile='recommender'.*did you mean 'recommenders'"):
        sqlmetrics.evaluate(con, r, ["ndcg@3"], truth=t, profile="recommender")
    with pytest.raises(ConventionError, match="Known profiles: 'trec_eval', 'recommenders'"):
        sqlmetrics.sql(con, "recs", ["ndcg@3"], profile=3)
    with pytest.raises(ConventionError, match="profile='x'"):
        sqlmetrics.compare(con, r, ["ndcg@3"], truth=t, by="user_id", baseline=1, profile="x")


def test_threshold_any_needs_a_truth_table():
    table = pa.table({"user_id": [1], "item_id": [1], "score": [1.0], "relevance": [0]})
    with pytest.raises(ConventionError, match="threshold='any'.*needs truth="):
        sqlmetrics.evaluate(duckdb.connect(), table, ["precision@1"], threshold="any")


def test_grouped_metrics_per_user_by_and_sql_agree():
    """Metrics under different conventions: one statement, joined per (group, user)."""
    recs, truth = random_data(5)
    recs = [(u, i, s, "A" if (u + i) % 3 else "B") for u, i, s in recs]
    r = arrow("user_id,item_id,score,model", recs)
    _, t = tables([(u, i, s) for u, i, s, _ in recs], truth)
    con = duckdb.connect()
    con.register("recs", r)
    con.register("truth", t)
    metrics = [f"recall@{K}", f"ndcg@{K}"]
    users = sqlmetrics.evaluate(con, r, metrics, truth=t, by="model", per_user=True, profile="recommenders")
    assert users.column_names == ["model", "user_id", *metrics]
    for model in ("A", "B"):
        rows = [row for row in users.to_pylist() if row["model"] == model]
        # ndcg: every truth user (0 without recs); recall: the users with recs of this model
        assert {row["user_id"] for row in rows if row[f"ndcg@{K}"] is not None} == {u for u, _, _ in truth}
        with_recs = {u for u, _, _, m in recs if m == model} & {u for u, _, _ in truth}
        assert {row["user_id"] for row in rows if row[f"recall@{K}"] is not None} == with_recs
    means = sqlmetrics.evaluate(con, r, metrics, truth=t, by="model", profile="recommenders")
    for row in means.to_pylist():
        mine = [u for u in users.to_pylist() if u["model"] == row["model"]]
        ndcg = [u[f"ndcg@{K}"] for u in mine if u[f"ndcg@{K}"] is not None]
        assert row[f"ndcg@{K}_users"] == len(ndcg)
        close(row[f"ndcg@{K}"], sum(ndcg) / len(ndcg))
    text = sqlmetrics.sql(con, "recs", metrics, truth="truth", by="model", profile="recommenders")
    assert con.execute(text).fetchall() == [tuple(row.values()) for row in means.to_pylist()]
    compared = sqlmetrics.compare(
        con, r, metrics, truth=t, by="model", baseline="A", profile="recommenders", test="t", design="paired"
    ).to_pylist()
    assert [row["metric"] for row in compared] == metrics
    assert compared[1]["users"] == len({u for u, _, _ in truth})  # ndcg pairs every truth user


def test_partitions_and_intervals_refuse_metrics_under_different_conventions():
    r, t = tables(*random_data(2))
    with pytest.raises(ConventionError, match="partitions=2 cannot evaluate"):
        sqlmetrics.evaluate(
            duckdb.connect(), r, ["ndcg@3", "map@3"], truth=t, profile="recommenders", partitions=2
        )
    with pytest.raises(ConventionError, match="confidence=0.95 cannot evaluate"):
        sqlmetrics.evaluate(
            duckdb.connect(), r, ["ndcg@3", "map@3"], truth=t, profile="recommenders", confidence=0.95
        )
    # one set of conventions: both work under a profile
    one = sqlmetrics.evaluate(duckdb.connect(), r, ["map@3"], truth=t, profile="recommenders", partitions=2)
    assert one.equals(sqlmetrics.evaluate(duckdb.connect(), r, ["map@3"], truth=t, profile="recommenders"))


def test_cli_profile(tmp_path, capsys):
    r, t = tables(*random_data(4))
    import pyarrow.parquet as pq

    pq.write_table(r, tmp_path / "recs.parquet")
    pq.write_table(t, tmp_path / "truth.parquet")
    args = ["evaluate", str(tmp_path / "recs.parquet"), "--truth", str(tmp_path / "truth.parquet"),
            "--metrics", "precision@3,ndcg@3", "--format", "json"]  # fmt: skip
    assert main([*args, "--profile", "recommenders", "--gain", "linear"]) == 0
    printed = json.loads(capsys.readouterr().out)
    api = sqlmetrics.evaluate(
        duckdb.connect(), r, ["precision@3", "ndcg@3"], truth=t, profile="recommenders", gain="linear"
    )
    assert printed == api.to_pylist()
    assert main([*args, "--profile", "recommender"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--profile" in err and "recommender" in err
    assert main([*args, "--threshold", "some"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_report_config_profile():
    base = {"name": "r", "warehouse": "w.duckdb", "recommendations": "recs", "time_column": "day",
            "metrics": ["ndcg@10", "precision@10"]}  # fmt: skip
    plain = config_from_dict(base)
    config = config_from_dict({**base, "conventions": {"profile": "recommenders", "gain": "linear"}})
    assert config.options()["profile"] == "recommenders" and config.options()["gain"] == "linear"
    assert "missing" not in config.options()  # the profile decides it, per metric
    assert config.hash != plain.hash
    assert config_from_dict({**base, "conventions": {"profile": "trec_eval"}}).hash == plain.hash
    with pytest.raises(ReportConfigError, match="did you mean 'spark'"):
        config_from_dict({**base, "conventions": {"profile": "sparks"}})


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))


def test_a_report_records_each_metrics_own_users():
    import datetime

    from sqlmetrics.reports.periods import Period
    from sqlmetrics.reports.runner import run_report

    con = duckdb.connect()
    con.execute(
        "CREATE TABLE recs AS SELECT DATE '2026-11-01' AS day, * FROM (VALUES (1, 'a', 0.9), (1, 'b', 0.8),"
        " (2, 'c', 0.7)) AS t(user_id, item_id, score)"
    )
    con.execute(
        "CREATE TABLE truth AS SELECT DATE '2026-11-01' AS day, * FROM (VALUES (1, 'b', 1), (2, 'c', 0),"
        " (3, 'd', 1)) AS t(user_id, item_id, relevance)"
    )
    config = config_from_dict(
        {"name": "r", "warehouse": "w", "recommendations": "recs", "truth": "truth", "time_column": "day",
         "metrics": ["precision@2", "ndcg@2"], "conventions": {"profile": "recommenders"}}
    )  # fmt: skip
    run_report(con, config, [Period(datetime.date(2026, 11, 1), datetime.date(2026, 11, 2))])
    rows = con.execute("SELECT metric, users, value FROM sqlmetrics_results ORDER BY metric").fetchall()
    # precision over users 1 and 2 (both frames; c counts though graded 0), ndcg over 1, 2, 3
    assert rows[1] == ("precision", 2, 0.5)
    assert rows[0][:2] == ("ndcg", 3)
    close(rows[0][2], (1 / math.log2(3) + 1 + 0) / 3)
