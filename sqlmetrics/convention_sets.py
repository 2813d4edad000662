"""Metrics whose names carry their own conventions ("P(rel=2)@5", "ndcg@10-l2") next to
metrics that use the call's: one statement per set of conventions, joined by the `by` columns.

A statement has one threshold and one gain for all its metrics (they shape the judged rows
every metric reads), so an override that must apply to its metric alone needs a statement of
its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from .errors import ConventionError
from .metric_names import RequestedMetric


def effective(metric: RequestedMetric, keywords: dict[str, Any]) -> dict[str, Any]:
    """The conventions `metric` is computed with: the call's, then its name's overrides.

    >>> from sqlmetrics.metric_names import parse_metrics
    >>> effective(parse_metrics(["P(rel=2)@5"])[0], {"threshold": 1, "gain": "linear"})
    {'threshold': 2, 'gain': 'linear', 'gain_from_threshold': False}
    """
    return {**keywords, "gain_from_threshold": False, **dict(metric.overrides)}


def split(
    requested: Sequence[RequestedMetric], keywords: dict[str, Any]
) -> list[tuple[dict[str, Any], list[RequestedMetric]]]:
    """The requested metrics grouped by their effective conventions, in the order asked."""
    sets: list[tuple[dict[str, Any], list[RequestedMetric]]] = []
    for m in requested:
        conventions = effective(m, keywords)
        for known, members in sets:
            if known == conventions:
                members.append(m)
                break
        else:
            sets.append((conventions, [m]))
    return sets


def one_set(requested: Sequence[RequestedMetric], keywords: dict[str, Any], what: str) -> dict[str, Any]:
    """The conventions shared by every requested metric; ConventionError if they differ (for
    sql() and compare(), which run one statement)."""
    sets = split(requested, keywords)
    if len(sets) > 1:
        described = "; ".join(
            f"{', '.join(m.label for m in members)}: "
            + ", ".join(f"{k}={v!r}" for k, v in conventions.items())
            for conventions, members in sets
        )
        raise ConventionError(
            f"{what} runs one statement, but these metrics need different conventions ({described}); "
            "request each set separately (evaluate() runs one statement per set)"
        )
    return sets[0][0]


def join(tables: Sequence[pa.Table], keys: int, per_user: bool, labels: Sequence[str]) -> pa.Table:
    """The tables of the statements side by side: rows matched on the first `keys` columns (the
    by columns; with per_user the user column too, which comes next), the metrics' columns
    (with their _ci_ columns) in the order `labels` asks. Without per_user each table's
    `users` column comes after the keys and must agree where rows meet."""
    width = keys + (1 if per_user else 0)
    index: dict[tuple, int] = {}
    rows: list[list[int | None]] = []
    for t, table in enumerate(tables):
        key_columns = [table.column(i).to_pylist() for i in range(width)]
        for r in range(table.num_rows):
            key = tuple(column[r] for column in key_columns)
            if key not in index:
                index[key] = len(rows)
                rows.append([None] * len(tables))
            rows[index[key]][t] = r
    names: list[str] = []
    columns: list[pa.Array] = []

    def take(t: int, name: str) -> pa.Array:
        positions = pa.array([row[t] for row in rows], pa.int64())
        return tables[t].column(name).take(positions).combine_chunks()

    for i in range(width):  # each key from the first table that has the row
        first = [next(t for t in range(len(tables)) if row[t] is not None) for row in rows]
        values = [tables[first[r]].column(i)[rows[r][first[r]]].as_py() for r in range(len(rows))]
        names.append(tables[0].column_names[i])
        columns.append(pa.array(values, tables[0].schema.field(i).type))
    if not per_user:
        users = []
        for row in rows:
            present = [t for t in range(len(tables)) if row[t] is not None]
            counts = {tables[t].column(keys)[row[t]].as_py() for t in present}
            if len(counts) > 1:
                raise ConventionError(
                    f"the metrics' own conventions evaluate different users ({sorted(counts)}) in a "
                    "group (empty='skip' with different thresholds): request them separately"
                )
            users.append(counts.pop())
        names.append(tables[0].column_names[keys])
        columns.append(pa.array(users, tables[0].schema.field(keys).type))
    for label in labels:
        t = next(t for t, table in enumerate(tables) if label in table.column_names[width:])
        for name in (label, f"{label}_ci_low", f"{label}_ci_high"):
            if name in tables[t].column_names[width:]:
                names.append(name)
                columns.append(take(t, name))
    return pa.table(columns, names=names)
