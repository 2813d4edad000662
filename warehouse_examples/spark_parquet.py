"""Evaluate a Parquet log with Spark: the same metrics, templates and numbers as on DuckDB,
computed by a SparkSession (here local[2]; on a cluster, the same code with your session).

    pip install -e '.[spark]'                                  # pyspark 4, needs Java 17 or 21
    python warehouse_examples/spark_parquet.py                 # writes logs/ if absent, evaluates it

The logs are one Parquet file per day and table (see parquet_logs.py, which writes them):

    logs/recommendations/2026-11-01.parquet   day, model, user_id, item_id, score
    logs/events/2026-11-01.parquet            day, user_id, item_id, event_type

Spark reads each day's files where they lie (the statement says parquet.`path`), evaluates
every metric in one Spark SQL statement, and returns a pyarrow.Table through Spark's Arrow
path. sqlmetrics.sql(spark, ...) prints that statement, to schedule it as a Spark SQL job.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import sqlmetrics
from sqlmetrics.reports.formats import text_table

METRICS = ["ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10"]
GRADES = {"purchase": 3, "add_to_cart": 2, "view": 1}


def spark_session(master: str = "local[2]"):
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName("sqlmetrics-example")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def evaluate_days(spark, logs: Path) -> list[tuple[str, object]]:
    """(day, pyarrow.Table of the metrics per model) for each day of the Parquet log."""
    results = []
    for recs in sorted((logs / "recommendations").glob("*.parquet")):
        truth = logs / "events" / recs.name
        table = sqlmetrics.evaluate(
            spark, str(recs), METRICS, truth=str(truth), by="model", action="event_type", relevance=GRADES
        )
        results.append((recs.stem, table))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", default="logs", help="the folder of the Parquet logs [logs]")
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--master", default="local[2]", help="the Spark master [local[2]]")
    parser.add_argument("--show-sql", action="store_true", help="print the Spark SQL of the first day")
    args = parser.parse_args()
    logs = Path(args.logs)
    if not (logs / "recommendations").is_dir():
        from parquet_logs import write_logs

        write_logs(logs, args.users, args.days)

    spark = spark_session(args.master)
    try:
        if args.show_sql:
            first = sorted((logs / "recommendations").glob("*.parquet"))[0]
            print(sqlmetrics.sql(spark, str(first), METRICS, truth=str(logs / "events" / first.name),
                                 by="model", action="event_type", relevance=GRADES))
        for day, table in evaluate_days(spark, logs):
            print(f"\n{day}")
            print(text_table(table))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
