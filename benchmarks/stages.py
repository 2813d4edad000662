"""Where the five-metric statement spends its time, stage by stage, in one warm process.

    python benchmarks/stages.py benchmarks/data/100000u100c --repeat 7
    python benchmarks/stages.py benchmarks/data/1000000u100c --repeat 3

Times cumulative prefixes of the very statement sqlmetrics runs (`sqlmetrics.sql(...)`, cut at
its CTEs), alternated on one connection, against DuckDB's score-only top-10 floor:

  floor              arg_max(item_id, score, 10) per user
  candidates         the statement's recs_candidates alone: the aggregation, and each user's
                     candidates put in the complete order (its top list if exact)
  exact top-10       ... + recs_lists: the fallback for ties beyond the candidates, checks
  floor + metrics    the statement with its exact top-10 replaced by the floor's score-only
                     top-10 (ties in no particular order, no recs checks): what it would cost
                     if the exact order were free. Its numbers may differ in tied positions.
  statement          the whole statement, checked equal to sqlmetrics.evaluate

Prints the minimum and median wall time of each, its ratio to the floor (minimum over minimum),
and the least CPU time of the process (every thread) per run, which a shared VM's drift moves
less than the wall time.
Exits with status 1 when the cut statement no longer has the CTEs it is cut at, or when the
whole statement's numbers differ from sqlmetrics.evaluate's.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import duckdb

import sqlmetrics

METRICS = ["ndcg@10", "map@10", "recall@10", "precision@10", "mrr@10"]
# the CTEs the statement is cut at (sql/ranking/ranked_lists.sql.j2, sql/inputs/recs_lists.sql.j2):
# the candidates, the exact top lists, and the first step after them (the lists as rows)
CANDIDATES = "recs_candidates AS MATERIALIZED ("
TOP = "recs_lists AS NOT MATERIALIZED ("
AFTER_TOP = "recs_top AS ("


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _cut(statement: str, marker: str) -> int:
    at = statement.find("\n" + marker)
    if at < 0:
        sys.exit(f"stages.py: the statement has no CTE starting {marker!r}: update the cuts")
    return at + 1


def stage_queries(statement: str, recs: str) -> dict[str, str]:
    """The queries timed, keyed by stage name (see the module docstring)."""
    candidates_at, top_at, after_top_at = (_cut(statement, m) for m in (CANDIDATES, TOP, AFTER_TOP))
    source = f"read_parquet({_quote(recs)})"
    # the recs_candidates CTE alone: from its name to the ")," that closes it
    candidates_end = statement.index("\n),", candidates_at)
    candidates = statement[candidates_at:candidates_end] + "\n)"
    # (recs_candidates stays a name: the truth aggregation waits for it, sql/inputs/truth_tables)
    score_only_top = (
        "recs_lists AS MATERIALIZED (\n"
        "    SELECT user_id AS _user, arg_max(item_id, score, 10) AS _top, NULL::VARCHAR AS _problem\n"
        f"    FROM {source}\n    GROUP BY user_id\n),\n"
        "recs_candidates AS (SELECT _user FROM recs_lists),\n"
    )
    return {
        "floor": "SELECT sum(len(t)) FROM (SELECT user_id, arg_max(item_id, score, 10) AS t "
        f"FROM {source} GROUP BY user_id)",
        "candidates": f"WITH {candidates}\nSELECT count(*), sum(len(_cand_top)), "
        "count(*) FILTER (NOT _exact), max(_bad_row) FROM recs_candidates",
        "exact top-10": statement[:after_top_at].rstrip().rstrip(",")
        + "\nSELECT count(*), sum(len(_top)), count(_problem) FROM recs_lists",
        "floor + metrics": statement[:candidates_at] + score_only_top + statement[after_top_at:],
        "statement": statement,
    }


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", help="a folder with recs.parquet and truth.parquet (benchmarks/generate.py)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    recs, truth = f"{args.data}/recs.parquet", f"{args.data}/truth.parquet"
    con = duckdb.connect()
    statement = sqlmetrics.sql(con, recs, METRICS, truth=truth)
    queries = stage_queries(statement, recs)

    # the cut statement is the real one: its numbers are sqlmetrics.evaluate's (this also warms up)
    expected = sqlmetrics.evaluate(con, recs, METRICS, truth=truth).to_pylist()[0]
    got = con.sql(queries["statement"]).to_arrow_table().to_pylist()[0]
    if got != expected:
        sys.exit(f"stages.py: the rendered statement gave {got}, sqlmetrics.evaluate {expected}")
    for query in queries.values():
        con.execute(query).fetchall()

    wall: dict[str, list[float]] = {name: [] for name in queries}
    cpu: dict[str, list[float]] = {name: [] for name in queries}
    for _ in range(args.repeat):  # round robin, so that drift weighs on every stage alike
        for name, query in queries.items():
            started, started_cpu = time.perf_counter(), _cpu_seconds()
            con.execute(query).fetchall()
            wall[name].append(time.perf_counter() - started)
            cpu[name].append(_cpu_seconds() - started_cpu)
    floor, floor_cpu = min(wall["floor"]), min(cpu["floor"])
    print(f"{'stage':16s} {'min s':>8s} {'median s':>9s} {'x floor':>8s} {'CPU s':>7s} {'x floor':>8s}")
    for name, runs in wall.items():
        median = sorted(runs)[len(runs) // 2]
        least_cpu = min(cpu[name])
        print(
            f"{name:16s} {min(runs):8.3f} {median:9.3f} {min(runs) / floor:8.2f}"
            f" {least_cpu:7.3f} {least_cpu / floor_cpu:8.2f}"
        )


if __name__ == "__main__":
    main()
