"""Apache Spark: the metrics render as Spark SQL (sql/dialects/portable/ with spark.sql.j2),
run with spark.sql(), and come back through Spark's Arrow path (DataFrame.toArrow(): Arrow
record batches from the JVM, no Python row objects; Spark 4 or later).

Inputs: a table or view name (catalog.schema.table too), a Parquet path or glob (read in place
as parquet.`path`), a CSV path (read with a header row into a temporary view), a pyspark
DataFrame, or in-memory data (pyarrow Table, pandas or polars DataFrame: spark.createDataFrame).
Temporary views get a unique name and are dropped after the query, whatever happens."""

from __future__ import annotations

import contextlib
import glob
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import DuplicateRowError, InvalidDataError, SqlMetricsError, UnknownTableError
from ..inputs.sources import Source, _looks_like_path
from ..statement.dialects import get, normalize_type
from ..statement.run import input_problem

_SPARK = get("spark")
_CSV = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".txt")


def _columns(df: Any) -> dict[str, str]:
    return {f.name: normalize_type(f.dataType.simpleString()) for f in df.schema.fields}


def _release(frame: Any) -> None:
    """Let the JVM drop a DataFrame's Dataset now. Py4J's proxy of a JVM object sits in a
    reference cycle once a method of it has been called (it caches its methods, which point back
    to it), so Python frees it, and the JVM its query's plans with it, only when Python's cyclic
    garbage collector happens to run: a long session kept over 100 MB of driver heap per
    beyond-accuracy evaluation until then, and Spark spent most of its time in full GCs
    (measured 2026-11-24: docs/engines.md). Spark Connect's DataFrames hold no JVM object."""
    proxy = getattr(frame, "_jdf", None)
    detach = getattr(proxy, "_detach", None)
    if detach is not None:
        try:
            detach()
        except Exception:  # noqa: BLE001 - the session may be stopped already
            pass


def _free_checkpoint(frame: Any) -> None:
    """Free the blocks of a local checkpoint now (classic Spark: its plan is a LogicalRDD whose
    RDD holds them), rather than when the JVM's garbage collector finds the RDD unreferenced
    (Spark Connect: the server's own cleanup)."""
    try:
        frame._jdf.queryExecution().logical().rdd().unpersist(False)
    except Exception:  # noqa: BLE001 - Spark Connect, another plan, or a stopped session
        pass
    _release(frame)


