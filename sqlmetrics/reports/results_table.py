"""The results table: created on first use, each period of a report replaced in ONE transaction.

Replacing a period deletes its rows and inserts the new ones between BEGIN and COMMIT, so a
reader sees the old rows or the new ones, never a mix; a failure (or a killed process) before
COMMIT leaves the table as it was. The SQL is in sql/reports/.

One writer at a time: DuckDB's file lock keeps other processes out (warehouse.py), but the
connections of one process share one database instance, and two transactions that each delete
nothing and insert a new period's rows do not conflict: both would commit, doubling the rows.
So the writes of one process take turns on a process-wide lock as well (a write is one DELETE
and one INSERT of a few rows per segment and metric: short; the evaluations run in parallel)."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timezone

import duckdb
import pyarrow as pa

from ..errors import SqlMetricsError
from ..inputs.identifiers import quote_identifier, quote_string, quote_table_name
from ..names.metric_names import parse_metrics
from ..statement.templates import render
from .periods import Period

COLUMNS = {
    "report": "VARCHAR",
    "period_start": "DATE",
    "period_end": "DATE",
    "segment": "MAP(VARCHAR, VARCHAR)",
    "metric": "VARCHAR",
    "k": "INTEGER",
    "value": "DOUBLE",
    "users": "BIGINT",
    "computed_at": "TIMESTAMP",  # UTC (a plain TIMESTAMP: fetching TIMESTAMPTZ in Python needs pytz)
    "sqlmetrics_version": "VARCHAR",
    "config_hash": "VARCHAR",
    "ci_low": "DOUBLE",  # the t interval of value at the [compare] section's confidence; NULL without
    "ci_high": "DOUBLE",
}
_INTERVALS = ("ci_low", "ci_high")  # added to a table made before them (ALTER TABLE, on first use)


_WRITER = threading.Lock()  # one results-table write at a time in this process (see above)


class ResultsTableError(SqlMetricsError):
    """The results table exists with other columns, or a write to it conflicted."""


@dataclass(frozen=True)
class Stamp:
    """What every row of one period's write carries besides the numbers."""

    report: str
    period: Period
    computed_at: datetime
    version: str
    config_hash: str

    def parameters(self) -> dict[str, object]:
        return {
            "report": self.report,
            "period_start": self.period.start,
            "period_end": self.period.end,
            "computed_at": _utc(self.computed_at),
            "version": self.version,
            "config_hash": self.config_hash,
        }


def _utc(moment: datetime) -> datetime:
    """A naive UTC datetime (the column is a plain TIMESTAMP in UTC)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(timezone.utc).replace(tzinfo=None)


def ensure(
    con: duckdb.DuckDBPyConnection,
    table: str,
    template: str = "reports/results_table.sql.j2",
    columns: dict[str, str] = COLUMNS,
    what: str | None = None,
) -> None:
    """Create the results table (or another table of reports: its template and columns, and
    what the messages call it) if it does not exist; refuse a table with other columns. A
    results table of before the interval columns gets them.

    >>> import duckdb
    >>> con = duckdb.connect()
    >>> ensure(con, "results"); ensure(con, "results")
    >>> [r[0] for r in con.execute("DESCRIBE results").fetchall()][:4]
    ['report', 'period_start', 'period_end', 'segment']
    """
    quoted = quote_table_name(table)
    what = what or ("results" if columns is COLUMNS else "comparisons")
    with _WRITER:  # two threads creating it at once would conflict in DuckDB's catalog
        _refuse_a_view(con, table, what)
        con.execute(render(template, {"table": quoted})).fetchall()
        found = {row[0]: row[1] for row in con.execute(f"DESCRIBE {quoted}").fetchall()}
        older = {n: t for n, t in COLUMNS.items() if n not in _INTERVALS}
        if columns is COLUMNS and found == older:
            con.execute(render("reports/add_intervals.sql.j2", {"table": quoted})).fetchall()
            found = columns
    if found != columns:
        have = ", ".join(f"{n} {t}" for n, t in found.items())
        raise ResultsTableError(
            f"table {table!r} exists but is not a sqlmetrics {what} "
            f"table (it has: {have}); set its name in the config to another one, or drop it"
        )


def _refuse_a_view(con: duckdb.DuckDBPyConnection, table: str, what: str) -> None:
    """A view named as the results table cannot take the period's rows (DuckDB deletes from
    and inserts into base tables only): say so before a raw BinderException would, and before
    any write. A two-part name is schema.table or catalog.table, as DuckDB reads it."""
    parts = table.split(".")
    name, qualifiers = parts[-1], parts[:-1]
    where = {
        0: "schema_name = current_schema() AND database_name = current_database()",
        1: "(schema_name = $1 OR database_name = $1)",
        2: "database_name = $1 AND schema_name = $2",
    }[len(qualifiers)]
    sql = f"SELECT count(*) FROM duckdb_views() WHERE NOT internal AND view_name = ${len(parts)} AND {where}"
    if con.execute(sql, [*qualifiers, name]).fetchall()[0][0]:
        raise ResultsTableError(
            f"{table!r} is a view, but the {what} table must be a table: each period's rows are "
            "deleted and inserted there; set results_table in the config to a table's name, or "
            "drop the view"
        )


@dataclass(frozen=True)
class Write:
    """One table's rows of one period: `result` registered as a view while `insert` (a template
    of sql/reports/, rendered with `context`) copies it, after the period's rows are deleted."""

    table: str
    insert: str
    context: dict
    result: pa.Table


