"""Daily A/B report on the example warehouse: ndcg@10, map@10, recall@20, mrr@10 and
hit_rate@10 per model and day, with seed 004's action grades (purchase 3, add_to_cart 2,
view 1), written to a results table and printed.

    python warehouse_examples/make_warehouse.py && python warehouse_examples/daily_report.py
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

import duckdb
import pyarrow as pa

import sqlmetrics

METRICS = ["ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10"]
GRADES = {"purchase": 3, "add_to_cart": 2, "view": 1}


def report(con: duckdb.DuckDBPyConnection) -> pa.Table:
    days = [
        row[0]
        for row in con.execute("SELECT DISTINCT day FROM recommendations ORDER BY day").fetchall()
    ]
    rows = []
    for day in days:
        # one day of recommendations against that day of actions (the day is a date read back from
        # the warehouse, so it is safe as a literal)
        recs = con.table("recommendations").filter(f"day = DATE '{day.isoformat()}'")
        truth = con.table("events").filter(f"day = DATE '{day.isoformat()}'")
        result = sqlmetrics.evaluate(
            con, recs, METRICS, truth=truth, by="model", relevance=GRADES, action="event_type"
        )
        for row in result.to_pylist():
            rows.append({"day": day, **row})
    return pa.Table.from_pylist(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="warehouse.duckdb")
    args = parser.parse_args()
    con = duckdb.connect(args.db)
    results = report(con)
    results = results.append_column(
        "computed_at",
        pa.array([datetime.now(timezone.utc)] * results.num_rows, pa.timestamp("us", tz="UTC")),
    )
    con.register("daily_results", results)
    con.execute("CREATE OR REPLACE TABLE metric_results AS SELECT * FROM daily_results").fetchall()
    con.unregister("daily_results")
    print(con.sql("SELECT * EXCLUDE (computed_at) FROM metric_results ORDER BY day, model"))
    print(
        con.sql(
            'SELECT model, round(avg("ndcg@10"), 4) AS "ndcg@10", round(avg("map@10"), 4) AS "map@10", '
            'round(avg("recall@20"), 4) AS "recall@20" FROM metric_results GROUP BY model ORDER BY model'
        )
    )
    con.close()


if __name__ == "__main__":
    main()
