"""The DuckDB macros (sqlmetrics/api/macros.py, docs/sql.md): equal to evaluate() for every ranking
metric, means and per unit, on data with ties, graded, negative and NULL grades, empty and
missing units, several segment and unit columns; bad calls fail with a message that says
what is wrong; the checked-in file is what the templates give now; the DuckDB command-line
client runs the written file."""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import sqlmetrics
from sqlmetrics.api.macros import Macro, generated_files, macro_definitions, macros
from sqlmetrics.names.profiles import PROFILES
from sqlmetrics.names.registry import METRICS

ROOT = Path(__file__).resolve().parent.parent
GRADES = {"purchase": 3, "add_to_cart": 2, "view": 1, "return": -1}
GRADES_SQL = "MAP {'purchase': 3, 'add_to_cart': 2, 'view': 1, 'return': -1}"


@pytest.fixture(scope="module")
def warehouse():
    """A small warehouse of the README's shape, with every column name a macro parameter has
    (and the statement's own internal names) as extra columns that must change nothing."""
    con = duckdb.connect()
    sqlmetrics.install_macros(con)
    rng = random.Random(36)
    recs, events = [], []
    for day in (1, 2):
        for user in range(40):
            for model in ("A", "B"):
                if (user + day) % 13 == 0 and model == "B":
                    continue  # a unit of one segment only
                for item in rng.sample(range(30), rng.randint(1, 14)):
                    # scores rounded to one decimal: many ties
                    recs.append((day, model, user, f"i{item}", round(rng.random(), 1)))
            if user % 11 == 5:
                continue  # recommended, no truth: not evaluated
            for _ in range(rng.randint(1, 8)):
                # an event log: repeated (user, item) rows, the highest grade counts
                action = rng.choice([*GRADES, "search"])
                events.append((day, user, f"i{rng.randrange(30)}", action))
        events.append((day, 1000 + day, "i1", "purchase"))  # truth only: skipped
    con.execute(
        "CREATE TABLE recommendations (day INTEGER, model VARCHAR, user_id INTEGER, "
        "item_id VARCHAR, score DOUBLE)"
    )
    con.executemany("INSERT INTO recommendations VALUES (?, ?, ?, ?, ?)", recs)
    con.execute("CREATE TABLE events (day INTEGER, user_id INTEGER, item_id VARCHAR, event_type VARCHAR)")
    con.executemany("INSERT INTO events VALUES (?, ?, ?, ?)", events)
    # graded truth with NULL and negative grades, and a truth of pairs without grades
    con.execute(
        "CREATE TABLE graded AS SELECT day, user_id, item_id, CASE event_type WHEN 'purchase' "
        "THEN 3 WHEN 'add_to_cart' THEN 2 WHEN 'view' THEN 1 WHEN 'return' THEN -1 END AS relevance "
        "FROM events"
    )
    con.execute(
        "CREATE TABLE pairs AS SELECT DISTINCT day, user_id, item_id FROM events "
        "WHERE event_type = 'purchase'"
    )
    junk = ", ".join(
        f"{i} AS {name}"
        for i, name in enumerate(
            ['"k"', "item", "grades", "beta", "recs", "truth", "c", "x", '"by"', '"user"',
             "_item", "_key", "_user", "_g0", "_rel", "_p", "sqlmetrics_item", "history", "catalog",
             "item_features", "sqlmetrics_features", "_vec", "_iid", "_pos", "subtopics", "item_genres",
             "group_target", "baseline", "genre_weight", "sqlmetrics_genre", "_genre", "_w",
             "_subtopic", "_val"]
        )
    )  # fmt: skip
    for view, table in (("recs_junk", "recommendations"), ("events_junk", "events")):
        con.execute(f"CREATE VIEW {view} AS SELECT *, {junk}, 99 AS features, 99 AS genre FROM {table}")
    # the beyond-accuracy inputs: a history of (user, day) units' earlier interactions (items
    # the lists have and others, repeated rows), a catalog of every item and more, and item
    # vectors for some of the items (the others have no similarity), ties among them
    history = [
        (day, user, f"i{rng.randrange(36)}")
        for day in (1, 2) for user in range(40) if user % 7 != 3 for _ in range(rng.randint(1, 9))
    ]  # fmt: skip
    con.execute("CREATE TABLE history (day INTEGER, user_id INTEGER, item_id VARCHAR)")
    con.executemany("INSERT INTO history VALUES (?, ?, ?)", history)
    con.execute("CREATE TABLE catalog AS SELECT 'i' || range AS item_id FROM range(40)")
    con.execute(
        "CREATE TABLE vectors AS SELECT 'i' || range AS item_id, [(range % 5)::DOUBLE, "
        "(range % 3)::DOUBLE - 1, 0.5, -0.25 * (range % 2)] AS features FROM range(27)"
    )
    # subtopic judgements of the (user, day) units: grades 0 to 2, NULL, a (unit, subtopic,
    # item) judged twice, units with no relevant subtopic, units with none at all
    subtopics = [
        (day, user, f"s{rng.randrange(4)}", f"i{rng.randrange(30)}", rng.choice([0, 1, 1, 2, None]))
        for day in (1, 2) for user in range(40) if user % 9 != 2 for _ in range(rng.randint(1, 9))
    ]  # fmt: skip
    con.execute(
        "CREATE TABLE subtopics (day INTEGER, user_id INTEGER, subtopic VARCHAR, item_id VARCHAR, "
        "relevance INTEGER)"
    )
    con.executemany("INSERT INTO subtopics VALUES (?, ?, ?, ?, ?)", subtopics)
    # ... with intent weights, one per (unit, subtopic)
    con.execute(
        "CREATE TABLE weighted_subtopics AS SELECT *, CASE subtopic WHEN 's0' THEN 1 WHEN 's1' THEN 2.5 "
        "WHEN 's2' THEN 0.25 ELSE 4 END AS weight FROM subtopics"
    )
    # the items' genres as rows (weights, some items with two genres, some with none, a 0
    # weight), awrf's target over them, and vectors of nonnegative genre weights
    con.execute(
        "CREATE TABLE genres AS SELECT 'i' || range AS item_id, 'g' || (range % 4) AS genre, "
        "(1 + range % 3)::DOUBLE AS weight FROM range(36) WHERE range % 9 <> 4 "
        "UNION ALL SELECT 'i' || range, 'g' || ((range + 1) % 4), (range % 2)::DOUBLE FROM range(36) "
        "WHERE range % 3 = 0"
    )
    con.execute("CREATE TABLE target AS SELECT * FROM (VALUES ('g0', 1.0), ('g1', 2.0), ('g2', 3.0), "
                "('g3', 0.5)) AS t(genre, weight)")  # fmt: skip
    con.execute("CREATE TABLE index_target AS SELECT * FROM (VALUES (1, 1.0), (2, 0.5), (3, 2.0)) "
                "AS t(genre, weight)")  # fmt: skip
    con.execute(
        "CREATE TABLE genre_vectors AS SELECT 'i' || range AS item_id, [(range % 2)::DOUBLE, "
        "(range % 3 > 0)::DOUBLE, CASE WHEN range % 5 = 0 THEN 0.5 ELSE 0 END] AS features FROM range(33)"
    )
    for table in ("history", "catalog", "vectors", "subtopics", "genres", "target", "genre_vectors",
                  "index_target", "weighted_subtopics"):
        features = "" if table in ("vectors", "genre_vectors") else ", 99 AS features"
        features += "" if table in ("genres", "target", "index_target") else ", 99 AS genre"
        weighed = ("genres", "target", "index_target", "weighted_subtopics")
        features += "" if table in weighed else ", 99 AS weight"
        con.execute(f"CREATE VIEW {table}_junk AS SELECT *, {junk}{features} FROM {table}")
    yield con
    con.close()