def metrics_write(
    table: str, result: pa.Table, metrics: list[str], by: list[str], intervals: bool = False
) -> Write:
    """The results table's rows of evaluate()'s table (by columns, users, one column per
    metric, each followed by <metric>_ci_low and _ci_high when `intervals`)."""
    context = {
        "segments": segment_keys(by),
        "metrics": [
            {
                "name": quote_string(m.name),
                "k": "NULL" if m.k is None else str(int(m.k)),
                "column": quote_identifier(m.label),
                # a mean over other users than the first metric's has its own count (profiles)
                "users": quote_identifier(
                    f"{m.label}_users" if f"{m.label}_users" in result.column_names else "users"
                ),
                **{
                    bound: quote_identifier(f"{m.label}_{bound}") if intervals else "NULL"
                    for bound in _INTERVALS
                },
            }
            for m in parse_metrics(metrics)
        ],
    }
    return Write(table, "reports/insert_period.sql.j2", context, result)


def segment_keys(columns: list[str]) -> list[dict[str, str]]:
    """The by-columns as the insert templates build a segment MAP from them."""
    return [{"key": quote_string(b), "column": quote_identifier(b)} for b in columns]


def replace_period(
    con: duckdb.DuckDBPyConnection,
    table: str,
    stamp: Stamp,
    result: pa.Table,
    metrics: list[str],
    by: list[str],
) -> int:
    """Replace the rows of (stamp.report, stamp.period) with `result` (evaluate()'s table: by
    columns, users, one column per metric), in one transaction. Returns the rows written.

    >>> import duckdb, pyarrow as pa
    >>> from datetime import date, datetime, timezone
    >>> con = duckdb.connect(); ensure(con, "results")
    >>> stamp = Stamp("daily", Period(date(2026, 11, 1), date(2026, 11, 2)),
    ...               datetime(2026, 11, 2, tzinfo=timezone.utc), "0.1.0", "abc")
    >>> result = pa.table({"model": ["A", "B"], "users": [10, 12], "ndcg@10": [0.25, 0.5]})
    >>> replace_period(con, "results", stamp, result, ["ndcg@10"], ["model"])
    2
    >>> con.execute("SELECT segment['model'], metric, k, value FROM results ORDER BY 1").fetchall()
    [('A', 'ndcg', 10, 0.25), ('B', 'ndcg', 10, 0.5)]
    """
    return write_period(con, stamp, [metrics_write(table, result, metrics, by)])[0]


def write_period(con: duckdb.DuckDBPyConnection, stamp: Stamp, writes: list[Write]) -> list[int]:
    """Replace the rows of (stamp.report, stamp.period) in each write's table with its rows,
    all in ONE transaction (the metrics and the comparisons of a period change together).
    Returns the rows written to each table."""
    staged = [f"__sqlmetrics_staged_{uuid.uuid4().hex}" for _ in writes]
    contexts = [
        {**w.context, "table": quote_table_name(w.table), "staged": quote_identifier(n), "insert": w.insert}
        for w, n in zip(writes, staged, strict=True)
    ]
    parameters = stamp.parameters()
    with _WRITER:
        try:
            con.execute("BEGIN TRANSACTION").fetchall()
        except duckdb.TransactionException:
            raise ResultsTableError(
                "the connection is inside a transaction already; a report writes each period in its own "
                "transaction, so COMMIT or ROLLBACK first"
            ) from None
        try:
            try:
                for w, name in zip(writes, staged, strict=True):
                    con.register(name, w.result)
                written = []
                for context in contexts:
                    _delete(con, context, parameters)
                    written.append(_insert(con, context, parameters))
                con.execute("COMMIT").fetchall()
            except BaseException:
                _rollback(con)
                raise
        except duckdb.TransactionException as exc:
            raise ResultsTableError(
                f"another run wrote {stamp.report} {stamp.period.label} at the same time "
                f"({str(exc).splitlines()[0]}); nothing of this run was kept for it, run it again"
            ) from None
        finally:
            for name in staged:
                con.unregister(name)
    return written


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK").fetchall()
    except duckdb.Error:  # the transaction is already gone (aborted by the engine)
        pass


