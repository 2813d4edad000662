"""This checkout's statement against an earlier commit's, measured in the same run.

    python benchmarks/against_commit.py benchmarks/data/100000u100c --base 1e43007 --rounds 7
    python benchmarks/against_commit.py benchmarks/data/1000000u100c --base 1e43007 --rounds 3 \
        --memory-limit 1GB

The earlier commit is checked out into a temporary git worktree. Each round runs, in a fresh
process for each side (alternating, so that a shared machine's drift weighs on both alike),
the five metrics of benchmarks/floor_ratio.py (the process's first evaluation: templates
loaded, files opened), then per_user=True, then the five metrics three times more on the same
connection ("warm": the least of the three), and reports each side's minimum and median wall
time of each and the ratio new / base of the minima.
Exits with status 1 when the two sides' numbers differ (beyond 1e-12).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# one side's measurement, run with the side's checkout first on sys.path
_RUN = r"""
import json, sys, time
import duckdb
import sqlmetrics
data, memory_limit = sys.argv[1], sys.argv[2]
con = duckdb.connect()
if memory_limit:
    con.execute("SET memory_limit = '" + memory_limit.replace("'", "''") + "'")
metrics = ["ndcg@10", "map@10", "recall@10", "precision@10", "mrr@10"]
recs, truth = data + "/recs.parquet", data + "/truth.parquet"
started = time.perf_counter()
result = sqlmetrics.evaluate(con, recs, metrics, truth=truth)
aggregate = time.perf_counter() - started
started = time.perf_counter()
sqlmetrics.evaluate(con, recs, metrics, truth=truth, per_user=True)
per_user = time.perf_counter() - started
warm = []
for _ in range(3):
    started = time.perf_counter()
    sqlmetrics.evaluate(con, recs, metrics, truth=truth)
    warm.append(time.perf_counter() - started)
numbers = result.to_pylist()
print(json.dumps({"aggregate": aggregate, "per_user": per_user, "warm": min(warm), "numbers": numbers}))
"""


def _measure(checkout: Path, data: str, memory_limit: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    out = subprocess.run(
        [sys.executable, "-c", _RUN, data, memory_limit],
        cwd=checkout, env=env, capture_output=True, text=True, check=False,
    )
    if out.returncode != 0:
        sys.exit(f"against_commit.py: the run in {checkout} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _same(a: list[dict], b: list[dict]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x.keys() != y.keys():
            return False
        for key in x:
            u, v = x[key], y[key]
            if isinstance(u, float) and isinstance(v, float):
                if abs(u - v) > 1e-12:
                    return False
            elif u != v:
                return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a folder with recs.parquet and truth.parquet (benchmarks/generate.py)")
    parser.add_argument("--base", required=True, help="the earlier commit (any git revision)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--memory-limit", default="", help="DuckDB memory_limit, e.g. 1GB")
    args = parser.parse_args()
    data = str(Path(args.data).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        git = ["git", "-C", str(REPO), "worktree"]
        subprocess.run([*git, "add", "--detach", "-q", str(base), args.base], check=True)
        try:
            sides = {"base": base, "new": REPO}
            runs: dict[str, list[dict]] = {name: [] for name in sides}
            for _ in range(args.rounds):
                for name, checkout in sides.items():
                    runs[name].append(_measure(checkout, data, args.memory_limit))
        finally:
            subprocess.run([*git, "remove", "--force", str(base)], check=False)
    kinds = ("aggregate", "per_user", "warm")
    print(f"{'side':6s}" + "".join(f" {kind + ' min':>14s} {'median':>8s}" for kind in kinds))
    least = {}
    for name, rs in runs.items():
        line = f"{name:6s}"
        for kind in kinds:
            times = sorted(r[kind] for r in rs)
            least[name, kind] = times[0]
            line += f" {times[0]:14.3f} {times[len(times) // 2]:8.3f}"
        print(line)
    ratios = ", ".join(f"{kind} {least['new', kind] / least['base', kind]:.3f}" for kind in kinds)
    print(f"new / base: {ratios} (minima over {args.rounds} rounds)")
    if not _same(runs["base"][0]["numbers"], runs["new"][0]["numbers"]):
        base_numbers, new_numbers = runs["base"][0]["numbers"], runs["new"][0]["numbers"]
        sys.exit(f"against_commit.py: the numbers differ:\n{base_numbers}\n{new_numbers}")
    print("same numbers on both sides")


if __name__ == "__main__":
    main()