@contextlib.contextmanager
def _input_problems() -> Iterator[None]:
    """A problem the statement's input checks raise (raise_error) as a sqlmetrics error."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        yield
    except (PySparkException, Py4JJavaError) as exc:  # a failed subquery comes back raw
        problem = input_problem(exc)
        if problem is None:
            raise
        problem = problem.split(" SQLSTATE: ")[0].strip()
        error = DuplicateRowError if " duplicate " in problem else InvalidDataError
        raise error(problem) from None


class SparkEngine:
    dialect = "spark"

    def __init__(self, spark: Any) -> None:
        major = int(str(spark.version).split(".")[0])
        if major < 4:
            raise SqlMetricsError(
                f"sqlmetrics needs Spark 4 or later for its Arrow result path (toArrow); this "
                f"SparkSession is Spark {spark.version}"
            )
        self.spark = spark
        self.views: list[str] = []
        self.staged: list[Any] = []  # stage()'s checkpointed DataFrames

    # ---- inputs --------------------------------------------------------------------------------

    def _register(self, df: Any, role: str, label: str) -> Source:
        name = f"__sqlmetrics_{role}_{uuid.uuid4().hex}"
        df.createOrReplaceTempView(name)
        self.views.append(name)
        return Source(_SPARK.quote_identifier(name), label, _columns(df), name, False)

    def resolve(self, obj: Any, role: str) -> Source:
        from pyspark.errors import AnalysisException
        from pyspark.sql import DataFrame

        if isinstance(obj, Path):
            obj = str(obj)
        if isinstance(obj, str):
            if _looks_like_path(obj):
                return self._file(obj, role)
            from_item = _SPARK.quote_table_name(obj)
            try:
                df = self.spark.table(from_item)
            except AnalysisException:
                # SHOW TABLES, not catalog.listTables(): that one fails where expressions are
                # interpreted (spark.sql.codegen.factoryMode=NO_CODEGEN)
                known = ", ".join(row.tableName for row in self.spark.sql("SHOW TABLES").collect()) or "none"
                raise UnknownTableError(
                    f"{role}: no table or view named {obj!r} in this SparkSession (tables: {known})"
                ) from None
            source = Source(from_item, obj, _columns(df), table=obj)
            _release(df)
            return source
        if isinstance(obj, DataFrame):
            return self._register(obj, role, f"{role} DataFrame")
        if type(obj).__module__.split(".")[0] == "polars":
            obj = obj.collect() if hasattr(obj, "collect") else obj
            obj = obj.to_arrow()
        module = type(obj).__module__.split(".")[0]
        if module == "pandas":
            obj = pa.Table.from_pandas(obj, preserve_index=False)
        if isinstance(obj, pa.Table):
            label = f"{role} {type(obj).__name__}"
            frame = self.spark.createDataFrame(obj)
            try:
                return self._register(frame, role, label)
            finally:
                _release(frame)  # (the view keeps its own plan)
        raise UnknownTableError(
            f"{role} must be a table or view name, a Parquet/CSV path, a pyspark DataFrame, or a "
            f"pandas/polars DataFrame or pyarrow Table; got {type(obj).__name__}"
        )

    def _file(self, path: str, role: str) -> Source:
        from pyspark.errors import AnalysisException

        if "://" not in path and not glob.glob(path):
            raise UnknownTableError(f"no file matches {path!r}")
        try:
            if path.lower().endswith(_CSV):
                df = self.spark.read.csv(path, header=True, inferSchema=True)
                try:
                    return self._register(df, role, path)
                finally:
                    _release(df)
            df = self.spark.read.parquet(path)
        except AnalysisException as exc:
            raise UnknownTableError(f"{role}: cannot read {path!r}: {exc}") from None
        # read in place by the statement itself: the SQL text names the file
        source = Source("parquet." + _SPARK.quote_identifier(path), path, _columns(df), path=path)
        _release(df)
        return source

    # ---- running -------------------------------------------------------------------------------

    def run(self, sql: str) -> pa.Table:
        frame = None
        try:
            with _input_problems():
                frame = self.spark.sql(sql)
                table = frame.toArrow()
        finally:
            _release(frame)
        # Spark marks never-NULL columns (users, count) not nullable; DuckDB's tables are all nullable
        return table.cast(pa.schema([f.with_nullable(True) for f in table.schema]))

    def stage(self, sql: str, role: str) -> str:
        """The result of `sql` computed now and kept, as a temporary view whose plan is that
        result alone (a local checkpoint: the rows in the executors' block managers), for the
        statements that follow; its name, as SQL. The view is dropped, and its blocks freed, by
        release().

        Why: Spark inlines a CTE at every reference (a hint such as DuckDB's MATERIALIZED does
        not exist), so a statement whose CTEs read one another several times holds the plan
        of what they read once per path to it; compare()'s unpaired replicates with a
        covariate held evaluate()'s whole per-unit statement 264 times, and the 1 GB driver
        of the tests spent ten minutes analysing it before it ran out of heap. Over a
        checkpoint, each of those copies is one scan. (CACHE TABLE keeps the view's plan:
        the same analysis, the same out-of-memory.)
        """
        name = f"__sqlmetrics_{role}_{uuid.uuid4().hex}"
        frame = None
        with _input_problems():
            frame = self.spark.sql(sql).localCheckpoint(eager=True)
        try:
            frame.createOrReplaceTempView(name)
            self.views.append(name)
            self.staged.append(frame)
        except BaseException:
            _release(frame)
            raise
        return _SPARK.quote_identifier(name)

    def release(self) -> None:
        while self.views:
            name = self.views.pop()
            try:
                self.spark.catalog.dropTempView(name)
            except Exception:  # noqa: BLE001 - the session may be stopped already
                pass
        while self.staged:
            _free_checkpoint(self.staged.pop())
