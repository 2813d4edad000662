"""The command line: `sqlmetrics evaluate`, `sqlmetrics sql` and `sqlmetrics report`.

Exit status: 0 ok; 2 bad usage, bad input or a failure DuckDB reports (one line on stderr
saying why); 3 a report found no data in a period (one line naming it; --allow-empty: 0);
130 interrupted (Ctrl-C, one line); 1 an unexpected failure (a traceback, for a bug report).
Also run as `python -m sqlmetrics`."""

from __future__ import annotations

import argparse
import gc
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

import duckdb

from ..errors import SqlMetricsError, SqlMetricsWarning
from . import compare, evaluate, interrupt, macros, off_policy, options, report, sql

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
  sqlmetrics macros -o sqlmetrics_macros.sql      (then in the DuckDB CLI: .read sqlmetrics_macros.sql)
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `sqlmetrics` command (three subcommands)."""
    from .. import __version__

    parser = options.Parser(
        prog="sqlmetrics", description=_MAIN_DESCRIPTION, epilog=_MAIN_EPILOG, formatter_class=options.HELP
    )
    parser.add_argument("--version", action="version", version=f"sqlmetrics {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=options.Parser)
    commands.required = True

    evaluate.register(commands)
    sql.register(commands)
    macros.register(commands)
    report.register(commands)
    compare.register(commands)
    off_policy.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with `argv` (default sys.argv[1:]); returns the exit status.

    >>> main(["evaluate", "no_such_table", "--metrics", "ndcg@10"])
    2
    """
    with interrupt.InterruptWatch() as watch:
        command = None
        try:
            args = build_parser().parse_args(argv)
            command = f"{args.command} {getattr(args, 'source', None) or getattr(args, 'config', '')}"
            with warnings.catch_warnings():
                warnings.showwarning = _one_line_warnings(warnings.showwarning)
                return args.handler(args)
        except BaseException as exc:  # noqa: BLE001 - sorted into exit statuses below
            try:
                status = _failure(exc, command, watch.seen)
            except KeyboardInterrupt:  # Ctrl-C's handler ran only now, after DuckDB's error
                status = _failure(KeyboardInterrupt(), command, True)
    # The failure's traceback held DuckDB objects in reference cycles: free them now, or
    # DuckDB's bindings (nanobind) print "leaked instances" to stderr when Python exits
    gc.collect()
    return status


def _one_line_warnings(show: Any) -> Any:
    """warnings.showwarning that says sqlmetrics' own warnings (errors.SqlMetricsWarning: a
    result likely not what was meant) in one line on stderr, and passes the others on."""

    def showwarning(message, category, filename, lineno, file=None, line=None) -> None:  # type: ignore[no-untyped-def]
        if issubclass(category, SqlMetricsWarning):
            options.say(f"sqlmetrics: warning: {options.one_line(message)}")
        else:
            show(message, category, filename, lineno, file, line)

    return showwarning


def _failure(exc: BaseException, command: str | None, interrupted: bool) -> int:
    """The exit status of a failure, after saying it in one line on stderr (or, for a bug,
    with its traceback)."""
    if isinstance(exc, SystemExit):  # --help, --version
        return exc.code if isinstance(exc.code, int) else options.EXIT_OK
    if interrupted or isinstance(exc, KeyboardInterrupt):
        # Ctrl-C: DuckDB turns the KeyboardInterrupt of a running statement into its own error
        # ("Query interrupted"), so the handler's flag, not the exception's type, tells
        is_report = (command or "").startswith("report ")
        kept = "; finished periods are kept, the same command resumes" if is_report else ""
        options.say(f"sqlmetrics: interrupted{kept}")
        return options.EXIT_INTERRUPTED
    if isinstance(exc, options.UsageError):
        options.say(str(exc))
        return options.EXIT_USAGE
    if isinstance(exc, (SqlMetricsError, duckdb.OutOfMemoryException)):
        text = options.one_line(exc)  # a report's advice is about its config, not options
        is_report = (command or "").startswith("report ")
        options.say(f"sqlmetrics: {text if is_report else options.cli_wording(text)}")
        return options.EXIT_USAGE
    if isinstance(exc, OSError):
        if isinstance(exc, BrokenPipeError):  # `sqlmetrics ... | head`
            return options.EXIT_OK
        options.say(f"sqlmetrics: {exc}")
        return options.EXIT_USAGE
    if isinstance(exc, duckdb.Error):
        # The input errors DuckDB raises (an unreadable file, an unreachable URL, a value out of
        # range) and any other: one line that says what failed, not a traceback
        kind = "" if isinstance(exc, _INPUT_ERRORS) else f"DuckDB failed ({type(exc).__name__}): "
        options.say(f"sqlmetrics{' ' + command if command else ''}: {kind}{options.one_line(exc)}")
        return options.EXIT_USAGE
    if not isinstance(exc, Exception):  # GeneratorExit and the like: not ours to handle
        raise exc
    traceback.print_exception(exc)
    options.say("sqlmetrics: unexpected error (the traceback above); please report it")
    return options.EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