def _close(a, b, tol=1e-12) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return a == b


def _same(macro_rows: list[dict], expected_rows: list[dict], key: list[str]) -> None:
    def keyed(rows):
        return {tuple(r[c] for c in key): r for r in rows}

    got, want = keyed(macro_rows), keyed(expected_rows)
    assert got.keys() == want.keys()
    assert want, "no rows: the test would compare nothing"
    for k, expected in want.items():
        for column, value in expected.items():
            assert _close(got[k][column], value), (k, column, got[k][column], value)


def _macro_rows(con, sql: str) -> list[dict]:
    relation = con.sql(sql)
    return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]


def _call(m: Macro, recs: str, truth: str, k: int | None, extra: str = "") -> str:
    args = [repr(recs), repr(truth)]
    if m.has_cutoff:
        args.append(f"k := {k}")
    return f"SELECT * FROM {m.name}({', '.join(args)}{extra})"


def _label(m: Macro, k: int) -> str:
    return f"{m.metric.name}@{k}" if m.has_cutoff else m.metric.name


RANKING = [m for m in macros() if m.inputs == ("recs", "truth") and not m.metric.beyond]
# the beyond-accuracy metrics and the intent-aware measures (subtopics=): their inputs' tables
BEYOND = [m for m in macros() if m not in RANKING]


@pytest.mark.parametrize("m", RANKING, ids=lambda m: m.name)
def test_every_macro_equals_evaluate(warehouse, m):
    """Each macro against evaluate() with the same inputs: (user, day) units, segments by day
    and model, an action column graded by a map, an event log's repeated rows (truth_duplicates
    'max', the macros' convention); 1e-12."""
    k = 5
    extra = (
        ", \"by\" := ['day', 'model'], \"user\" := ['user_id', 'day'], relevance := 'event_type', "
        f"grades := {GRADES_SQL}"
    )
    got = _macro_rows(warehouse, _call(m, "recs_junk", "events_junk", k, extra))
    expected = sqlmetrics.evaluate(
        warehouse, "recommendations", [_label(m, k)], truth="events", by=["day", "model"],
        user=["user_id", "day"], action="event_type", relevance=GRADES, truth_duplicates="max",
        per_user=m.per_user,
    ).to_pylist()  # fmt: skip
    key = ["day", "model", "user_id"] if m.per_user else ["day", "model"]
    expected = [{("users" if c == "users" else c.split("@")[0]): v for c, v in r.items()} for r in expected]
    _same(got, expected, key)
    names = list(got[0])
    # the segment's columns in the order of "by" (per unit, those that are not the unit's), the
    # unit's in the order of "user"
    assert names == (["model", "user_id", "day", m.metric.name] if m.per_user
                     else ["day", "model", "users", m.metric.name])  # fmt: skip


