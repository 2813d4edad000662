"""The command line: `sqlmetrics evaluate`, `sqlmetrics sql` and `sqlmetrics report`.

Exit status: 0 ok; 2 bad usage, bad input or a failure DuckDB reports (one line on stderr
saying why); 3 a report found no data in a period (one line naming it; --allow-empty: 0);
130 interrupted (Ctrl-C, one line); 1 an unexpected failure (a traceback, for a bug report).
Also run as `python -m sqlmetrics`."""

from __future__ import annotations

import argparse
import dataclasses
import gc
import math
import re
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import duckdb
import pyarrow as pa

from . import api
from .conventions import ANY_TRUTH_ROW, CHOICES, Conventions
from .errors import SqlMetricsError
from .identifiers import quote_identifier, quote_string
from .metric_names import parse_metrics
from .partitions import check_units, suggest_partitions, units_sql
from .profiles import PROFILES
from .sources import _looks_like_path

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_NO_DATA, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
MAX_PERIODS = 10_000  # a longer range is more likely a typo (1000-01-01) than a wish

# DuckDB errors that come from what the user gave (a file, a column, a value), not from a bug.
_INPUT_ERRORS = tuple(
    getattr(duckdb, name)
    for name in (
        "IOException", "InvalidInputException", "CatalogException", "BinderException",
        "ConversionException", "ParserException", "PermissionException", "ConstraintException",
        "OutOfRangeException", "TypeMismatchException", "HTTPException",
    )
    if hasattr(duckdb, name)
)  # fmt: skip

_PARQUET_CSV = (".parquet", ".pq", ".parq", ".csv", ".tsv", ".csv.gz", ".tsv.gz")


class UsageError(Exception):
    """Bad command-line usage: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


_HELP = argparse.RawDescriptionHelpFormatter

_MAIN_DESCRIPTION = """\
Ranking metrics (ndcg, map, recall, mrr, ...) computed inside DuckDB, where the logs live:
evaluate them on a table, Parquet/CSV files or TREC files, print the SQL, or run a scheduled
report into a results table of the warehouse, with an HTML page.
"""

_MAIN_EPILOG = """\
examples:
  sqlmetrics evaluate recs.parquet --truth purchases.parquet --metrics ndcg@10,map@10
  sqlmetrics evaluate recs --db warehouse.duckdb --truth actions --by model \\
      --metrics ndcg@10,recall@20 --action event_type --relevance purchase=3,add_to_cart=2,view=1
  sqlmetrics evaluate results.test --truth qrels.test --metrics ndcg@10,map@1000,r_precision
  sqlmetrics sql recs --db warehouse.duckdb --truth purchases --metrics ndcg@10
  sqlmetrics report daily.toml --from 2026-11-01 --to 2026-11-07 --html report.html

exit status:
  0    ok
  2    bad usage or input, a source that cannot be read, out of memory, or any other
       failure DuckDB reports: one line on stderr that says what failed and why
  3    report: a period had no data to evaluate (one line on stderr naming every such
       period; the periods with data are written); --allow-empty makes it 0
  130  interrupted (Ctrl-C): one line; a report keeps the periods it finished
  1    an unexpected failure, a bug: a traceback on stderr, for a bug report
Each command has its own --help.
"""

_EVALUATE_EPILOG = """\
SOURCE and --truth are each one of:
  a table or view of --db (schema.table too)   recommendations
  a Parquet or CSV file or glob                'logs/day=*/recs.parquet', recs.csv
  a TREC run or qrels file (recognised by its lines: `qid Q0 docno rank score tag`,
  `qid iter docno rel`); without --db, files are read by an in-memory DuckDB.

The output has one row per --by group: the group columns, `users` (how many users each mean
is over) and one column per metric, named as requested. With --per-user: one row per user.
The column and convention options are those of sqlmetrics.evaluate(); the defaults reproduce
trec_eval (see docs/conventions.md).

examples:
  # Parquet logs where they lie, 3 metrics, per A/B arm
  sqlmetrics evaluate 'logs/recs/*.parquet' --truth 'logs/purchases/*.parquet' \\
      --metrics ndcg@10,map@10,recall@20 --by model
  # a DuckDB warehouse, graded actions (purchase 3, add_to_cart 2, view 1), as CSV
  sqlmetrics evaluate recs --db warehouse.duckdb --truth actions --by model \\
      --metrics ndcg@10,mrr@10 --action event_type --relevance purchase=3,add_to_cart=2,view=1 \\
      --format csv
  # TREC files, exactly as trec_eval; trec_eval -c is --missing zero
  sqlmetrics evaluate results.test --truth qrels.test --metrics ndcg@10,map@1000,r_precision
  # one row per user, to a Parquet file (the format follows the suffix)
  sqlmetrics evaluate recs.parquet --truth truth.parquet --metrics ndcg@10 --per-user -o users.parquet
