"""The dbt package (dbt/, docs/sql.md): its generated copy of the templates renders exactly the
text of sqlmetrics.sql() (with Python's Jinja, as dbt's render() does, for every dialect and
many calls); and dbt itself (`dbt deps`, `dbt build` of dbt/integration_tests) on DuckDB and on
the tests' throwaway PostgreSQL server gives the numbers of evaluate() (1e-9), compiles the text
of sqlmetrics.sql() for Spark, BigQuery and Snowflake, and refuses bad calls at compile time.

dbt runs from its own virtualenv: dbt-core 1.10 pins python-dateutil < 2.10 (the shared
environment has 4.0), so .ci/run installs it in .venv-dbt and sets SQLMETRICS_DBT; without a
dbt these tests skip (and fail under CI=true)."""

from __future__ import annotations

import inspect
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import duckdb
import jinja2
import pytest

import sqlmetrics
from sqlmetrics.api import dbt_package
from sqlmetrics.engines import for_connection
from sqlmetrics.names.registry import METRICS
from sqlmetrics.statement import keywords
from sqlmetrics.statement.prepare import prepare
from sqlmetrics.statement.templates import render

# one worker builds the integration project once (and starts one PostgreSQL server for it)
pytestmark = pytest.mark.xdist_group("dbt")

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "dbt" / "integration_tests"
GRADES = {"purchase": 3, "add_to_cart": 2, "view": 1}


def COMPILED(project_dir: Path) -> Path:  # noqa: N802  (a path, read like a constant)
    return project_dir / "target" / "compiled" / "sqlmetrics_integration_tests"


# ---- the generated template, with Python's Jinja ----------------------------------------------


def _jinja_as_dbt() -> jinja2.Environment:
    """What the generated macros meet in dbt: its return() and fromjson() (dbt's own Jinja
    renames macros, which the generated template undoes: checked by the dbt tests below)."""
    env = jinja2.Environment()
    env.globals.update({"return": lambda value: value, "fromjson": json.loads})
    return env


@pytest.fixture(scope="module")
def generated():
    """The template (compiled once) and the macro that puts a context in front of it."""
    module = _jinja_as_dbt().from_string(dbt_package.template_macros()).module
    return _jinja_as_dbt().from_string(module.statement_template()), module.context_prefix


@pytest.fixture(scope="module")
def inputs():
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE recs AS SELECT 1 AS user_id, 'a' AS item_id, 0.5 AS score, 2 AS pos, "
        "'A' AS model, DATE '2026-01-01' AS day, 1.5 AS relevance"
    )
    con.execute(
        "CREATE TABLE truth AS SELECT 1 AS user_id, 'a' AS item_id, 2 AS relevance, "
        "'vi''ew' AS event_type, DATE '2026-01-01' AS day"
    )
    # the beyond-accuracy inputs (history without the day: joined on user_id alone)
    con.execute("CREATE TABLE history AS SELECT 1 AS user_id, 'a' AS item_id")
    con.execute("CREATE TABLE catalog AS SELECT 'a' AS item_id")
    con.execute("CREATE TABLE vectors AS SELECT 'a' AS item_id, [1.0, 2.0]::DOUBLE[] AS features")
    # subtopic judgements; the genres as rows and awrf's target over them
    con.execute(
        "CREATE TABLE subtopics AS SELECT 1 AS user_id, DATE '2026-01-01' AS day, 's1' AS subtopic, "
        "'a' AS item_id, 1 AS relevance"
    )
    con.execute("CREATE TABLE weighted AS SELECT *, 0.25 AS weight FROM subtopics")
    con.execute("CREATE TABLE genres AS SELECT 'a' AS item_id, 'g1' AS genre, 2.0 AS weight")
    con.execute("CREATE TABLE target AS SELECT 'g1' AS genre, 1.0 AS weight")
    yield con
    con.close()


def _through_generated(generated, con, metrics, dialect, **options) -> tuple[str, str]:
    """(sqlmetrics.sql()'s text, the generated template's text for the same context)."""
    template_compiled, _ = generated
    engine = for_connection(con)
    wanted = inspect.signature(prepare).parameters
    defaults = {n: p.default for n, p in inspect.signature(keywords.inputs).parameters.items()}
    opts = {k: v for k, v in {**defaults, "by": None, "per_user": False, **options}.items() if k in wanted}
    template, context, *_ = prepare(engine, "recs", metrics, dialect=dialect, **opts)
    expected = render(template, context)
    plain = {key: context.get(key) for key in dbt_package.CONTEXT_KEYS}
    plain["exact_sums"] = "fast"
    # (the context as dbt passes it: through JSON)
    text = template_compiled.render(ctx=json.loads(json.dumps(plain)))
    lines = [line for line in text.split("\n") if line.strip(" \t")]
    return expected, "\n".join(lines) + "\n"