# the tables each input parameter is given in test_every_beyond_macro_equals_evaluate
BEYOND_TABLES = {
    "truth": "events", "history": "history", "catalog": "catalog", "item_features": "vectors",
    "subtopics": "subtopics", "item_genres": "genres", "group_target": "target",
}  # fmt: skip


def _table_of(m: Macro, role: str, tables: dict[str, str]) -> str:
    """The table of an input: item_features read as genre weights, the nonnegative vectors."""
    if role == "item_features" and "genres" in m.metric.needs:
        return tables[role].replace("vectors", "genre_vectors")
    if role == "subtopics" and m.variant == "weighted":
        return tables[role].replace("subtopics", "weighted_subtopics")
    if role == "group_target" and "item_features" in m.inputs:
        return tables[role].replace("target", "index_target")  # (the vectors' genres: 1, 2, 3)
    return tables[role]


def _call_of(m: Macro, recs: str, tables: dict[str, str], extra: str = "") -> tuple[str, dict]:
    """The macro's call on recs and `tables` (by input, k 4, truth's action graded by a map,
    the genres' weight column), and evaluate()'s keywords for the same inputs."""
    args = [f"'{recs}'"] + [f"'{_table_of(m, i, tables)}'" for i in m.inputs[1:]]
    args += ["k := 4"] if m.has_cutoff else []
    args += [extra] if extra else []
    keywords = {i: _table_of(m, i, tables) for i in m.inputs[1:]}
    if "truth" in m.inputs:
        args.append(f"relevance := 'event_type', grades := {GRADES_SQL}")
        keywords.update(action="event_type", relevance=GRADES)
    if {"item_genres", "group_target"} & set(m.inputs):
        args.append("genre_weight := 'weight'")
        keywords.update(genre_weight="weight")
    if m.against_baseline:
        args.append("baseline := 'A'")
        keywords.update(baseline="A")
    return f"SELECT * FROM {m.name}({', '.join(args)})", keywords


@pytest.mark.parametrize("m", BEYOND, ids=lambda m: m.name)
def test_every_beyond_macro_equals_evaluate(warehouse, m):
    """Each beyond-accuracy macro (each variant of its inputs) against evaluate() with the same
    tables: (user, day) units, segments by day and model, serendipity's and fcp's truth an
    action column graded by a map; 1e-12. The tables have extra columns named like every
    parameter."""
    tables = {role: f"{table}_junk" for role, table in BEYOND_TABLES.items()}
    # (rbo: each model's lists against model A's; "by" is the one column of the systems)
    by = ["model"] if m.against_baseline else ["day", "model"]
    segments = f"\"by\" := {by}, \"user\" := ['user_id', 'day']"
    call, keywords = _call_of(m, "recs_junk", tables, segments)
    # (evaluate() reads the tables without the extra columns)
    keywords = {role: value.replace("_junk", "") if isinstance(value, str) else value
                for role, value in keywords.items()}  # fmt: skip
    got = _macro_rows(warehouse, call)
    label = _label(m, 4)
    expected = sqlmetrics.evaluate(
        warehouse, "recommendations", [label], by=by, user=["user_id", "day"],
        truth_duplicates="max", per_user=m.per_user, **keywords,
    ).to_pylist()  # fmt: skip
    key = [*by, "user_id", "day"] if m.per_user else by
    expected = [{(m.metric.name if c == label else c): v for c, v in r.items()} for r in expected]
    _same(got, expected, key)
    assert any(r[m.metric.name] not in (None, 0, 1) for r in got), "a test of nothing but NULLs, 0 and 1"
    assert list(got[0]) == (["model", "user_id", "day"] if m.per_user else [*by, "users"]) + [m.metric.name]


@pytest.mark.parametrize("segment", [[], ["model"]], ids=["no segment", "by model"])
@pytest.mark.parametrize("m", [m for m in macros() if not m.against_baseline], ids=lambda m: m.name)
def test_every_macro_plain_variant_equals_evaluate(warehouse, m, segment):
    """The plain variants of each macro (one "user" column, and no "by" or one "by" column:
    the statement without the stand-in columns) against evaluate() on one day's lists (of
    model A without a segment, of both models by model); 1e-12, and the columns in
    evaluate()'s order. (rbo's have none: its systems are a "by" column.)"""
    keyed = [("recs", "recs_junk"), ("events", "events_junk"), ("history", "history_junk"),
             ("subtopics", "subtopics_junk"), ("weighted_subtopics", "weighted_subtopics_junk")]  # fmt: skip
    keyed_tables = {table for table, _ in keyed}
    for table, source in keyed:
        model = " AND model = 'A'" if table == "recs" and not segment else ""
        view = f"CREATE OR REPLACE TEMP VIEW plain_{table} AS SELECT * FROM {source}"
        warehouse.execute(f"{view} WHERE day = 1{model}")
    plain = {role: f"plain_{table}" for role, table in BEYOND_TABLES.items() if table in keyed_tables}
    tables = {**BEYOND_TABLES, **plain}
    by = f"\"by\" := {segment}, \"user\" := ['user_id']"
    call, keywords = _call_of(m, "plain_recs", tables, by)
    got = _macro_rows(warehouse, call)
    label = _label(m, 4)
    expected = sqlmetrics.evaluate(
        warehouse, "plain_recs", [label], truth_duplicates="max", per_user=m.per_user, by=segment or None,
        **keywords,
    ).to_pylist()  # fmt: skip
    expected = [{(m.metric.name if c == label else c): v for c, v in r.items()} for r in expected]
    key = segment + (["user_id"] if m.per_user else [])
    _same(got, expected, key)
    assert len({tuple(r[c] for c in segment) for r in got}) == (2 if segment else 1)
    assert list(got[0]) == key + ([] if m.per_user else ["users"]) + [m.metric.name]


