"""The public API: evaluate(), sql(), and one function per metric."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from ..engines import for_connection
from ..errors import (
    ConventionError,
    DuplicateRowError,
    OutOfMemoryError,
    SqlMetricsError,
    UnmatchedUnitsWarning,
)
from ..inputs.columns import find_column
from ..inputs.sources import Input
from ..names.metric_names import parse_metrics
from ..statement.convention_groups import GROUPED_TEMPLATE, grouped_labels
from ..statement.duplicates import explained
from ..statement.exact_sums import with_exact_sums
from ..statement.keywords import takes_inputs
from ..statement.partitions import check as check_partitions
from ..statement.partitions import evaluate_in_partitions
from ..statement.plan import ColumnNames
from ..statement.prepare import prepare
from ..statement.templates import render
from ..statement.unmatched import evaluated_nothing, unmatched_message
from ..stats import intervals


@takes_inputs(last=("partitions", "progress", "confidence"))
def evaluate(
    con: Any,
    recs: Input,
    metrics: str | Sequence[str],
    *,
    by: str | Sequence[str] | None = None,
    baseline: Any = None,
    per_user: bool = False,
    partitions: int = 1,
    progress: bool = False,
    confidence: float | None = None,
    **inputs: Any,
) -> pa.Table:
    """Evaluate ranking metrics inside DuckDB, in one SQL statement, and return Arrow.

    con: a DuckDB connection; or a pyspark SparkSession (the statement runs as Spark SQL) or an
    ADBC PostgreSQL connection (it runs in the server), both returning Arrow just the same (see
    docs/engines.md for what each supports).

    recs: one row per (user, item) with a score (higher is better) or a rank (1 is the top).
    truth: a table of (user, item[, relevance]); without it, recs must carry the relevance.
    user: the unit's key, a column or a list of columns: user=["user_id", "day"] evaluates one
    ranked list per (user, day), joined to truth on both (history: on those it has).
    metrics: a list of names, or one string of names separated by commas or spaces as the
    command line's --metrics ("ndcg@10,map@10"): names like "ndcg@10", "map@10", "recall@20",
    "r_precision", and the beyond-accuracy metrics "fcp", "catalog_coverage@10",
    "distributional_coverage@10", "gini@10", "novelty@10", "popularity@10", "diversity@10",
    "serendipity@10", "personalization@10", and over item groups "calibration@10", "rbo@10",
    "group_ee_l@10", "awrf@10".
    history: a table of (user, item) interactions (novelty, popularity, coverage, diversity,
    serendipity, calibration); catalog: a table of all items (default: the items of history);
    item_features: a table of (item, features vector) for cosine similarity (diversity,
    serendipity), read as genre weights by calibration and group_ee_* unless item_genres is
    given; item_genres: the genres as rows (item, genre[, weight]: genre=, genre_weight=);
    group_target: awrf's target distribution over the groups (genre, weight), uniform without.
    baseline: the reference system of rbo@k, its value of the by column (a tuple of one value
    per by column for several), as compare() takes it: each group's lists against its lists.
    subtopics: subtopic judgements, (user, subtopic, item[, relevance][, weight]) rows, for the
    intent-aware measures ("alpha_ndcg@10", "p_ia@10", "ap_ia", "err_ia@10", "nrbp", or
    ir_measures' "alpha_nDCG@10", ...); the call's truth too (an item's grade is its highest
    over its unit's subtopics), so not with truth= (docs/metrics.md, "Subtopics"). A `weight`
    column gives the intent weights of p_ia, ap_ia and err_ia (one per unit and subtopic,
    normalized per unit; uniform without, as ndeval).
    partitions: evaluate the users in this many hash partitions, one statement each (DuckDB
    only), for logs with more users than memory_limit holds; the numbers are the same to the
    last bit. progress: with partitions, one progress line per partition on stderr.
    confidence: e.g. 0.95 adds <metric>_ci_low and <metric>_ci_high after each mean, its t
    interval over the users (needs scipy: pip install 'sqlmetrics[stats]').
    Returns one row per group of `by` with the group columns, `users` (how many users each mean
    is over) and one float64 column per metric, named as requested; with per_user=True, one row
    per (group, user) instead. The conventions' defaults reproduce trec_eval's numbers (trec_eval
    10.0 without -c refuses a run that lacks a judged user; see docs/conventions.md).
    profile: another tool's conventions by name: "trec_eval" (the default), "recommenders",
    "ranx", "sklearn", "spark" or "evidently"; a convention keyword given (not None) overrides
    it. A profile whose metrics average over different users (Microsoft Recommenders' ndcg and
    precision) still runs one statement, and a mean over other users than the first metric's
    gets its own `<metric>_users` count.

    >>> import duckdb, sqlmetrics
    >>> con = duckdb.connect()
    >>> import pyarrow as pa
    >>> recs = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "c"], "score": [0.9, 0.8, 0.7]})
    >>> truth = pa.table({"user_id": [1, 2], "item_id": ["b", "c"], "relevance": [1, 2]})
    >>> sqlmetrics.evaluate(con, recs, ["precision@2", "mrr@2"], truth=truth).to_pylist()
    [{'users': 2, 'precision@2': 0.5, 'mrr@2': 0.75}]
    >>> sqlmetrics.evaluate(con, recs, ["precision@2", "mrr@2"], truth=truth, partitions=2).to_pylist()
    [{'users': 2, 'precision@2': 0.5, 'mrr@2': 0.75}]
    >>> truth3 = pa.table({"user_id": [1, 2, 3], "item_id": ["b", "c", "d"]})
    >>> sqlmetrics.evaluate(con, recs, ["precision@2", "ndcg@2"], truth=truth3,
    ...                     profile="recommenders").to_pylist()  # ndcg over every truth user
    [{'users': 2, 'precision@2': 0.5, 'ndcg@2': 0.5436432511904858, 'ndcg@2_users': 3}]
    """
    engine = for_connection(con, describe_only=False)
    try:
        template, context, recs_source, truth_source, _ = prepare(
            engine, recs, metrics, by=by, per_user=per_user, baseline=baseline, **inputs
        )
        if hasattr(engine, "report_problems_to_python"):  # DuckDB: no error in the statement
            context["fail_function"] = engine.report_problems_to_python()
        if template == GROUPED_TEMPLATE and (partitions != 1 or confidence is not None):
            # (both count one set of users per group; these metrics average over different ones)
            option = f"partitions={partitions}" if partitions != 1 else f"confidence={confidence}"
            profile = inputs["profile"]
            raise ConventionError(
                f"{option} cannot evaluate metrics under different conventions together "
                f"({grouped_labels(context)}{f': profile={profile!r}' if profile else ''}); "
                "evaluate each group in its own call"
            )
        partitions = check_partitions(partitions, engine.dialect, context)
        if confidence is not None:
            intervals.check(confidence, per_user, partitions)
        try:
            if confidence is not None:
                labels = [m.label for m in parse_metrics(metrics)]
                names = [by] if isinstance(by, str) else list(by or [])
                names = [find_column(recs_source, name, "recs", "by") for name in names]
                table = intervals.evaluate_with_intervals(
                    engine, template, context, confidence, labels, names
                )
            elif partitions == 1:
                table = with_exact_sums(
                    lambda form: engine.run(render(template, {**context, "exact_sums": form}))
                )
            else:
                table = with_exact_sums(
                    lambda form: evaluate_in_partitions(
                        engine, template, {**context, "exact_sums": form}, partitions, progress
                    )
                )
        except duckdb.OutOfMemoryException as exc:
            raise OutOfMemoryError.hint(exc, partitions) from None
        except DuplicateRowError as exc:
            names = ColumnNames.of(inputs)
            raise explained(engine, exc, recs_source, truth_source, names, by) from None
        if truth_source is not None and evaluated_nothing(table):  # (a second look only then)
            unmatched = unmatched_message(engine, engine.dialect, recs_source, truth_source, inputs["user"])
            if unmatched is not None:
                warnings.warn(UnmatchedUnitsWarning(unmatched), stacklevel=_caller_level())
        return table
    finally:
        engine.release()


@takes_inputs(last=("partitions", "progress", "confidence"))
def sql(
    con: Any,
    recs: Input,
    metrics: str | Sequence[str],
    *,
    dialect: str | None = None,
    by: str | Sequence[str] | None = None,
    baseline: Any = None,
    per_user: bool = False,
    partitions: int = 1,
    progress: bool = False,
    confidence: float | None = None,
    **inputs: Any,
) -> str:
    """The SQL text evaluate() would run with the same arguments; run in plain DuckDB (its
    CLI included) it gives the same table. Inputs must be nameable outside this process: a
    table or view, a relation over them, or a Parquet/CSV path.

    dialect: "duckdb", "spark", "postgres", "bigquery" or "snowflake"; by default the
    connection's own (DuckDB, Spark, PostgreSQL). The connection only describes the inputs
    (their columns and types): with dialect="bigquery" on a DuckDB connection, name tables that
    exist there with the same columns (an empty copy will do). With con=None, give each input
    as a (table name, columns) pair instead.

    >>> import duckdb, sqlmetrics
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE events AS SELECT 1 user_id, 'a' item_id, 0.5 score, 1 relevance")
    >>> print(sqlmetrics.sql(con, "events", ["ndcg@10"]).splitlines()[0])
    WITH
    >>> text = sqlmetrics.sql(con, "events", ["ndcg@10"], dialect="spark")
    >>> "FROM `events`" in text and "row_number() OVER" in text
    True
    >>> recs = ("analytics.recs", {"user_id": "INT64", "item_id": "STRING", "score": "FLOAT64"})
    >>> truth = ("analytics.purchases", {"user_id": "INT64", "item_id": "STRING"})
    >>> text = sqlmetrics.sql(None, recs, ["map@10"], truth=truth, dialect="bigquery")
    >>> "FROM `analytics`.`recs`" in text
    True
    """
    engine = for_connection(con)
    try:
        if partitions != 1:
            raise ConventionError(
                "sql() returns one statement; partitions= splits the work into several, so it "
                "is an option of evaluate() only"
            )
        if confidence is not None:
            raise ConventionError(
                "sql() returns the statement of the means; confidence= is an option of "
                "evaluate() (and compare())"
            )
        template, context, recs_source, truth_source, others = prepare(
            engine, recs, metrics, dialect=dialect, by=by, per_user=per_user, baseline=baseline,
            **inputs
        )
        text = render(template, context)
        for source in (recs_source, truth_source, *others):
            if source is not None and not source.inline:
                raise SqlMetricsError(
                    f"sql() returns text to run elsewhere, but {source.label} exists only in this "
                    "Python process; write it to a table or a Parquet file first"
                )
        return text
    finally:
        engine.release()


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _caller_level() -> int:
    """The stacklevel of warnings.warn, called in evaluate(), that names the caller's line: the
    first frame outside this package (evaluate() is wrapped, and called by ndcg() and reports)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE + os.sep):
        frame, level = frame.f_back, level + 1
    return level
