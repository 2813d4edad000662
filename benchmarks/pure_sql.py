"""A DuckDB macro call (docs/sql.md) against evaluate() of the same metric, in the same process
and run, on benchmarks/generate.py's data (the issue's bound: at most 1.1x).

    python benchmarks/pure_sql.py --data benchmarks/data/100k --repeat 7      # 10M rows
    python benchmarks/pure_sql.py --users 2000 --repeat 1                     # CI-sized

Both read the same tables in memory (loaded from the Parquet files first); the calls alternate
(macro, evaluate, evaluate with truth_duplicates='max', the macros' convention, macro, ...) so
that drift hits all; each figure is the minimum over the repeats, and the numbers are checked
equal (exits 1 otherwise, or when the ratio to evaluate() of a metric is above --bound)."""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

import sqlmetrics

CALLS = [
    # (macro call, evaluate()'s metric)
    ("SELECT * FROM sqlmetrics_ndcg('recs', 'truth', k := 10)", "ndcg@10"),
    ("SELECT * FROM sqlmetrics_map('recs', 'truth', k := 10)", "map@10"),
    ("SELECT * FROM sqlmetrics_recall_per_user('recs', 'truth', k := 20)", "recall@20"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a directory of generate.py (recs.parquet, truth.parquet)")
    parser.add_argument("--users", type=int, default=2000, help="without --data: generate this many")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bound", type=float, default=None, help="exit 1 above this ratio")
    args = parser.parse_args()
    data = Path(args.data) if args.data else Path(tempfile.mkdtemp()) / f"{args.users}u"
    if not args.data:
        generate = Path(__file__).with_name("generate.py")
        subprocess.run([sys.executable, str(generate), "--users", str(args.users), "--out", str(data)],
                       check=True, capture_output=True)  # fmt: skip
    con = duckdb.connect()
    con.execute(f"CREATE TABLE recs AS SELECT * FROM '{data / 'recs.parquet'}'")
    con.execute(f"CREATE TABLE truth AS SELECT * FROM '{data / 'truth.parquet'}'")
    rows = con.execute("SELECT count(*) FROM recs").fetchall()[0][0]
    sqlmetrics.install_macros(con)
    failed = False
    print(f"{rows:,} recommendation rows; minimum of {args.repeat} runs each")
    for query, metric in CALLS:
        per_user = "_per_user" in query
        # wall seconds, and CPU seconds of the process (every DuckDB thread): under other load
        # on the machine the CPU time is the steadier of the two
        macro_s, evaluate_s, same_s = [], [], []
        macro_cpu, evaluate_cpu, same_cpu = [], [], []

        def timed(wall: list[float], cpu: list[float], run, *args, **kwargs):
            started, cpu_started = time.perf_counter(), time.process_time()
            out = run(*args, **kwargs)
            wall.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
            return out

        for _ in range(args.repeat):
            got = timed(macro_s, macro_cpu, lambda q: con.sql(q).fetchall(), query)
            expected = timed(evaluate_s, evaluate_cpu, sqlmetrics.evaluate, con, "recs", [metric],
                             truth="truth", per_user=per_user)  # fmt: skip
            # ... and with the macros' own convention (an event log's repeats once: one more
            # aggregation of truth than evaluate()'s default, which refuses them)
            timed(same_s, same_cpu, sqlmetrics.evaluate, con, "recs", [metric], truth="truth",
                  per_user=per_user, truth_duplicates="max")  # fmt: skip
        want = [tuple(r.values()) for r in expected.to_pylist()]
        same = len(got) == len(want) and all(
            a[:-1] == b[:-1] and math.isclose(a[-1], b[-1], rel_tol=1e-12, abs_tol=1e-12)
            for a, b in zip(sorted(got), sorted(want), strict=True)
        )
        ratio = min(macro_s) / min(evaluate_s)
        verdict = "" if same else "  NUMBERS DIFFER"
        print(f"{metric:10} {'per user' if per_user else 'means':8}  macro {min(macro_s):.3f} s  "
              f"evaluate {min(evaluate_s):.3f} s  ratio {ratio:.2f}  "
              f"evaluate(truth_duplicates='max') {min(same_s):.3f} s  ratio {min(macro_s) / min(same_s):.2f}"
              f"{verdict}")  # fmt: skip
        print(f"{'':19}  CPU: macro {min(macro_cpu):.3f} s  evaluate {min(evaluate_cpu):.3f} s  ratio "
              f"{min(macro_cpu) / min(evaluate_cpu):.2f}  evaluate(truth_duplicates='max') "
              f"{min(same_cpu):.3f} s  ratio {min(macro_cpu) / min(same_cpu):.2f}")  # fmt: skip
        failed |= not same or (args.bound is not None and ratio > args.bound)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
