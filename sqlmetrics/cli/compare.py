"""`sqlmetrics compare`: compare() from the command line, a readable table with the
significant rows marked, or CSV, JSON, Parquet or a LaTeX table.

Significant: p_adjusted (p_value with --correction none) below 1 - confidence."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import options

FORMATS = ("table", "csv", "json", "parquet", "latex")

_EPILOG = """\
examples:
  sqlmetrics compare recs.parquet --truth purchases.parquet --by model --baseline A \\
      --metrics ndcg@10,recall@20
  sqlmetrics compare recs --db warehouse.duckdb --truth actions --by model --baseline A \\
      --metrics ndcg@10 --test randomization --replicates 10000 --seed 7 --format latex
  sqlmetrics compare served --db warehouse.duckdb --truth events --by model --baseline A \\
      --metrics ndcg@10 --design unpaired --covariate pre_period --expected-split A=0.5,B=0.5

Every other system (value of --by) is compared with --baseline: paired per user when the
systems ranked the same users, as two independent samples when each user saw one arm (an A/B
test; --design auto tells them apart); rows marked * are significant: p_adjusted < 1 -
confidence. docs/compare.md defines the designs and the tests.
"""


def register(commands: Any) -> None:
    """Add the `compare` subcommand to the `sqlmetrics` parser's subcommands."""
    parser = commands.add_parser(
        "compare", help="compare systems with a baseline: deltas, intervals, p-values",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
        description="Compare every system (value of --by) with --baseline, paired per user or unpaired.",
    )  # fmt: skip
    # SOURCE, --metrics, --truth, --by, --db, columns, conventions (not --per-user: evaluate's)
    options.add_evaluation_options(parser, per_user=False)
    test = parser.add_argument_group("comparison")
    test.add_argument(
        "--baseline", required=True,
        help="the baseline's value of --by (comma-separated for several columns); a number, "
        "true/false or a date (YYYY-MM-DD) where the --by column has that type",
    )
    test.add_argument("--within", type=lambda t: [p.strip() for p in t.split(",") if p.strip()],
                      metavar="COLS", help="compare inside each segment of these columns")  # fmt: skip
    test.add_argument(
        "--test", choices=("t", "wilcoxon", "mannwhitney", "randomization", "bootstrap"), default="t",
        help="t (paired, or Welch's), Wilcoxon signed rank (paired), Mann-Whitney (unpaired), "
        "randomization or bootstrap [t]",
    )  # fmt: skip
    test.add_argument(
        "--design", choices=("auto", "paired", "unpaired"), default="auto",
        help="paired per user, or each arm's users as an independent sample; auto: paired when "
        "the systems share their users, unpaired when no user has values in two arms [auto]",
    )  # fmt: skip
    test.add_argument(
        "--covariate", metavar="INPUT",
        help="unpaired: CUPED with this input (the user's key column(s) and one numeric column)",
    )  # fmt: skip
    test.add_argument(
        "--expected-split", type=_split, metavar="ARM=SHARE,...",
        help="unpaired: the expected share of each arm for srm_p_value, e.g. A=0.5,B=0.5 [equal]",
    )  # fmt: skip
    test.add_argument("--confidence", type=float, default=0.95, help="of the intervals [0.95]")
    test.add_argument("--correction", choices=("holm", "bonferroni", "bh", "none"), default="holm",
                      help="of the p-values over all rows [holm]")  # fmt: skip
    test.add_argument("--replicates", type=int, default=10_000, help="randomization/bootstrap draws [10000]")
    test.add_argument("--seed", type=int, default=0, help="of the replicate draws [0]")
    test.add_argument(
        "--partitions", type=int, default=1, metavar="N",
        help="evaluate the users in N hash partitions, one statement each (the same numbers) [1]",
    )  # fmt: skip
    out = parser.add_argument_group("output")
    out.add_argument(
        "--format", choices=FORMATS, help="table (readable, the default), csv, json, parquet or latex"
    )
    out.add_argument("-o", "--output", metavar="PATH", help="write to this file instead of stdout")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..reports import formats

    options.require_metrics(args)
    options.refuse_overwriting("compare", "--output", args.output, options.evaluation_inputs(args))
    if not args.by:
        raise options.UsageError("sqlmetrics compare: --by names the column(s) whose values are the systems")
    fmt = "latex" if args.format is None and (args.output or "").endswith(".tex") else args.format
    fmt = formats.format_for(args.output, fmt)
    if fmt == "parquet" and not args.output:
        raise options.UsageError("sqlmetrics compare: --format parquet needs --output PATH")
    keywords = {**options.evaluation_options(args)}
    keywords.pop("per_user")
    kw = {
        "test": args.test, "confidence": args.confidence, "within": args.within,
        "correction": None if args.correction == "none" else args.correction,
        "replicates": args.replicates, "seed": args.seed, "partitions": args.partitions,
        "progress": args.partitions > 1, "design": args.design,
        "covariate": options.source_input(args.covariate), "expected_split": args.expected_split,
        **keywords,
    }  # fmt: skip
    con = options.connection(args)
    try:
        source = options.source_input(args.source)
        from ..stats.compare import compare

        table = options.with_baseline(
            lambda baseline: compare(con, source, args.metrics, baseline=baseline, **kw),
            args.baseline, args.by,
        )  # fmt: skip
    finally:
        con.close()
    from ..stats.unpaired import srm_warnings

    for warning in srm_warnings(table, args.within or []):
        print(f"warning: {warning}", file=sys.stderr)
    alpha = 1 - args.confidence
    if fmt == "table":
        _write_text(readable(table, alpha), args.output)
    elif fmt == "latex":
        _write_text(latex(table, alpha, args.by + (args.within or [])), args.output)
    else:
        formats.write(table, fmt, args.output)
    return options.EXIT_OK


