r"""Benchmark sqlmetrics.compare(): N paired users x 2 systems x 5 metrics, each test, and the
replicate stage's cost per (unit or bucket, replicate) row, extrapolated to the issue's target
(1M users, 10,000 replicates).

    python benchmarks/compare.py --users 20000 --replicates 1000      # a few seconds per test
    python benchmarks/compare.py --users 100000 --replicates 2000 --threads 2
    python benchmarks/compare.py --users 1000000 --replicates 10000 --memory-limit 1500MB --partitions 4 \
        --test t,randomization,bootstrap                                 # the issue's target
    python benchmarks/compare.py --design unpaired --users 10000000 --replicates 10000 \
        --memory-limit 1500MB --partitions 16 --test t,bootstrap --data  # an A/B test: 5M users per
                                                  # arm; peak RSS about the limit + 300 MB

Data (DuckDB tables of one connection, deterministic): recs has 10 items per (model, user)
out of 200, scores from DuckDB's hash of (model, user, item); truth has 3 items per user with
grades 1..3. With --design unpaired each user has the lists of one model only (A for even
users, B for odd: an A/B test of users/2 per arm). --data keeps them in a DuckDB file under
benchmarks/data/ (made once, git-ignored), opened read-only by each measurement, so its peak
RSS is the call's and not the tables' (10M users: 100M rows of lists). Times exclude
importing scipy.stats (once per process, 1 to 6 s here).
Each measurement runs in a child process (--child) that reports its wall time, CPU
time and its own peak RSS (VmHWM), so one test's memory does not hide another's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

METRICS = ["ndcg@10", "recall@10", "precision@5", "map@10", "mrr@10"]

DATA = """
CREATE TABLE recs AS
SELECT m AS model, u AS user_id, i AS item_id,
       (hash(m, u, i) % 1000003) / 1000003.0 + CASE WHEN m = 'B' AND i % 7 = 0 THEN 0.05 ELSE 0 END AS score
