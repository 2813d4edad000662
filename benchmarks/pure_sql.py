"""A DuckDB macro call (docs/sql.md) against evaluate() of the same metric, in the same process
and run, on benchmarks/generate.py's data (the issue's bound: at most 1.1x).

    python benchmarks/pure_sql.py --data benchmarks/data/100000u100c --repeat 15   # 10M rows
    python benchmarks/pure_sql.py --users 2000 --repeat 1                          # CI-sized

Both read the same tables in memory (loaded from the Parquet files first), on the same
connection (the same threads), warmed by one untimed call of each first. The calls alternate
(macro, evaluate() with its default conventions, evaluate() with truth_duplicates='max', the
macros' convention), in an order that rotates from one repeat to the next, so that drift and
the place in the round hit all alike. Each side runs as a user would run it and gets Arrow:
the macro call is con.execute(query) with the result fetched as Arrow, as evaluate() runs its
statement (con.sql() would bind the statement once more first, to learn its schema);
evaluate() pays its own Python (the inputs' columns, the statement's text) on top. Each figure
is the median over the repeats (the minimum beside it), the ratio both the ratio of the medians
and the median of each repeat's own ratio (its calls a second apart: the steadier one under
other load), and the numbers are checked equal (exits 1 otherwise, or when the median ratio to
evaluate() of a metric is above --bound). The load average is printed before and after."""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import duckdb

import sqlmetrics

CALLS = [
    # (macro call, evaluate()'s metric, its segment: evaluate()'s by=)
    ("SELECT * FROM sqlmetrics_ndcg('recs', 'truth', k := 10)", "ndcg@10", None),
    ("SELECT * FROM sqlmetrics_map('recs', 'truth', k := 10)", "map@10", None),
    ("SELECT * FROM sqlmetrics_recall_per_user('recs', 'truth', k := 20)", "recall@20", None),
    # a segment: the model (two systems, each user's list from one of them)
    ("SELECT * FROM sqlmetrics_ndcg('recs', 'truth', k := 10, \"by\" := ['model'])", "ndcg@10", ["model"]),
]


def _load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="a directory of generate.py (recs.parquet, truth.parquet)")
    parser.add_argument("--users", type=int, default=2000, help="without --data: generate this many")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", help="the calls to run: numbers in CALLS, from 0, comma-separated")
    parser.add_argument("--bound", type=float, default=None, help="exit 1 above this median ratio")
    args = parser.parse_args()
    data = Path(args.data) if args.data else Path(tempfile.mkdtemp()) / f"{args.users}u"
    if not args.data:
        generate = Path(__file__).with_name("generate.py")
        subprocess.run([sys.executable, str(generate), "--users", str(args.users), "--out", str(data)],
                       check=True, capture_output=True)  # fmt: skip
    con = duckdb.connect()
    # (with a segment column: the model, 'a' for the even users, 'b' for the odd)
    con.execute(
        "CREATE TABLE recs AS SELECT *, CASE WHEN user_id % 2 = 0 THEN 'a' ELSE 'b' END AS model "
        f"FROM '{data / 'recs.parquet'}'"
    )
    con.execute(f"CREATE TABLE truth AS SELECT * FROM '{data / 'truth.parquet'}'")
    rows = con.execute("SELECT count(*) FROM recs").fetchall()[0][0]
    sqlmetrics.install_macros(con)
    failed = False
    print(f"{rows:,} recommendation rows; median (minimum) of {args.repeat} runs each; {_load()}")
    only = args.only.split(",") if args.only else None
    for number, (query, metric, by) in enumerate(CALLS):
        if only is not None and str(number) not in only:
            continue
        per_user = "_per_user" in query
        sides = {
            # the macro call, as a user runs it: executed, its result as Arrow
            "macro": lambda q=query: _arrow(con, q),
            "evaluate": lambda m=metric, p=per_user, b=by: sqlmetrics.evaluate(
                con, "recs", [m], truth="truth", per_user=p, by=b
            ),
            # ... and with the macros' own convention (an event log's repeats once)
            "max": lambda m=metric, p=per_user, b=by: sqlmetrics.evaluate(
                con, "recs", [m], truth="truth", per_user=p, by=b, truth_duplicates="max"
            ),
        }
        names = list(sides)
        # wall seconds, and CPU seconds of the process (every DuckDB thread)
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        out = {n: sides[n]() for n in names}  # warm: one untimed call of each
        for r in range(args.repeat):
            for name in names[r % 3 :] + names[: r % 3]:
                started, cpu_started = time.perf_counter(), time.process_time()
                out[name] = sides[name]()
                wall[name].append(time.perf_counter() - started)
                cpu[name].append(time.process_time() - cpu_started)
        got = [tuple(r.values()) for r in out["macro"].to_pylist()]
        want = [tuple(r.values()) for r in out["evaluate"].to_pylist()]
        same = len(got) == len(want) and all(
            a[:-1] == b[:-1] and math.isclose(a[-1], b[-1], rel_tol=1e-12, abs_tol=1e-12)
            for a, b in zip(sorted(got), sorted(want), strict=True)
        )
        verdict = "" if same else "  NUMBERS DIFFER"
        label = f"{metric:10} {'per user' if per_user else 'means':8} {'by ' + ','.join(by) if by else ''}"
        for kind, times in (("wall", wall), ("CPU", cpu)):
            med = {n: statistics.median(times[n]) for n in names}
            paired = {
                n: statistics.median(m / e for m, e in zip(times["macro"], times[n], strict=True))
                for n in names[1:]
            }
            shown = {n: f"{med[n]:.3f} ({min(times[n]):.3f}) s" for n in names}
            ratios = {n: f"ratio {med['macro'] / med[n]:.3f} (paired {paired[n]:.3f})" for n in names[1:]}
            print(f"{label if kind == 'wall' else '':28} {kind:4}  macro {shown['macro']}"
                  f"  evaluate {shown['evaluate']}  {ratios['evaluate']}"
                  f"  evaluate(truth_duplicates='max') {shown['max']}  {ratios['max']}{verdict}")  # fmt: skip
        ratio = statistics.median(wall["macro"]) / statistics.median(wall["evaluate"])
        failed |= not same or (args.bound is not None and ratio > args.bound)
    print(_load())
    return 1 if failed else 0


def _arrow(con: duckdb.DuckDBPyConnection, query: str):
    """The query's result as Arrow, executed as evaluate() executes its statement (DuckDB warns
    that this path copies the rows: evaluate() pays the same copy)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = con.execute(query)
        fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
        return fetch()


if __name__ == "__main__":
    sys.exit(main())
