"""sqlmetrics against DuckDB's own floor, in one process (no start-up costs): the score-only
top-10 per user (`arg_max(item_id, score, 10)`), the five metrics, and per_user=True.

    python benchmarks/floor_ratio.py benchmarks/data/100000u100c --repeat 5
    python benchmarks/floor_ratio.py benchmarks/data/1000000u100c --repeat 3

(the data sets come from benchmarks/generate.py). Prints the median of each and the ratios
aggregate / floor and per_user / aggregate.
"""

from __future__ import annotations

import argparse
import time

import duckdb

import sqlmetrics

METRICS = ["ndcg@10", "map@10", "recall@10", "precision@10", "mrr@10"]


def median_seconds(label: str, work, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    median = sorted(times)[len(times) // 2]
    print(f"{label:24s} {median:7.3f} s   runs {[round(t, 2) for t in times]}", flush=True)
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a folder with recs.parquet and truth.parquet")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--memory-limit", default=None, help="e.g. 1GB")
    args = parser.parse_args()
    con = duckdb.connect()
    if args.memory_limit:
        con.execute(f"SET memory_limit = '{args.memory_limit}'").fetchall()
    recs, truth = f"{args.data}/recs.parquet", f"{args.data}/truth.parquet"
    floor_sql = (
        f"SELECT sum(len(top)) FROM (SELECT user_id, arg_max(item_id, score, 10) AS top "
        f"FROM read_parquet('{recs}') GROUP BY user_id)"
    )
    floor = median_seconds("floor: top-10 by score", lambda: con.execute(floor_sql).fetchall(), args.repeat)
    aggregate = median_seconds(
        "sqlmetrics", lambda: sqlmetrics.evaluate(con, recs, METRICS, truth=truth), args.repeat
    )
    per_user = median_seconds(
        "sqlmetrics per_user",
        lambda: sqlmetrics.evaluate(con, recs, METRICS, truth=truth, per_user=True),
        args.repeat,
    )
    print(f"aggregate / floor {aggregate / floor:.2f}   per_user / aggregate {per_user / aggregate:.2f}")


if __name__ == "__main__":
    main()
