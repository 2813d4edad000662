"""The off-policy table of reports with an [off_policy] section: each period's
sqlmetrics.off_policy() rows (runner.off_policy_period), one per (segment, target, estimator),
kept in a table of their own (default sqlmetrics_off_policy) and written in the same transaction
as the period's metrics (results_table.write_period)."""

from __future__ import annotations

import functools

import duckdb
import pyarrow as pa

from ..inputs.identifiers import quote_string
from ..stats.off_policy import COMPARED, OUTPUT
from . import results_table
from .config import OffPolicySection

TEMPLATE = "reports/off_policy_table.sql.j2"
STATISTICS = list(OUTPUT + COMPARED)
COLUMNS = {  # in the table's order
    "report": "VARCHAR", "period_start": "DATE", "period_end": "DATE",
    "segment": "MAP(VARCHAR, VARCHAR)", "target": "MAP(VARCHAR, VARCHAR)",
    **{name: "VARCHAR" if name in ("estimator", "baseline") else "BIGINT" if name == "units" else "DOUBLE"
       for name in STATISTICS},
    "test": "VARCHAR", "confidence": "DOUBLE", "computed_at": "TIMESTAMP",
    "sqlmetrics_version": "VARCHAR", "config_hash": "VARCHAR",
}  # fmt: skip


def ensure(con: duckdb.DuckDBPyConnection, section: OffPolicySection) -> None:
    """Create the off-policy table if it does not exist; refuse a table with other columns."""
    results_table.ensure(con, section.results_table, TEMPLATE, COLUMNS, "off-policy")


def staged(section: OffPolicySection, estimates: list[tuple[tuple[str, ...], pa.Table]]) -> pa.Table:
    """off_policy()'s tables of one period, one per target (its target_by values), as one table:
    the segment columns, the targets' values (_t0, _t1, ...) and the statistics (NULL where a
    table has none: the comparisons without a baseline).

    >>> import pyarrow as pa
    >>> from sqlmetrics.reports.config import OffPolicySection
    >>> section = OffPolicySection("impressions", "recs", "day", target_by=("model",))
    >>> one = pa.table({"estimator": ["iips"], "value": [1.5], "units": [3]})
    >>> staged(section, [(("B",), one)]).select(["_t0", "estimator", "value", "delta"]).to_pylist()
    [{'_t0': 'B', 'estimator': 'iips', 'value': 1.5, 'delta': None}]
    """
    by = list(section.keywords.get("by") or [])
    parts = []
    for values, table in estimates:
        columns = {name: table.column(name) for name in by}
        for i, value in enumerate(values):
            columns[f"_t{i}"] = pa.array([value] * table.num_rows, pa.string())
        for name in STATISTICS:
            kind = {"VARCHAR": pa.string(), "BIGINT": pa.int64()}.get(COLUMNS[name], pa.float64())
            columns[name] = (table.column(name).cast(kind) if name in table.column_names
                             else pa.nulls(table.num_rows, kind))  # fmt: skip
        parts.append(pa.table(columns))
    return pa.concat_tables(parts, promote_options="permissive")


def write(section: OffPolicySection, result: pa.Table) -> results_table.Write:
    """The off-policy table's rows of one period (staged())."""
    context = {
        "segments": results_table.segment_keys(list(section.keywords.get("by") or [])),
        "targets": [
            {"key": quote_string(name), "column": results_table.segment_keys([f"_t{i}"])[0]["column"]}
            for i, name in enumerate(section.target_by)
        ],
        "test": quote_string(section.keywords.get("test", "t")),
        "confidence": repr(float(section.keywords.get("confidence", 0.95))),
        "statistics": STATISTICS,
    }
    return results_table.Write(section.results_table, "reports/insert_off_policy.sql.j2", context, result)


# The stored estimates of a report (of the periods starting in [first, last] when given):
# read(con, table, report, first=None, last=None)
read = functools.partial(results_table.read, template="reports/read_off_policy.sql.j2")
