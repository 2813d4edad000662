"""The public API: evaluate(), sql(), and one function per metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa

from .conventions import Conventions
from .errors import DuplicateRowError, SqlMetricsError
from .identifiers import quote_identifier
from .metric_names import parse_metrics
from .plan import ColumnNames, build_context
from .run import run
from .sources import Registrations, Source, resolve
from .templates import render

Input = Any  # table/view name, DuckDB relation, Parquet/CSV path, pandas/polars DataFrame, pyarrow Table


def _prepare(
    con: duckdb.DuckDBPyConnection,
    recs: Input,
    metrics: str | Sequence[str],
    registrations: Registrations,
    *,
    truth: Input | None,
    by: str | Sequence[str] | None,
    per_user: bool,
    user: str,
    item: str,
    score: str,
    rank: str | None,
    relevance: str | Mapping[str, float] | None,
    action: str | None,
    ties: str,
    threshold: float,
    gain: str,
    empty: str,
    missing: str,
    ap_denominator: str,
    duplicates: str,
) -> tuple[str, Source, Source | None]:
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise SqlMetricsError(
            f"con must be a duckdb connection (duckdb.connect()), got {type(con).__name__}"
        )
    requested = parse_metrics(metrics)
    conventions = Conventions(
        ties=ties,
        threshold=threshold,
        gain=gain,
        empty=empty,
        missing=missing,
        ap_denominator=ap_denominator,
        duplicates=duplicates,
    )
    groups = [by] if isinstance(by, str) else list(by or [])
    names = ColumnNames(
        user=user, item=item, score=score, rank=rank, relevance=relevance, action=action
    )
    recs_source = resolve(con, recs, "recs", registrations)
    truth_source = None if truth is None else resolve(con, truth, "truth", registrations)
    context = build_context(
        recs_source, truth_source, requested, names, conventions, groups, per_user
    )
    return render("evaluate.sql.j2", context), recs_source, truth_source


def evaluate(
    con: duckdb.DuckDBPyConnection,
    recs: Input,
    metrics: str | Sequence[str],
    *,
    truth: Input | None = None,
    by: str | Sequence[str] | None = None,
    per_user: bool = False,
    user: str = "user_id",
    item: str = "item_id",
    score: str = "score",
    rank: str | None = None,
    relevance: str | Mapping[str, float] | None = None,
    action: str | None = None,
    ties: str = "item_desc",
    threshold: float = 1,
    gain: str = "linear",
    empty: str = "zero",
    missing: str = "skip",
    ap_denominator: str = "relevant",
    duplicates: str = "top_k",
) -> pa.Table:
    """Evaluate ranking metrics inside DuckDB, in one SQL statement, and return Arrow.

    recs: one row per (user, item) with a score (higher is better) or a rank (1 is the top).
    truth: a table of (user, item[, relevance]); without it, recs must carry the relevance.
    metrics: names like "ndcg@10", "map@10", "recall@20", "r_precision".
    Returns one row per group of `by` with the group columns, `users` (how many users each mean
    is over) and one float64 column per metric, named as requested; with per_user=True, one row
    per (group, user) instead. The conventions' defaults reproduce trec_eval (see README).

    >>> import duckdb, sqlmetrics
    >>> con = duckdb.connect()
    >>> import pyarrow as pa
    >>> recs = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "c"], "score": [0.9, 0.8, 0.7]})
    >>> truth = pa.table({"user_id": [1, 2], "item_id": ["b", "c"], "relevance": [1, 2]})
    >>> sqlmetrics.evaluate(con, recs, ["precision@2", "mrr@2"], truth=truth).to_pylist()
    [{'users': 2, 'precision@2': 0.5, 'mrr@2': 0.75}]
    """
    registrations = Registrations(con)
    try:
        text, recs_source, truth_source = _prepare(
            con,
            recs,
            metrics,
            registrations,
            truth=truth,
            by=by,
            per_user=per_user,
            user=user,
            item=item,
            score=score,
            rank=rank,
            relevance=relevance,
            action=action,
            ties=ties,
            threshold=threshold,
            gain=gain,
            empty=empty,
            missing=missing,
            ap_denominator=ap_denominator,
            duplicates=duplicates,
        )
        try:
            return run(con, text)
        except DuplicateRowError as exc:
            raise DuplicateRowError(
                _with_example(con, exc, recs_source, truth_source, user, item)
            ) from None
    finally:
        registrations.release()


def sql(
    con: duckdb.DuckDBPyConnection,
    recs: Input,
    metrics: str | Sequence[str],
    **options: Any,
) -> str:
    """The SQL text evaluate() would run with the same arguments; run in plain DuckDB (its
    CLI included) it gives the same table. Inputs must be nameable outside this process: a
    table or view, a relation over them, or a Parquet/CSV path.

    >>> import duckdb, sqlmetrics
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE events AS SELECT 1 user_id, 'a' item_id, 0.5 score, 1 relevance")
    >>> print(sqlmetrics.sql(con, "events", ["ndcg@10"]).splitlines()[0])
    WITH
    """
    registrations = Registrations(con)
    try:
        text, recs_source, truth_source = _prepare(
            con, recs, metrics, registrations, **_with_defaults(options)
        )
        for source in (recs_source, truth_source):
            if source is not None and not source.inline:
                raise SqlMetricsError(
                    f"sql() returns text to run elsewhere, but {source.label} exists only in this "
                    "Python process; write it to a table or a Parquet file first"
                )
        return text
    finally:
        registrations.release()


_DEFAULTS: dict[str, Any] = {
    "truth": None,
    "by": None,
    "per_user": False,
    "user": "user_id",
    "item": "item_id",
    "score": "score",
    "rank": None,
    "relevance": None,
    "action": None,
    "ties": "item_desc",
    "threshold": 1,
    "gain": "linear",
    "empty": "zero",
    "missing": "skip",
    "ap_denominator": "relevant",
    "duplicates": "top_k",
}


def _with_defaults(options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(_DEFAULTS))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    return {**_DEFAULTS, **options}


def _with_example(
    con, exc: DuplicateRowError, recs: Source, truth: Source | None, user: str, item: str
) -> str:
    """Name the duplicated item too: a second, targeted look, only on this error path."""
    source = truth if str(exc).startswith("truth") and truth is not None else recs
    user_col = next((c for c in source.columns if c.lower() == user.lower()), user)
    item_col = next((c for c in source.columns if c.lower() == item.lower()), item)
    user_value = str(exc).rsplit(" = ", 1)[-1]
    try:
        row = con.execute(
            f"SELECT CAST({quote_identifier(item_col)} AS VARCHAR) FROM {source.sql} "
            f"WHERE CAST({quote_identifier(user_col)} AS VARCHAR) = ? "
            f"GROUP BY {quote_identifier(item_col)} HAVING count(*) > 1 LIMIT 1",
            [user_value],
        ).fetchall()
    except duckdb.Error:
        row = []
    return f"{exc}, {item_col} = {row[0][0]}" if row else str(exc)
