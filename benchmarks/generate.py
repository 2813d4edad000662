"""Generate a synthetic recommendation benchmark as two Parquet files, with DuckDB.

    python benchmarks/generate.py --users 100000 --candidates 100 --out benchmarks/data/100k

writes <out>/recs.parquet (user_id, item_id, score) and <out>/truth.parquet
(user_id, item_id, relevance), plus <out>/meta.json (the parameters and a few counts).

The data:
  * users 0 .. N-1 each get exactly C candidates (distinct items) with a score rounded to
    3 decimals, so equal scores are common (and relevant items are capped at 1.0, which ties
    them at the top); the top 10 of many users is only defined by the tie order.
  * 3 to 7 truth items per user (5 on average), relevance 0..3 uniform (so a few users have
    only relevance-0 truth rows); about 70% of them are among the user's candidates (with a
    score boosted by 0.15 per relevance grade), the rest are never recommended to that user.
  * edge cases the conventions must handle: every 97th user has no truth rows at all
    (recs users without truth are not evaluated), and N // 100 extra users (ids N ..) have
    truth rows but no recommendations (skipped).
  * item ids are 7-digit integers (recommended ones 1000000..1999982, never-recommended
    truth items 2000000..2999982), so ordering them as numbers or as text (trec_eval compares
    docnos with strcmp) gives the same tie order.

Every value is a pure function of (seed, user, position) through a 32-bit integer mixer
(murmur3's fmix32) written in SQL, not DuckDB's random() or hash(): the output is the same
for every run, thread count and DuckDB version.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import duckdb

ITEMS = 999_983  # a prime: user u's candidates (a_u + c * step_u) mod ITEMS are distinct
MASK32 = 4294967295
TRUTH_USER_EVERY = 97  # users u with u % 97 == 96 have recommendations but no truth
EXTRA_TRUTH_USERS = 100  # N // 100 users with truth but no recommendations

MACROS = f"""
CREATE OR REPLACE TEMP MACRO _xs(h, s) AS xor(h, h >> s);
CREATE OR REPLACE TEMP MACRO _mul(h, m) AS (h * m) & {MASK32};
-- murmur3 fmix32, on UBIGINT values below 2^32
CREATE OR REPLACE TEMP MACRO fmix32(h) AS
    _xs(_mul(_xs(_mul(_xs(h, 16), 2246822507), 13), 3266489909), 16);
-- a 32-bit pseudo-random value from a per-user hash and a stream number
CREATE OR REPLACE TEMP MACRO mix(hu, stream) AS
    fmix32((hu + CAST(stream AS UBIGINT) * 2654435769 + 1013904223) & {MASK32});
CREATE OR REPLACE TEMP MACRO unit(h) AS CAST(h AS DOUBLE) / 4294967296.0;
"""

# One row per user (truth-only users included): its hash and the values derived from it.
USERS = """
CREATE OR REPLACE TEMP TABLE users AS
SELECT
    u AS user_id,
    hu,
    1 + mix(hu, 1) % {items_minus_1} AS step,         -- 1 .. ITEMS-1: a unit mod ITEMS
    mix(hu, 2) % {items} AS start,
    3 + CAST(mix(hu, 3) % 5 AS INTEGER) AS n_truth,    -- 3..7 truth items
    u < {users} AS has_recs,
    u >= {users} OR u % {every} <> {every} - 1 AS has_truth
FROM (
    SELECT u, fmix32((fmix32(CAST(u AS UBIGINT) & {mask}) + {seed_mix}) & {mask}) AS hu
    FROM range({all_users}) AS t(u)
)
"""

# Truth item j of user u (j < n_truth): is it recommended (as candidate j), and its grade.
# Per-(user, position) values use stream 16 + 8 * position + (0..7).
TRUTH_FLAGS = """
    mix(hu, 16 + 8 * {pos} + 0) % 10 < 7 AS recommended,
    CAST(mix(hu, 16 + 8 * {pos} + 1) % 4 AS INTEGER) AS relevance
