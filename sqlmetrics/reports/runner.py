"""Running a report: for each period, evaluate the period's slice of the sources and replace the
period's rows of the results table (one transaction per period).

Periods already written with the same configuration hash are skipped unless force=True, so a
range that was stopped half way resumes where it stopped."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timezone
from zoneinfo import ZoneInfo

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from .. import columns as col
from ..api import evaluate
from ..errors import ColumnTypeError, SqlMetricsError
from ..identifiers import quote_identifier
from ..metric_names import parse_metrics
from ..progress import Progress
from ..sources import Registrations, Source, resolve
from ..templates import render
from . import results_table
from .config import ReportConfig
from .periods import Period

_TIME_TYPES = ("DATE", "TIMESTAMP")
_INSTANT_TYPE = "TIMESTAMP WITH TIME ZONE"


@dataclass(frozen=True)
class PeriodOutcome:
    """What happened to one period: 'written' (rows), 'skipped' (done before with this config)
    or 'no data' (no user to evaluate; the stored rows, if any, are kept)."""

    period: Period
    status: str
    rows: int
    seconds: float


def _version() -> str:
    from .. import __version__

    return __version__


def _time_source(
    con: duckdb.DuckDBPyConnection, name: str, role: str, time_column: str
) -> tuple[Source, str]:
    source = resolve(con, name, role, Registrations(con))
    column = col.find_column(source, time_column, role, "time")
    if not source.type_of(column).startswith(_TIME_TYPES):
        raise ColumnTypeError(
            f"{role} ({source.label}): the time column {column!r} must be a DATE or a TIMESTAMP, "
            f"but it is {source.type_of(column)}"
        )
    return source, column


def _bounds(period: Period, zone: str, instant: bool) -> dict[str, str]:
    """The period's bounds as SQL literals. A DATE or a plain TIMESTAMP is a calendar value,
    compared with the dates as it is (read as the wall clock of the report's zone). A
    TIMESTAMPTZ is an instant: it is compared with the instants at which the period's first
    and next days begin in `zone`, computed here with zoneinfo (a day of 23 or 25 hours across a
    DST change, a midnight that does not exist begins at the change), written as UTC literals,
    so neither the process's TZ nor the connection's TimeZone setting changes which rows match.
    """
    if not instant:
        return {"start": f"DATE '{period.start.isoformat()}'", "end": f"DATE '{period.end.isoformat()}'"}
    return {"start": _instant(period.start, zone), "end": _instant(period.end, zone)}


def _instant(day: date, zone: str) -> str:
    midnight = datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(zone))
    try:
        utc = midnight.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:
        raise SqlMetricsError(f"{day} in {zone} is outside the years 1 to 9999 in UTC") from None
    return f"TIMESTAMPTZ '{utc.isoformat(sep=' ')}+00'"


def period_inputs(
    con: duckdb.DuckDBPyConnection, config: ReportConfig, period: Period
) -> tuple[duckdb.DuckDBPyRelation, duckdb.DuckDBPyRelation | None]:
    """The recommendations and the truth of one period, as relations of `con` (lazy: nothing
    runs until evaluate() reads them; a Parquet source is read where it lies, filtered there).

    >>> import duckdb, datetime
    >>> from sqlmetrics.reports.config import config_from_dict
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE recs AS SELECT DATE '2026-11-01' + CAST(i AS INTEGER) AS day, "
    ...                 "i AS user_id FROM range(3) t(i)")
    >>> config = config_from_dict({"name": "r", "warehouse": "w", "recommendations": "recs",
    ...                            "time_column": "day", "metrics": ["ndcg@10"]})
    >>> recs, _ = period_inputs(con, config, Period(datetime.date(2026, 11, 2), datetime.date(2026, 11, 3)))
    >>> recs.fetchall()
    [(datetime.date(2026, 11, 2), 1)]
    """
    relations = []
    for name, role, time_column in (
        (config.recommendations, "recs", config.time_column),
        (config.truth, "truth", config.truth_time),
    ):
        if name is None:
            relations.append(None)
            continue
        source, column = _time_source(con, name, role, time_column)
        bounds = _bounds(period, config.timezone, source.type_of(column) == _INSTANT_TYPE)
        sql = render(
            "reports/period_slice.sql.j2",
            {"source": source.sql, "time_column": quote_identifier(column), **bounds},
        )
        relations.append(con.sql(sql))
    return relations[0], relations[1]


def evaluate_period(
    con: duckdb.DuckDBPyConnection, config: ReportConfig, period: Period, metrics: list[str] | None = None
) -> pa.Table:
    """evaluate() over one period: one row per segment with at least one user evaluated."""
    recs, truth = period_inputs(con, config, period)
    result = evaluate(con, recs, list(metrics or config.metrics), truth=truth, **config.options())
    return result.filter(pc.greater(result["users"], 0))


def run_report(
    con: duckdb.DuckDBPyConnection,
    config: ReportConfig,
    periods: list[Period],
    *,
    force: bool = False,
    progress: Progress | None = None,
    now: Callable[[], datetime] | None = None,
) -> list[PeriodOutcome]:
    """Evaluate each period and replace its rows in config.results_table; skip the periods
    already written with this configuration (same hash) unless force. Stops at the first
    error: the periods before it are kept, the failing one is left as it was.

    >>> import duckdb, datetime
    >>> from sqlmetrics.reports.config import config_from_dict
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE recs AS SELECT DATE '2026-11-01' AS day, 1 AS user_id, "
    ...                 "'a' AS item_id, 0.5 AS score, 1 AS relevance")
    >>> config = config_from_dict({"name": "r", "warehouse": "w", "recommendations": "recs",
    ...                            "time_column": "day", "metrics": ["ndcg@10"]})
    >>> day = Period(datetime.date(2026, 11, 1), datetime.date(2026, 11, 2))
    >>> [(o.status, o.rows) for o in run_report(con, config, [day])]
    [('written', 1)]
    >>> [(o.status, o.rows) for o in run_report(con, config, [day])]
    [('skipped', 0)]
    """
    if not periods:
        return []
    now = now or (lambda: datetime.now(timezone.utc))
    results_table.ensure(con, config.results_table)
    done = set()
    if not force:
        done = results_table.done_periods(
            con, config.results_table, config.name, config.hash, periods[0].start, periods[-1].start
        )
    version = _version()
    outcomes = []
    try:
        for period in periods:
            started = time.monotonic()
            if progress:
                progress.start(period.label)
            if period.start in done:
                outcome = PeriodOutcome(period, "skipped", 0, 0.0)
                note = "skipped (done with this config; --force redoes it)"
            else:
                try:
                    result = evaluate_period(con, config, period)
                except SqlMetricsError as exc:
                    raise type(exc)(f"{config.name} {period.label}: {exc}") from None
                if result.num_rows == 0:
                    outcome = PeriodOutcome(period, "no data", 0, time.monotonic() - started)
                    note = "no data (stored rows, if any, kept)"
                else:
                    segment_columns = result.column_names[: len(config.by)]  # as the source spells them
                    stamp = results_table.Stamp(config.name, period, now(), version, config.hash)
                    rows = results_table.replace_period(
                        con, config.results_table, stamp, result, list(config.metrics), segment_columns
                    )
                    outcome = PeriodOutcome(period, "written", rows, time.monotonic() - started)
                    note = f"{rows} rows in {outcome.seconds:.1f} s"
            outcomes.append(outcome)
            if progress:
                progress.finish(period.label, note)
    finally:
        if progress:
            progress.close()
    return outcomes


def curve_cutoffs(k_max: int, points: int = 30) -> list[int]:
    """The cutoffs of a metric@k curve: every k up to `points`, then spread geometrically.

    >>> curve_cutoffs(5)
    [1, 2, 3, 4, 5]
    >>> curve_cutoffs(1000, points=8)
    [1, 3, 7, 19, 52, 139, 373, 1000]
    """
    if k_max <= points:
        return list(range(1, k_max + 1))
    ratio = k_max ** (1 / (points - 1))
    ks = sorted({max(1, round(ratio**i)) for i in range(points)} | {k_max})
    return ks


def curves(con: duckdb.DuckDBPyConnection, config: ReportConfig, period: Period) -> dict[str, pa.Table]:
    """metric@k for k = 1 .. the report's largest k of each metric, over one period: metric
    name -> evaluate()'s table (segment columns, users, one column per cutoff "ndcg@1", ...).
    One statement for all metrics and cutoffs; metrics without a cutoff (r_precision) have none.
    """
    k_max: dict[str, int] = {}
    for m in parse_metrics(list(config.metrics)):
        if m.k is not None:
            k_max[m.name] = max(k_max.get(m.name, 0), m.k)
    if not k_max:
        return {}
    labels = {name: [f"{name}@{k}" for k in curve_cutoffs(kmax)] for name, kmax in k_max.items()}
    table = evaluate_period(con, config, period, [label for ls in labels.values() for label in ls])
    keep = [*table.column_names[: len(config.by)], "users"]
    return {name: table.select(keep + ls) for name, ls in labels.items()}