def _delete(con: duckdb.DuckDBPyConnection, context: dict, parameters: dict) -> None:
    sql = render("reports/delete_period.sql.j2", context)
    con.execute(sql, {k: parameters[k] for k in ("report", "period_start")}).fetchall()


def _insert(con: duckdb.DuckDBPyConnection, context: dict, parameters: dict) -> int:
    sql = render(context["insert"], context)
    rows = con.execute(sql, parameters).fetchall()
    return int(rows[0][0]) if rows else 0


def done_periods(
    con: duckdb.DuckDBPyConnection, table: str, report: str, config_hash: str, first: date, last: date
) -> set[date]:
    """Start dates of the periods in [first, last] whose every row has this config hash."""
    sql = render("reports/done_periods.sql.j2", {"table": quote_table_name(table)})
    params = {"report": report, "config_hash": config_hash, "first": first, "last": last}
    return {row[0] for row in con.execute(sql, params).fetchall()}


def read(
    con: duckdb.DuckDBPyConnection,
    table: str,
    report: str,
    first: date | None = None,
    last: date | None = None,
    *,
    template: str = "reports/read_results.sql.j2",
) -> pa.Table:
    """The stored rows of `report` (of the periods starting in [first, last] when given); of
    another table of reports with its `template` (comparisons.read)."""
    bounded = first is not None and last is not None
    sql = render(template, {"table": quote_table_name(table), "bounded": bounded})
    params: dict[str, object] = {"report": report}
    if bounded:
        params.update(first=first, last=last)
    return con.sql(sql, params=params).to_arrow_table()


def metric_label(metric: str, k: int | None) -> str:
    """('ndcg', 10) -> 'ndcg@10'; ('r_precision', None) -> 'r_precision'."""
    return metric if k is None else f"{metric}@{k}"


def wide(rows: pa.Table, metrics: list[str] | None = None) -> pa.Table:
    """Stored rows (see read) as one row per (period, segment): period, the segment columns,
    users, then one column per metric (in `metrics` order when given).

    >>> import duckdb, pyarrow as pa
    >>> from datetime import date, datetime, timezone
    >>> con = duckdb.connect(); ensure(con, "results")
    >>> stamp = Stamp("daily", Period(date(2026, 11, 1), date(2026, 11, 2)),
    ...               datetime(2026, 11, 2, tzinfo=timezone.utc), "0.1.0", "abc")
    >>> result = pa.table({"model": ["A"], "users": [10], "ndcg@10": [0.25], "map@10": [0.125]})
    >>> _ = replace_period(con, "results", stamp, result, ["ndcg@10", "map@10"], ["model"])
    >>> wide(read(con, "results", "daily"), ["ndcg@10", "map@10"]).to_pylist()
    [{'period': '2026-11-01', 'model': 'A', 'users': 10, 'ndcg@10': 0.25, 'map@10': 0.125}]
    """
    keys: list[str] = []
    labels: list[str] = list(metrics or [])
    lines: dict[tuple, dict[str, object]] = {}
    for row in rows.to_pylist():
        segment = dict(row["segment"])
        keys.extend(k for k in segment if k not in keys)
        label = metric_label(row["metric"], row["k"])
        if label not in labels:
            labels.append(label)
        key = (row["period_start"], tuple(sorted(segment.items())))
        line = lines.setdefault(
            key, {"period": Period(row["period_start"], row["period_end"]).label, "segment": segment}
        )
        line["users"] = row["users"]
        line[label] = row["value"]
    columns: dict[str, list] = {"period": [], **{k: [] for k in keys}, "users": [], **{m: [] for m in labels}}
    for line in lines.values():
        columns["period"].append(line["period"])
        for k in keys:
            columns[k].append(line["segment"].get(k))
        columns["users"].append(line.get("users"))
        for m in labels:
            columns[m].append(line.get(m))
    types = {"period": pa.string(), "users": pa.int64(), **{k: pa.string() for k in keys}}
    return pa.table(
        {name: pa.array(values, types.get(name, pa.float64())) for name, values in columns.items()}
    )