"""

_SQL_EPILOG = """\
The text is one statement; run in DuckDB (its CLI too) it returns what `evaluate` prints. The
inputs must be nameable outside this process: tables and views, or Parquet/CSV paths (TREC
files are read in Python, so load them into a table first).

examples:
  sqlmetrics sql recs --db warehouse.duckdb --truth actions --by model \\
      --metrics ndcg@10,map@10 --action event_type --relevance purchase=3,add_to_cart=2,view=1
  sqlmetrics sql 'logs/recs/*.parquet' --truth 'logs/truth/*.parquet' --metrics ndcg@10 > ndcg.sql
  duckdb warehouse.duckdb < ndcg.sql
  sqlmetrics sql recs --db warehouse.duckdb --truth purchases --metrics ndcg@10 --dialect bigquery
"""

_REPORT_DESCRIPTION = """\
Run a report: for each period, evaluate the metrics on that period's rows of the
recommendations and of the truth, per segment, and replace that period's rows of the results
table in one transaction. Then print the results of the periods run.

Without --date or --from/--to, the report runs the last complete period (yesterday, for a daily
report). Periods already written with the same configuration (same config hash) are skipped
unless --force, so an interrupted range resumes where it stopped.
"""

_REPORT_EPILOG = """\
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

The results table has one row per (report, period, segment, metric): report, period_start,
period_end, segment (a MAP of the by-columns' values), metric, k, value, users, computed_at,
sqlmetrics_version, config_hash, ci_low, ci_high (with [compare]). With [compare], each
period's comparisons go to their own table (default sqlmetrics_comparisons) in the same
transaction, and --html charts the deltas. One process writes a DuckDB file at a time: a second run
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


def _comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace(" ", ",").split(",") if part.strip()]


def _threshold(text: str) -> float | str:
    """--threshold: a number (an integer stays one) or 'any'."""
    if text.strip() == ANY_TRUTH_ROW:
        return ANY_TRUTH_ROW
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or 'any'") from None
    return int(value) if value.is_integer() else value


def _unit_key(text: str) -> str | list[str]:
    """--user: one column (as given), or several, comma-separated."""
    if "," not in text:
        return text
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a column or a comma-separated list of columns")
    return parts[0] if len(parts) == 1 else parts


def _metric_list(text: str) -> list[str]:
    """Metric names separated by commas or spaces, except inside ir_measures' parentheses
    ("nDCG(dcg='exp-log2')@10") and trec_eval's parameter lists ("P.5,10" is one name)."""
    parts, current, depth = [], "", 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if char in ", " and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    names: list[str] = []
    for part in filter(None, (p.strip() for p in parts)):
        if names and re.fullmatch(r"[0-9.]+", part) and re.fullmatch(r"\w+\.[0-9.,]*", names[-1]):
            names[-1] += "," + part  # the next cutoff of "P.5,10"
        else:
            names.append(part)
    return names


def _memory_size(text: str) -> str:
    """A size DuckDB's memory_limit takes (validated, since SET takes no bound parameter)."""
    if not re.fullmatch(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", text.strip(), re.IGNORECASE):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 512MB or 4GB")
    return text.strip()


def _relevance(text: str | None) -> str | dict[str, float] | None:
    """'grade' (a column) or 'purchase=3,view=1' (grades of the --action column)."""
    if text is None or "=" not in text:
        return text
    grades: dict[str, float] = {}
    for part in text.split(","):
        action, sep, grade = part.partition("=")
        try:
            value = float(grade)
        except ValueError:
            raise UsageError(
                f"--relevance {text!r}: {part.strip()!r} is not action=grade (e.g. purchase=3)"
            ) from None
        grades[action.strip()] = int(value) if value.is_integer() else value
    return grades