def test_beyond_macro_cutoff_is_read(warehouse):
    """k changes the number (the parameter is what the statement reads), and a bad k fails."""
    call = (
        "SELECT novelty FROM sqlmetrics_novelty('recommendations', 'history', k := {}, "
        "\"by\" := ['day', 'model'], \"user\" := ['user_id', 'day'])"
    )
    assert _macro_rows(warehouse, call.format(2)) != _macro_rows(warehouse, call.format(8))
    with pytest.raises(duckdb.Error, match="sqlmetrics_novelty: k must be an integer"):
        warehouse.sql(call.format(0)).fetchall()


@pytest.mark.parametrize("k", [1, 7, 20, 150])
@pytest.mark.parametrize("name", ["alpha_ndcg", "err_ia", "p_ia"])
def test_intent_aware_cutoffs(warehouse, name, k):
    """The intent-aware measures at other cutoffs (alpha_ndcg's ideal list a fold to the call's
    k, past ndeval's 20 and past 100; err_ia's normalization summed to k in the statement)
    equal evaluate()'s (1e-12), and k changes the number."""
    call = (
        f"SELECT * FROM sqlmetrics_{name}('recommendations', 'subtopics', k := {{}}, "
        "\"by\" := ['model'], \"user\" := ['user_id', 'day'])"
    )
    got = _macro_rows(warehouse, call.format(k))
    expected = sqlmetrics.evaluate(
        warehouse, "recommendations", [f"{name}@{k}"], subtopics="subtopics", by="model",
        user=["user_id", "day"],
    ).to_pylist()  # fmt: skip
    expected = [{"model": r["model"], "users": r["users"], name: r[f"{name}@{k}"]} for r in expected]
    _same(got, expected, ["model"])
    assert got != _macro_rows(warehouse, call.format(k + 1 if k < 20 else 3))


def test_rbo_baseline_is_read(warehouse):
    """rbo's baseline system is the parameter: each model against model B differs from each
    against model A, and model B's own lists have rbo 1."""
    call = (
        "SELECT model, rbo FROM sqlmetrics_rbo('recommendations', k := 5, \"by\" := ['model'], "
        "\"user\" := ['user_id', 'day'], baseline := '{}') ORDER BY model"
    )
    against_b = _macro_rows(warehouse, call.format("B"))
    assert against_b != _macro_rows(warehouse, call.format("A"))
    assert against_b[1] == {"model": "B", "rbo": 1.0}


# every non-default value of each convention that changes the SQL, and every profile
CONVENTION_CASES = [
    {"ties": "trec_eval"}, {"ties": "item_asc"}, {"ties": "average"}, {"ties": "evidently"},
    {"threshold": 2}, {"threshold": 1.5}, {"threshold": "any"}, {"gain": "exponential"},
    {"gain": "binary"}, {"empty": "skip"}, {"empty": "no_gain"}, {"missing": "zero"},
    {"ap_denominator": "min_k"}, {"short_lists": "evidently"}, {"duplicates": "all"},
    {"truth_duplicates": "sum"}, {"gain": "exponential", "threshold": 2, "empty": "no_gain"},
    *[{"profile": name} for name in PROFILES],
]  # fmt: skip
# the macros each case checks (those its conventions define)
CONVENTION_MACROS = {
    "c_ndcg", "c_map", "c_precision", "c_recall", "c_mrr", "c_hit_rate", "c_ndcg_whole", "c_map_whole",
    "c_r_precision", "c_bpref", "c_ndcg_per_user", "c_precision_per_user", "c_serendipity_history",
}  # fmt: skip


def _case_id(conventions: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in conventions.items())


@pytest.mark.parametrize("conventions", CONVENTION_CASES, ids=_case_id)
def test_conventions_as_macro_variants(warehouse, conventions):
    """install_macros(con, prefix, profile=, ties=, ...): the macros under those conventions
    equal evaluate() with the same keywords (1e-12), each metric alone (a profile's conventions
    may differ per metric); a metric the conventions do not define has no macro."""
    chosen = [m for m in macros("c_", **conventions) if m.name in CONVENTION_MACROS]
    assert chosen
    if conventions.get("ties") in ("average", "evidently"):
        assert not any(m.metric.name == "map" for m in chosen)  # (no i-th hit: not defined)
    warehouse.execute("".join(m.sql() for m in chosen))
    keywords = {"truth_duplicates": "max", **conventions}
    # missing='zero' (ranx, spark and recommenders' ndcg too): segments by model alone (their
    # macros refuse a "by" column of the unit: below)
    by = ["model"] if any(m.conventions.missing == "zero" for m in chosen) else ["day", "model"]
    for m in chosen:
        k = 4
        args = ["'recs_junk'", "'events_junk'"] + (["'history_junk'"] if m.metric.beyond else [])
        args += [f"k := {k}"] if m.has_cutoff else []
        args.append(f"\"by\" := {by}, \"user\" := ['user_id', 'day'], relevance := 'event_type'")
        got = _macro_rows(warehouse, f"SELECT * FROM {m.name}({', '.join(args)}, grades := {GRADES_SQL})")
        label = _label(m, k)
        inputs = {"history": "history"} if m.metric.beyond else {}
        expected = sqlmetrics.evaluate(
            warehouse, "recommendations", [label], truth="events", by=by,
            user=["user_id", "day"], action="event_type", relevance=GRADES, per_user=m.per_user,
            **inputs, **keywords,
        ).to_pylist()  # fmt: skip
        key = [*by, "user_id", "day"] if m.per_user else by
        expected = [{(m.metric.name if c == label else c): v for c, v in r.items()} for r in expected]
        _same([{c: v for c, v in r.items() if c in expected[0]} for r in got], expected, key)


