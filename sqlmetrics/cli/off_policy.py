"""`sqlmetrics off-policy`: off_policy() from the command line, a readable table (the interval
in one column) or CSV, JSON, Parquet (docs/off-policy.md)."""

from __future__ import annotations

import argparse
from typing import Any

from . import options

_EPILOG = """\
examples:
  sqlmetrics off-policy ope_impressions --db warehouse.duckdb --target "ope_recs_b" \\
      --rewards ope_clicks --estimators iips,sniips,rips,snrips --baseline logging
  sqlmetrics off-policy ope_impressions --db warehouse.duckdb --target ope_target_b \
      --rewards ope_clicks --estimators iips,sniips --baseline ope_target_a
  sqlmetrics off-policy impressions.parquet --target-pscore-item-position e_pip \\
      --estimators iips,sniips --position-weights dcg --clip 100 --format csv

SOURCE holds one row per shown item: the unit's key (--user), --item, --position and the
logging propensities the estimators read (--pscore, --pscore-item-position, --pscore-cascade).
"""

_TARGET_COLUMNS = ("target_pscore", "target_pscore_item_position", "target_pscore_cascade",
                   "target_predicted_reward")  # fmt: skip


def _weights(text: str) -> str | list[float]:
    if text in ("none", "dcg"):
        return text
    try:
        return [float(v) for v in options.comma_list(text)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give none, dcg or numbers like 1,0.5,0.25") from None


def register(commands: Any) -> None:
    """Add the `off-policy` subcommand to the `sqlmetrics` parser's subcommands."""
    from ..stats.off_policy import DEFAULT_ESTIMATORS

    about = "Off-policy estimates (OBP's slate estimators) of a target policy's value."
    parser = commands.add_parser("off-policy", description=about, epilog=_EPILOG,
                                 help="estimate a new ranker's online value from logged impressions",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("source", metavar="SOURCE", help="the impressions, with their propensities")
    parser.add_argument("--estimators", type=options.comma_list, default=list(DEFAULT_ESTIMATORS),
                        metavar="LIST", help=f"comma-separated [{','.join(DEFAULT_ESTIMATORS)}]")  # fmt: skip
    parser.add_argument("--target", metavar="SOURCE", help="the target ranking: (user, item, score) rows")
    parser.add_argument("--rewards", metavar="SOURCE", help="events (user, item[, relevance]) as rewards")
    parser.add_argument("--by", type=options.comma_list, metavar="COLS", help="segment by these columns")
    parser.add_argument("--within", type=options.comma_list, metavar="COLS",
                        help="segments too (compare()'s name for them): their columns first")
    parser.add_argument("--db", metavar="PATH", help="a DuckDB database file (opened read-only)")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                        help="wait this long for another process writing the --db file [0]")  # fmt: skip
    est = parser.add_argument_group("estimates")
    est.add_argument("--confidence", type=float, default=0.95, help="of the intervals [0.95]")
    est.add_argument("--baseline", metavar="NAME|SOURCE",
                     help="compare every estimate with this estimator's (e.g. logging), or with the "
                     "same estimator's estimate of another target ranking (a SOURCE like --target)")
    est.add_argument("--test", choices=("t", "bootstrap"), default="t",
                     help="the intervals: t, or compare()'s bucketed Poisson bootstrap [t]")  # fmt: skip
    est.add_argument("--replicates", type=int, default=10_000, help="bootstrap draws [10000]")
    est.add_argument("--seed", type=int, default=0, help="of the bootstrap draws [0]")
    est.add_argument("--position-weights", type=_weights, default="none", metavar="W",
                     help="none, dcg, or numbers for positions 1, 2, ... [none]")  # fmt: skip
    est.add_argument("--clip", type=float, help="cap the importance weights at this value")
    names = parser.add_argument_group("column names (as in sqlmetrics.off_policy)")
    names.add_argument("--user", default="user_id", type=options.unit_key, metavar="COLS",
                       help="the unit's key, one column or several, comma-separated [user_id]")  # fmt: skip
    for name, default in (("item", "item_id"), ("position", "position"), ("pscore", "pscore"),
                          ("pscore_item_position", "pscore_item_position"),
                          ("pscore_cascade", "pscore_cascade"), ("reward", "reward"), ("score", "score")):
        names.add_argument(f"--{name.replace('_', '-')}", default=default, help=f"[{default}]")
    names.add_argument("--rank", help="the target's rank column (1 is the top) instead of a score")
    names.add_argument("--predicted-reward", help="predicted rewards (dm, cascade-dr)")
    names.add_argument("--relevance", metavar="COL|GRADES",
                       help="the rewards' grade column, or with --action: purchase=3,view=1")  # fmt: skip
    names.add_argument("--action", help="the rewards' action column, graded by --relevance")
    names.add_argument("--ties", choices=("item_desc", "item_asc", "trec_eval"), default="item_desc",
                       help="the target's order of equal scores [item_desc]")  # fmt: skip
    names.add_argument("--truth-duplicates", choices=("error", "max", "sum"), default="error",
                       help="several rewards rows of one (unit, item) [error]")  # fmt: skip
    for name in _TARGET_COLUMNS:
        names.add_argument(f"--{name.replace('_', '-')}", metavar="COL",
                           help="a stochastic target's column of SOURCE (instead of --target)")  # fmt: skip
    out = parser.add_argument_group("output")
    out.add_argument("--format", choices=("table", "csv", "json", "parquet"),
                     help="table (readable, the default), csv, json or parquet")  # fmt: skip
    out.add_argument("-o", "--output", metavar="PATH", help="write to this file instead of stdout")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..reports import formats
    from ..stats.off_policy import off_policy

    fmt = formats.format_for(args.output, args.format)
    if fmt == "parquet" and not args.output:
        raise options.UsageError("sqlmetrics off-policy: --format parquet needs --output PATH")
    keywords = {name: getattr(args, name) for name in (
        "by", "within", "confidence", "baseline", "test", "replicates", "seed", "position_weights", "clip",
        "user", "item", "position", "pscore", "pscore_item_position", "pscore_cascade", "reward",
        "predicted_reward", "score", "rank", "ties", "action", "truth_duplicates", *_TARGET_COLUMNS,
    )}  # fmt: skip
    keywords["relevance"] = options.relevance_grades(args.relevance)
    con = options.connection(args)
    try:
        table = off_policy(con, options.source_input(args.source), args.estimators,
                           target=args.target, rewards=args.rewards, **keywords)  # fmt: skip
    finally:
        con.close()
    if fmt == "table":
        text = formats.text_table(_readable(table)) if table.num_rows else "(no rows)"
        if args.output:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text + "\n")
        else:
            print(text, flush=True)
    else:
        formats.write(table, fmt, args.output)
    return options.EXIT_OK


def _readable(table):
    """The rows with each interval in one column."""
    import pyarrow as pa

    rows = []
    for r in table.to_pylist():
        row = {k: v for k, v in r.items() if k not in ("ci_low", "ci_high", "delta_ci_low", "delta_ci_high")}
        row["interval"] = _interval(r["ci_low"], r["ci_high"])
        if "delta" in r:
            row["delta interval"] = _interval(r["delta_ci_low"], r["delta_ci_high"])
        rows.append(row)
    return pa.Table.from_pylist(rows)


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"