def _split(text: str) -> dict[str, float]:
    """--expected-split A=0.5,B=0.5 (an arm of several by columns: its values joined by '|')."""
    out: dict[Any, float] = {}
    for part in text.split(","):
        arm, equals, share = part.partition("=")
        try:
            if not equals or not arm.strip():
                raise ValueError(part)
            key = tuple(v.strip() for v in arm.split("|"))
            out[key if len(key) > 1 else key[0]] = float(share)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r}: give ARM=SHARE pairs separated by commas, e.g. A=0.5,B=0.5"
            ) from None
    return out


def significant(table: pa.Table, alpha: float) -> list[bool]:
    return [p is not None and p < alpha for p in table.column("p_adjusted").to_pylist()]


def readable(table: pa.Table, alpha: float) -> str:
    """The comparison as a text table: the interval in one column, * on significant rows.

    >>> t = pa.table({"model": ["B"], "metric": ["ndcg@10"], "users": [10], "baseline_mean": [0.5],
    ...     "mean": [0.6], "delta": [0.1], "ci_low": [0.05], "ci_high": [0.15], "p_value": [0.001],
    ...     "p_adjusted": [0.002]})
    >>> print(readable(t, 0.05))
    model  metric   users  baseline_mean    mean   delta  interval          p_value    p_adjusted
    -----  -------  -----  -------------  ------  ------  ----------------  ---------  ----------  -
    B      ndcg@10     10         0.5000  0.6000  0.1000  [0.0500, 0.1500]  1.000e-03  2.000e-03   *
    * p_adjusted < 0.05
    """
    from ..reports.formats import text_table

    keep = [n for n in table.column_names if n not in _DETAIL]
    rows = []
    marks = significant(table, alpha)
    for r, mark in zip(table.to_pylist(), marks, strict=True):
        row = {n: r[n] for n in keep if n not in ("ci_low", "ci_high", "p_value", "p_adjusted")}
        row["interval"] = _interval(r["ci_low"], r["ci_high"])
        row["p_value"] = _p(r["p_value"])
        row["p_adjusted"] = _p(r["p_adjusted"])
        row[""] = "*" if mark else ""
        rows.append(row)
    text = text_table(pa.Table.from_pylist(rows)) if rows else "(no rows)"
    return text + f"\n* p_adjusted < {alpha:g}"


_DETAIL = (
    "relative_delta", "relative_ci_low", "relative_ci_high", "effect_size", "wins", "ties", "losses",
    "unpaired_system", "unpaired_baseline", "baseline_users", "srm_p_value", "theta", "variance_reduction",
)  # fmt: skip


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"


def _p(p: float | None) -> str:
    from ..reports.formats import p_text

    return p_text(p, ".3e")  # below 1e-300 (0 where the tail underflowed): "< 1e-300"


def latex(table: pa.Table, alpha: float, keys: list[str]) -> str:
    """A LaTeX tabular (booktabs): one row per comparison, significant deltas marked $^*$."""
    marks = significant(table, alpha)
    head = [*keys, "metric", "baseline", "mean", "$\\Delta$", "interval", "$p$", "$p_{adj}$"]
    lines = [
        "\\begin{tabular}{" + "l" * (len(keys) + 1) + "r" * 6 + "}",
        "\\toprule",
        " & ".join(_tex(h) if not h.startswith("$") else h for h in head) + " \\\\",
        "\\midrule",
    ]
    for r, mark in zip(table.to_pylist(), marks, strict=True):
        cells = [_tex(str(r[k])) for k in keys] + [_tex(r["metric"])]
        cells += [_f(r["baseline_mean"]), _f(r["mean"]), _f(r["delta"]) + ("$^*$" if mark else "")]
        cells += [_tex(_interval(r["ci_low"], r["ci_high"])), _f(r["p_value"], "e"), _f(r["p_adjusted"], "e")]
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", f"% $^*$: p_adjusted < {alpha:g}"]
    return "\n".join(lines)


def _f(value: float | None, kind: str = "f") -> str:
    if value is None:
        return "--"
    return f"{value:.2e}" if kind == "e" else f"{value:.4f}"


_TEX = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
        "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}"}  # fmt: skip


def _tex(text: str) -> str:
    return "".join(_TEX.get(c, c) for c in text)


def _write_text(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
