r"""Benchmark sqlmetrics.off_policy(): N slates of 10 (10 N impression rows), five estimators
(sips, iips, rips, sniips, snrips), a target ranking of 10 items per slate, against the numpy
computation OBP performs (its estimators' arithmetic on arrays in memory) plus the pandas join
a user needs to build those arrays from the same tables.

    python benchmarks/off_policy.py --slates 100000                    # 1M rows, a few seconds
    python benchmarks/off_policy.py --slates 10000000 --memory-limit 1.25GB --threads 2 --skip-numpy
                                                                         # the issue's 100M rows
    (51 to 53 s, peak 1.52 to 1.54 GiB on 2 idle cores; with 1.5GB 47 to 54 s, 1.75 to 1.87 GiB.
    DuckDB's memory_limit bounds its buffers, not the process, which adds 0.35 to 0.5 GB;
    docs/off-policy.md, "Speed")
    (--cache keeps the data in benchmarks/data/off_policy_<slates>.duckdb, gitignored, for the
    next run)

Data (DuckDB, deterministic): each slate shows 10 of 1000 items at positions 1..10 with
logging propensities from DuckDB's hash (pscore_cascade decreasing down the slate), a 0/1
reward; the target ranks the slate's own items by a hashed score (it agrees with the log on
about a tenth of the positions). Each measurement runs in a child process (--child) that
reports its wall time, its CPU time (all threads), its peak RSS (VmHWM) and the load average
when it ended (the machine is shared: the wall time depends on the load, the CPU time less).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ESTIMATORS = ["sips", "iips", "rips", "sniips", "snrips"]

DATA = """
CREATE TABLE impressions AS
SELECT u AS user_id, (u * 37 + k * 101) % 1000 AS item_id, k + 1 AS position,
       pow(0.5, 10) AS pscore,
       0.05 + (hash(u, k, 'ip') % 1000) / 1000.0 * 0.5 AS pscore_item_position,
       pow(0.5, k + 1) AS pscore_cascade,
       CAST(hash(u, k, 'r') % 4 = 0 AS INTEGER) AS reward
FROM range({slates}) AS t(u) CROSS JOIN range(10) AS s(k);
CREATE TABLE target AS
SELECT user_id, item_id, (hash(user_id, item_id, 't') % 1000003) / 1000003.0 + (11 - position) * 0.02 AS score
FROM impressions;
"""


def child(args: argparse.Namespace) -> None:
    import duckdb

    con = duckdb.connect(args.db, read_only=True)
    con.execute(f"SET threads = {args.threads}")
    if args.memory_limit:
        con.execute(f"SET memory_limit = '{args.memory_limit}'")
    # the imports before the clock: each side's run, not its start-up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import resource
    import warnings

    import pandas  # noqa: F401

    import sqlmetrics

    def cpu() -> float:  # user + system seconds of every thread of this process
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    started, cpu_started = time.perf_counter(), cpu()
    if args.child == "sqlmetrics":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sqlmetrics.OffPolicyWarning)
            rows = sqlmetrics.off_policy(con, "impressions", ESTIMATORS, target="target").to_pylist()
        values = {r["estimator"]: r["value"] for r in rows}
    else:
        values = numpy_estimates(con)
    took, cpu_seconds = time.perf_counter() - started, cpu() - cpu_started
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))
    with open("/proc/loadavg") as f:  # other processes' load: the wall time depends on it
        load = f.read().split()[0]
    print(json.dumps({"seconds": took, "cpu_seconds": cpu_seconds, "peak_mb": peak / 1024,
                      "load_after": float(load), "values": values}))


def numpy_estimates(con) -> dict:
    """What a user of OBP does: load the tables, rank the target and join it to the log with
    pandas, then OBP's arithmetic (obp/ope/estimators_slate.py) on the arrays."""
    import numpy as np

    log = con.table("impressions").df()
    target = con.table("target").df()
    target = target.sort_values(["user_id", "score", "item_id"], ascending=[True, False, False])
    target["rank"] = target.groupby("user_id").cumcount() + 1
    log = log.merge(target[["user_id", "item_id", "rank"]], on=["user_id", "item_id"], how="left")
    log = log.sort_values(["user_id", "position"])
    e_ip = (log["rank"].to_numpy() == log["position"].to_numpy()).astype(float)
    unit = log["user_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, unit[1:] != unit[:-1]])
    e_c = np.minimum.accumulate(e_ip.reshape(-1, 10), axis=1).ravel()  # slates of 10
    e_s = np.repeat(e_ip.reshape(-1, 10).min(axis=1), 10)
    r = log["reward"].to_numpy().astype(float)
    pos = log["position"].to_numpy()
    n = len(starts)
    out = {}
    kinds = (("sips", e_s, "pscore"), ("iips", e_ip, "pscore_item_position"), ("rips", e_c, "pscore_cascade"))
    for name, e, column in kinds:
        b = log[column].to_numpy()
        iw = e / b
        out[name] = float((r * iw).sum() / n)
        if name != "sips":
            terms = np.zeros_like(r)
            for p in range(1, 11):
                idx = pos == p
                mean = iw[idx].mean()
                terms[idx] = r[idx] * iw[idx] / mean if mean > 0 else 0.0
            out["sn" + name] = float(terms.sum() / n)
    return out


def measure(kind: str, args: argparse.Namespace) -> dict:
    command = [sys.executable, __file__, "--child", kind, "--db", args.db, "--threads", str(args.threads)]
    if args.memory_limit:
        command += ["--memory-limit", args.memory_limit]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slates", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--memory-limit")
    parser.add_argument("--skip-numpy", action="store_true", help="(it needs the whole log in memory)")
    parser.add_argument("--child", choices=("sqlmetrics", "numpy"))
    parser.add_argument("--db")
    parser.add_argument("--cache", action="store_true",
                        help="keep the data in benchmarks/data/off_policy_<slates>.duckdb and reuse it")
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    import duckdb

    with tempfile.TemporaryDirectory() as tmp:
        if args.cache:
            folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
            os.makedirs(folder, exist_ok=True)
            args.db = os.path.join(folder, f"off_policy_{args.slates}.duckdb")
        else:
            args.db = os.path.join(tmp, "ope.duckdb")
        if os.path.exists(args.db):
            print(f"{args.slates:,} slates x 10 = {10 * args.slates:,} rows, read from {args.db}")
        else:
            started = time.perf_counter()
            building = args.db + ".building"
            con = duckdb.connect(building)
            for statement in con.extract_statements(DATA.format(slates=args.slates)):
                con.execute(statement).fetchall()
            con.close()
            os.replace(building, args.db)
            built = time.perf_counter() - started
            print(f"{args.slates:,} slates x 10 = {10 * args.slates:,} rows, built in {built:.1f} s")
        ours = measure("sqlmetrics", args)
        print(f"sqlmetrics.off_policy ({', '.join(ESTIMATORS)}): {json.dumps(ours)}")
        if not args.skip_numpy:
            theirs = measure("numpy", args)
            print(f"pandas join + OBP's numpy arithmetic: {json.dumps(theirs)}")
            if "seconds" in ours and "seconds" in theirs:
                worst = max(abs(ours["values"][k] - theirs["values"][k]) for k in ESTIMATORS)
                ratio = theirs["seconds"] / ours["seconds"]
                print(f"speed ratio {ratio:.2f}x; largest difference {worst:.2e}")


if __name__ == "__main__":
    main()
