"""`sqlmetrics report`: a scheduled report, one period or a range, into the warehouse's results table."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb

from ..errors import SqlMetricsError
from ..inputs.sources import _looks_like_path
from . import interrupt, options

MAX_PERIODS = 10_000  # a longer range is more likely a typo (1000-01-01) than a wish


DESCRIPTION = """\
Run a report: for each period, evaluate the metrics on that period's rows of the
recommendations and of the truth, per segment, and replace that period's rows of the results
table in one transaction. Then print the results of the periods run.

Without --date or --from/--to, the report runs the last complete period (yesterday, for a daily
report). Periods already written with the same configuration (same config hash) are skipped
unless --force, so an interrupted range resumes where it stopped.
"""


EPILOG = """\
CONFIG (TOML; relative paths are relative to the working directory):
  name = "daily_ab"                     # the report's name in the results table
  warehouse = "warehouse.duckdb"        # DuckDB file: the sources and the results table
  recommendations = "recommendations"   # table or view, or Parquet/CSV path or glob
  truth = "events"                      # optional; same kinds
  time_column = "day"                   # DATE or TIMESTAMP, in both (truth_time_column = ...)
  period = "1 day"                      # or "1 week" (Monday to Sunday), "1 month"
  metrics = ["ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10"]
  by = ["model"]                        # the segments (optional)
  results_table = "sqlmetrics_results"  # the default
  [columns]                             # optional: user, item, score, rank, relevance, action
  action = "event_type"
  [grades]                              # with columns.action
  purchase = 3
  add_to_cart = 2
  view = 1
  [conventions]                         # optional: profile, ties, threshold, gain, empty,
  missing = "skip"                      #   missing, ap_denominator, short_lists, duplicates,
                                        #   truth_duplicates
  [compare]                             # optional: each period, every model against a baseline
  baseline = "A"                        #   (test, confidence, correction = "holm" or "none",
                                        #   replicates, seed, within, results_table)
  [off_policy]                          # optional: each period, off-policy estimates of each
  impressions = "impressions"           #   target (target, target_by, baseline, estimators,
  reward = "click"                      #   rewards, user, by, confidence, ...: docs/reports.md)