_CONVENTION_HELP = {
    "ties": "order of items with equal scores",
    "gain": "gain of grade rel: rel, or 2^rel - 1",
    "empty": "users with truth but nothing relevant: scored by the formulas, or left out",
    "missing": "truth users absent from SOURCE: left out, or scored 0 (trec_eval -c)",
    "ap_denominator": "map@k divides by R, or by min(R, k)",
    "short_lists": "a list shorter than k: padded with non-relevant items, or as Evidently "
    "counts it (precision@k over min(k, N), the last item repeated in map@k and mar@k)",
    "duplicates": "check for duplicate (user, item) the pairs that reach the top k, or every row",
    "truth_duplicates": "several --truth rows of one (user, item), as in an event log: an error, "
    "the highest grade, or the sum of the grades",
}


def _add_evaluation_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SOURCE", help="the recommendations (see below)")
    parser.add_argument(
        "-m", "--metrics", type=_metric_list, metavar="LIST",
        help="comma-separated metric names, e.g. ndcg@10,map@10,recall@20,r_precision, or "
        "trec_eval's, ranx's and ir_measures' names (P_10, P.5,10, official, nDCG@10, AP); "
        "required, except for a TREC run, where it defaults to trec_eval's official set",
    )  # fmt: skip
    parser.add_argument("--truth", metavar="SOURCE", help="the truth: (user, item[, relevance]) rows")
    parser.add_argument(
        "--by", type=_comma_list, metavar="COLS", help="segment by these columns of SOURCE (comma-separated)"
    )
    parser.add_argument("--db", metavar="PATH", help="a DuckDB database file (opened read-only)")
    parser.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS",
        help="if another process is writing the --db file, wait up to this long [0: fail at once]",
    )  # fmt: skip
    parser.add_argument("--per-user", action="store_true", help="one row per user instead of the means")
    names = parser.add_argument_group("column names (as in sqlmetrics.evaluate)")
    names.add_argument(
        "--user", default="user_id", type=_unit_key, metavar="COLS",
        help="the unit's key: user (or query) column, or several, comma-separated: one ranked "
        "list per (user_id, day) with user_id,day [user_id]",
    )  # fmt: skip
    names.add_argument("--item", default="item_id", help="item (or document) column [item_id]")
    names.add_argument("--score", default="score", help="score column, higher is better [score]")
    names.add_argument("--rank", help="rank column (1 is the top) instead of a score")
    names.add_argument(
        "--relevance", metavar="COL|GRADES",
        help="relevance column [relevance, where present], or with --action the grades of the "
        "actions: purchase=3,add_to_cart=2,view=1",
    )  # fmt: skip
    names.add_argument("--action", help="action column, graded by --relevance action=grade,...")
    conv = parser.add_argument_group(
        "conventions (defaults reproduce trec_eval, or --profile's tool; see docs/conventions.md)"
    )
    conv.add_argument(
        "--profile", choices=tuple(PROFILES), metavar="TOOL",
        help="another tool's conventions: " + ", ".join(PROFILES) + "; the options below "
        "override it [trec_eval]",
    )  # fmt: skip
    defaults = Conventions()
    for name, choices in CHOICES.items():  # --ties, --gain, --empty, --missing, --ap-denominator, ...
        default = getattr(defaults, name)
        meaning = _CONVENTION_HELP.get(name, "")
        conv.add_argument(
            f"--{name.replace('_', '-')}", choices=choices, help=f"{meaning} [{default}]"
        )
    conv.add_argument(
        "--threshold", type=_threshold, metavar="GRADE",
        help="grade from which an item is relevant, or 'any': every truth row [1]",
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `sqlmetrics` command (three subcommands)."""
    from . import __version__

    parser = _Parser(
        prog="sqlmetrics", description=_MAIN_DESCRIPTION, epilog=_MAIN_EPILOG, formatter_class=_HELP
    )
    parser.add_argument("--version", action="version", version=f"sqlmetrics {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    evaluate = commands.add_parser(
        "evaluate", help="evaluate metrics and print them", formatter_class=_HELP,
        description="Evaluate ranking metrics inside DuckDB and print one row per group.",
        epilog=_EVALUATE_EPILOG,
    )  # fmt: skip
    _add_evaluation_options(evaluate)
    out = evaluate.add_argument_group("output")
    out.add_argument(
        "--format", choices=("table", "csv", "json", "parquet", "trec"),
        help="table (readable, the default), csv, json (an array of objects), parquet, or "
        "trec (trec_eval's text; with --per-user its -q lines first); without it, --output's "
        "suffix decides",
    )  # fmt: skip
    out.add_argument("-o", "--output", metavar="PATH", help="write to this file instead of stdout")
    evaluate.add_argument(
        "--max-per-user", type=int, metavar="N",
        help="evaluate only each user's N best items of a TREC run (by score, ties by item "
        "descending: trec_eval -M N)",
    )  # fmt: skip
    large = evaluate.add_argument_group("large logs")
    large.add_argument(
        "--partitions", type=int, default=1, metavar="N",
        help="evaluate the users in N hash partitions, one statement each (same numbers, with "
        "a progress line per partition), for logs with more users than memory holds [1]",
    )  # fmt: skip
    large.add_argument(
        "--memory-limit", metavar="SIZE", type=_memory_size,
        help="DuckDB's memory_limit, e.g. 4GB [DuckDB's default, 80%% of the RAM]",
    )  # fmt: skip
    evaluate.set_defaults(handler=_evaluate)

    sql = commands.add_parser(
        "sql", help="print the SQL that evaluate would run", formatter_class=_HELP,
        description="Print the one SQL statement that `sqlmetrics evaluate` would run.",
        epilog=_SQL_EPILOG,
    )  # fmt: skip
    _add_evaluation_options(sql)
    sql.add_argument("-o", "--output", metavar="PATH", help="write the SQL to this file")
    sql.add_argument(
        "--dialect", choices=("duckdb", "spark", "postgres", "bigquery", "snowflake"), default="duckdb",
        help="the SQL dialect to write (default duckdb); the --db tables or files describe the "
        "inputs' columns, and the text names them as given",
    )  # fmt: skip
    sql.set_defaults(handler=_sql)

    report = commands.add_parser(
        "report", help="run a scheduled report into the warehouse", formatter_class=_HELP,
        description=_REPORT_DESCRIPTION, epilog=_REPORT_EPILOG,
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
    report.set_defaults(handler=_report)
    from . import compare_cli  # `sqlmetrics compare` lives in its own module

    compare_cli.register(commands, _add_evaluation_options)
    return parser


# --- evaluate and sql -------------------------------------------------------------------------


def _sniff_trec(path: Path, lines: int = 20) -> str | None:
    """'run', 'qrels' or None, from the first lines of a text file."""
    kinds = set()
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if not fields or fields[0].startswith("#"):
                    continue
                if len(fields) >= 6 and _is_number(fields[4]):
                    kinds.add("run")
                elif len(fields) == 4 and fields[3].lstrip("-").isdigit():
                    kinds.add("qrels")
                else:
                    return None
                lines -= 1
                if lines == 0:
                    break
    except (OSError, UnicodeDecodeError):
        return None
    return kinds.pop() if len(kinds) == 1 else None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _input(text: str | None) -> Any:
    """A SOURCE as the library takes it: TREC files are read here, the rest passes as is."""
    if text is None:
        return None
    from .trec import read_qrels, read_run

    path = Path(text)
    lowered = text.lower()
    if path.is_file() and not lowered.endswith(_PARQUET_CSV):
        kind = _sniff_trec(path)
        if kind == "run":
            return read_run(path)
        if kind == "qrels":
            return read_qrels(path)
        if not lowered.endswith(".txt"):
            raise SqlMetricsError(
                f"cannot tell what {text!r} is: expected a .parquet or .csv file, or a TREC run "
                "(qid Q0 docno rank score tag) or qrels (qid iter docno rel) file"
            )
    return text


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "truth": _input(args.truth),
        "by": args.by,
        "per_user": args.per_user,
        "user": args.user,
        "item": args.item,
        "score": args.score,
        "rank": args.rank,
        "relevance": _relevance(args.relevance),
        "action": args.action,
        "threshold": args.threshold,
        "profile": args.profile,
        **{name: getattr(args, name) for name in CHOICES},
    }


def _connection(args: argparse.Namespace) -> duckdb.DuckDBPyConnection:
    from .reports.warehouse import connect

    if args.wait < 0:
        raise UsageError(f"sqlmetrics {args.command}: --wait must be 0 or more seconds")
    return _watched(connect(args.db, read_only=True, wait=args.wait) if args.db else duckdb.connect())


def _require_metrics(args: argparse.Namespace) -> None:
    if args.metrics is None:
        raise UsageError(f"sqlmetrics {args.command}: --metrics LIST is required (e.g. ndcg@10,map@10)")


def _evaluate(args: argparse.Namespace) -> int:
    from .reports import formats

    fmt = formats.format_for(args.output, args.format)
    if fmt == "parquet" and not args.output:
        raise UsageError("sqlmetrics evaluate: --format parquet needs --output PATH")
    if fmt == "trec" and args.by:
        raise UsageError("sqlmetrics evaluate: --format trec prints one run; it takes no --by")
    if fmt == "trec" and isinstance(args.user, list):
        raise UsageError(
            "sqlmetrics evaluate: --format trec names each unit by one qid; it takes a --user of "
            "one column"
        )
    source = _input(args.source)
    is_run = isinstance(source, pa.Table) and "run" in source.column_names
    if args.metrics is None:
        if not is_run:
            raise UsageError(
                "sqlmetrics evaluate: --metrics LIST is required (e.g. ndcg@10,map@10); only a "
                "TREC run defaults to trec_eval's official measures"
            )
        args.metrics = ["official"]
    if args.max_per_user is not None:
        if not is_run:
            raise UsageError("sqlmetrics evaluate: --max-per-user cuts a TREC run file (trec_eval -M)")
        if args.max_per_user < 1:
            raise UsageError("sqlmetrics evaluate: --max-per-user must be 1 or more")
        from .trec import truncate_run

        source = truncate_run(source, args.max_per_user)
    if fmt == "trec":
        return _evaluate_trec(args, source, is_run)
    con = _connection(args)
    try:
        if args.memory_limit:
            con.execute(f"SET memory_limit = {quote_string(args.memory_limit)}").fetchall()
        options = _options(args)
        if args.partitions > 1:
            check_units(args.partitions, _units(con, source, options, args)[0], "--partitions")
        try:
            table = api.evaluate(
                con, source, args.metrics, partitions=args.partitions,
                progress=args.partitions > 1, **options,
            )  # fmt: skip
        except duckdb.OutOfMemoryException as exc:
            raise UsageError(_memory_advice(con, exc, source, options, args)) from None
    finally:
        con.close()
    formats.write(table, fmt, args.output)
    return EXIT_OK


def _evaluate_trec(args: argparse.Namespace, source: Any, is_run: bool) -> int:
    """--format trec: the means (and with --per-user the per-query values) as trec_eval's text."""
    from . import trec_output
    from .peer_names import TREC_GROUPS

    if args.partitions != 1:
        raise UsageError("sqlmetrics evaluate: --format trec runs in one statement; drop --partitions")
    # runid is no metric: trec_eval prints the run's tag when -m names it or a group holds it
    wants_runid = any(n == "runid" or "runid" in TREC_GROUPS.get(n, ()) for n in args.metrics)
    metrics = [n for n in args.metrics if n != "runid"]
    labels = [m.label for m in parse_metrics(metrics)]
    options = _options(args)
    con = _connection(args)
    try:
        if args.memory_limit:
            con.execute(f"SET memory_limit = {quote_string(args.memory_limit)}").fetchall()
        means = api.evaluate(con, source, metrics, **{**options, "per_user": False})
        per_query = api.evaluate(con, source, metrics, **options) if args.per_user else None
    finally:
        con.close()
    runid = None
    if wants_runid and is_run and source.num_rows:
        runid = source.column("run")[source.num_rows - 1].as_py()  # the last line's tag
    user_column = per_query.column_names[0] if per_query is not None else None
    text = trec_output.render(means, labels, per_query=per_query, user_column=user_column, runid=runid)
    if args.output:
        Path(args.output).write_bytes(text.encode("utf-8"))
    else:
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
    return EXIT_OK


def _units(
    con: duckdb.DuckDBPyConnection, source: Any, options: dict[str, Any], args: argparse.Namespace
) -> tuple[int, int]:
    """The distinct users of SOURCE and --truth (what --partitions slices), and SOURCE's rows."""
    from . import columns as col
    from .plan import unit_columns
    from .sources import Registrations, resolve

    registrations = Registrations(con)
    try:
        recs = resolve(con, source, "recs", registrations)
        keys = unit_columns(options["user"])
        unit = [col.find_column(recs, name, "recs", "user") for name in keys]
        casts = ["HUGEINT" if col.type_family(recs.type_of(c)) == "integer" else None for c in unit]
        truth = None
        if options["truth"] is not None:
            other = resolve(con, options["truth"], "truth", registrations)
            other_unit = [col.find_column(other, name, "truth", "user") for name in keys]
            truth = {"source": other.sql, "unit": [quote_identifier(c) for c in other_unit]}
        sql = units_sql({"source": recs.sql, "unit": [quote_identifier(c) for c in unit]}, truth, casts)
        units, rows = con.execute(sql).fetchall()[0]
        return int(units), int(rows)
    finally:
        registrations.release()


_BYTES = {"b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "bytes": 1}


def _memory_limit(con: duckdb.DuckDBPyConnection) -> int | None:
    """DuckDB's memory_limit in bytes ('476.8 MiB' as the setting reads)."""
    text = str(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
    match = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]+)\s*", text)
    if not match or match.group(2).lower() not in _BYTES:
        return None
    return int(float(match.group(1)) * _BYTES[match.group(2).lower()])


def _memory_advice(
    con: duckdb.DuckDBPyConnection,
    exc: BaseException,
    source: Any,
    options: dict[str, Any],
    args: argparse.Namespace,
) -> str:
    """Out of memory: how many --partitions would fit, from the users, the length of the lists
    kept per user and the memory limit (partitions.suggest_partitions, from measurements)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    inner = re.match(r"DuckDB ran out of memory \((.*)\)\. Each user", first)  # the API's advice
    head = f"sqlmetrics evaluate: DuckDB ran out of memory ({inner.group(1) if inner else first})"
    try:
        units, rows = _units(con, source, options, args)
        limit = _memory_limit(con)
    except duckdb.Error:  # counting ran out of memory too
        return f"{head}; raise --memory-limit: with this little memory even --partitions N does not help"
    if limit is None or units == 0:
        return f"{head}; evaluate the users in slices with --partitions N, or raise --memory-limit"
    cutoffs = [m.k for m in parse_metrics(list(args.metrics))]
    per_user = math.ceil(rows / units)  # the mean list length of SOURCE
    whole = None in cutoffs or max(cutoffs) >= per_user  # whole lists are kept, not top-k heaps
    length = per_user if whole else max(cutoffs)
    suggested = suggest_partitions(units, length, limit, whole)
    if suggested is not None and suggested <= args.partitions:  # the measurements fell short here
        suggested = args.partitions * 2 if args.partitions * 2 <= units else None
    what = f"{units:,} users with lists of {length} items under a memory limit of {limit / 2**20:,.0f} MiB"
    if suggested is None:
        return (
            f"{head}: {what} do not fit even one at a time, so --partitions N does not help; "
            "raise --memory-limit"
        )
    return (
        f"{head}: {what} need about --partitions {suggested} (the users in {suggested} slices, "
        "the same numbers), or a larger --memory-limit"
    )


def _sql(args: argparse.Namespace) -> int:
    _require_metrics(args)
    con = _connection(args)
    try:
        text = api.sql(con, _input(args.source), args.metrics, dialect=args.dialect, **_options(args))
    finally:
        con.close()
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_OK


# --- report -----------------------------------------------------------------------------------


def _periods(args: argparse.Namespace, unit: str, zone: str, today: date | None = None) -> list:
    from .reports.periods import count_between, last_complete, parse_date, period_of, periods_between

    if args.date and (args.first or args.last):
        raise UsageError("sqlmetrics report: give either --date or --from/--to, not both")
    if bool(args.first) != bool(args.last):
        raise UsageError("sqlmetrics report: --from and --to go together")
    if args.max_periods < 1:
        raise UsageError("sqlmetrics report: --max-periods must be 1 or more")
    if args.date:
        return [period_of(unit, parse_date(args.date, "--date"))]
    if args.first:
        first, last = parse_date(args.first, "--from"), parse_date(args.last, "--to")
        count = count_between(unit, first, last)
        if count > args.max_periods:
            raise UsageError(
                f"sqlmetrics report: --from {first} --to {last} is {count:,} periods of 1 {unit}, "
                f"more than {args.max_periods:,}; check the dates, or pass --max-periods {count}"
            )
        return periods_between(unit, first, last)
    return [last_complete(unit, today or _today(zone))]


def _today(zone: str) -> date:
    """Today in `zone`: a daily report's "yesterday" is the report's, not the machine's."""
    return datetime.now(ZoneInfo(zone)).date()


def _report(args: argparse.Namespace) -> int:
    from .progress import Progress
    from .reports import formats, html, results_table
    from .reports.config import ReportConfigError, check_timezone, load_config
    from .reports.runner import curves, empty_periods_message, run_report
    from .reports.warehouse import connect

    if args.wait < 0:
        raise UsageError("sqlmetrics report: --wait must be 0 or more seconds")
    config = load_config(args.config)
    if args.db:
        config = dataclasses.replace(config, warehouse=args.db)
    if args.timezone is not None:
        config = dataclasses.replace(config, timezone=check_timezone(args.timezone))
    periods = _periods(args, config.period, config.timezone)
    if not Path(config.warehouse).exists():
        named = [s for s in (config.recommendations, config.truth) if s and not _looks_like_path(s)]
        if named:
            raise ReportConfigError(
                f"no warehouse file {config.warehouse!r} (it should hold {', '.join(named)}); "
                "build it first, or point warehouse (or --db) at it"
            )
    labels = [results_table.metric_label(m.name, m.k) for m in _parsed(config.metrics)]
    con = _watched(connect(config.warehouse, wait=args.wait))
    try:
        progress = None if args.quiet else Progress(len(periods), config.name)
        outcomes = run_report(con, config, periods, force=args.force, progress=progress)
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
                _comparison(con, config),
            )  # fmt: skip
            html.write_page(args.html, page)
            if not args.quiet:
                print(f"wrote {args.html}", file=sys.stderr)
    finally:
        con.close()
    empty = empty_periods_message(config.name, outcomes)
    if empty and not args.allow_empty:
        # an empty period is most often an upstream load that failed: wake whoever owns the cron
        _say(f"sqlmetrics report {empty}; --allow-empty exits 0 for this")
        return EXIT_NO_DATA
    return EXIT_OK