# the macros of other inputs that each case checks (their metrics' conventions: tie_averaged
# is False for all, so no ties='average')
OTHER_INPUT_MACROS = {"c_alpha_ndcg", "c_p_ia", "c_ap_ia_per_user", "c_calibration", "c_group_ee_l",
                      "c_awrf_target", "c_rbo_per_user"}  # fmt: skip


@pytest.mark.parametrize(
    "conventions",
    [{"threshold": 2}, {"missing": "zero"}, {"ties": "item_asc"}, {"empty": "skip"},
     {"truth_duplicates": "sum"}, {"profile": "ranx"}],
    ids=_case_id,
)  # fmt: skip
def test_conventions_of_the_macros_of_other_inputs(warehouse, conventions):
    """The intent-aware measures, the measures over item groups and rbo under other
    conventions: equal to evaluate() with the same keywords (1e-12)."""
    chosen = [m for m in macros("c_", **conventions) if m.name in OTHER_INPUT_MACROS]
    assert len(chosen) == len(OTHER_INPUT_MACROS)
    warehouse.execute("".join(m.sql() for m in chosen))
    tables = {role: f"{table}_junk" for role, table in BEYOND_TABLES.items()}
    for m in chosen:
        segments = "\"by\" := ['model'], \"user\" := ['user_id', 'day']"
        call, keywords = _call_of(m, "recs_junk", tables, segments)
        keywords = {r: v.replace("_junk", "") if isinstance(v, str) else v for r, v in keywords.items()}
        label = _label(m, 4)
        expected = sqlmetrics.evaluate(
            warehouse, "recommendations", [label], by="model", user=["user_id", "day"],
            per_user=m.per_user, **{"truth_duplicates": "max", **conventions, **keywords},
        ).to_pylist()  # fmt: skip
        key = ["model", "user_id", "day"] if m.per_user else ["model"]
        expected = [{(m.metric.name if c == label else c): v for c, v in r.items()} for r in expected]
        got = [{c: v for c, v in r.items() if c in expected[0]} for r in _macro_rows(warehouse, call)]
        _same(got, expected, key)


def test_convention_changes_the_numbers(warehouse):
    """The conventions reach the statement: exponential gains change ndcg."""
    call = (
        "SELECT ndcg FROM {}('recommendations', 'graded', \"by\" := ['model'], "
        "\"user\" := ['user_id', 'day'])"
    )
    warehouse.execute("".join(m.sql() for m in macros("x_", gain="exponential") if m.name == "x_ndcg"))
    exponential = _macro_rows(warehouse, call.format("x_ndcg"))
    assert exponential != _macro_rows(warehouse, call.format("sqlmetrics_ndcg"))
    warehouse.execute("".join(m.sql() for m in macros("z_", missing="zero") if m.name == "z_ndcg"))
    with pytest.raises(duckdb.Error, match="z_ndcg: with missing='zero' no \"by\" column may be one of"):
        warehouse.sql(call.format("z_ndcg").replace("['model']", "['day', 'model']")).fetchall()
    with pytest.raises(sqlmetrics.ConventionError, match="prefix='1x'"):
        macros("1x")
    with pytest.raises(sqlmetrics.ConventionError, match="gain='square' is not one of"):
        macros("y_", gain="square")


@pytest.mark.parametrize(
    "label", ["ndcg@3", "map@10", "recall@1", "precision@20", "mrr@4", "ndcg", "map", "r_precision", "bpref"]
)
@pytest.mark.parametrize("truth", ["graded", "pairs"])
def test_relevance_column_and_pairs(warehouse, label, truth):
    """A numeric relevance column (NULL and negative grades among them), and a truth of
    (user, item) pairs (relevance := NULL: every row relevant), one segment column."""
    name, _, k = label.partition("@")
    macro = f"sqlmetrics_{name}" + ("" if k or not METRICS[name].needs_cutoff else "_whole")
    cutoff = f", k := {k}" if k else ""
    relevance = ", relevance := NULL" if truth == "pairs" else ""
    got = _macro_rows(
        warehouse,
        f"SELECT * FROM {macro}('recommendations', '{truth}'{cutoff}, \"by\" := ['model'], "
        f"\"user\" := ['user_id', 'day']{relevance})",
    )
    expected = sqlmetrics.evaluate(
        warehouse, "recommendations", [label], truth=truth, by="model", user=["user_id", "day"],
        truth_duplicates="max",
    ).to_pylist()
    _same(got, [{"model": r["model"], "users": r["users"], name: r[label]} for r in expected], ["model"])


