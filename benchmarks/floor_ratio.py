"""sqlmetrics against DuckDB's own floor, in one process (no start-up costs): the score-only
top-10 per user (`arg_max(item_id, score, 10)`), the five metrics, and per_user=True.

    python benchmarks/floor_ratio.py benchmarks/data/100000u100c --repeat 5
    python benchmarks/floor_ratio.py benchmarks/data/1000000u100c --repeat 3

(the data sets come from benchmarks/generate.py). Prints the median of each and the ratios
aggregate / floor and per_user / aggregate.

    python benchmarks/floor_ratio.py benchmarks/data/100000u100c --repeat 5 --days 7

also re-keys the same lists as units of two key columns, (user, day) over 7 days (list u
becomes user u // 7 on day u % 7; written once beside the data, in days7/), and times the
statement with user=["user_id", "day"] against the one-column statement over the same file
and rows (user="unit_id", the list's original id): the ratio two-column / one-column.
"""

from __future__ import annotations

import argparse
import os
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


def rekeyed(con: duckdb.DuckDBPyConnection, data: str, days: int) -> tuple[str, str]:
    """recs and truth with each list u keyed as (user_id = u // days, day = a date + u % days),
    and its original id as unit_id: the same lists, rows and order. Written once."""
    out = os.path.join(data, f"days{days}")
    os.makedirs(out, exist_ok=True)
    paths = []
    for name, rest in (("recs", "item_id, score"), ("truth", "item_id, relevance")):
        path = os.path.join(out, f"{name}.parquet")
        if not os.path.exists(path):
            con.execute(
                f"COPY (SELECT user_id AS unit_id, user_id // {int(days)} AS user_id, "
                f"DATE '2026-11-01' + CAST(user_id % {int(days)} AS INTEGER) AS day, {rest} "
                f"FROM read_parquet('{data}/{name}.parquet')) TO '{path}' (FORMAT parquet)"
            ).fetchall()
        paths.append(path)
    return paths[0], paths[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a folder with recs.parquet and truth.parquet")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--memory-limit", default=None, help="e.g. 1GB")
    parser.add_argument(
        "--days", type=int, default=None,
        help="also time a two-column key: the same lists keyed as (user, day) over this many days",
    )  # fmt: skip
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
    if args.days:
        recs, truth = rekeyed(con, args.data, args.days)
        for per_user in (False, True):
            label = " per_user" if per_user else ""
            options = dict(truth=truth, per_user=per_user)
            one = median_seconds(
                f"one key column{label}",
                lambda o=options: sqlmetrics.evaluate(con, recs, METRICS, user="unit_id", **o),
                args.repeat,
            )
            two = median_seconds(
                f"(user, day){label}",
                lambda o=options: sqlmetrics.evaluate(con, recs, METRICS, user=["user_id", "day"], **o),
                args.repeat,
            )
            print(f"(user, day) / one key column{label} {two / one:.2f}")


if __name__ == "__main__":
    main()
