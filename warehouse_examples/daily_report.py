"""The A/B readout of the daily report: is model B really better than model A? From the
comparisons table that

    sqlmetrics report warehouse_examples/daily_report.toml --from 2026-11-01 --to 2026-11-07

wrote into the warehouse ([compare] in the config: each day, B against A paired per user, with
the interval of the difference and a test), print for each metric on how many days B was
significantly ahead or behind, the latest day, and the whole range with every user of every day
pooled (one more comparison, computed from the logs: not an average of the days).

    python warehouse_examples/daily_report.py [--config warehouse_examples/daily_report.toml]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pyarrow as pa

from sqlmetrics.reports import connect, load_config
from sqlmetrics.reports.comparisons import flat, read, stored_periods
from sqlmetrics.reports.formats import text_table
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
            "users pooled": whole["users"],
        })  # fmt: skip
    note = (
        f"{config.name}: each {section.systems[0]} against {', '.join(map(str, section.baseline))}, "
        f"{section.test} test, {section.confidence:.0%} intervals, "
        f"p adjusted ({section.correction or 'none'}); "
        f"ahead/behind: days significantly so; latest day {periods[-1].label}; whole range "
        f"{periods[0].label} to {periods[-1].label}, all users of all days pooled; * p_adjusted < {alpha:.2g}"
    )
    return pa.Table.from_pylist(out), note


def _estimate(r: dict, alpha: float) -> str:
    mark = " *" if r["p_adjusted"] is not None and r["p_adjusted"] < alpha else ""
    return f"{r['delta']:+.4f} [{r['ci_low']:+.4f}, {r['ci_high']:+.4f}] p={r['p_adjusted']:.2g}{mark}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parent
    parser.add_argument("--config", default=str(here / "daily_report.toml"))
    parser.add_argument("--db", help="the warehouse, if not the config's")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    warehouse = args.db or config.warehouse
    if config.compare is None:
        print(f"{args.config} has no [compare] section", file=sys.stderr)
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
