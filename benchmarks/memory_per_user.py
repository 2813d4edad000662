"""How many users one statement holds under a DuckDB memory_limit: the measurements behind the
out-of-memory hint's suggested partitions N (sqlmetrics/statement/partitions.py, suggest_partitions).

    python benchmarks/generate.py --users 300000 --candidates 100 --out /tmp/oom/300k100
    python benchmarks/memory_per_user.py /tmp/oom/300k100 --limits 200MB,500MB,1GB

For each memory limit and metric list it finds the fewest partitions that succeed (each run in a
fresh child process with 2 threads) and prints users per statement and bytes per user, where a
user's list holds min(largest k, candidates) items. By hand: minutes per row on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CHILD = """
import sys, duckdb, sqlmetrics
data, limit, parts, metrics = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
con = duckdb.connect()
con.execute("SET threads = 2")
con.execute("SET enable_progress_bar = false")
con.execute(f"SET memory_limit = '{limit}'")
try:
    sqlmetrics.evaluate(con, f"{data}/recs.parquet", metrics, truth=f"{data}/truth.parquet",
                        partitions=parts)
    print("ok")
except duckdb.OutOfMemoryException:
    print("oom")
"""  # any other failure is not an answer: fits() raises

SIZES = {"MB": 10**6, "GB": 10**9}


def fits(data: str, limit: str, parts: int, metrics: str) -> bool:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, data, limit, str(parts), metrics],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    answer = (out.stdout.strip().splitlines() or [""])[-1]
    if answer not in ("ok", "oom"):
        raise RuntimeError(f"{limit} partitions={parts} {metrics}: {out.stderr.strip()[-500:]}")
    return answer == "ok"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data")
    parser.add_argument("--limits", default="200MB,500MB,1GB")
    parser.add_argument("--metrics", default="ndcg@10;ndcg@100,map@1000")
    parser.add_argument("--partitions", default="1,2,3,4,6,8,12,16")
    args = parser.parse_args()
    meta = json.loads(Path(args.data, "meta.json").read_text())
    users, candidates = meta["users"], meta["candidates"]
    print(
        "| memory_limit | metrics | list length | fewest partitions | users per statement "
        "| bytes per user |"
    )
    print("|---|---|---|---|---|---|")
    for limit in args.limits.split(","):
        size = float(limit[:-2]) * SIZES[limit[-2:].upper()]
        for metrics in args.metrics.split(";"):
            k = max(int(m.split("@")[1]) for m in metrics.split(",") if "@" in m)
            tried = [int(p) for p in args.partitions.split(",")]
            need = next((p for p in tried if fits(args.data, limit, p, metrics)), None)
            length = min(k, candidates)
            if need is None:
                print(f"| {limit} | {metrics} | {length} | > {tried[-1]} | | |", flush=True)
                continue
            per = users / need
            # the whole limit over the users of the slice that fitted: an upper bound per user
            row = f"| {limit} | {metrics} | {length} | {need} | {per:,.0f} | <= {size / per:,.0f} |"
            print(row, flush=True)


if __name__ == "__main__":
    main()