RANKING = [m for m, d in METRICS.items() if not d.beyond and "subtopics" not in d.reads]
EVERY_LABEL = [m + ("@7" if METRICS[m].needs_cutoff else "") for m in RANKING]
TIE_AVERAGED = [m for m in EVERY_LABEL if METRICS[m.split("@")[0]].tie_averaged]
# (calibration, rbo, group exposure and awrf: with their inputs, below)
BEYOND = [
    m + ("@3" if METRICS[m].needs_cutoff else "")
    for m, d in METRICS.items()
    if d.beyond and not {"genres", "baseline"} & set(d.needs)
]
BEYOND_PER_USER = [m for m in BEYOND if METRICS[m.split("@")[0]].per_user]
# the intent-aware measures (subtopics=), and the measures over item groups or a baseline system
SUBTOPICS = [m + ("@3" if d.needs_cutoff else "") for m, d in METRICS.items() if "subtopics" in d.reads]
GROUPS = [
    m + ("@3" if METRICS[m].needs_cutoff else "")
    for m, d in METRICS.items()
    if {"genres", "baseline"} & set(d.needs)
]
CASES = [
    ({}, EVERY_LABEL),
    ({"ties": "average"}, TIE_AVERAGED),
    ({"ties": "evidently", "short_lists": "evidently", "empty": "skip"}, TIE_AVERAGED),
    ({"gain": "exponential", "threshold": 2}, EVERY_LABEL),
    ({"missing": "zero", "per_user": True}, EVERY_LABEL),
    ({"ties": "trec_eval", "truth_duplicates": "sum"}, EVERY_LABEL),
    ({"ties": "item_asc", "truth_duplicates": "max", "duplicates": "all"}, EVERY_LABEL),
    ({"threshold": "any", "ap_denominator": "min_k", "empty": "no_gain"}, EVERY_LABEL),
    ({"threshold": 1.5, "profile": "ranx"}, ["ndcg@10", "map", "recall@3"]),
    ({"action": "event_type", "relevance": {"vi'ew": 1, "buy": 2.5}}, ["ndcg@10", "precision"]),
    ({"rank": "pos", "user": "user_id"}, ["ndcg@10", "mrr@3"]),
    ({"history": "history", "catalog": "catalog", "item_features": "vectors"}, [*BEYOND, "ndcg@3"]),
    ({"history": "history", "threshold": 2}, BEYOND),
    ({"history": "history", "per_user": True, "missing": "zero"}, [*BEYOND_PER_USER, "map@4"]),
    ({"history": "history", "truth": None, "relevance": "relevance"}, ["novelty@3", "serendipity@2", "fcp"]),
    ({"history": "history", "truth": None}, ["novelty@3", "popularity@2", "personalization@4"]),
    ({"truth": None, "subtopics": "subtopics"}, [*SUBTOPICS, "ndcg@3", "alpha_ndcg@5"]),
    ({"truth": None, "subtopics": "subtopics", "per_user": True, "threshold": 2}, SUBTOPICS),
    ({"truth": None, "subtopics": "weighted"}, SUBTOPICS),
    ({"history": "history", "item_genres": "genres", "genre_weight": "weight", "group_target": "target",
      "baseline": "A"}, [*GROUPS, "rbo_sum@2", "ndcg@3"]),
    ({"history": "history", "item_genres": "genres", "per_user": True, "baseline": "B"}, GROUPS[:-1]),
    ({"history": "history", "item_features": "vectors"}, ["calibration@2", "group_ee_r@3", "awrf@3"]),
]


@pytest.mark.parametrize("dialect", ["duckdb", "postgres", "spark", "bigquery", "snowflake"])
@pytest.mark.parametrize(("options", "metrics"), CASES, ids=[str(c[0]) for c in CASES])
def test_generated_template_renders_the_same_text(generated, inputs, dialect, options, metrics):
    """The templates' copy in dbt/macros/generated/ (one template, its macros renamed) gives
    the text of the templates themselves, byte for byte."""
    options = {"truth": "truth", "by": ["model"], "user": ["user_id", "day"], **options}
    if dialect == "spark":  # (alpha_ndcg is refused there)
        metrics = [m for m in metrics if not m.startswith("alpha_ndcg")]
    expected, got = _through_generated(generated, inputs, metrics, dialect, **options)
    assert got == expected


