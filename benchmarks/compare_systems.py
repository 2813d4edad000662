r"""Benchmark sqlmetrics.compare() with many systems (issue 33, 3n): S systems x U users x
R replicates under a DuckDB memory_limit, one test per child process: wall and CPU time, peak
RSS, the largest the temporary directories got (the caller's connection's ./.tmp and compare()'s
own under the system's temp), whether any of compare()'s is left, and whether it ran out of memory.

    python benchmarks/compare_systems.py --systems 200 --users 1000 --replicates 10000 \
        --memory-limit 300MB --test bootstrap,randomization
    python benchmarks/compare_systems.py --systems 1000 --users 1000 --replicates 10000 \
        --memory-limit 1GB --test bootstrap                     # the issue's case

Data (DuckDB tables, deterministic): recs has 10 items per (model, user) out of 200, scores
from DuckDB's hash of (model, user, item); truth has 3 items per user with grades 1..3; the
systems are models m0 (the baseline) .. m{S-1}. Each child runs in a fresh working directory,
so DuckDB's default temporary directory (./.tmp) is its own: sizes are sampled every 0.2 s.
The memory limit is set after the tables are made (they count against it, and spill with it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

DATA = """
CREATE TABLE recs AS
SELECT 'm' || m AS model, u AS user_id, i AS item_id,
       (hash(m, u, i) % 1000003) / 1000003.0 + CASE WHEN i % 7 = m % 7 THEN 0.05 ELSE 0 END AS score
FROM range({systems}) AS s(m) CROSS JOIN range({users}) AS t(u)
CROSS JOIN (SELECT unnest(range(10)) AS k) CROSS JOIN LATERAL (SELECT (u * 7 + k * 13) % 200 AS i);
CREATE TABLE truth AS
SELECT u AS user_id, (u * 7 + k * 29) % 200 AS item_id, 1 + (hash(u, k) % 3) AS relevance
FROM range({users}) AS t(u) CROSS JOIN (SELECT unnest(range(3)) AS k);
"""


def _size(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def child(args: argparse.Namespace) -> None:
    import duckdb
    import scipy.stats  # noqa: F401  (imported once per process, not the comparison's cost)

    import sqlmetrics

    con = duckdb.connect()
    con.execute(f"SET threads = {args.threads}")
    con.execute(DATA.format(systems=args.systems, users=args.users))
    if args.memory_limit:
        con.execute(f"SET memory_limit = '{args.memory_limit}'")
    largest = [0, 0]  # the caller's connection's ./.tmp, compare()'s own temporary directories
    done = threading.Event()

    def own() -> list[str]:
        root = tempfile.gettempdir()
        return [os.path.join(root, d) for d in os.listdir(root) if d.startswith("sqlmetrics-compare-")]

    def watch() -> None:
        while not done.wait(0.2):
            largest[0] = max(largest[0], _size(os.path.join(os.getcwd(), ".tmp")))
            largest[1] = max(largest[1], sum(_size(d) for d in own()))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    error = None
    try:
        sqlmetrics.compare(con, "recs", args.metrics.split(","), truth="truth", by="model", baseline="m0",
                           test=args.test, replicates=args.replicates)  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - reported
        error = f"{type(exc).__name__}: {str(exc)[:400]}"
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    done.set()
    watcher.join()
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    print(json.dumps({"wall": wall, "cpu": cpu, "peak_mb": hwm / 1024, "tmp_peak_mb": largest[0] / 2**20,
                      "own_peak_mb": largest[1] / 2**20, "own_left": len(own()),
                      "error": error}))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--systems", type=int, default=200)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=10_000)
    parser.add_argument("--metrics", default="ndcg@10")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--test", default="bootstrap", help="a comma-separated list: bootstrap,randomization")
    parser.add_argument("--memory-limit", default="1GB")
    parser.add_argument("--child", action="store_true")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"{args.systems} systems x {args.users} users x {args.replicates} replicates, {args.metrics}, "
          f"{args.threads} threads, memory_limit {args.memory_limit}")  # fmt: skip
    for test in args.test.split(","):
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--test", test,
               "--systems", str(args.systems), "--users", str(args.users),
               "--replicates", str(args.replicates), "--metrics", args.metrics,
               "--threads", str(args.threads), "--memory-limit", args.memory_limit]  # fmt: skip
        with tempfile.TemporaryDirectory() as cwd:
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=cwd,
                                 env={**os.environ, "PYTHONPATH": root}).stdout  # fmt: skip
        r = json.loads(out.strip().splitlines()[-1])
        print(f"  {test:14s} {r['wall']:7.1f} s wall {r['cpu']:7.1f} s cpu {r['peak_mb']:6.0f} MB peak RSS; "
              f"temporary files at most: ./.tmp {r['tmp_peak_mb']:6.0f} MB, compare()'s own "
              f"{r['own_peak_mb']:6.0f} MB ({r['own_left']} directories left)  "
              f"{r['error'] or 'ok'}")  # fmt: skip


if __name__ == "__main__":
    main()
