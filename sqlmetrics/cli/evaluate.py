"""`sqlmetrics evaluate`: the metrics of SOURCE, printed or written (TREC files as trec_eval prints them)."""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ..api import evaluation as api
from ..inputs.identifiers import quote_identifier, quote_string
from ..names.metric_names import parse_metrics
from ..statement.partitions import check_units, suggest_partitions, units_sql
from . import options

EPILOG = """\
SOURCE, --truth and --subtopics are each one of:
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
  # subtopic judgements (ndeval's qrels: topic subtopic docno judgement): the intent-aware measures
  sqlmetrics evaluate run.txt --subtopics qrels.txt --metrics alpha_nDCG@20,ERR_IA@20,AP_IA --format trec
  # one row per user, to a Parquet file (the format follows the suffix)
  sqlmetrics evaluate recs.parquet --truth truth.parquet --metrics ndcg@10 --per-user -o users.parquet
"""


# A TREC run with --subtopics and no --metrics: ndeval's default measures that sqlmetrics
# computes, in ndeval's order, under ir_measures' names (not nERR-IA, alpha-DCG, nNRBP, strec)
NDEVAL_DEFAULT = (
    "ERR_IA@5", "ERR_IA@10", "ERR_IA@20", "alpha_nDCG@5", "alpha_nDCG@10", "alpha_nDCG@20",
    "NRBP", "AP_IA", "P_IA@5", "P_IA@10", "P_IA@20",
)  # fmt: skip


def register(commands: Any) -> None:
    """Add the `evaluate` subcommand to the `sqlmetrics` parser's subcommands."""
    evaluate = commands.add_parser(
        "evaluate", help="evaluate metrics and print them", formatter_class=options.HELP,
        description="Evaluate ranking metrics inside DuckDB and print one row per group.",
        epilog=EPILOG,
    )  # fmt: skip
    options.add_evaluation_options(evaluate)
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
    evaluate.add_argument(
        "--baseline", metavar="VALUE",
        help="rbo@k's reference system: its value of --by (comma-separated for several "
        "columns), each system's lists against its lists",
    )  # fmt: skip
    large = evaluate.add_argument_group("large logs")
    large.add_argument(
        "--partitions", type=int, default=1, metavar="N",
        help="evaluate the users in N hash partitions, one statement each (same numbers, with "
        "a progress line per partition), for logs with more users than memory holds [1]",
    )  # fmt: skip
    large.add_argument(
        "--memory-limit", metavar="SIZE", type=options.memory_size,
        help="DuckDB's memory_limit, e.g. 4GB [DuckDB's default, 80%% of the RAM]",
    )  # fmt: skip
    evaluate.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..reports import formats

    options.refuse_overwriting("evaluate", "--output", args.output, options.evaluation_inputs(args))
    fmt = formats.format_for(args.output, args.format)
    if fmt == "parquet" and not args.output:
        raise options.UsageError("sqlmetrics evaluate: --format parquet needs --output PATH")
    if fmt == "trec" and args.by:
        raise options.UsageError("sqlmetrics evaluate: --format trec prints one run; it takes no --by")
    if fmt == "trec" and isinstance(args.user, list):
        raise options.UsageError(
            "sqlmetrics evaluate: --format trec names each unit by one qid; it takes a --user of "
            "one column"
        )
    source = options.source_input(args.source)
    is_run = isinstance(source, pa.Table) and "run" in source.column_names
    if args.metrics is None:
        if not is_run:
            raise options.UsageError(
                "sqlmetrics evaluate: --metrics LIST is required (e.g. ndcg@10,map@10); only a "
                "TREC run defaults to trec_eval's official measures (with --subtopics, ndeval's)"
            )
        args.metrics = list(NDEVAL_DEFAULT) if args.subtopics else ["official"]
    if args.max_per_user is not None:
        if not is_run:
            raise options.UsageError(
                "sqlmetrics evaluate: --max-per-user cuts a TREC run file (trec_eval -M)"
            )
        if args.max_per_user < 1:
            raise options.UsageError("sqlmetrics evaluate: --max-per-user must be 1 or more")
        from ..inputs.trec import truncate_run

        source = truncate_run(source, args.max_per_user)
    if fmt == "trec":
        return _evaluate_trec(args, source, is_run)
    con = options.connection(args)
    try:
        if args.memory_limit:
            con.execute(f"SET memory_limit = {quote_string(args.memory_limit)}").fetchall()
        keywords = options.evaluation_options(args)
        if args.partitions > 1:
            check_units(args.partitions, _units(con, source, keywords, args)[0], "--partitions")
        try:
            def evaluated(baseline: Any = None) -> pa.Table:
                return api.evaluate(
                    con, source, args.metrics, partitions=args.partitions,
                    progress=args.partitions > 1, baseline=baseline, **keywords,
                )  # fmt: skip

            if args.baseline is None:
                table = evaluated()
            else:
                table = options.with_baseline(evaluated, args.baseline, args.by or [])
        except duckdb.OutOfMemoryException as exc:
            raise options.UsageError(_memory_advice(con, exc, source, keywords, args)) from None
    finally:
        con.close()
    formats.write(table, fmt, args.output)
    return options.EXIT_OK


