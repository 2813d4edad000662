"""`sqlmetrics sql`: the one statement `sqlmetrics evaluate` would run, as text."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..api import evaluation as api
from . import options

EPILOG = """\
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


def register(commands: Any) -> None:
    """Add the `sql` subcommand to the `sqlmetrics` parser's subcommands."""
    sql = commands.add_parser(
        "sql", help="print the SQL that evaluate would run", formatter_class=options.HELP,
        description="Print the one SQL statement that `sqlmetrics evaluate` would run.",
        epilog=EPILOG,
    )  # fmt: skip
    options.add_evaluation_options(sql)
    sql.add_argument("-o", "--output", metavar="PATH", help="write the SQL to this file")
    sql.add_argument(
        "--dialect", choices=("duckdb", "spark", "postgres", "bigquery", "snowflake"), default="duckdb",
        help="the SQL dialect to write (default duckdb); the --db tables or files describe the "
        "inputs' columns, and the text names them as given",
    )  # fmt: skip
    sql.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    options.require_metrics(args)
    options.refuse_overwriting("sql", "--output", args.output, options.evaluation_inputs(args))
    con = options.connection(args)
    try:
        source = options.source_input(args.source)
        keywords = options.evaluation_options(args)
        text = api.sql(con, source, args.metrics, dialect=args.dialect, **keywords)
    finally:
        con.close()
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return options.EXIT_OK
