"""sqlmetrics.compare() against ranx.compare(), end to end from the same TREC files: two runs
(A and B) of N queries with 20 documents each, qrels of 3 graded documents per query, five
metrics, Fisher's randomization test with P permutations on each side (ranx:
stat_test="fisher", n_permutations=P; sqlmetrics: test="randomization", replicates=P). Both
sides read the files, evaluate and test on the clock; imports and ranx's numba compilation
(a warm-up on a tiny copy) happen before it. Prints both times, their ratio and the p-values
side by side with the Monte-Carlo standard error of a p-value from P draws.

    python benchmarks/compare_ranx.py --queries 100000 --permutations 10000

B's scores are A's plus small noise, so the differences are small and the p-values spread
over (0, 1) rather than all being 0; scores are distinct within a query (ranx breaks ties
arbitrarily). Exits 1 if a p-value differs from ranx's by more than 5 standard errors of
the difference of two independent estimates.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time

METRICS = ["ndcg@10", "recall@10", "precision@5", "map@10", "mrr@10"]

RUN = """
COPY (
    SELECT q, 'Q0', d, row_number() OVER (PARTITION BY q ORDER BY s DESC, d DESC), s, '{tag}'
    FROM (
        SELECT 'q' || q AS q, 'd' || d AS d,
               (hash(q, d) % 1000003) / 1000003.0{noise} AS s
        FROM range({queries}) AS t(q) CROSS JOIN range(20) AS u(d)
    )
) TO '{path}' (DELIMITER ' ', HEADER false, QUOTE '')
"""
NOISE = " + (hash(q, d, 'B') % 1000003) / 1000003.0 * 0.08"
QRELS = """
COPY (
    SELECT 'q' || q, 0, 'd' || ((q * 7 + k * 5) % 20), 1 + hash(q, k) % 3
    FROM range({queries}) AS t(q) CROSS JOIN range(3) AS u(k)
) TO '{path}' (DELIMITER ' ', HEADER false, QUOTE '')
"""


def write_files(directory: str, queries: int) -> tuple[str, str, str]:
    import duckdb

    con = duckdb.connect()
    paths = tuple(os.path.join(directory, name) for name in ("A.txt", "B.txt", "qrels.txt"))
    for tag, path, noise in (("A", paths[0], ""), ("B", paths[1], NOISE)):
        con.execute(RUN.format(tag=tag, path=path, queries=queries, noise=noise))
    con.execute(QRELS.format(path=paths[2], queries=queries))
    return paths  # type: ignore[return-value]


def with_ranx(a: str, b: str, qrels: str, permutations: int) -> dict[str, float]:
    from ranx import Qrels, Run, compare

    report = compare(
        Qrels.from_file(qrels, kind="trec"),
        [Run.from_file(a, kind="trec"), Run.from_file(b, kind="trec")],
        metrics=METRICS,
        stat_test="fisher",
        n_permutations=permutations,
        random_seed=0,
    )
    return {m: float(report.comparisons[("A", "B")][m]["p_value"]) for m in METRICS}


def with_sqlmetrics(a: str, b: str, qrels: str, permutations: int) -> dict[str, float]:
    import duckdb
    import pyarrow as pa

    import sqlmetrics

    runs = pa.concat_tables([sqlmetrics.read_run(a), sqlmetrics.read_run(b)])
    table = sqlmetrics.compare(
        duckdb.connect(), runs, METRICS, truth=sqlmetrics.read_qrels(qrels), by="run", baseline="A",
        test="randomization", replicates=permutations, seed=0, correction=None,
    )  # fmt: skip
    return {row["metric"]: row["p_value"] for row in table.to_pylist()}


def timed(function, *args) -> tuple[float, dict[str, float]]:
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--permutations", type=int, default=10_000)
    args = parser.parse_args()
    try:
        import ranx  # noqa: F401
    except ImportError:
        print("ranx is not installed (pip install ranx): nothing to compare", file=sys.stderr)
        return 0
    import scipy.stats  # noqa: F401  (once per process, as in benchmarks/compare.py)

    with tempfile.TemporaryDirectory() as directory:
        os.mkdir(os.path.join(directory, "tiny"))
        tiny = write_files(os.path.join(directory, "tiny"), 50)
        with_ranx(*tiny, 100)  # numba compiles its functions here, off the clock
        with_sqlmetrics(*tiny, 100)
        files = write_files(directory, args.queries)
        size = sum(os.path.getsize(p) for p in files) / 1e6
        print(f"{args.queries:,} queries x 2 runs x 20 documents ({size:.0f} MB of TREC files), "
              f"{len(METRICS)} metrics, {args.permutations:,} permutations")  # fmt: skip
        ranx_time, ranx_p = timed(with_ranx, *files, args.permutations)
        ours_time, ours_p = timed(with_sqlmetrics, *files, args.permutations)
    print(f"ranx.compare(stat_test='fisher')        {ranx_time:8.2f} s")
    print(f"sqlmetrics.compare(test='randomization') {ours_time:7.2f} s   {ranx_time / ours_time:.1f}x")
    print(f"{'metric':<12} {'ranx p':>8} {'sqlmetrics p':>13} {'difference / SE':>16}")
    wrong = []
    for m in METRICS:
        p = (ranx_p[m] + ours_p[m]) / 2
        # the standard error of the difference of two independent estimates of p from P draws
        se = math.sqrt(2 * max(p * (1 - p), 1 / args.permutations) / args.permutations)
        z = abs(ranx_p[m] - ours_p[m]) / se
        print(f"{m:<12} {ranx_p[m]:8.4f} {ours_p[m]:13.4f} {z:16.2f}")
        if z > 5:
            wrong.append(m)
    if wrong:
        print(f"p-values differ beyond Monte-Carlo error: {', '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
