"""`sqlmetrics macros`: the DuckDB macros of the metrics as a SQL file (docs/sql.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..api.macros import PREFIX, macro_definitions
from ..errors import ConventionError
from ..names.conventions import CHOICES
from . import options

EPILOG = """\
After `.read` in the DuckDB CLI (or sqlmetrics.install_macros(con) in Python), plain SQL
computes every metric with the statement `sqlmetrics evaluate` runs: one table macro per
metric (sqlmetrics_ndcg, sqlmetrics_map, sqlmetrics_novelty, ...; _whole: without a cutoff;
_per_user: one row per unit). See docs/sql.md.

The conventions options write the macros under other conventions (as evaluate()'s keywords),
with --prefix naming them apart: `sqlmetrics macros --profile ranx --prefix ranx_` gives
ranx_ndcg, ... A metric the conventions do not define (--ties average: map) has no macro.

examples:
  sqlmetrics macros -o sqlmetrics_macros.sql
  sqlmetrics macros --gain exponential --prefix exp_ -o exponential_macros.sql
  duckdb warehouse.duckdb -c ".read sqlmetrics_macros.sql" -c "SELECT * FROM
      sqlmetrics_ndcg('recs', 'purchases', k := 10, \\"by\\" := ['model'], relevance := NULL)"
"""


def register(commands: Any) -> None:
    """Add the `macros` subcommand to the `sqlmetrics` parser's subcommands."""
    macros = commands.add_parser(
        "macros", help="write the DuckDB macros of the metrics", formatter_class=options.HELP,
        description="Write a SQL file of CREATE MACRO statements: the ranking metrics in plain "
        "DuckDB SQL, with no Python.",
        epilog=EPILOG,
    )  # fmt: skip
    macros.add_argument("-o", "--output", metavar="PATH", help="write the SQL to this file")
    macros.add_argument(
        "--prefix", default=PREFIX,
        help=f"the macros' names start with it (another set of conventions beside the default) [{PREFIX}]",
    )  # fmt: skip
    options.add_convention_options(macros)
    macros.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    conventions = {name: getattr(args, name) for name in (*CHOICES, "threshold")}
    try:
        text = macro_definitions(args.prefix, args.profile, **conventions)
    except ConventionError as exc:
        raise options.UsageError(f"sqlmetrics macros: {exc}") from None
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            message = f"sqlmetrics macros: cannot write {args.output}: {exc.strerror}"
            raise options.UsageError(message) from None
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return options.EXIT_OK