def _evaluate_trec(args: argparse.Namespace, source: Any, is_run: bool) -> int:
    """--format trec: the means (and with --per-user the per-query values) as trec_eval's text."""
    from ..inputs import trec_output
    from ..names.peer_names import TREC_GROUPS

    if args.partitions != 1:
        raise options.UsageError(
            "sqlmetrics evaluate: --format trec runs in one statement; drop --partitions"
        )
    # runid is no metric: trec_eval prints the run's tag when -m names it or a group holds it
    wants_runid = any(n == "runid" or "runid" in TREC_GROUPS.get(n, ()) for n in args.metrics)
    metrics = trec_output.last_parameters_win([n for n in args.metrics if n != "runid"])
    requested = parse_metrics(metrics)
    keywords = options.evaluation_options(args)
    extra = trec_output.extra_labels(requested, keywords.get("missing"), keywords.get("threshold"))
    con = options.connection(args)
    try:
        if args.memory_limit:
            con.execute(f"SET memory_limit = {quote_string(args.memory_limit)}").fetchall()
        # the `all` lines come from the per-query values, added as trec_eval adds them
        per_query = api.evaluate(con, source, [*metrics, *extra], **{**keywords, "per_user": True})
    finally:
        con.close()
    runid = None
    if wants_runid and is_run and source.num_rows:
        runid = source.column("run")[source.num_rows - 1].as_py()  # the last line's tag
    text = trec_output.render(
        per_query, requested, user_column=per_query.column_names[0], show_per_query=args.per_user,
        runid=runid,
    )  # fmt: skip
    if args.output:
        Path(args.output).write_bytes(text.encode("utf-8"))
    else:
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
    return options.EXIT_OK


def _units(
    con: duckdb.DuckDBPyConnection, source: Any, keywords: dict[str, Any], args: argparse.Namespace
) -> tuple[int, int]:
    """The distinct users of SOURCE and --truth (what --partitions slices), and SOURCE's rows."""
    from ..inputs import columns as col
    from ..inputs.sources import Registrations, resolve
    from ..statement.plan import unit_columns

    registrations = Registrations(con)
    try:
        recs = resolve(con, source, "recs", registrations)
        keys = unit_columns(keywords["user"])
        unit = [col.find_column(recs, name, "recs", "user") for name in keys]
        casts = ["HUGEINT" if col.type_family(recs.type_of(c)) == "integer" else None for c in unit]
        truth = None
        if keywords["truth"] is not None:
            other = resolve(con, keywords["truth"], "truth", registrations)
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
    keywords: dict[str, Any],
    args: argparse.Namespace,
) -> str:
    """Out of memory: how many --partitions would fit, from the users, the length of the lists
    kept per user and the memory limit (partitions.suggest_partitions, from measurements)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    inner = re.match(r"DuckDB ran out of memory \((.*)\)\. Each user", first)  # the API's advice
    head = f"sqlmetrics evaluate: DuckDB ran out of memory ({inner.group(1) if inner else first})"
    try:
        units, rows = _units(con, source, keywords, args)
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