def test_dbt_macro_takes_the_keywords_of_evaluate():
    """sqlmetrics.evaluate() in dbt takes the keywords of the Python one (statement/keywords.py),
    with by= and per_user=, and dialect= as sql() does."""
    import re

    text = (ROOT / "dbt" / "macros" / "evaluate.sql").read_text(encoding="utf-8")
    signature = re.search(r"\{% macro evaluate\((.*?)\) -%\}", text, re.S).group(1)
    names = [part.split("=")[0].strip() for part in signature.split(",")]
    python = list(inspect.signature(keywords.inputs).parameters)
    assert names[:2] == ["recs", "metrics"]
    # (baseline=: rbo's reference system, a keyword of evaluate()'s own)
    assert sorted(names[2:]) == sorted([*python, "by", "per_user", "baseline", "dialect", "exact_sums"])
    assert "baseline" in inspect.signature(sqlmetrics.evaluate).parameters


def test_dbt_compare_takes_the_keywords_of_compare():
    """sqlmetrics.compare() in dbt takes the keywords of the Python one (its own and
    evaluate()'s inputs), with dialect= and exact_sums= as evaluate() in dbt does."""
    import re

    text = (ROOT / "dbt" / "macros" / "compare.sql").read_text(encoding="utf-8")
    signature = re.search(r"\{% macro compare\((.*?)\) -%\}", text, re.S).group(1)
    names = [part.split("=")[0].strip() for part in signature.split(",")]
    python = [n for n in inspect.signature(sqlmetrics.compare).parameters if n != "con"]
    assert names[:2] == ["recs", "metrics"]
    assert sorted(names) == sorted([*python, "dialect", "exact_sums"])


def test_context_prefix_reads_the_context_back(generated):
    """dbt renders context_prefix(tojson(context)) ~ the template: the context comes back as
    it went in, quotes and backslashes and all."""
    _, context_prefix = generated
    value = {"a": "it's \\ \"x\"\n", "b": [1, None, True], "c": {"d": 2.5}}
    text = _jinja_as_dbt().from_string(context_prefix(json.dumps(value)) + "{{ ctx | tojson }}").render()
    assert json.loads(text) == value


def test_generated_template_without_truth(generated, inputs):
    expected, got = _through_generated(generated, inputs, ["ndcg@10", "precision@3"], "duckdb", by="model")
    assert got == expected


# ---- dbt itself ---------------------------------------------------------------------------------


def _dbt_executable() -> str:
    found = os.environ.get("SQLMETRICS_DBT") or shutil.which("dbt")
    local = ROOT / ".venv-dbt" / "bin" / "dbt"
    if not found and local.exists():
        found = str(local)
    if not found:
        reason = "dbt is not installed: .ci/run installs it in .venv-dbt (or set SQLMETRICS_DBT)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{reason} (CI=true)", pytrace=False)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the integration project whose packages.yml names this repository's dbt/."""
    dbt = _dbt_executable()
    root = tmp_path_factory.mktemp("dbt")
    copy = root / "project"
    shutil.copytree(PROJECT, copy, ignore=shutil.ignore_patterns("target", "dbt_packages", "logs"))
    (copy / "packages.yml").write_text(f"packages:\n  - local: {ROOT / 'dbt'}\n", encoding="utf-8")
    env = {**os.environ, "DBT_PROFILES_DIR": str(copy), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
           "SQLMETRICS_DBT_DUCKDB": str(root / "integration.duckdb")}  # fmt: skip
    _run(dbt, copy, env, "deps")
    return dbt, copy, env, root / "integration.duckdb"


@pytest.fixture(scope="module")
def built(project):
    """The integration project built on DuckDB (seeds, models, the analyses compiled)."""
    dbt, copy, env, _ = project
    _run(dbt, copy, env, "build")
    _run(dbt, copy, env, "compile", "--select", "resource_type:analysis")
    return project


def _run(dbt, project_dir, env, *args, check=True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [dbt, *args, "--project-dir", str(project_dir)],
        capture_output=True, text=True, env=env, cwd=project_dir, check=False, timeout=600,
    )  # fmt: skip
    if check and done.returncode != 0:
        pytest.fail(f"dbt {' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}")
    return done