The results table has one row per (report, period, segment, metric): report, period_start,
period_end, segment (a MAP of the by-columns' values), metric, k, value, users, computed_at,
sqlmetrics_version, config_hash, ci_low, ci_high (with [compare]). With [compare], each
period's comparisons go to their own table (default sqlmetrics_comparisons) in the same
transaction, and --html charts the deltas; with [off_policy], the off-policy estimates (default
sqlmetrics_off_policy), charted with their intervals, and those of the whole range (all its
periods' slates pooled) in a table. One process writes a DuckDB file at a time: a second run
fails at once with a clear message, or waits up to --wait seconds.

exit status:
  0    ok: every period written (or already done with this config)
  2    bad usage, a bad config or bad data, a busy warehouse: one line on stderr (the
       periods before a failing one are kept)
  3    some period had no data: no recommendations in it, or none of their users has
       truth in it (an upstream load that failed?). The periods with data are written,
       and one line on stderr names every empty period and why; --allow-empty exits 0
  130  interrupted (Ctrl-C): finished periods are kept, the same command resumes
  1    an unexpected failure (a bug): a traceback

examples:
  sqlmetrics report warehouse_examples/daily_report.toml                       # yesterday
  sqlmetrics report warehouse_examples/daily_report.toml --date 2026-11-03
  sqlmetrics report warehouse_examples/daily_report.toml --from 2026-11-01 --to 2026-11-07 \\
      --html report.html
  sqlmetrics report daily.toml --from 2026-01-01 --to 2026-03-31 --force --wait 600
"""


def register(commands: Any) -> None:
    """Add the `report` subcommand to the `sqlmetrics` parser's subcommands."""
    report = commands.add_parser(
        "report", help="run a scheduled report into the warehouse", formatter_class=options.HELP,
        description=DESCRIPTION, epilog=EPILOG,
    )  # fmt: skip
    report.add_argument("config", metavar="CONFIG.toml", help="the report configuration (below)")
    when = report.add_argument_group("periods (default: the last complete period)")
    when.add_argument("--date", metavar="YYYY-MM-DD", help="the period that contains this day")
    when.add_argument("--from", dest="first", metavar="D1", help="first day of a range (with --to)")
    when.add_argument("--to", dest="last", metavar="D2", help="last day of a range, included")
    when.add_argument(
        "--timezone", metavar="ZONE",
        help="the time zone whose days make the periods, e.g. Europe/Paris [the config's "
        "timezone, UTC]; the process's TZ never changes a number",
    )  # fmt: skip
    when.add_argument(
        "--max-periods", type=int, default=MAX_PERIODS, metavar="N",
        help=f"refuse a range of more than N periods [{MAX_PERIODS:,}]",
    )  # fmt: skip
    report.add_argument("--force", action="store_true", help="redo periods already done with this config")
    report.add_argument("--html", metavar="PATH", help="also write the self-contained HTML report here")
    report.add_argument("--db", metavar="PATH", help="use this DuckDB file instead of the config's warehouse")
    report.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS",
        help="if another process holds the warehouse, wait up to this long [0: fail at once]",
    )  # fmt: skip
    report.add_argument("-q", "--quiet", action="store_true", help="no progress and no results table")
    report.add_argument(
        "--allow-empty", action="store_true",
        help="a period without data is no failure: exit 0, not 3 (its stored rows are kept)",
    )  # fmt: skip
    report.set_defaults(handler=run)


def _periods(args: argparse.Namespace, unit: str, zone: str, today: date | None = None) -> list:
    from ..reports.periods import count_between, last_complete, parse_date, period_of, periods_between

    if args.date and (args.first or args.last):
        raise options.UsageError("sqlmetrics report: give either --date or --from/--to, not both")
    if bool(args.first) != bool(args.last):
        raise options.UsageError("sqlmetrics report: --from and --to go together")
    if args.max_periods < 1:
        raise options.UsageError("sqlmetrics report: --max-periods must be 1 or more")
    if args.date:
        return [period_of(unit, parse_date(args.date, "--date"))]
    if args.first:
        first, last = parse_date(args.first, "--from"), parse_date(args.last, "--to")
        count = count_between(unit, first, last)
        if count > args.max_periods:
            raise options.UsageError(
                f"sqlmetrics report: --from {first} --to {last} is {count:,} periods of 1 {unit}, "
                f"more than {args.max_periods:,}; check the dates, or pass --max-periods {count}"
            )
        return periods_between(unit, first, last)
    return [last_complete(unit, today or _today(zone))]


def _today(zone: str) -> date:
    """Today in `zone`: a daily report's "yesterday" is the report's, not the machine's."""
    return datetime.now(ZoneInfo(zone)).date()


def run(args: argparse.Namespace) -> int:
    from ..reports import formats, html, results_table
    from ..reports.config import ReportConfigError, check_timezone, load_config
    from ..reports.runner import curves, empty_periods_message, run_report
    from ..reports.warehouse import connect
    from ..statement.progress import Progress

    if args.wait < 0:
        raise options.UsageError("sqlmetrics report: --wait must be 0 or more seconds")
    config = load_config(args.config)
    if args.db:
        config = dataclasses.replace(config, warehouse=args.db)
    if args.timezone is not None:
        config = dataclasses.replace(config, timezone=check_timezone(args.timezone))
    periods = _periods(args, config.period, config.timezone)
    read = [("config", args.config), ("warehouse", config.warehouse),
            ("recommendations", config.recommendations), ("truth", config.truth)]  # fmt: skip
    options.refuse_overwriting("report", "--html", args.html, read)
    if not Path(config.warehouse).exists():
        named = [s for s in (config.recommendations, config.truth) if s and not _looks_like_path(s)]
        if named:
            raise ReportConfigError(
                f"no warehouse file {config.warehouse!r} (it should hold {', '.join(named)}); "
                "build it first, or point warehouse (or --db) at it"
            )
    labels = [results_table.metric_label(m.name, m.k) for m in _parsed(config.metrics)]
    con = interrupt.watched(connect(config.warehouse, wait=args.wait))
    try:
        progress = None if args.quiet else Progress(len(periods), config.name)
        outcomes = run_report(con, config, periods, force=args.force, progress=progress)
        for warning in (w for o in outcomes for w in o.warnings):
            print(f"warning: {warning}", file=sys.stderr)
        if not args.quiet:
            print(_summary(config.name, outcomes), file=sys.stderr)
            rows = results_table.read(
                con, config.results_table, config.name, periods[0].start, periods[-1].start
            )
            formats.write(results_table.wide(rows, labels), "table")
            if config.compare:
                _print_comparisons(con, config, periods)
        if args.html:
            rows = results_table.read(con, config.results_table, config.name)
            latest = _latest_period(rows)
            curve_tables = curves(con, config, latest) if latest else {}
            details = {
                "segments": ", ".join(config.by) or "none",
                "warehouse": config.warehouse,
                "results table": config.results_table,
                "config": config.hash[:12],
                "sqlmetrics": _version(),
            }
            page = html.render_page(
                config.name, rows, labels, curve_tables, latest, len(config.by), details,
                _comparison(con, config), _estimates(con, config),
            )  # fmt: skip
            html.write_page(args.html, page)
            if not args.quiet:
                print(f"wrote {args.html}", file=sys.stderr)
    finally:
        con.close()
    empty = empty_periods_message(config.name, outcomes)
    if empty and not args.allow_empty:
        # an empty period is most often an upstream load that failed: wake whoever owns the cron
        options.say(f"sqlmetrics report {empty}; --allow-empty exits 0 for this")
        return options.EXIT_NO_DATA
    return options.EXIT_OK


def _comparison(con: duckdb.DuckDBPyConnection, config: Any) -> Any:
    """The page's comparisons: the stored ones, and compare() over all their periods pooled."""
    from ..reports import comparisons, html
    from ..reports.runner import compare_periods

    if config.compare is None:
        return None
    rows = comparisons.read(con, config.compare.results_table, config.name)
    periods = comparisons.stored_periods(rows)
    try:
        pooled = compare_periods(con, config, periods) if periods else None
    except SqlMetricsError as exc:  # the sources no longer hold the range (retention), say
        return html.Comparison(rows, None, config.compare, f"not computed: {options.one_line(exc)}")
    return html.Comparison(rows, pooled, config.compare)


def _estimates(con: duckdb.DuckDBPyConnection, config: Any) -> Any:
    """The page's off-policy estimates: the stored ones, and off_policy() over all their
    periods pooled."""
    import warnings

    from ..reports import comparisons, html
    from ..reports import off_policy as estimates
    from ..reports.runner import off_policy_periods
    from ..stats.off_policy import OffPolicyWarning

    if config.off_policy is None:
        return None
    section = config.off_policy
    rows = estimates.read(con, section.results_table, config.name)
    periods = comparisons.stored_periods(rows)
    try:
        with warnings.catch_warnings():  # (the periods' own warnings were said when they ran)
            warnings.simplefilter("ignore", OffPolicyWarning)
            pooled = off_policy_periods(con, config, periods) if periods else None
    except SqlMetricsError as exc:  # the sources no longer hold the range (retention), say
        return html.OffPolicy(rows, section, None, f"not computed: {options.one_line(exc)}")
    return html.OffPolicy(rows, section, pooled)


def _print_comparisons(con: duckdb.DuckDBPyConnection, config: Any, periods: list) -> None:
    """The stored comparisons of the periods run, * on the significant ones."""
    from ..reports import comparisons
    from .compare import readable

    section = config.compare
    rows = comparisons.read(con, section.results_table, config.name, periods[0].start, periods[-1].start)
    if rows.num_rows == 0:  # (no period with data: the metrics' table said "(no rows)")
        return
    details = ["relative_delta", "effect_size", "wins", "ties", "losses"]
    shown = comparisons.flat(rows, list(config.metrics)).drop_columns(details)
    print(f"\nagainst {', '.join(map(str, section.baseline))} ({section.test} test):")
    print(readable(shown, 1 - section.confidence))


def _parsed(metrics: Sequence[str]):
    from ..names.metric_names import parse_metrics

    return parse_metrics(list(metrics))


def _version() -> str:
    from .. import __version__

    return __version__


def _latest_period(rows):
    from ..reports.comparisons import stored_periods

    return (stored_periods(rows) or [None])[-1]


def _summary(name: str, outcomes: list) -> str:
    from ..reports.formats import counted

    count = {s: sum(1 for o in outcomes if o.status == s) for s in ("written", "skipped", "no data")}
    rows = counted(sum(o.rows for o in outcomes), "row")
    compared = sum(o.comparisons for o in outcomes)
    also = f" and {counted(compared, 'comparison')}" if compared else ""
    return (
        f"{name}: {counted(len(outcomes), 'period')}: {count['written']} written ({rows}{also}), "
        f"{count['skipped']} skipped (already done), {count['no data']} without data"
    )
