"""Where a statement runs: one small class per engine, all with the same three methods.

    resolve(obj, role) -> Source   an input (table name, path, frame) as a FROM item of this
                                   engine, with its columns; in-memory data is registered for
                                   the one query
    run(sql) -> pyarrow.Table      executes one statement; the statement's own input checks
                                   come back as InvalidDataError / DuplicateRowError
    release()                      removes whatever resolve() registered, whatever happened

`for_connection(con)` picks the engine from the connection's type: a DuckDB connection, a
pyspark SparkSession, or an ADBC PostgreSQL connection; None gives `Described`, which only
renders SQL (sqlmetrics.sql) from inputs given with their columns.
May import sqlmetrics.statement, sqlmetrics.inputs, sqlmetrics.names and sqlmetrics.errors.
"""

from __future__ import annotations

from typing import Any

from ..errors import SqlMetricsError


def _module(obj: Any) -> str:
    return type(obj).__module__ or ""


def for_connection(con: Any, describe_only: bool = True):
    """The engine for `con`; anything else raises SqlMetricsError saying what is accepted.
    None (no connection) is accepted only to render SQL (describe_only)."""
    import duckdb

    if isinstance(con, duckdb.DuckDBPyConnection):
        from .duckdb import DuckDBEngine

        return DuckDBEngine(con)
    if con is None and describe_only:
        from .described import Described

        return Described()
    module = _module(con)
    if module.startswith("pyspark.") and type(con).__name__ == "SparkSession":
        from .spark import SparkEngine

        return SparkEngine(con)
    if module.startswith("adbc_driver_manager") and hasattr(con, "adbc_get_info"):
        from .postgres import PostgresEngine

        return PostgresEngine(con)
    if module.startswith("psycopg"):
        raise SqlMetricsError(
            "con is a psycopg connection, which returns rows as Python objects; sqlmetrics needs "
            "an Arrow result path: connect with ADBC instead, "
            "adbc_driver_postgresql.dbapi.connect('postgresql://...') (pip install adbc-driver-postgresql)"
        )
    raise SqlMetricsError(
        "con must be a duckdb connection (duckdb.connect()), a pyspark SparkSession, or an ADBC "
        f"PostgreSQL connection (adbc_driver_postgresql.dbapi.connect()); got {type(con).__name__}"
        + (" (sql(None, ...) renders SQL without one)" if con is None else "")
    )
