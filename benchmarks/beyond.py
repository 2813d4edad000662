"""Benchmark the beyond-accuracy metrics at scale: diversity@10 and serendipity@10 over
1M users x top-10 with a 20M-row history (the issue's target), or any smaller size.

    python benchmarks/beyond.py --users 2000                 # tiny: a few seconds
    python benchmarks/beyond.py --users 1000000              # the headline size

The data (written once by DuckDB into benchmarks/data/beyond-<N>u/, deterministic: every value
is a pure function of (user, position) through generate.py's 32-bit mixer):

  history.parquet  (user_id, item_id): h_u rows per user, h_u uniform in 1..2H-1 (H = 20 by
                   default, so 20 N rows), items drawn from a Zipf-like law (density ~ 1/x over
                   --items items): a few head items are in most histories, and repeat
                   interactions (duplicate rows) occur, as in real logs
  recs.parquet     (user_id, item_id, score): up to 10 distinct items per user, drawn from a
                   flatter popularity law (so lists mix head and tail items)
  truth.parquet    (user_id, item_id, relevance): 3 items per user, one of them recommended

Each run is a child process (`--child`): it opens a DuckDB connection, times
sqlmetrics.evaluate(con, recs.parquet, metrics, truth=truth.parquet, history=history.parquet)
from the call to the fetched Arrow table, and reports that time, its CPU time (user + system,
which other jobs on the machine do not inflate) and its own peak RSS (VmHWM). With --pairs,
the parent also counts the (user, pair) lookups and distinct item pairs of diversity (two items
of one list) and the most serendipity could need (a list item and a history item of one user;
it pairs only the relevant list items), next to the catalog's pairs: similarity is computed for
pairs that occur in the lists, never for the catalog's pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import duckdb

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from generate import MACROS, MASK32  # noqa: E402  (generate.py's deterministic mixer)

USERS = """
CREATE OR REPLACE TEMP TABLE users AS
SELECT u AS user_id, fmix32((fmix32(CAST(u AS UBIGINT) & {mask}) + {seed}) & {mask}) AS hu
FROM range({users}) AS t(u)
"""

# zipf(x): an item id in 0 .. items-1 with density ~ 1/(id + 1); flat(x): a flatter law
ZIPF = "CAST(floor(exp({x} * ln({items}))) AS BIGINT) - 1"
FLAT = "CAST(floor({items} * pow({x}, 2.5)) AS BIGINT)"

HISTORY = """
COPY (
    SELECT user_id, {zipf} AS item_id
    FROM (
        SELECT user_id, unit(mix(hu, 1000 + j)) AS x
        FROM users, range(2 * {per_user} - 1) AS t(j)
        WHERE j < 1 + mix(hu, 1) % (2 * {per_user} - 1)
    )
    ORDER BY user_id
) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 122880)
"""

RECS = """
COPY (
    SELECT user_id, item_id, score FROM (
        SELECT user_id, item_id, max(score) AS score
        FROM (
            SELECT user_id, {flat} AS item_id, round(unit(mix(hu, 200 + c)), 3) AS score
            FROM users, range(14) AS t(c)
        )
        GROUP BY user_id, item_id
    )
    QUALIFY row_number() OVER (PARTITION BY user_id ORDER BY score DESC, item_id) <= 10
    ORDER BY user_id
) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 122880)
"""

TRUTH = """
COPY (
    SELECT DISTINCT ON (user_id, item_id) user_id, item_id, 1 AS relevance FROM (
        SELECT user_id, item_id FROM (
            SELECT user_id, item_id, row_number() OVER (PARTITION BY user_id ORDER BY item_id) AS p,
                   1 + mix(any_value(hu) OVER (PARTITION BY user_id), 7) % 10 AS pick
            FROM read_parquet('{recs}') JOIN users USING (user_id)
        ) WHERE p = pick
        UNION ALL
        SELECT user_id, {zipf} AS item_id FROM (
            SELECT user_id, unit(mix(hu, 300 + j)) AS x FROM users, range(2) AS t(j)
        )
    )
    ORDER BY user_id
) TO '{path}' (FORMAT parquet)
"""


def data_dir(users: int, per_user: int, items: int) -> str:
    return os.path.join(HERE, "data", f"beyond-{users}u{per_user}h{items}i")


def generate(users: int, per_user: int, items: int, threads: int | None) -> dict:
    out = data_dir(users, per_user, items)
    meta_path = os.path.join(out, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path, encoding="utf-8") as handle:
            return json.load(handle)
    os.makedirs(out, exist_ok=True)
    started = time.perf_counter()
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}").fetchall()
    for statement in MACROS.split(";"):
        if statement.strip():
            con.execute(statement).fetchall()
    con.execute(USERS.format(users=users, mask=MASK32, seed=374761393)).fetchall()
    paths = {name: os.path.join(out, f"{name}.parquet") for name in ("history", "recs", "truth")}
    zipf = ZIPF.format(x="x", items=items)
    con.execute(HISTORY.format(zipf=zipf, per_user=per_user, path=paths["history"])).fetchall()
    flat = FLAT.format(x="unit(mix(hu, 100 + c))", items=items)
    con.execute(RECS.format(flat=flat, path=paths["recs"])).fetchall()
    con.execute(TRUTH.format(recs=paths["recs"], zipf=zipf, path=paths["truth"])).fetchall()
    counts = {
        name: con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchall()[0][0]
        for name, path in paths.items()
    }
    counts["history_items"] = con.execute(
        f"SELECT count(DISTINCT item_id) FROM read_parquet('{paths['history']}')"
    ).fetchall()[0][0]
    con.close()
    meta = {"users": users, "history_per_user": per_user, "items": items,
            **{f"{k}_rows" if k in paths else k: v for k, v in counts.items()},
            "seconds": round(time.perf_counter() - started, 1)}
    with open(meta_path, "w", encoding="utf-8") as handle:
        json.dump(meta, handle, indent=2)
    return meta


def peak_rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(args: argparse.Namespace) -> None:
    import sqlmetrics

    out = data_dir(args.users, args.history_per_user, args.items)
    con = duckdb.connect()
    if args.threads:
        con.execute(f"SET threads = {int(args.threads)}").fetchall()
    if args.memory_limit:
        con.execute(f"SET memory_limit = '{args.memory_limit}'").fetchall()
    metrics = args.metrics.split(",")
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    table = sqlmetrics.evaluate(
        con,
        os.path.join(out, "recs.parquet"),
        metrics,
        truth=os.path.join(out, "truth.parquet"),
        history=os.path.join(out, "history.parquet"),
    )
    seconds = time.perf_counter() - started
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu_seconds = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_rss_mb": peak_rss_mb(),
                      "result": table.to_pylist()[0]}))


def pair_counts(args: argparse.Namespace) -> dict:
    """How many distinct item pairs the metrics look up, against the catalog's pairs."""
    out = data_dir(args.users, args.history_per_user, args.items)
    con = duckdb.connect()
    if args.threads:
        con.execute(f"SET threads = {int(args.threads)}").fetchall()
    recs, history = os.path.join(out, "recs.parquet"), os.path.join(out, "history.parquet")
    row = con.execute(
        f"""
        WITH r AS (SELECT user_id, item_id FROM read_parquet('{recs}')),
             h AS (SELECT DISTINCT user_id, item_id FROM read_parquet('{history}'))
        SELECT
            (SELECT count(*) FROM r a JOIN r b ON a.user_id = b.user_id AND a.item_id < b.item_id),
            (SELECT count(*) FROM (SELECT DISTINCT a.item_id, b.item_id FROM r a JOIN r b
                ON a.user_id = b.user_id AND a.item_id < b.item_id)),
            (SELECT count(*) FROM r JOIN h USING (user_id) WHERE r.item_id <> h.item_id),
            (SELECT count(*) FROM (SELECT DISTINCT least(r.item_id, h.item_id), greatest(r.item_id, h.item_id)
                FROM r JOIN h USING (user_id) WHERE r.item_id <> h.item_id)),
            (SELECT count(DISTINCT item_id) FROM h)
        """
    ).fetchall()[0]
    con.close()
    names = ["diversity_lookups", "diversity_pairs", "serendipity_lookups", "serendipity_pairs",
             "catalog_items"]
    counts = dict(zip(names, row, strict=True))
    counts["catalog_pairs"] = counts["catalog_items"] * (counts["catalog_items"] - 1) // 2
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--history-per-user", type=int, default=20, help="mean history rows per user")
    parser.add_argument("--items", type=int, default=100_000, help="items in the popularity law")
    parser.add_argument("--metrics", default="diversity@10,serendipity@10")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    parser.add_argument("--memory-limit", default=None, help="SET memory_limit, e.g. 4GB")
    parser.add_argument("--pairs", action="store_true", help="also count the needed item pairs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return
    print("generating (once) ...", file=sys.stderr)
    meta = generate(args.users, args.history_per_user, args.items, args.threads)
    print(json.dumps(meta), file=sys.stderr)
    runs = []
    for _ in range(args.repeat):
        command = [sys.executable, os.path.abspath(__file__), "--child", *(argv or sys.argv[1:])]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(runs[-1]), file=sys.stderr)
    best = min(runs, key=lambda r: r["seconds"])
    print("| users | history rows | recs rows | metrics | seconds | CPU seconds | peak RSS (MB) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(
        f"| {meta['users']:,} | {meta['history_rows']:,} | {meta['recs_rows']:,} | {args.metrics} | "
        f"{best['seconds']:.1f} | {best['cpu_seconds']:.1f} | {max(r['peak_rss_mb'] for r in runs):,.0f} |"
    )
    print("values:", json.dumps(best["result"]))
    if args.pairs:
        print(json.dumps(pair_counts(args)))


if __name__ == "__main__":
    main()