# each model of the integration project: evaluate()'s call on the same seeds (views there)
MODELS = {
    "daily_ab": dict(
        recs="report_recommendations", truth="report_events",
        metrics=["ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10"], by=["day", "model"],
        user=["user_id", "day"], action="event_type", relevance=GRADES, key=["day", "model"],
    ),
    "per_user_purchases": dict(
        recs="recommendations", truth="purchases", metrics=["precision@10", "hit_rate@10", "ndcg@5"],
        by="model", user=["user_id", "day"], per_user=True, truth_duplicates="max",
        key=["model", "user_id", "day"],
    ),
    "trec_names": dict(
        recs="recommendations", truth="graded",
        metrics=["map", "ndcg", "r_precision", "bpref", "mrr", "num_rel_ret"],
        by=["model"], user=["user_id", "day"], gain="exponential", ties="trec_eval", key=["model"],
    ),
    "rank_biased_wide": dict(
        recs="recommendations", truth="graded", metrics=["rbp", "rbp_resid", "ndcg@10", "err@10"],
        by=["model"], user=["user_id", "day"], key=["model"],
    ),
}  # fmt: skip


MODELS.update({
    "beyond_accuracy": dict(
        recs="recommendations", truth="graded", history="history_views", catalog="catalog",
        item_features="item_vectors",
        metrics=["fcp", "catalog_coverage@10", "distributional_coverage@10", "gini@10", "novelty@10",
                 "popularity@10", "diversity@10", "serendipity@10", "personalization@10", "ndcg@10"],
        by=["model"], user=["user_id", "day"], key=["model"],
    ),
    "beyond_per_user": dict(
        recs="recommendations", truth="purchases", history="history_views",
        metrics=["fcp", "novelty@5", "popularity@5", "diversity@5", "serendipity@5"], by="model",
        user=["user_id", "day"], per_user=True, truth_duplicates="max", key=["model", "user_id", "day"],
    ),
    "intent_aware": dict(
        recs="recommendations", subtopics="subtopic_judgements",
        metrics=["alpha_ndcg@10", "p_ia@10", "ap_ia", "err_ia@10", "nrbp", "ndcg@10"], by=["model"],
        user=["user_id", "day"], key=["model"],
    ),
    "item_groups": dict(
        recs="recommendations", truth="graded", history="history_views", item_genres="item_genres",
        group_target="group_target", genre_weight="weight", baseline="A",
        metrics=["calibration@10", "group_ee_l@10", "group_ee_d@10", "group_ee_r@10", "awrf@10",
                 "rbo@10", "rbo_sum@5", "ndcg@10"],
        by=["model"], user=["user_id", "day"], key=["model"],
    ),
    "item_groups_per_user": dict(
        recs="recommendations", truth="purchases", history="history_views", item_genres="item_genres",
        baseline="B", metrics=["calibration@5", "group_ee_r@5", "awrf@5", "rbo@5"], by="model",
        user=["user_id", "day"], per_user=True, truth_duplicates="max", key=["model", "user_id", "day"],
    ),
})  # fmt: skip
# the relations a model's call names beside recs
INPUTS = ("truth", "history", "catalog", "item_features", "subtopics", "item_genres", "group_target")

# each compare() model: compare()'s call on the same seeds
COMPARE_MODELS = {
    "compare_ab": dict(
        recs="recommendations", truth="graded", metrics=["ndcg@10", "map@10", "recall@20", "mrr@10"],
        by="model", baseline="A", user=["user_id", "day"], key=["model", "metric"],
    ),
    "compare_within": dict(
        recs="recommendations", truth="events", metrics=["ndcg@10", "precision@5"], by="model",
        baseline="A", within="day", user=["user_id", "day"], action="event_type", relevance=GRADES,
        truth_duplicates="max", key=["day", "model", "metric"],
    ),
}  # fmt: skip
# the columns of compare() that the dbt macro computes in SQL
COMPARED = ("metric", "design", "users", "baseline_users", "baseline_mean", "mean", "delta",
            "relative_delta", "effect_size", "wins", "ties", "losses", "unpaired_system",
            "unpaired_baseline")  # fmt: skip