def test_no_segment_and_one_key_column(warehouse):
    """by := [] (the default): one row; user := ['user_id'] with one day's view."""
    warehouse.execute(
        "CREATE OR REPLACE TEMP VIEW day1 AS SELECT * FROM recommendations WHERE day = 1 AND model = 'A'"
    )
    warehouse.execute("CREATE OR REPLACE TEMP VIEW truth1 AS SELECT * FROM graded WHERE day = 1")
    got = _macro_rows(warehouse, "SELECT * FROM sqlmetrics_ndcg('day1', 'truth1', k := 10)")
    expected = sqlmetrics.evaluate(warehouse, "day1", ["ndcg@10"], truth="truth1", truth_duplicates="max")
    assert list(got[0]) == ["users", "ndcg"]
    _same(got, [{"users": r["users"], "ndcg": r["ndcg@10"]} for r in expected.to_pylist()], [])


def test_set_F_beta(warehouse):
    got = _macro_rows(
        warehouse,
        "SELECT * FROM sqlmetrics_set_F('recommendations', 'graded', beta := 0.25, \"by\" := ['model'], "
        "\"user\" := ['user_id', 'day'])",
    )
    expected = sqlmetrics.evaluate(
        warehouse, "recommendations", ["set_F.0.25"], truth="graded", by="model",
        user=["user_id", "day"], truth_duplicates="max",
    ).to_pylist()  # fmt: skip
    _same(got, [{"model": r["model"], "set_F": r["set_F_0.25"]} for r in expected], ["model"])
    # beta changes the number: the parameter is read
    other = _macro_rows(
        warehouse,
        "SELECT * FROM sqlmetrics_set_F('recommendations', 'graded', \"by\" := ['model'], "
        "\"user\" := ['user_id', 'day'])",
    )
    assert other[0]["set_F"] != got[0]["set_F"]


BAD_CALLS = [
    ("sqlmetrics_ndcg('recommendations', 'graded', k := 0)",
     "sqlmetrics_ndcg: k must be an integer from 1 to 100000 (sqlmetrics_ndcg_whole ranks the "
     "whole list), got 0"),
    ("sqlmetrics_ndcg('recommendations', 'graded', k := -2)", "got -2"),
    ("sqlmetrics_ndcg('recommendations', 'graded', k := 200000)", "got 200000"),
    ("sqlmetrics_ndcg('recommendations', 'graded', k := NULL)", "got NULL"),
    ("sqlmetrics_ndcg('recommendations', 'graded', k := 2.5)", "arg_max"),
    ("sqlmetrics_ndgc('recommendations', 'graded', k := 10)", "sqlmetrics_ndgc does not exist"),
    ("sqlmetrics_ndcg('recommendations', 'graded', item := 'product')", "c = 'product'"),
    ("sqlmetrics_ndcg('recommendations', 'graded', score := 'rating')", "c = 'rating'"),
    ("sqlmetrics_ndcg('recommendations', 'graded', relevance := 'grade')", "'grade'"),
    # a column recs or truth lacks: COLUMNS() matches nothing, and the binder names the list
    ("sqlmetrics_ndcg('recommendations', 'graded', \"by\" := ['model', 'country'], "
     "\"user\" := ['user_id', 'day'])", "'model', 'country'"),
    ("sqlmetrics_ndcg('recommendations', 'graded', \"user\" := ['user_id', 'session'])",
     "'user_id', 'session'"),
    ("sqlmetrics_ndcg('recommendations', 'pairs', \"user\" := ['user_id', 'model'], relevance := NULL)",
     "resulted in an empty set of columns"),
    ("sqlmetrics_ndcg('recommendations', 'graded', \"by\" := ['model', 'day', 'user_id', 'item_id'])",
     "sqlmetrics_ndcg: \"by\" names at most 3 columns"),
    ("sqlmetrics_ndcg('recommendations', 'graded', \"user\" := ['user_id', 'day', 'model'])",
     "sqlmetrics_ndcg: \"user\" names 1 to 2 columns"),
    ("sqlmetrics_ndcg('recommendation', 'graded')", "recommendation does not exist"),
    # the intent-aware measures, the measures over item groups, rbo
    ("sqlmetrics_alpha_ndcg('recommendations', 'subtopics', k := 0, \"user\" := ['user_id', 'day'])",
     "sqlmetrics_alpha_ndcg: k must be an integer from 1 to 100000, got 0"),
    ("sqlmetrics_p_ia('recommendations', 'graded', \"user\" := ['user_id', 'day'])",
     "(c = 'subtopic')"),
    ("sqlmetrics_rbo('recommendations', \"by\" := ['model'], \"user\" := ['user_id', 'day'])",
     "sqlmetrics_rbo: baseline := <the baseline system's value of the \"by\" column> is needed"),
    ("sqlmetrics_rbo('recommendations', \"user\" := ['user_id', 'day'], baseline := 'A')",
     "sqlmetrics_rbo: \"by\" names the one column of the systems"),
    ("sqlmetrics_rbo_sum('recommendations', \"by\" := ['day'], \"user\" := ['user_id', 'day'], "
     "baseline := 1)", "sqlmetrics_rbo_sum: the \"by\" column may not be one of the \"user\" columns"),
    ("sqlmetrics_awrf('recommendations', 'genres', \"by\" := ['model'], \"user\" := ['user_id', 'day'], "
     "genre := 'kind')", "(c = 'kind')"),
    ("sqlmetrics_calibration('recommendations', 'history', 'negative_genres', \"by\" := ['model'], "
     "\"user\" := ['user_id', 'day'], genre_weight := 'negative')",
     "item_genres (the item_genres table) has a negative genre_weight for item = "),
    ("sqlmetrics_awrf_target('recommendations', 'genres', 'negative_target', \"by\" := ['model'], "
     "\"user\" := ['user_id', 'day'])", "group_target (the group_target table) has a negative "
     "genre_weight for genre = g1"),
    # (user_id alone: each user has a list per day and model, so duplicate items)
    ("sqlmetrics_ndcg('recommendations', 'graded')",
     "recs (the recs table) has a duplicate (user, second key, item) for user = "),
    # an action column without grades :=
    ("sqlmetrics_ndcg('recommendations', 'events', \"user\" := ['user_id', 'day'], \"by\" := ['model'], "
     "relevance := 'event_type')", "Could not convert string"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "message"), BAD_CALLS, ids=[m for _, m in BAD_CALLS])
