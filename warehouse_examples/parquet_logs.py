"""Evaluate Parquet logs where they lie: no database, no loading. DuckDB reads the files in
place (only the columns and row groups it needs) and sqlmetrics' SQL runs over them.

    python warehouse_examples/parquet_logs.py                 # writes logs/ if absent, evaluates it

The logs are one Parquet file per day and table, as a data lake would keep them:

    logs/recommendations/2026-11-01.parquet   day, model, user_id, item_id, score
    logs/events/2026-11-01.parquet            day, user_id, item_id, event_type

(written here from a small generated warehouse; point the paths at your own). The same from
the command line, and as a scheduled report whose sources are Parquet globs:

    sqlmetrics evaluate logs/recommendations/2026-11-01.parquet --truth logs/events/2026-11-01.parquet \\
        --by model --metrics ndcg@10,map@10 --action event_type --relevance purchase=3,add_to_cart=2,view=1
    sqlmetrics report warehouse_examples/parquet_report.toml --from 2026-11-01 --to 2026-11-03
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import duckdb

import sqlmetrics
from sqlmetrics.inputs.identifiers import quote_string
from sqlmetrics.reports.formats import text_table

METRICS = ["ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10"]
GRADES = {"purchase": 3, "add_to_cart": 2, "view": 1}


def write_logs(out: Path, users: int, days: int) -> None:
    """Generate a warehouse in a temporary file and export one Parquet file per table and day."""
    from make_warehouse import build

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "lake.duckdb")
        build(db, users, days)
        con = duckdb.connect(db, read_only=True)
        for table in ("recommendations", "events"):
            (out / table).mkdir(parents=True, exist_ok=True)
            for (day,) in con.execute(f"SELECT DISTINCT day FROM {table} ORDER BY day").fetchall():
                target = quote_string(str(out / table / f"{day.isoformat()}.parquet"))
                query = f"SELECT * FROM {table} WHERE day = $day ORDER BY user_id"
                con.execute(f"COPY ({query}) TO {target} (FORMAT parquet)", {"day": day}).fetchall()
        con.close()
    print(f"wrote {out}/recommendations/*.parquet and {out}/events/*.parquet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", default="logs", help="the folder of the Parquet logs [logs]")
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--days", type=int, default=3)
    args = parser.parse_args()
    logs = Path(args.logs)
    if not (logs / "recommendations").is_dir():
        write_logs(logs, args.users, args.days)

    con = duckdb.connect()  # in memory: nothing is loaded, the files are the tables
    for recs in sorted((logs / "recommendations").glob("*.parquet")):
        truth = logs / "events" / recs.name
        result = sqlmetrics.evaluate(
            con, str(recs), METRICS, truth=str(truth), by="model", action="event_type", relevance=GRADES
        )
        print(f"\n{recs.stem}")
        print(text_table(result))


if __name__ == "__main__":
    main()
