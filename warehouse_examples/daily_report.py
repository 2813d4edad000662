"""The A/B readout of the daily report: from the results table that

    sqlmetrics report warehouse_examples/daily_report.toml --from 2026-11-01 --to 2026-11-07

wrote into the warehouse, print for each metric the two models' means over the days, model B's
lift over model A, and on how many days B was ahead. The results table is plain SQL to query:
one row per (report, period, segment, metric), the segment a MAP of the by-columns.

    python warehouse_examples/daily_report.py [--config warehouse_examples/daily_report.toml]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb

from sqlmetrics.identifiers import quote_table_name
from sqlmetrics.reports import load_config
from sqlmetrics.reports.formats import text_table

READOUT = """
WITH daily AS (
    SELECT period_start, segment['model'] AS model, value,
           metric || coalesce('@' || k, '') AS metric
    FROM {results}
    WHERE report = $report
), paired AS (
    SELECT metric, period_start,
           max(value) FILTER (WHERE model = 'A') AS a,
           max(value) FILTER (WHERE model = 'B') AS b
    FROM daily
    GROUP BY metric, period_start
)
SELECT metric,
       count(*) AS days,
       round(avg(a), 4) AS "model A",
       round(avg(b), 4) AS "model B",
       printf('%+.1f%%', 100 * (avg(b) / avg(a) - 1)) AS "B vs A",
       count(*) FILTER (WHERE b > a) AS "days B ahead"
FROM paired
GROUP BY metric
ORDER BY list_position($metrics, metric), metric
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parent
    parser.add_argument("--config", default=str(here / "daily_report.toml"))
    parser.add_argument("--db", help="the warehouse, if not the config's")
    args = parser.parse_args()
    config = load_config(args.config)
    warehouse = args.db or config.warehouse
    if not Path(warehouse).exists():
        print(
            f"no warehouse {warehouse!r}: run make_warehouse.py and sqlmetrics report first", file=sys.stderr
        )
        return 2
    con = duckdb.connect(warehouse, read_only=True)
    try:
        sql = READOUT.format(results=quote_table_name(config.results_table))
        table = con.sql(sql, params={"report": config.name, "metrics": list(config.metrics)}).to_arrow_table()
    finally:
        con.close()
    print(f"\n{config.name}: model B against model A, mean over the days of {config.results_table}")
    print(text_table(table, digits=4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