FROM (SELECT unnest(['A', 'B']) AS m) CROSS JOIN range({users}) AS t(u)
CROSS JOIN (SELECT unnest(range(10)) AS k) CROSS JOIN LATERAL (SELECT (u * 7 + k * 13) % 200 AS i)
{served};
CREATE TABLE truth AS
SELECT u AS user_id, (u * 7 + k * 29) % 200 AS item_id, 1 + (hash(u, k) % 3) AS relevance
FROM range({users}) AS t(u) CROSS JOIN (SELECT unnest(range(3)) AS k);
"""


def child(args: argparse.Namespace) -> None:
    import duckdb
    import scipy.stats  # noqa: F401  (imported once per process: 1-6 s, not the comparison's cost)

    import sqlmetrics

    con = duckdb.connect(args.data_file or ":memory:", read_only=bool(args.data_file))
    con.execute(f"SET threads = {args.threads}")
    if args.memory_limit:
        con.execute(f"SET memory_limit = '{args.memory_limit}'")
    if not args.data_file:
        con.execute(DATA.format(users=args.users, served=served(args)))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if args.test == "evaluate":
        sqlmetrics.evaluate(con, "recs", METRICS, truth="truth", by="model", per_user=True)
    else:
        sqlmetrics.compare(con, "recs", METRICS, truth="truth", by="model", baseline="A",
                           test=args.test, replicates=args.replicates, design=args.design,
                           partitions=args.partitions or 1)  # fmt: skip
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    print(json.dumps({"wall": wall, "cpu": cpu, "peak_mb": hwm / 1024}))


def served(args: argparse.Namespace) -> str:
    return "WHERE (m = 'A') = (u % 2 = 0)" if args.design == "unpaired" else ""


def write_data(args: argparse.Namespace) -> str:
    """--data: the tables in a DuckDB file of their own under benchmarks/data/ (made once), which
    each measurement opens read-only: its peak RSS is then the call's (the tables are read
    through DuckDB's buffer pool, within memory_limit), not the tables' too."""
    import duckdb

    directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"compare_{args.design}_{args.users}.duckdb")
    if not os.path.exists(path):
        partial = path + ".partial"
        if os.path.exists(partial):
            os.remove(partial)
        with duckdb.connect(partial) as con:
            con.execute(DATA.format(users=args.users, served=served(args)))
        os.replace(partial, path)
    return path


def measure(args: argparse.Namespace, test: str) -> dict:
    cmd = [sys.executable, __file__, "--child", "--test", test, "--users", str(args.users),
           "--replicates", str(args.replicates), "--threads", str(args.threads),
           "--design", args.design]  # fmt: skip
    if args.data_file:
        cmd += ["--data-file", args.data_file]
    if args.memory_limit:
        cmd += ["--memory-limit", args.memory_limit]
    if args.partitions:
        cmd += ["--partitions", str(args.partitions)]
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--test", default="all", help="all, or a comma-separated list: t,bootstrap")
    parser.add_argument("--memory-limit", help="DuckDB's memory_limit, e.g. 1500MB (default: DuckDB's)")
    parser.add_argument("--partitions", type=int, help="compare(partitions=N): N slices of the users")
    parser.add_argument("--design", choices=("auto", "paired", "unpaired"), default="auto",
                        help="unpaired: each user has one model's lists (an A/B test)")  # fmt: skip
    parser.add_argument("--data", action="store_true",
                        help="keep the tables in a DuckDB file under benchmarks/data/ (made once) "
                             "rather than in each measurement's memory")  # fmt: skip
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--data-file", help=argparse.SUPPRESS)  # (the child's: --data's file)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    args.data_file = write_data(args) if args.data else None
    ranks = "mannwhitney" if args.design == "unpaired" else "wilcoxon"
    tests = ["evaluate", "t", ranks, "randomization", "bootstrap"]
    tests = tests if args.test == "all" else args.test.split(",")
    kind = "users, one arm each," if args.design == "unpaired" else "paired users x 2 systems"
    print(f"{args.users} {kind} x {len(METRICS)} metrics, "
          f"{args.replicates} replicates, {args.threads} threads, "
          f"memory_limit {args.memory_limit or 'DuckDB default'}")  # fmt: skip
    results = {t: measure(args, t) for t in tests}
    for test, r in results.items():
        print(f"  {test:14s} {r['wall']:7.2f} s wall  {r['cpu']:7.2f} s cpu  "
              f"{r['peak_mb']:7.0f} MB peak")  # fmt: skip
    # the replicate stage grows with units x replicates; the rest with units (a cross join of
    # the paired units and the replicates, streamed into one small aggregate)
    for test in ("randomization", "bootstrap"):
        if test in results and "t" in results:
            # the randomization test's rows are units x replicates; the bootstrap's are its
            # occupied buckets (paired: of 2^16; unpaired: of 2^15 per arm) x replicates
            count = buckets if args.design != "unpaired" else arm_buckets
            count = units if test == "randomization" else count
            rows, target = count(args.users) * args.replicates, count(1_000_000) * 10_000
            wall = (results[test]["wall"] - results["t"]["wall"]) / rows
            cpu = (results[test]["cpu"] - results["t"]["cpu"]) / rows
            scale = 1_000_000 / args.users
            ideal = (cpu * target + results["t"]["cpu"] * scale) / args.threads
            observed = wall * target + results["t"]["wall"] * scale
            row = "unit" if count is units else "bucket"
            print(f"  {test}: {wall * 1e9:.0f} ns wall, {cpu * 1e9:.0f} ns cpu per ({row}, replicate) row "
                  f"beyond test='t'; extrapolated to 1M units x 10,000 replicates: {ideal:.0f} s on "
                  f"{args.threads} idle cores (cpu / cores), {observed:.0f} s at this run's wall time")


def units(n: int) -> float:
    return n


def buckets(n: int, size: int = 2**16) -> float:
    """The expected number of occupied buckets when n units are hashed into `size`."""
    return size * -math.expm1(-n / size)


def arm_buckets(n: int) -> float:
    """The unpaired bootstrap's: two arms of n / 2 units, each in 2^15 buckets."""
    return 2 * buckets(n / 2, 2**15)


if __name__ == "__main__":
    main()