def test_bad_calls_fail_and_say_why(warehouse, call, message):
    warehouse.execute(
        "CREATE OR REPLACE TEMP VIEW negative_genres AS SELECT *, -weight AS negative FROM genres"
    )
    warehouse.execute(
        "CREATE OR REPLACE TEMP VIEW negative_target AS SELECT genre, CASE genre WHEN 'g1' THEN -1 "
        "ELSE 1 END AS weight FROM target"
    )
    with pytest.raises(duckdb.Error) as info:
        warehouse.sql(f"SELECT * FROM {call}").fetchall()
    assert message in str(info.value)


def test_bad_data_fails_inside_the_statement(warehouse):
    """The input checks of evaluate.sql.j2 run in the macros too (error(), not a number)."""
    warehouse.execute(
        "CREATE OR REPLACE TEMP VIEW nan_scores AS SELECT day, model, user_id, item_id, "
        "CASE WHEN user_id = 3 THEN 'NaN'::DOUBLE ELSE score END AS score FROM recommendations"
    )
    with pytest.raises(duckdb.Error, match="recs .* has a NaN or infinite score for user = "):
        warehouse.sql(
            "SELECT * FROM sqlmetrics_ndcg('nan_scores', 'graded', \"by\" := ['model'], "
            "\"user\" := ['user_id', 'day'])"
        ).fetchall()


def test_install_keeps_the_open_transaction():
    con = duckdb.connect()
    con.execute("BEGIN")
    con.execute("CREATE TABLE t AS SELECT 1 AS x")
    sqlmetrics.install_macros(con)
    con.execute("ROLLBACK")
    assert con.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name = 't'").fetchall() == [(0,)]


def test_checked_in_files_are_generated():
    """The repository's copies are what the templates give now: after changing sql/, run
    `python -m sqlmetrics.api.regenerate` (it rewrites them) and commit the result."""
    stale = [
        path for path, text in generated_files().items()
        if not (ROOT / path).exists() or (ROOT / path).read_text(encoding="utf-8") != text
    ]  # fmt: skip
    assert not stale, f"regenerate with `python -m sqlmetrics.api.regenerate`: {stale} differ"


def test_no_macro_body_reads_a_parameter_by_accident():
    """Inside a macro, a column reference named like a parameter is the parameter: the body may
    name them only where it means them (the input queries, the grade, the checks), and the
    cutoff k and set_F's beta where the metric reads them. (test_every_macro_equals_evaluate
    runs every macro on inputs with extra columns of those names.)"""
    import re

    from sqlmetrics.api import macros as module

    for m in macros():
        body = m.sql().split(" AS TABLE\n", 1)[1]
        inputs = {
            "truth": [module._truth_input(), module._GRADE],
            "subtopics": [module._truth_input("subtopics", m.variant == "weighted"), module._GRADE],
            "history": [module._history_input()],
            "catalog": [module._catalog_input()],
            "item_features": [module._features_input()],
            "item_genres": [module._genres_input()],
            "group_target": [module._target_input()],
        }
        meant_parts = [
            module._recs_input(m.per_user, m.checks()),
            module._names_query(m.per_user, m.metric.name),
            *([] if m.against_baseline else [module._plain(s) for s in range(module.PLAIN_SEGMENTS + 1)]),
        ]
        for role in m.inputs[1:]:
            meant_parts += inputs[role]
        for meant in meant_parts:
            assert meant in body
            body = body.replace(meant, "")
        body = re.sub(r"'(?:[^']|'')*'", "''", body)  # (string literals)
        body = re.sub(r"--[^\n]*", "", body)  # (comments)
        words = set(re.findall(r'(?<![.\w])"?([A-Za-z_]\w*)"?(?![\w(])', body))
        meant_here = {"k"} if m.has_cutoff else set()
        meant_here |= {"beta"} if m.metric.name == "set_F" else set()
        meant_here |= {"baseline"} if m.against_baseline else set()  # (rbo's baseline system)
        assert not words & set(module._PARAMETERS) - meant_here, (m.name, words & set(module._PARAMETERS))


