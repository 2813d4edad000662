"""The cost of a distributed engine on one box: ndcg@10 + map@10 with sqlmetrics on Spark
(local[2]: the driver and two executor threads in one JVM) next to sqlmetrics on DuckDB, on
the same Parquet files (benchmarks/generate.py's data), with the same numbers.

The headline size (100,000 users x 100 candidates = 10M recommendation rows, 3 runs each):

    python benchmarks/spark.py

CI's tiny size (200,000 rows; about a minute, most of it the JVM starting):

    python benchmarks/spark.py --users 2000 --repeat 1

Both engines read the files where they lie (DuckDB: read_parquet; Spark: parquet.`path`, the
same text sqlmetrics.sql(spark, ...) returns), evaluate in one statement, and return Arrow.
Printed: one markdown table on stdout (progress on stderr). Exit status 1 if the two engines'
numbers differ by more than 1e-9 or their user counts differ.

  median s    wall time of evaluate(), from the call to the Arrow table, median over --repeat
  first s     the first run alone (Spark's first query also compiles its code: JIT, codegen)
  start s     Spark only: SparkSession.builder...getOrCreate() (the JVM starting)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from run import ensure_data, log, parse_size  # noqa: E402  (benchmarks/run.py)

TOLERANCE = 1e-9


def timed(evaluate, repeat: int) -> tuple[list[float], dict]:
    times, result = [], None
    for i in range(repeat):
        start = time.perf_counter()
        table = evaluate()
        times.append(time.perf_counter() - start)
        result = table.to_pylist()[0]
        log(f"    run {i + 1}: {times[-1]:.2f} s")
    return times, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", default="100k", help="users (default 100k); k and m suffixes allowed")
    parser.add_argument("--candidates", type=int, default=100, help="candidates per user (default 100)")
    parser.add_argument("--k", type=int, default=10, help="cutoff (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per engine (default 3)")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--driver-memory", default="4g", help="Spark driver memory (default 4g)")
    parser.add_argument("--shuffle-partitions", type=int, default=8,
                        help="spark.sql.shuffle.partitions (default 8; AQE coalesces small ones)")
    parser.add_argument("--data-dir", default=os.path.join(HERE, "data"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the raw numbers to this file")
    args = parser.parse_args(argv)

    import duckdb
    import pyarrow  # noqa: F401  (imported before the clocks)

    import sqlmetrics

    users = parse_size(args.users)
    data, meta = ensure_data(users, args.candidates, args.data_dir, args.seed)
    recs, truth = os.path.join(data, "recs.parquet"), os.path.join(data, "truth.parquet")
    metrics = [f"ndcg@{args.k}", f"map@{args.k}"]
    log(f"{meta['recs_rows']:,} recs rows, {meta['truth_rows']:,} truth rows; {', '.join(metrics)}")

    log("duckdb:")
    con = duckdb.connect()
    duck_times, duck = timed(lambda: sqlmetrics.evaluate(con, recs, metrics, truth=truth), args.repeat)
    con.close()

    log(f"spark ({args.master}): starting the session ...")
    from pyspark.sql import SparkSession

    warehouse = tempfile.mkdtemp(prefix="sqlmetrics-spark-")  # not ./spark-warehouse
    start = time.perf_counter()
    spark = (
        SparkSession.builder.master(args.master)
        .appName("sqlmetrics-benchmark")
        .config("spark.driver.memory", args.driver_memory)
        .config("spark.sql.shuffle.partitions", str(args.shuffle_partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", warehouse)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark_start = time.perf_counter() - start
    log(f"    session: {spark_start:.1f} s")
    try:
        spark_times, spark_result = timed(
            lambda: sqlmetrics.evaluate(spark, recs, metrics, truth=truth), args.repeat
        )
        version = spark.version
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)

    agree = duck["users"] == spark_result["users"] and all(
        math.isclose(duck[m], spark_result[m], rel_tol=TOLERANCE, abs_tol=TOLERANCE) for m in metrics
    )
    duck_median, spark_median = statistics.median(duck_times), statistics.median(spark_times)
    print(f"sqlmetrics {', '.join(metrics)} on {meta['recs_rows']:,} recs rows "
          f"({users:,} users x {args.candidates}), {os.cpu_count()} cores\n")
    print("| engine | median s | first s | start s | x duckdb | users | " + " | ".join(metrics) + " |")
    print("|---|---|---|---|---|---|" + "---|" * len(metrics))
    print(f"| duckdb {duckdb.__version__} | {duck_median:.2f} | {duck_times[0]:.2f} | - | 1.0 | "
          f"{duck['users']:,} | " + " | ".join(f"{duck[m]:.6f}" for m in metrics) + " |")
    print(f"| spark {version} {args.master} | {spark_median:.2f} | {spark_times[0]:.2f} | "
          f"{spark_start:.1f} | {spark_median / duck_median:.1f} | {spark_result['users']:,} | "
          + " | ".join(f"{spark_result[m]:.6f}" for m in metrics) + " |")
    print(f"\nsame numbers (1e-9) and users: {'yes' if agree else 'NO'}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"meta": meta, "metrics": metrics, "duckdb": {"times": duck_times, "result": duck},
                       "spark": {"times": spark_times, "start": spark_start, "result": spark_result,
                                 "master": args.master, "version": version}}, handle, indent=2)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