def _same_comparisons(con, schema: str, rows_of) -> None:
    """Each compare() model against compare() on the same relations (design='paired', as the
    dbt macro's only design): the columns SQL computes (1e-9), and the p-value of its
    t_statistic with users - 1 degrees of freedom (scipy) is compare()'s p_value."""
    from scipy import stats

    for model, spec in COMPARE_MODELS.items():
        spec = dict(spec)
        key = spec.pop("key")
        recs, truth = f"{schema}.{spec.pop('recs')}", f"{schema}.{spec.pop('truth')}"
        result = sqlmetrics.compare(con, recs, spec.pop("metrics"), truth=truth, design="paired", **spec)
        expected = {tuple(r[c] for c in key): r for r in result.to_pylist()}
        got = {tuple(r[c] for c in key): r for r in rows_of(model)}
        _same_numbers(got, {k: {c: r[c] for c in COMPARED} for k, r in expected.items()})
        for k, r in expected.items():
            p = 2 * stats.t.sf(abs(got[k]["t_statistic"]), r["users"] - 1)
            assert math.isclose(p, r["p_value"], rel_tol=1e-9, abs_tol=1e-12), (k, p, r["p_value"])


def _duckdb_list(con, sql: str) -> list[dict]:
    relation = con.sql(sql)
    return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]


def _duckdb_rows(con, sql: str, key: list[str]) -> dict:
    return {tuple(r[c] for c in key): r for r in _duckdb_list(con, sql)}