def _comparison(con: duckdb.DuckDBPyConnection, config: Any) -> Any:
    """The page's comparisons: the stored ones, and compare() over all their periods pooled."""
    from .reports import comparisons, html
    from .reports.runner import compare_periods

    if config.compare is None:
        return None
    rows = comparisons.read(con, config.compare.results_table, config.name)
    periods = comparisons.stored_periods(rows)
    try:
        pooled = compare_periods(con, config, periods) if periods else None
    except SqlMetricsError as exc:  # the sources no longer hold the range (retention), say
        return html.Comparison(rows, None, config.compare, f"not computed: {_one_line(exc)}")
    return html.Comparison(rows, pooled, config.compare)


def _print_comparisons(con: duckdb.DuckDBPyConnection, config: Any, periods: list) -> None:
    """The stored comparisons of the periods run, * on the significant ones."""
    from .compare_cli import readable
    from .reports import comparisons

    section = config.compare
    rows = comparisons.read(con, section.results_table, config.name, periods[0].start, periods[-1].start)
    if rows.num_rows == 0:  # (no period with data: the metrics' table said "(no rows)")
        return
    details = ["relative_delta", "effect_size", "wins", "ties", "losses"]
    shown = comparisons.flat(rows, list(config.metrics)).drop_columns(details)
    print(f"\nagainst {', '.join(map(str, section.baseline))} ({section.test} test):")
    print(readable(shown, 1 - section.confidence))