def test_cli_writes_the_same_file(tmp_path):
    out = tmp_path / "macros.sql"
    done = subprocess.run(
        [sys.executable, "-m", "sqlmetrics", "macros", "-o", str(out)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == macro_definitions()
    # another set of conventions, named apart
    done = subprocess.run(
        [sys.executable, "-m", "sqlmetrics", "macros", "--profile", "ranx", "--gain", "exponential",
         "--prefix", "ranx_"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == macro_definitions("ranx_", "ranx", gain="exponential")
    assert "CREATE OR REPLACE MACRO ranx_ndcg(" in done.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "sqlmetrics", "macros", "-o", str(tmp_path / "no" / "such" / "dir.sql")],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "cannot write" in bad.stderr


def _duckdb_cli() -> str:
    found = shutil.which("duckdb") or shutil.which("duckdb", path=str(Path(sys.executable).parent))
    if found is None:
        reason = "the duckdb command-line client is not installed: pip install duckdb-cli"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason} (CI=true: the test extra must bring it)", pytrace=False)
        pytest.skip(reason)
    return found


def test_duckdb_cli_runs_the_written_file(tmp_path, warehouse):
    """No Python in the loop: the duckdb client reads the file `sqlmetrics macros` writes and
    computes ndcg@10 and map per model and day, as evaluate() does."""
    cli = _duckdb_cli()
    macro_file = tmp_path / "sqlmetrics_macros.sql"
    macro_file.write_text(macro_definitions(), encoding="utf-8")
    parquet = tmp_path / "recs.parquet"
    events = tmp_path / "events.parquet"
    warehouse.execute(f"COPY recommendations TO '{parquet}'")
    warehouse.execute(f"COPY events TO '{events}'")
    script = f"""
.read {macro_file}
CREATE TABLE recommendations AS SELECT * FROM '{parquet}';
CREATE TABLE events AS SELECT * FROM '{events}';
.mode csv
SELECT day, model, users, ndcg FROM sqlmetrics_ndcg('recommendations', 'events', k := 10,
    "by" := ['day', 'model'], "user" := ['user_id', 'day'], relevance := 'event_type',
    grades := {GRADES_SQL}) ORDER BY day, model;
"""
    done = subprocess.run([cli, ":memory:"], input=script, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "day,model,users,ndcg"
    expected = sqlmetrics.evaluate(
        warehouse, "recommendations", ["ndcg@10"], truth="events", by=["day", "model"],
        user=["user_id", "day"], action="event_type", relevance=GRADES, truth_duplicates="max",
    ).to_pylist()  # fmt: skip
    assert len(lines) == 1 + len(expected) == 5
    for line, row in zip(lines[1:], expected, strict=True):
        day, model, users, ndcg = line.split(",")
        assert (int(day), model, int(users)) == (row["day"], row["model"], row["users"])
        assert math.isclose(float(ndcg), row["ndcg@10"], rel_tol=1e-12, abs_tol=1e-12)


def test_duckdb_cli_runs_the_measures_of_other_inputs(tmp_path, warehouse):
    """The duckdb client computes an intent-aware measure (subtopics), awrf (the genres as
    rows, a target) and rbo (a baseline system) from the written file, as evaluate() does."""
    cli = _duckdb_cli()
    macro_file = tmp_path / "sqlmetrics_macros.sql"
    macro_file.write_text(macro_definitions(), encoding="utf-8")
    tables = ["recommendations", "subtopics", "genres", "target"]
    loads = []
    for table in tables:
        warehouse.execute(f"COPY {table} TO '{tmp_path / table}.parquet'")
        loads.append(f"CREATE TABLE {table} AS SELECT * FROM '{tmp_path / table}.parquet';")
    segments = "\"by\" := ['model'], \"user\" := ['user_id', 'day']"
    calls = {
        "alpha_ndcg@10": f"sqlmetrics_alpha_ndcg('recommendations', 'subtopics', k := 10, {segments})",
        "awrf@5": f"sqlmetrics_awrf_target('recommendations', 'genres', 'target', k := 5, {segments}, "
        "genre_weight := 'weight')",
        "rbo@10": f"sqlmetrics_rbo('recommendations', k := 10, {segments}, baseline := 'B')",
    }
    selects = "\n".join(
        f"SELECT '{label}', model, users, {label.split('@')[0]} FROM {call} ORDER BY model;"
        for label, call in calls.items()
    )
    script = f".read {macro_file}\n" + "\n".join(loads) + "\n.mode csv\n.headers off\n" + selects + "\n"
    done = subprocess.run([cli, ":memory:"], input=script, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    keywords = {
        "alpha_ndcg@10": {"subtopics": "subtopics"},
        "awrf@5": {"item_genres": "genres", "group_target": "target", "genre_weight": "weight"},
        "rbo@10": {"baseline": "B"},
    }
    expected = []
    for label, extra in keywords.items():
        rows = sqlmetrics.evaluate(
            warehouse, "recommendations", [label], by="model", user=["user_id", "day"], **extra
        ).to_pylist()
        expected += [(label, r["model"], r["users"], r[label]) for r in rows]
    assert len(lines) == len(expected) == 6
    for line, (label, model, users, value) in zip(lines, expected, strict=True):
        got_label, got_model, got_users, got_value = line.split(",")
        assert (got_label, got_model, int(got_users)) == (label, model, users)
        assert math.isclose(float(got_value), value, rel_tol=1e-12, abs_tol=1e-12), (label, model)