def _same_numbers(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys() and expected
    for k, row in expected.items():
        for column, value in row.items():
            actual = got[k][column]
            if isinstance(value, float):
                assert math.isclose(actual, value, rel_tol=1e-9, abs_tol=1e-9), (k, column, actual, value)
            else:
                assert actual == value, (k, column, actual, value)


def _expected(con, schema: str, spec: dict) -> dict:
    spec = dict(spec)
    key = spec.pop("key")
    recs, metrics = spec.pop("recs"), spec.pop("metrics")
    inputs = {name: f"{schema}.{spec.pop(name)}" for name in INPUTS if name in spec}
    result = sqlmetrics.evaluate(con, f"{schema}.{recs}", metrics, **inputs, **spec)
    return {tuple(r[c] for c in key): r for r in result.to_pylist()}


def test_dbt_build_on_duckdb_equals_evaluate(built):
    dbt, copy, env, database = built
    con = duckdb.connect(str(database), read_only=True)
    try:
        for model, spec in MODELS.items():
            got = _duckdb_rows(con, f"SELECT * FROM main.{model}", spec["key"])
            _same_numbers(got, _expected(con, "main", spec))
        _same_comparisons(con, "main", lambda m: _duckdb_list(con, f"SELECT * FROM main.{m}"))
        # the model's statement is sqlmetrics.sql()'s for the same call
        compiled = (COMPILED(copy) / "models" / "daily_ab.sql").read_text()
        inner = compiled[compiled.index("(\n") + 2 : compiled.rindex(") AS sqlmetrics_evaluate")]
        catalog = database.stem
        spec = dict(MODELS["daily_ab"])
        del spec["key"]
        text = sqlmetrics.sql(
            con, f"{catalog}.main.{spec.pop('recs')}", spec.pop("metrics"),
            truth=f"{catalog}.main.{spec.pop('truth')}", **spec,
        )  # fmt: skip
        assert inner == text
    finally:
        con.close()


def test_incremental_run_of_one_day_replaces_it(built):
    """A scheduled run computes its days again (delete+insert on day and model): the table
    keeps one row per (day, model), with the same numbers."""
    dbt, copy, env, database = built
    with duckdb.connect(str(database), read_only=True) as con:
        before = con.execute("SELECT * FROM main.daily_ab ORDER BY day, model").fetchall()
    _run(dbt, copy, env, "run", "--select", "report_recommendations", "report_events", "daily_ab",
         "--vars", "{first_day: '2026-11-02', last_day: '2026-11-02'}")  # fmt: skip
    with duckdb.connect(str(database), read_only=True) as con:
        after = con.execute("SELECT * FROM main.daily_ab ORDER BY day, model").fetchall()
    assert len(after) == len(before) == 6
    for a, b in zip(after, before, strict=True):
        assert a[:3] == b[:3]
        assert all(math.isclose(x, y, rel_tol=1e-12) for x, y in zip(a[3:], b[3:], strict=True))
    _run(dbt, copy, env, "run", "--select", "report_recommendations", "report_events")  # (the views back)


# each analysis of the integration project (<name>_<dialect>.sql): the call of sqlmetrics.sql()
# it makes, its relations named without the catalog and schema
ANALYSES = {
    "text": dict(
        recs="recommendations", truth="events",
        metrics=["ndcg@10", "map@10", "recall@20", "mrr", "iprec_at_recall_0.50", "rbp", "err@10",
                 "infAP", "bpref", "set_F", "judged@5"],
        by=["day", "model"], user=["user_id", "day"], action="event_type", relevance=GRADES,
    ),
    # the beyond-accuracy metrics with every input (history without the unit's day)
    "beyond_text": dict(
        recs="recommendations", truth="events", history="history_views", catalog="catalog",
        item_features="item_vectors",
        metrics=["fcp", "catalog_coverage@10", "distributional_coverage@10", "gini@10", "novelty@10",
                 "popularity@10", "diversity@10", "serendipity@10", "personalization@10", "ndcg@10"],
        by=["model"], user=["user_id", "day"], action="event_type", relevance=GRADES,
    ),
    # the intent-aware measures (alpha_ndcg past 100 positions), and the measures over item groups
    # and against a baseline system with their inputs
    "intent_text": dict(
        recs="recommendations", subtopics="subtopic_judgements",
        metrics=["alpha_ndcg@150", "p_ia@10", "ap_ia", "err_ia@10", "nrbp", "ndcg@10"], by=["model"],
        user=["user_id", "day"],
    ),
    "groups_text": dict(
        recs="recommendations", truth="graded", history="history_views", item_genres="item_genres",
        group_target="group_target", genre_weight="weight", baseline="A",
        metrics=["calibration@10", "group_ee_l@10", "awrf@10", "rbo@10", "rbo_sum@5"], by=["model"],
        user=["user_id", "day"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("analysis", list(ANALYSES))
@pytest.mark.parametrize("dialect", ["spark", "bigquery", "snowflake", "duckdb", "postgres"])
def test_compiled_text_for_every_dialect(built, dialect, analysis):
    """dialect= writes another engine's statement on any adapter: the text of
    sqlmetrics.sql(..., dialect=) for the same call."""
    dbt, copy, env, database = built
    compiled = COMPILED(copy) / "analyses" / f"{analysis}_{dialect}.sql"
    spec = dict(ANALYSES[analysis])
    schema = f"{database.stem}.main"
    relations = {name: f"{schema}.{spec.pop(name)}" for name in INPUTS if name in spec}
    with duckdb.connect(str(database), read_only=True) as con:
        text = sqlmetrics.sql(
            con, f"{schema}.{spec.pop('recs')}", spec.pop("metrics"), **relations, **spec, dialect=dialect
        )
    assert compiled.read_text() == text


BAD = [
    ("['ndgc@10']", {}, "unknown metric 'ndgc'"),
    ("['ndcg@0']", {}, "the cutoff in ndcg@0 must be an integer from 1"),
    ("['ndcg@10']", {"item": "product_id"}, "has no item column product_id"),
    ("['ndcg@10']", {"by": "country"}, "has no by column country"),
    ("['ndcg@10']", {"ties": "random"}, "ties=random is not one of"),
    ("['novelty@10']", {}, "novelty@10 needs the users' history"),
    ("['diversity@10']", {}, "(or item_features=<a relation of item, vector>)"),
    ("['catalog_coverage@10']", {"history": "ref('history_views')", "per_user": True},
     "per_user=True: catalog_coverage@10 has no per-user value"),
    ("['diversity@10']", {"item_features": "ref('recommendations')"},
     "has no features column features"),
    ("['p_ia@10']", {}, "p_ia@10 needs subtopic judgements: pass subtopics="),
    ("['p_ia']", {"truth": None, "subtopics": "ref('subtopic_judgements')"}, "p_ia needs a cutoff"),
    ("['ap_ia']", {"subtopics": "ref('subtopic_judgements')"}, "give subtopics= or truth=, not both"),
    ("['calibration@10']", {"history": "ref('history_views')"}, "calibration@10 needs the items' genres"),
    ("['awrf@10']", {"item_genres": "ref('item_genres')", "genre": "kind"}, "has no genre column kind"),
    ("['calibration@10']", {"history": "ref('history_views')", "item_genres": "ref('item_genres')",
                            "group_target": "ref('group_target')"}, "no awrf metric is requested"),
    ("['rbo@10']", {"by": "model"}, "rbo@10: no baseline= for the 1 by column(s) model"),
    ("['rbo@10']", {}, "rbo@10 compares each system's lists with a baseline system's"),
    ("['ndcg@10']", {"by": "model", "baseline": "A"}, "names the reference system of rbo@k"),
    ("['rbo@10']", {"by": "model", "baseline": 1}, "baseline=1: give a string, a number"),
]  # fmt: skip
BAD_COMPARE = [
    ({"test": "wilcoxon"}, "compare(test=wilcoxon): its p-value is computed in Python"),
    ({"design": "auto"}, "compare(design=auto): the dbt package has the paired design only"),
    ({"baseline": 1}, "baseline=1: give a string, a number, a boolean or none for the by column model"),
]


# every non-default value of each convention, and the profiles the dbt package has (those
# whose conventions are the same for every metric)
DBT_CONVENTIONS = [
    {"ties": "trec_eval"}, {"ties": "item_asc"}, {"ties": "average"}, {"ties": "evidently"},
    {"threshold": 2}, {"threshold": 1.5}, {"threshold": "any"}, {"gain": "exponential"},
    {"gain": "binary"}, {"empty": "skip"}, {"empty": "no_gain"}, {"missing": "zero"},
    {"ap_denominator": "min_k"}, {"short_lists": "evidently"}, {"duplicates": "all"},
    {"truth_duplicates": "max"}, {"truth_duplicates": "sum"}, {"profile": "ranx"},
    {"profile": "sklearn"}, {"profile": "spark"}, {"profile": "trec_eval"},
]  # fmt: skip


def test_conventions_compile_to_the_text_of_sql(built):
    """Each convention keyword (and profile) of a dbt call: dbt's plan gives the statement of
    sqlmetrics.sql() with the same keyword, byte for byte (the numbers of that statement are
    evaluate()'s: test_generated_template_renders_the_same_text and the models above)."""
    dbt, copy, env, database = built
    folder = copy / "analyses" / "conventions"
    folder.mkdir(exist_ok=True)
    schema = f"{database.stem}.main"
    try:
        calls = []
        for i, conventions in enumerate(DBT_CONVENTIONS):
            # (ties='average', also sklearn's, leaves map, mrr, r_precision undefined)
            ties = "average" if conventions.get("profile") == "sklearn" else conventions.get("ties")
            tie_groups = ties in ("average", "evidently")
            metrics = ["ndcg@10", "precision@5", "recall@20", "ndcg"]
            metrics += [] if tie_groups else ["map@10", "mrr@10", "r_precision"]
            given = ", ".join(f"'{k}': {v!r}" for k, v in conventions.items())
            (folder / f"conventions_{i}.sql").write_text(
                f"{{{{ sqlmetrics.sql(ref('recommendations'), {metrics}, {{'truth': ref('graded'), "
                f"'by': ['model'], 'user': ['user_id', 'day'], {given}}}) }}}}\n"
            )
            calls.append((metrics, conventions))
        _run(dbt, copy, env, "compile", "--select", "path:analyses/conventions")
        with duckdb.connect(str(database), read_only=True) as con:
            for i, (metrics, conventions) in enumerate(calls):
                text = sqlmetrics.sql(
                    con, f"{schema}.recommendations", metrics, truth=f"{schema}.graded", by=["model"],
                    user=["user_id", "day"], **conventions,
                )  # fmt: skip
                compiled = COMPILED(copy) / "analyses" / "conventions" / f"conventions_{i}.sql"
                assert compiled.read_text() == text, conventions
    finally:
        shutil.rmtree(folder)


def _bad_calls() -> list[tuple[str, str]]:
    """(a model's text, the message its compile error must give) for BAD and BAD_COMPARE."""
    calls = []
    for metrics, options, message in BAD:
        # (a relation, ref(...), as written; other values as literals)
        given = {k: v if str(v).startswith("ref(") else repr(v) for k, v in options.items()}
        options = {"truth": "ref('purchases')", "user": "['user_id', 'day']", **given}
        mapping = ", ".join(f"'{k}': {v}" for k, v in options.items())
        call = f"sqlmetrics.sql(ref('recommendations'), {metrics}, {{{mapping}}})"
        calls.append((f"{{{{ {call} }}}}\n", message))
    for options, message in BAD_COMPARE:
        options = {"by": "model", "baseline": "A", **options}
        comparison = ", ".join(f"'{k}': {v!r}" for k, v in options.items())
        inputs = "{'truth': ref('purchases'), 'user': ['user_id', 'day']}"
        call = f"sqlmetrics.compare_sql(ref('recommendations'), ['ndcg@10'], {{{comparison}}}, {inputs})"
        calls.append((f"{{{{ {call} }}}}\n", message))
    return calls


def test_bad_calls_fail_to_compile(built):
    """Each bad call is a compile error that names the problem."""
    dbt, copy, env, _ = built
    bad_dir = copy / "analyses" / "bad"
    bad_dir.mkdir(exist_ok=True)
    try:
        for i, (text, message) in enumerate(_bad_calls()):
            (bad_dir / f"bad_{i}.sql").write_text(text)
            done = _run(dbt, copy, env, "compile", "--select", f"bad_{i}", check=False)
            assert done.returncode != 0
            assert message in done.stdout, done.stdout[-3000:]
            (bad_dir / f"bad_{i}.sql").unlink()
    finally:
        shutil.rmtree(bad_dir)


def test_dbt_build_on_postgres_equals_evaluate(project, pg_uri):
    dbt, copy, env, _ = project
    url = urlparse(pg_uri)
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    pg_env = {**env, "SQLMETRICS_DBT_PG_HOST": query["host"],
              "SQLMETRICS_DBT_PG_PORT": query.get("port", "5432"),
              "SQLMETRICS_DBT_PG_USER": query.get("user", "postgres"),
              "SQLMETRICS_DBT_PG_DBNAME": url.path.lstrip("/") or "postgres"}  # fmt: skip
    _run(dbt, copy, pg_env, "build", "--target", "postgres")
    import adbc_driver_postgresql.dbapi as pg

    con = pg.connect(pg_uri)
    try:
        for model, spec in MODELS.items():
            with con.cursor() as cur:
                cur.execute(f"SELECT * FROM dbt_sqlmetrics.{model}")
                got = cur.fetch_arrow_table().to_pylist()
            got = {tuple(r[c] for c in spec["key"]): r for r in got}
            _same_numbers(got, _expected(con, "dbt_sqlmetrics", spec))

        def rows_of(model: str) -> list[dict]:
            with con.cursor() as cur:
                cur.execute(f"SELECT * FROM dbt_sqlmetrics.{model}")
                return cur.fetch_arrow_table().to_pylist()

        _same_comparisons(con, "dbt_sqlmetrics", rows_of)
    finally:
        con.close()


def test_the_example_project_gives_the_daily_report(project, tmp_path):
    """warehouse_examples/dbt_report on an example warehouse: one row per (day, model), the
    numbers of evaluate() on each day's slice as `sqlmetrics report` takes it (1e-9); a second
    run of one day replaces that day."""
    dbt, _, env, _ = project
    warehouse = tmp_path / "warehouse.duckdb"
    subprocess.run(
        [sys.executable, str(ROOT / "warehouse_examples" / "make_warehouse.py"), "--users", "60",
         "--db", str(warehouse)], check=True, capture_output=True,
    )  # fmt: skip
    example = tmp_path / "dbt_report"
    shutil.copytree(ROOT / "warehouse_examples" / "dbt_report", example,
                    ignore=shutil.ignore_patterns("target", "dbt_packages", "logs"))  # fmt: skip
    (example / "packages.yml").write_text(f"packages:\n  - local: {ROOT / 'dbt'}\n", encoding="utf-8")
    example_env = {**env, "DBT_PROFILES_DIR": str(example), "SQLMETRICS_WAREHOUSE": str(warehouse)}
    _run(dbt, example, example_env, "deps")
    _run(dbt, example, example_env, "build")
    _run(dbt, example, example_env, "build", "--vars", "{first_day: '2026-11-07', last_day: '2026-11-07'}")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        got = _duckdb_rows(con, "SELECT * FROM main.daily_ab", ["day", "model"])
        assert len(got) == 14
        expected = {}
        for (day,) in con.sql("SELECT DISTINCT day FROM recommendations ORDER BY day").fetchall():
            recs = con.sql(f"SELECT * FROM recommendations WHERE day = DATE '{day}'")
            events = con.sql(f"SELECT user_id, item_id, event_type FROM events WHERE day = DATE '{day}'")
            result = sqlmetrics.evaluate(
                con, recs, ["ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10"], truth=events,
                by="model", action="event_type", relevance=GRADES,
            )  # fmt: skip
            for row in result.to_pylist():
                expected[(day, row["model"])] = {"day": day, **row}
    _same_numbers(got, expected)
