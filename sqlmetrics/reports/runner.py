"""Running a report: for each period, evaluate the period's slice of the sources and replace the
period's rows of the results table (one transaction per period).

Periods already written with the same configuration hash are skipped unless force=True, so a
range that was stopped half way resumes where it stopped."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any
from warnings import catch_warnings, simplefilter, warn_explicit
from zoneinfo import ZoneInfo

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from ..api.evaluation import evaluate
from ..errors import ColumnTypeError, SqlMetricsError
from ..inputs import columns as col
from ..inputs.identifiers import quote_identifier, quote_string
from ..inputs.sources import Registrations, Source, resolve
from ..names.metric_names import parse_metrics
from ..statement.plan import unit_columns
from ..statement.progress import Progress
from ..statement.templates import render
from ..stats.compare import compare
from ..stats.off_policy import OffPolicyWarning, off_policy
from ..stats.unpaired import srm_warnings
from . import comparisons, results_table
from . import off_policy as off_policy_table
from .config import ReportConfig
from .periods import Period

# a DATE or a TIMESTAMP of any precision, with or without a time zone: one value per row (a
# DATE[] list starts with "DATE" too, and cannot be compared with the period's bounds)
_TIME_TYPE = re.compile(r"(DATE|TIMESTAMP(_S|_MS|_NS)?( WITH TIME ZONE)?)")
_INSTANT_TYPE = "TIMESTAMP WITH TIME ZONE"
# the column that the whole range's comparison adds to its inputs, first in the unit's key
POOLED_PERIOD = "sqlmetrics_period"


@dataclass(frozen=True)
class PeriodOutcome:
    """What happened to one period: 'written' (rows), 'skipped' (done before with this config)
    or 'no data' (no user to evaluate; the stored rows, if any, are kept). empty: for 'no
    data', why: 'recommendations' (they have no row in the period) or 'truth' (none of their
    users has a truth row in it)."""

    period: Period
    status: str
    rows: int
    seconds: float
    empty: str | None = None
    comparisons: int = 0  # the rows written to the comparisons table ([compare])
    estimates: int = 0  # the rows written to the off-policy table ([off_policy])
    warnings: tuple[str, ...] = ()  # e.g. a sample-ratio mismatch of the period's arms


def _version() -> str:
    from .. import __version__

    return __version__


def _time_source(
    con: duckdb.DuckDBPyConnection, name: str, role: str, time_column: str
) -> tuple[Source, str]:
    source = resolve(con, name, role, Registrations(con))
    column = col.find_column(source, time_column, role, "time")
    if not _TIME_TYPE.fullmatch(source.type_of(column)):
        raise ColumnTypeError(
            f"{role} ({source.label}): the time column {column!r} must be a DATE or a TIMESTAMP, "
            f"one per row, but it is {source.type_of(column)}"
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
    return _inputs(con, config, [period], pooled=False)


def pooled_inputs(
    con: duckdb.DuckDBPyConnection, config: ReportConfig, periods: list[Period]
) -> tuple[duckdb.DuckDBPyRelation, duckdb.DuckDBPyRelation | None]:
    """The recommendations and the truth of several periods together, each with one more
    column, POOLED_PERIOD: the period's start as text. With it first in the unit's key
    (compare_periods()), each user of each period is a unit of its own (a user's lists of two
    days are two lists, as in the periods' own evaluations), while an input keyed by the user
    alone, like history, is still joined on the user, as each period's evaluation joins it.

    >>> import duckdb, datetime
    >>> from sqlmetrics.reports.config import config_from_dict
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE recs AS SELECT DATE '2026-11-01' + CAST(i AS INTEGER) AS day, "
    ...                 "7 AS user_id FROM range(3) t(i)")
    >>> config = config_from_dict({"name": "r", "warehouse": "w", "recommendations": "recs",
    ...                            "time_column": "day", "metrics": ["ndcg@10"]})
    >>> days = [Period(datetime.date(2026, 11, d), datetime.date(2026, 11, d + 1)) for d in (1, 3)]
    >>> pooled_inputs(con, config, days)[0].fetchall()
    [(datetime.date(2026, 11, 1), 7, '2026-11-01'), (datetime.date(2026, 11, 3), 7, '2026-11-03')]
    """
    return _inputs(con, config, periods, pooled=True)


def _inputs(
    con: duckdb.DuckDBPyConnection, config: ReportConfig, periods: list[Period], pooled: bool
) -> tuple[duckdb.DuckDBPyRelation, duckdb.DuckDBPyRelation | None]:
    relations = []
    for name, role, time_column in (
        (config.recommendations, "recs", config.time_column),
        (config.truth, "truth", config.truth_time),
    ):
        if name is None:
            relations.append(None)
            continue
        source, column = _time_source(con, name, role, time_column)
        slices = []
        for period in periods:
            bounds = _bounds(period, config.timezone, source.type_of(column) == _INSTANT_TYPE)
            sql = render(
                "reports/period_slice.sql.j2",
                {"source": source.sql, "time_column": quote_identifier(column), **bounds},
            )
            slices.append({"sql": sql, "start": quote_string(period.start.isoformat())})
        if pooled:
            sql = _with_periods(source, role, slices)
        else:
            sql = slices[0]["sql"]
        relations.append(con.sql(sql))
    return relations[0], relations[1]


def evaluate_period(
    con: duckdb.DuckDBPyConnection,
    config: ReportConfig,
    period: Period,
    metrics: list[str] | None = None,
    confidence: float | None = None,
) -> pa.Table:
    """evaluate() over one period: one row per segment with at least one user evaluated
    (with confidence, each metric's t interval after it: evaluate(confidence=))."""
    recs, truth = period_inputs(con, config, period)
    result = evaluate(
        con, recs, list(metrics or config.metrics), truth=truth, confidence=confidence, **config.options()
    )
    return result.filter(pc.greater(result["users"], 0))


_WHY_EMPTY = {
    "recommendations": "no recommendations in the period",
    "truth": "no truth for the recommended users in the period",
}


def _has_recommendations(con: duckdb.DuckDBPyConnection, config: ReportConfig, period: Period) -> bool:
    """Whether the recommendations have a row in the period: asked only of a period in which
    nothing was evaluated, to say why (an empty upstream load, or a truth without their users)."""
    recs, _ = period_inputs(con, config, period)
    return bool(recs.limit(1).fetchall())


def empty_periods_message(name: str, outcomes: list[PeriodOutcome]) -> str | None:
    """One line naming every period that had nothing to evaluate, and why; None if none.

    >>> import datetime
    >>> day = lambda d: Period(datetime.date(2026, 11, d), datetime.date(2026, 11, d + 1))
    >>> outcomes = [PeriodOutcome(day(1), "written", 10, 0.1),
    ...             PeriodOutcome(day(2), "no data", 0, 0.1, "recommendations"),
    ...             PeriodOutcome(day(3), "no data", 0, 0.1, "truth")]
    >>> for part in empty_periods_message("daily_ab", outcomes).split(", 2026"):
    ...     print(part)
    daily_ab: no data for 2026-11-02 (no recommendations in the period)
    -11-03 (no truth for the recommended users in the period); the 1 other period is in the results table
    """
    empty = [o for o in outcomes if o.status == "no data"]
    if not empty:
        return None
    named = ", ".join(f"{o.period.label} ({_WHY_EMPTY[o.empty or 'recommendations']})" for o in empty)
    others = len(outcomes) - len(empty)
    rest = ""
    if others:
        rest = f"; the {others} other period{'s are' if others > 1 else ' is'} in the results table"
    return f"{name}: no data for {named}{rest}"


def compare_periods(
    con: duckdb.DuckDBPyConnection, config: ReportConfig, periods: list[Period]
) -> pa.Table:
    """compare() with the config's [compare] section over one period, or over several pooled
    (each user of each period a unit: one more compare() over all the units of a range, the
    unit's key the period's start (POOLED_PERIOD) and the user; history, keyed by the user,
    read whole as each period reads it)."""
    if config.compare is None:
        raise SqlMetricsError(f"{config.source}: the report has no [compare] section")
    if len(periods) == 1:
        recs, truth = period_inputs(con, config, periods[0])
    else:
        recs, truth = pooled_inputs(con, config, periods)
    options = {k: v for k, v in config.options().items() if k != "by"}
    section = config.compare.options()
    if len(periods) > 1:
        options["user"] = [POOLED_PERIOD, *unit_columns(options.get("user", "user_id"))]
        if options.get("history") is not None:  # (joined on the key columns it has: not this one)
            _without_period(resolve(con, options["history"], "history", Registrations(con)), "history")
    if section["covariate"] is not None and len(periods) > 1:
        section["covariate"] = _pooled_whole(con, periods, section["covariate"], "covariate")
    if options.get("subtopics") is not None and len(periods) > 1:
        options["subtopics"] = _pooled_whole(con, periods, options["subtopics"], "subtopics")
    return compare(con, recs, list(config.metrics), truth=truth, **options, **section)


def _period_slice(con: duckdb.DuckDBPyConnection, config: ReportConfig, name: str, role: str,
                  time_column: str, period: Period) -> str:
    """The query of one source's rows in the period (its time column between the bounds)."""
    source, column = _time_source(con, name, role, time_column)
    bounds = _bounds(period, config.timezone, source.type_of(column) == _INSTANT_TYPE)
    return render("reports/period_slice.sql.j2",
                  {"source": source.sql, "time_column": quote_identifier(column), **bounds})  # fmt: skip


def off_policy_period(con: duckdb.DuckDBPyConnection, config: ReportConfig, period: Period) -> pa.Table:
    """off_policy() with the config's [off_policy] section over one period's impressions,
    target and rewards, once per target (each value of target_by), as the off-policy table
    stages them (off_policy.staged): each target against the section's baseline, an estimator
    or another target (the baseline target's own rows without a comparison)."""
    return off_policy_periods(con, config, [period])


def off_policy_periods(
    con: duckdb.DuckDBPyConnection, config: ReportConfig, periods: list[Period]
) -> pa.Table:
    """off_policy_period() over one period, or over several pooled: each slate of each period a
    unit of its own (the unit's first key column read as '<period start>|<value>' in the
    impressions, the target and the rewards), one more off_policy() over all the slates of a
    range, as compare_periods() pools the users of a range (there by a column of the period in
    the unit's key)."""
    section = config.off_policy
    if section is None:
        raise SqlMetricsError(f"{config.source}: the report has no [off_policy] section")
    first = unit_columns(section.keywords.get("user", "user_id"))[0]

    def sliced(name: str, role: str) -> str:
        if len(periods) == 1:
            return _period_slice(con, config, name, role, section.time_column, periods[0])
        source, _ = _time_source(con, name, role, section.time_column)
        user = col.find_column(source, first, role, "user")
        slices = [{"sql": _period_slice(con, config, name, role, section.time_column, p),
                   "start": quote_string(p.start.isoformat())} for p in periods]  # fmt: skip
        return render("reports/pooled_periods.sql.j2", {"slices": slices, "user": quote_identifier(user)})

    impressions = con.sql(sliced(section.impressions, "impressions"))
    rewards = None if section.rewards is None else con.sql(sliced(section.rewards, "rewards"))
    if section.target is None:  # a stochastic target: its propensities are the impressions' columns
        other = section.baseline_columns
        table = off_policy(con, impressions, list(section.estimators), rewards=rewards,
                           baseline=section.baseline if other is None else dict(other),
                           **section.options())  # fmt: skip
        if other is not None:  # named by its columns
            table = _named_baseline(table, ", ".join(f"{k}={v}" for k, v in sorted(other.items())))
        return off_policy_table.staged(section, [((), table)])
    target_sql = sliced(section.target, "target")
    columns = [quote_identifier(c) for c in section.target_by]

    def target_of(values: tuple[str, ...]) -> duckdb.DuckDBPyRelation:
        given = [{"column": c, "value": quote_string(v)} for c, v in zip(columns, values, strict=True)]
        sql = render("reports/targets.sql.j2", {"source": target_sql, "values": True, "columns": given})
        return con.sql(sql)

    if columns:
        listed = render("reports/targets.sql.j2", {"source": target_sql, "values": False,
                                                   "columns": [{"column": c} for c in columns]})  # fmt: skip
        targets = [tuple(row) for row in con.execute(listed).fetchall()]
    else:
        targets = [()]
    baseline: Any = section.baseline
    if section.baseline_target is not None:
        baseline = target_of(section.baseline_target)
    estimates = []
    for values in targets:
        target = target_of(values) if columns else con.sql(target_sql)
        own = values == section.baseline_target  # (the baseline target: its estimates alone)
        table = off_policy(con, impressions, list(section.estimators), target=target, rewards=rewards,
                           baseline=None if own else baseline, **section.options())  # fmt: skip
        if section.baseline_target is not None and not own:
            pairs = zip(section.target_by, section.baseline_target, strict=True)
            table = _named_baseline(table, ", ".join(f"{c}={v}" for c, v in pairs))
        estimates.append((values, table))
    return off_policy_table.staged(section, estimates)


def _named_baseline(table: pa.Table, label: str) -> pa.Table:
    """off_policy()'s rows against another target with its baseline column the report's name
    of that target ('model=A'; off_policy() names a relation or a mapping 'baseline')."""
    if "baseline" not in table.column_names:
        return table
    return table.set_column(table.column_names.index("baseline"), "baseline",
                            pa.array([label] * table.num_rows, pa.string()))  # fmt: skip


def _noting_weights(
    con: duckdb.DuckDBPyConnection, config: ReportConfig, period: Period
) -> tuple[pa.Table, list[str]]:
    """off_policy_period()'s table and the OffPolicyWarnings it gave (a mean weight far from 1),
    as the period's warnings say them (the report prints them; other warnings pass on)."""
    with catch_warnings(record=True) as caught:
        simplefilter("always")
        table = off_policy_period(con, config, period)
    noted = []
    for w in caught:
        if issubclass(w.category, OffPolicyWarning):
            noted.append(str(w.message))
        else:
            warn_explicit(w.message, w.category, w.filename, w.lineno)
    return table, noted


def _pooled_whole(
    con: duckdb.DuckDBPyConnection, periods: list[Period], name: str, role: str
) -> duckdb.DuckDBPyRelation:
    """An input keyed by the whole unit and read whole (the covariate, the subtopic judgements)
    for several periods pooled: its rows once per period, with the period's start as the pooled
    units have it (POOLED_PERIOD), so each user of each period keeps their rows."""
    source = resolve(con, name, role, Registrations(con))
    slices = [
        {"sql": f"SELECT * FROM {source.sql}", "start": quote_string(p.start.isoformat())} for p in periods
    ]
    return con.sql(_with_periods(source, role, slices))


def _without_period(source: Source, role: str) -> None:
    """Refuse an input of the whole range's comparison that has a column named POOLED_PERIOD."""
    taken = [c for c in source.columns if c.lower() == POOLED_PERIOD]
    if taken:
        raise SqlMetricsError(
            f"{role} ({source.label}) has a column {taken[0]!r}, the name the whole range's "
            "comparison gives each row's period: rename it in a view"
        )


def _with_periods(source: Source, role: str, slices: list[dict[str, str]]) -> str:
    """The query of the slices' rows, each with its period's start in the column POOLED_PERIOD
    (sql/reports/pooled_periods.sql.j2); a source that has a column of that name is refused."""
    _without_period(source, role)
    period = quote_identifier(POOLED_PERIOD)
    return render("reports/pooled_periods.sql.j2", {"slices": slices, "period": period})


def run_report(
    con: duckdb.DuckDBPyConnection,
    config: ReportConfig,
    periods: list[Period],
    *,
    force: bool = False,
    progress: Progress | None = None,
    now: Callable[[], datetime] | None = None,
) -> list[PeriodOutcome]:
    """Evaluate each period and replace its rows in config.results_table (and, with a [compare]
    section, its comparisons in config.compare.results_table, in the same transaction); skip
    the periods already written with this configuration (same hash) unless force. Stops at the first
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
    tables = [config.results_table]
    if config.compare:
        comparisons.ensure(con, config.compare)
        tables.append(config.compare.results_table)
    if config.off_policy:
        off_policy_table.ensure(con, config.off_policy)
        tables.append(config.off_policy.results_table)
    done: set[date] = set()
    if not force:  # done: written with this config in every table the report writes
        done = set.intersection(
            *(
                results_table.done_periods(
                    con, table, config.name, config.hash, periods[0].start, periods[-1].start
                )
                for table in tables
            )
        )
    confidence = config.compare.confidence if config.compare else None
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
                    result = evaluate_period(con, config, period, confidence=confidence)
                    compared = estimated = None
                    if config.compare and result.num_rows:
                        compared = compare_periods(con, config, [period])
                    if config.off_policy and result.num_rows:
                        estimated, noted = _noting_weights(con, config, period)
                except SqlMetricsError as exc:
                    raise type(exc)(f"{config.name} {period.label}: {exc}") from None
                if result.num_rows == 0:
                    empty = "truth" if _has_recommendations(con, config, period) else "recommendations"
                    outcome = PeriodOutcome(period, "no data", 0, time.monotonic() - started, empty)
                    note = f"no data: {_WHY_EMPTY[empty]} (stored rows, if any, kept)"
                else:
                    segment_columns = result.column_names[: len(config.by)]  # as the source spells them
                    stamp = results_table.Stamp(config.name, period, now(), version, config.hash)
                    writes = [
                        results_table.metrics_write(
                            config.results_table, result, list(config.metrics), segment_columns,
                            intervals=confidence is not None,
                        )
                    ]  # fmt: skip
                    if compared is not None:
                        writes.append(comparisons.write(config, compared))
                    if estimated is not None:
                        writes.append(off_policy_table.write(config.off_policy, estimated))
                    rows, *other_rows = results_table.write_period(con, stamp, writes)
                    compared_rows = other_rows[: 1 if compared is not None else 0]
                    estimated_rows = other_rows[len(compared_rows) :]
                    warnings = () if compared is None else tuple(
                        f"{config.name} {period.label}: {w}"
                        for w in srm_warnings(compared, list(config.compare.within))
                    )  # fmt: skip
                    if estimated is not None:
                        warnings += tuple(f"{config.name} {period.label}: {w}" for w in noted)
                    outcome = PeriodOutcome(
                        period, "written", rows, time.monotonic() - started,
                        comparisons=sum(compared_rows), estimates=sum(estimated_rows), warnings=warnings,
                    )
                    also = f" and {outcome.comparisons} comparisons" if compared is not None else ""
                    if estimated is not None:
                        also += f" and {outcome.estimates} off-policy estimates"
                    note = f"{rows} rows{also} in {outcome.seconds:.1f} s"
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