"""

RECS = """
COPY (
    SELECT
        user_id,
        CAST(1000000 + (start + c * step) % {items} AS BIGINT) AS item_id,
        round(CASE WHEN c < n_truth AND recommended
                   THEN least(1.0, x + 0.15 * relevance)
                   ELSE x END, 3) AS score
    FROM (
        SELECT
            user_id, start, step, n_truth, c,
            unit(mix(hu, 16 + 8 * c + 2)) AS x,
            {truth_flags}
        FROM (
            SELECT u.*, r % {candidates} AS c
            FROM range({rows}) AS t(r)
            JOIN users AS u ON u.user_id = r // {candidates}
        )
    )
    ORDER BY user_id, c
) TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE 122880)
"""

TRUTH = """
COPY (
    SELECT
        user_id,
        CAST(CASE WHEN has_recs AND recommended THEN 1000000 ELSE 2000000 END
             + (start + j * step) % {items} AS BIGINT) AS item_id,
        relevance
    FROM (
        SELECT user_id, has_recs, start, step, j, {truth_flags}
        FROM (
            SELECT users.*, j
            FROM users, range(7) AS t(j)
            WHERE has_truth AND j < n_truth
        )
    )
    ORDER BY user_id, j
) TO '{path}' (FORMAT parquet)
"""


def generate(users: int, candidates: int, out: str, seed: int = 0, threads: int | None = None) -> dict:
    """Write <out>/recs.parquet, <out>/truth.parquet and <out>/meta.json; return the meta."""
    if users < 1 or candidates < 1:
        raise SystemExit("--users and --candidates must be at least 1")
    if candidates > ITEMS:
        raise SystemExit(f"--candidates must be at most {ITEMS}")
    os.makedirs(out, exist_ok=True)
    started = time.perf_counter()
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    for statement in MACROS.split(";"):
        if statement.strip():
            con.execute(statement).fetchall()
    params = {
        "users": users,
        "all_users": users + users // EXTRA_TRUTH_USERS,
        "items": ITEMS,
        "items_minus_1": ITEMS - 1,
        "every": TRUTH_USER_EVERY,
        "mask": MASK32,
        "seed_mix": (seed * 2246822519 + 374761393) & MASK32,
        "candidates": candidates,
        "rows": users * candidates,
    }
    con.execute(USERS.format(**params)).fetchall()
    recs_path = os.path.join(out, "recs.parquet")
    truth_path = os.path.join(out, "truth.parquet")
    con.execute(RECS.format(path=recs_path, truth_flags=TRUTH_FLAGS.format(pos="c"), **params)).fetchall()
    con.execute(TRUTH.format(path=truth_path, truth_flags=TRUTH_FLAGS.format(pos="j"), **params)).fetchall()

    stats = con.execute(
        f"""
        SELECT
            (SELECT count(*) FROM '{recs_path}') AS recs_rows,
            (SELECT count(DISTINCT user_id) FROM '{recs_path}') AS recs_users,
            (SELECT count(*) FROM '{truth_path}') AS truth_rows,
            (SELECT count(DISTINCT user_id) FROM '{truth_path}') AS truth_users,
            (SELECT count(*) FROM (
                SELECT user_id FROM '{truth_path}' GROUP BY user_id HAVING max(relevance) = 0
            )) AS truth_users_all_zero,
            (SELECT count(*) FROM (SELECT DISTINCT user_id FROM '{recs_path}'
                                   SEMI JOIN '{truth_path}' USING (user_id))) AS evaluated_users,
            (SELECT count(*) FROM (
                SELECT user_id, score FROM '{recs_path}' GROUP BY ALL HAVING count(*) > 1
            )) AS tied_score_groups
        """
    ).fetchall()[0]
    con.close()
    names = ["recs_rows", "recs_users", "truth_rows", "truth_users", "truth_users_all_zero",
             "evaluated_users", "tied_score_groups"]
    meta = {"users": users, "candidates": candidates, "seed": seed, **dict(zip(names, stats, strict=True))}
    meta["seconds"] = round(time.perf_counter() - started, 3)
    with open(os.path.join(out, "meta.json"), "w", encoding="utf-8") as handle:
        json.dump(meta, handle, indent=2)
        handle.write("\n")
    return meta


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100_000, help="recommendation users N")
    parser.add_argument("--candidates", type=int, default=100, help="candidates per user C")
    parser.add_argument("--out", default=None,
                        help="output directory (default benchmarks/data/<N>u<C>c, where run.py looks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    args = parser.parse_args(argv)
    # the same directory benchmarks/run.py looks in
    name = f"{args.users}u{args.candidates}c" + (f"s{args.seed}" if args.seed else "")
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", name)
    meta = generate(args.users, args.candidates, out, args.seed, args.threads)
    json.dump(meta, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
