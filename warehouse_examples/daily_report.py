"""The A/B readout of the example reports: is model B really better than model A? From the
comparisons table that

    sqlmetrics report warehouse_examples/daily_report.toml --from 2026-11-01 --to 2026-11-07
    sqlmetrics report warehouse_examples/online_report.toml --from 2026-11-01 --to 2026-11-07

wrote into the warehouse ([compare] in the configs: each day, B against A, with the interval of
the difference and a test; the daily report pairs the users (both models' lists of every user,
the shadow comparison), the online one compares each model's own users (the A/B test, unpaired,
with CUPED)), print for each report and metric on how many days B was significantly ahead or
behind, the latest day, and the whole range with every user of every day pooled (one more
comparison, computed from the logs: not an average of the days). Both answers are printed: the
paired one is biased here, as the events that judge both models were caused by the lists of the
arm each user was served (README, "Comparing models").

    python warehouse_examples/daily_report.py [--config daily_report.toml --config online_report.toml]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow as pa

from sqlmetrics.reports import connect, load_config
from sqlmetrics.reports.comparisons import flat, read, stored_periods
from sqlmetrics.reports.formats import p_text, text_table
from sqlmetrics.reports.runner import compare_periods


def readout(con, config) -> tuple[pa.Table, str] | None:
    """One row per (system, metric): days compared, days B was significantly ahead / behind,
    the latest day's and the whole range's delta, interval and adjusted p (* significant);
    None when the report has stored no comparison yet."""
    section = config.compare
    alpha = 1 - section.confidence
    rows = read(con, section.results_table, config.name)
    periods = stored_periods(rows)
    if not periods:
        return None
    days = flat(rows, list(config.metrics)).to_pylist()
    pooled = {
        (str(r[section.systems[0]]), r["metric"]): r
        for r in compare_periods(con, config, periods).to_pylist()
    }
    out = []
    for r in days:
        if r["period"] != periods[-1].label:
            continue
        system, metric = r[section.systems[0]], r["metric"]
        history = [d for d in days if (d[section.systems[0]], d["metric"]) == (system, metric)]
        significant = [d for d in history if d["p_adjusted"] is not None and d["p_adjusted"] < alpha]
        whole = pooled[(str(system), metric)]
        out.append({
            section.systems[0]: system,
            "metric": metric,
            "days": len(history),
            "ahead": sum(1 for d in significant if d["delta"] > 0),
            "behind": sum(1 for d in significant if d["delta"] < 0),
            "latest delta": _estimate(r, alpha),
            "whole range delta": _estimate(whole, alpha),
            "users pooled": whole["users"],  # (unpaired: the system's arm's)
        })  # fmt: skip
    design = "/".join(sorted({str(d["design"]) for d in days}))
    note = (
        f"{config.name}: each {section.systems[0]} against {', '.join(map(str, section.baseline))}, "
        f"{design}, {section.test} test{' with CUPED' if section.covariate else ''}, "
        f"{section.confidence:.0%} intervals, "
        f"p adjusted ({section.correction or 'none'}); "
        f"ahead/behind: days significantly so; latest day {periods[-1].label}; whole range "
        f"{periods[0].label} to {periods[-1].label}, all users of all days pooled; * p_adjusted < {alpha:.2g}"
    )
    return pa.Table.from_pylist(out), note


def _estimate(r: dict, alpha: float) -> str:
    mark = " *" if r["p_adjusted"] is not None and r["p_adjusted"] < alpha else ""
    p = p_text(r["p_adjusted"], ".2g")  # "< 1e-300" where the p-value underflows to 0
    p = p if p.startswith("<") else f"={p}"
    return f"{r['delta']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] p{p}{mark}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parent
    parser.add_argument(
        "--config", action="append",
        help="a report's config (repeat for several) [daily_report.toml and online_report.toml]",
    )  # fmt: skip
    parser.add_argument("--db", help="the warehouse, if not the configs'")
    args = parser.parse_args(argv)
    for path in args.config or [str(here / "daily_report.toml"), str(here / "online_report.toml")]:
        status = _readout_of(path, args.db)
        if status:
            return status
    return 0


def _readout_of(path: str, db: str | None) -> int:
    config = load_config(path)
    warehouse = db or config.warehouse
    if config.compare is None:
        print(f"{path} has no [compare] section", file=sys.stderr)
        return 2
    if not Path(warehouse).exists():
        print(
            f"no warehouse {warehouse!r}: run make_warehouse.py and sqlmetrics report first", file=sys.stderr
        )
        return 2
    con = connect(warehouse, read_only=True)
    try:
        found = readout(con, config)
    finally:
        con.close()
    if found is None:
        print(f"no comparisons of {config.name} in {warehouse}: run sqlmetrics report first", file=sys.stderr)
        return 2
    table, note = found
    print(f"\n{note}")
    print(text_table(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
