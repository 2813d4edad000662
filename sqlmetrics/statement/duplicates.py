"""What a duplicate (user, item) error says: the duplicated item, and its usual causes with
their fixes (several lists per user in recs: a model, a day; an event log as truth). Only on
the error path; evaluate() and compare() both raise what explained() returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from ..errors import DuplicateRowError
from ..inputs.identifiers import quote_identifier, quote_string
from ..inputs.sources import Source
from .plan import ColumnNames, unit_columns
from .prepare import with_truth_hint


def explained(
    engine: Any,
    exc: DuplicateRowError,
    recs: Source,
    truth: Source | None,
    names: ColumnNames,
    by: str | Sequence[str] | None,
) -> DuplicateRowError:
    """The error to raise for `exc`: on DuckDB with the duplicated item and the columns of recs
    its rows differ in; elsewhere with recs' other columns, which may tell its lists apart."""
    segments = [by] if isinstance(by, str) else list(by or [])
    relevance = names.relevance if isinstance(names.relevance, str) else None
    taken = {*unit_columns(names.user), names.item, names.score, names.rank, names.action,
             "relevance", relevance, *segments}  # fmt: skip
    taken_lower = {name.lower() for name in taken if name}
    others = [c for c in recs.columns if c.lower() not in taken_lower]
    user = names.user
    message, differ = str(exc), False
    if engine.dialect == "duckdb":
        message, others = _example(engine.con, exc, recs, truth, user, names.item, others)
        differ = True
    truth_columns = truth.columns if truth is not None else ()
    message = with_lists_hint(message, others, differ, user, by, truth_columns)
    return DuplicateRowError(with_truth_hint(message))


def with_lists_hint(
    message: str,
    columns: Sequence[str],
    differ: bool,
    user: str | Sequence[str],
    by: str | Sequence[str] | None,
    truth_columns: Sequence[str] = (),
) -> str:
    """A duplicate in recs whose rows differ in other columns (differ), or recs with other
    columns at all (an engine that does not look): usually several lists per user, one per
    model or per day. Say how to evaluate them: a column truth has too (a day) joins the unit
    (user=), since truth is joined on the unit and a by column truth has is refused; the
    others (a model) become segments (by=)."""
    if not message.startswith("recs") or not columns:
        return message
    unit = [user] if isinstance(user, str) else list(user)
    segments = [by] if isinstance(by, str) else list(by or [])
    in_truth = {c.lower() for c in truth_columns}
    keys = [c for c in columns if c.lower() in in_truth]
    apart = [c for c in columns if c.lower() not in in_truth]
    seen = f"its rows differ in {', '.join(columns)}" if differ else f"recs also has {', '.join(columns)}"
    ways = []
    if apart:
        ways.append(f"by={[*segments, *apart]!r} evaluates the lists of each {', '.join(apart)} apart")
    if keys:
        ways.append(
            f"user={[*unit, *keys]!r} makes each ({', '.join([*unit, *keys])}) one list, judged "
            "against its own truth"
        )
    return (
        f"{message}; {seen}: several lists per user? {' and '.join(ways)} (docs/inputs.md, "
        "Units and segments)"
    )


def _example(
    con,
    exc: DuplicateRowError,
    recs: Source,
    truth: Source | None,
    user: Any,
    item: str,
    others: list[str],
) -> tuple[str, list[str]]:
    """Name the duplicated item too, and which of recs' `others` columns differ between its
    rows (several lists per user: a model, a day): a second, targeted look, only on this error
    path. Returns the message and those columns."""
    if not str(exc).startswith(("recs", "truth")):
        return str(exc), []  # item_features names its duplicated item itself
    source = truth if str(exc).startswith("truth") and truth is not None else recs
    if source is not recs:
        others = []
    unit = [next((c for c in source.columns if c.lower() == k.lower()), k) for k in unit_columns(user)]
    item_col = next((c for c in source.columns if c.lower() == item.lower()), item)
    # the unit as the message ends: " for user_id = 1[, day = 2026-11-01]" (inputs/problems.sql.j2)
    described = " || ".join(
        f"{quote_string((' for ' if i == 0 else ', ') + column + ' = ')} || "
        f"CAST({quote_identifier(column)} AS VARCHAR)"
        for i, column in enumerate(unit)
    )
    # over the unit's duplicated pairs: the first item, and whether each column differs in any
    flags = [f"_d{i}" for i in range(len(others))]
    differ = "".join(
        f", count(DISTINCT CAST({quote_identifier(column)} AS VARCHAR)) > 1 AS {flag}"
        for column, flag in zip(others, flags, strict=True)
    )
    try:
        row = con.execute(
            f"SELECT min(_item){''.join(f', bool_or({flag})' for flag in flags)} FROM ("
            f"SELECT CAST({quote_identifier(item_col)} AS VARCHAR) AS _item{differ} FROM {source.sql} "
            f"WHERE ends_with(?, {described}) "
            f"GROUP BY {', '.join(map(quote_identifier, unit))}, {quote_identifier(item_col)} "
            "HAVING count(*) > 1) HAVING count(*) > 0",
            [str(exc)],
        ).fetchall()
    except duckdb.Error:
        row = []
    if not row:
        return str(exc), []
    return f"{exc}, {item_col} = {row[0][0]}", [c for c, d in zip(others, row[0][1:], strict=True) if d]
