"""The comparisons table of reports with a [compare] section: each period's sqlmetrics.compare()
rows (runner.compare_periods), kept in a table of their own (default sqlmetrics_comparisons)
and written in the same transaction as the period's metrics (results_table.write_period)."""

from __future__ import annotations

import functools

import duckdb
import pyarrow as pa

from ..inputs.identifiers import quote_string, quote_table_name
from ..names.metric_names import parse_metrics
from ..statement.templates import render
from ..stats.compare import COUNTS, OUTPUT
from . import results_table
from .config import CompareSection, ReportConfig
from .periods import Period
from .results_table import ResultsTableError

TEMPLATE = "reports/comparisons_table.sql.j2"
STATISTICS = [name for name in OUTPUT if name != "metric"]
# the columns compare()'s designs added, last in the table (a table of before them is
# migrated: ensure())
DESIGN_COLUMNS = (
    "design", "baseline_users", "relative_ci_low", "relative_ci_high", "srm_p_value", "theta",
    "variance_reduction",
)  # fmt: skip


def _type(name: str) -> str:
    return "VARCHAR" if name == "design" else "BIGINT" if name in COUNTS else "DOUBLE"


COLUMNS = {  # in the table's order
    "report": "VARCHAR", "period_start": "DATE", "period_end": "DATE",
    "segment": "MAP(VARCHAR, VARCHAR)", "system": "MAP(VARCHAR, VARCHAR)",
    "baseline": "MAP(VARCHAR, VARCHAR)", "metric": "VARCHAR", "k": "INTEGER", "test": "VARCHAR",
    "confidence": "DOUBLE", "correction": "VARCHAR",
    **{name: _type(name) for name in STATISTICS if name not in DESIGN_COLUMNS},
    "computed_at": "TIMESTAMP", "sqlmetrics_version": "VARCHAR", "config_hash": "VARCHAR",
    **{name: _type(name) for name in DESIGN_COLUMNS},
}  # fmt: skip


def ensure(con: duckdb.DuckDBPyConnection, section: CompareSection) -> None:
    """Create the comparisons table if it does not exist; refuse a table with other columns. A
    table of before compare()'s designs gets their columns (its rows are paired ones)."""
    try:
        results_table.ensure(con, section.results_table, TEMPLATE, COLUMNS)
    except ResultsTableError:
        quoted = quote_table_name(section.results_table)
        found = {row[0]: row[1] for row in con.execute(f"DESCRIBE {quoted}").fetchall()}
        if found != {n: t for n, t in COLUMNS.items() if n not in DESIGN_COLUMNS}:
            raise
        con.execute(render("reports/add_compare_designs.sql.j2", {"table": quoted})).fetchall()
        results_table.ensure(con, section.results_table, TEMPLATE, COLUMNS)


def write(config: ReportConfig, result: pa.Table) -> results_table.Write:
    """The comparisons table's rows of compare()'s table of one period."""
    compare_section = config.compare
    assert compare_section is not None
    parsed = {m.label: m for m in parse_metrics(list(config.metrics))}
    labels = result.column("metric").to_pylist()
    staged = result.append_column("_name", pa.array([parsed[m].name for m in labels], pa.string()))
    staged = staged.append_column("_k", pa.array([parsed[m].k for m in labels], pa.int32()))
    baseline = [
        {"key": quote_string(name), "column": quote_string(str(value))}
        for name, value in zip(compare_section.systems, compare_section.baseline, strict=True)
    ]
    context = {
        "segments": results_table.segment_keys(result.column_names[: len(compare_section.within)]),
        "systems": results_table.segment_keys(
            result.column_names[
                len(compare_section.within) : len(compare_section.within) + len(compare_section.systems)
            ]
        ),
        "baseline": baseline,
        "test": quote_string(compare_section.test),
        "confidence": repr(float(compare_section.confidence)),
        "correction": "NULL"
        if compare_section.correction is None
        else quote_string(compare_section.correction),
        "statistics": STATISTICS,
    }
    return results_table.Write(
        compare_section.results_table, "reports/insert_comparisons.sql.j2", context, staged
    )


# The stored comparisons of a report (of the periods starting in [first, last] when given):
# read(con, table, report, first=None, last=None)
read = functools.partial(results_table.read, template="reports/read_comparisons.sql.j2")


def flat(rows: pa.Table, metrics: list[str] | None = None) -> pa.Table:
    """Stored comparisons (see read) as compare() returns them, one row per (period, segment,
    system, metric): period, the segment and system columns, metric as a label ('ndcg@10'),
    then compare()'s statistics; within a period and segment in `metrics` order when given.

    >>> import pyarrow as pa
    >>> from datetime import date
    >>> rows = pa.table({"period_start": [date(2026, 11, 1)], "period_end": [date(2026, 11, 2)],
    ...     "segment": pa.array([[]], pa.map_(pa.string(), pa.string())),
    ...     "system": pa.array([[("model", "B")]], pa.map_(pa.string(), pa.string())),
    ...     "metric": ["ndcg"], "k": [10], "users": [5], "delta": [0.25]})
    >>> flat(rows).to_pylist()
    [{'period': '2026-11-01', 'model': 'B', 'metric': 'ndcg@10', 'users': 5, 'delta': 0.25}]
    """
    lines = rows.to_pylist()
    if metrics:
        order = {label: i for i, label in enumerate(metrics)}
        lines.sort(
            key=lambda r: (r["period_start"], str(r["segment"]), str(r["system"]),
                           order.get(results_table.metric_label(r["metric"], r["k"]), len(order)))
        )  # fmt: skip
        rows = pa.Table.from_pylist(lines, schema=rows.schema)
    keys: list[str] = []
    for row in lines:
        for part in ("segment", "system"):
            keys.extend(k for k, _ in row[part] if k not in keys)
    statistics = [name for name in STATISTICS if name in rows.column_names]
    columns: dict[str, pa.Array] = {
        "period": pa.array([Period(r["period_start"], r["period_end"]).label for r in lines], pa.string()),
        **{
            key: pa.array([dict(r["segment"] + r["system"]).get(key) for r in lines], pa.string())
            for key in keys
        },
        "metric": pa.array([results_table.metric_label(r["metric"], r["k"]) for r in lines], pa.string()),
    }
    for name in statistics:
        columns[name] = rows.column(name)
    return pa.table(columns)


def stored_periods(rows: pa.Table) -> list[Period]:
    """The periods of stored rows (of either table of reports), oldest first."""
    pairs = rows.select(["period_start", "period_end"]).to_pylist()
    return sorted({Period(r["period_start"], r["period_end"]) for r in pairs})