def _parsed(metrics: Sequence[str]):
    from .metric_names import parse_metrics

    return parse_metrics(list(metrics))


def _version() -> str:
    from . import __version__

    return __version__


def _latest_period(rows):
    from .reports.comparisons import stored_periods

    return (stored_periods(rows) or [None])[-1]


def _summary(name: str, outcomes: list) -> str:
    count = {s: sum(1 for o in outcomes if o.status == s) for s in ("written", "skipped", "no data")}
    rows = sum(o.rows for o in outcomes)
    compared = sum(o.comparisons for o in outcomes)
    also = f" and {compared} comparisons" if compared else ""
    return (
        f"{name}: {len(outcomes)} periods: {count['written']} written ({rows} rows{also}), "
        f"{count['skipped']} skipped (already done), {count['no data']} without data"
    )


# --- entry point ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default sys.argv[1:]); returns the exit status.

    >>> main(["evaluate", "no_such_table", "--metrics", "ndcg@10"])
    2
    """
    with _InterruptWatch() as interrupt:
        command = None
        try:
            args = build_parser().parse_args(argv)
            command = f"{args.command} {getattr(args, 'source', None) or getattr(args, 'config', '')}"
            return args.handler(args)
        except BaseException as exc:  # noqa: BLE001 - sorted into exit statuses below
            try:
                status = _failure(exc, command, interrupt.seen)
            except KeyboardInterrupt:  # Ctrl-C's handler ran only now, after DuckDB's error
                status = _failure(KeyboardInterrupt(), command, True)
    # The failure's traceback held DuckDB objects in reference cycles: free them now, or
    # DuckDB's bindings (nanobind) print "leaked instances" to stderr when Python exits
    gc.collect()
    return status


def _failure(exc: BaseException, command: str | None, interrupted: bool) -> int:
    """The exit status of a failure, after saying it in one line on stderr (or, for a bug,
    with its traceback)."""
    if isinstance(exc, SystemExit):  # --help, --version
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    if interrupted or isinstance(exc, KeyboardInterrupt):
        # Ctrl-C: DuckDB turns the KeyboardInterrupt of a running statement into its own error
        # ("Query interrupted"), so the handler's flag, not the exception's type, tells
        is_report = (command or "").startswith("report ")
        kept = "; finished periods are kept, the same command resumes" if is_report else ""
        _say(f"sqlmetrics: interrupted{kept}")
        return EXIT_INTERRUPTED
    if isinstance(exc, UsageError):
        _say(str(exc))
        return EXIT_USAGE
    if isinstance(exc, (SqlMetricsError, duckdb.OutOfMemoryException)):
        _say(f"sqlmetrics: {_one_line(exc)}")
        return EXIT_USAGE
    if isinstance(exc, OSError):
        if isinstance(exc, BrokenPipeError):  # `sqlmetrics ... | head`
            return EXIT_OK
        _say(f"sqlmetrics: {exc}")
        return EXIT_USAGE
    if isinstance(exc, duckdb.Error):
        # The input errors DuckDB raises (an unreadable file, an unreachable URL, a value out of
        # range) and any other: one line that says what failed, not a traceback
        kind = "" if isinstance(exc, _INPUT_ERRORS) else f"DuckDB failed ({type(exc).__name__}): "
        _say(f"sqlmetrics{' ' + command if command else ''}: {kind}{_one_line(exc)}")
        return EXIT_USAGE
    if not isinstance(exc, Exception):  # GeneratorExit and the like: not ours to handle
        raise exc
    traceback.print_exception(exc)
    _say("sqlmetrics: unexpected error (the traceback above); please report it")
    return EXIT_FAILURE


class _InterruptWatch:
    """Ctrl-C (SIGINT) while main runs. A running DuckDB statement holds the main thread in C++,
    where Python's handler cannot run, so the signal also wakes a thread (signal.set_wakeup_fd)
    that interrupts the open connections; DuckDB then raises its own InterruptException (or a
    RuntimeError), and `seen` says that it was Ctrl-C. Outside a statement Python's handler
    raises KeyboardInterrupt as usual, once. Only in the main thread (signals go there); the
    previous handler and wakeup fd are back afterwards."""

    def __init__(self) -> None:
        self.seen = False
        self.connections: list[duckdb.DuckDBPyConnection] = []
        self._previous: Any = None

    def _handle(self, signum: int, frame: Any) -> None:
        if not self.seen:
            self.seen = True
            raise KeyboardInterrupt

    def _wake(self, reader: socket.socket) -> None:
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:  # closed by __exit__
                return
            if signal.SIGINT in data:
                for con in list(self.connections):
                    try:
                        con.interrupt()
                    except duckdb.Error:  # closed meanwhile
                        pass

    def __enter__(self) -> _InterruptWatch:
        global _WATCH
        _WATCH = self
        if threading.current_thread() is threading.main_thread():
            self._reader, self._writer = socket.socketpair()
            self._writer.setblocking(False)
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
            self._thread = threading.Thread(target=self._wake, args=(self._reader,), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        global _WATCH
        _WATCH = None
        self.connections.clear()  # nothing of DuckDB's may outlive main (nanobind reports leaks)
        if self._previous is not None:
            signal.set_wakeup_fd(self._previous_fd)
            signal.signal(signal.SIGINT, self._previous)
            self._writer.close()  # ends the waking thread
            self._thread.join(timeout=5)
            self._reader.close()


_WATCH: _InterruptWatch | None = None


def _watched(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """`con`, interrupted by Ctrl-C while main runs."""
    if _WATCH is not None:
        _WATCH.connections.append(con)
    return con


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    text = text.split("\nLINE ", 1)[0]  # DuckDB's excerpt of our SQL, which the user did not write
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines) if lines else type(exc).__name__


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
