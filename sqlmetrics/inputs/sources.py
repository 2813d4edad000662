"""Input sources: whatever the caller passes as recs or truth becomes a SQL FROM item.

A table or view name, a DuckDB relation, a Parquet/CSV path or glob, a pandas or polars
DataFrame, or a pyarrow Table. In-memory frames are registered under a unique name for the
duration of one query and unregistered afterwards, whatever happens."""

from __future__ import annotations

import glob
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from ..errors import MissingColumnError, UnknownTableError
from .identifiers import quote_identifier, quote_string, quote_table_name

# what every function takes as an input: a table or view name, a DuckDB relation, a Parquet or
# CSV path or glob, a pandas or polars DataFrame, a pyarrow Table (or, for sql(), a (name, columns) pair)
Input = Any

_PARQUET = (".parquet", ".pq", ".parq")
# What reading an input may raise besides a missing table: a file that is not Parquet (or is
# corrupt, empty, unreachable), files of a glob that disagree, a view whose query fails
UNREADABLE = (
    duckdb.IOException,
    duckdb.InvalidInputException,
    duckdb.ConversionException,
    duckdb.BinderException,
    duckdb.ParserException,
)


def unreadable(exc: BaseException) -> bool:
    """Whether DuckDB's error says an input cannot be read: one of UNREADABLE, or DuckDB's base
    Error itself, which DuckDB 2.0.1 raises for a Parquet file whose footer is corrupt (2.0.0
    raised an InvalidInputException)."""
    return isinstance(exc, UNREADABLE) or type(exc) is duckdb.Error
_CSV = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".txt")


@dataclass
class Source:
    sql: str  # a FROM item: a quoted name, read_parquet('...'), or (subquery)
    label: str  # how error messages name it
    columns: dict[str, str]  # column name -> DuckDB type
    registered: str | None = None  # name registered in the connection, to unregister
    inline: bool = True  # False: the SQL names an object that exists only in this process
    table: str | None = None  # the table or view name it was given as (to quote for another dialect)
    path: str | None = None  # the Parquet/CSV path or glob it was given as

    def type_of(self, column: str) -> str:
        return self.columns[column]


@dataclass
class Registrations:
    """Names registered in the caller's connection; release() removes every one of them."""

    con: duckdb.DuckDBPyConnection
    names: list[str] = field(default_factory=list)

    def release(self) -> None:
        while self.names:
            name = self.names.pop()
            try:
                self.con.unregister(name)
            except duckdb.Error:  # already gone (the connection may be closed)
                pass


def _looks_like_path(text: str) -> bool:
    lowered = text.lower()
    return (
        lowered.endswith(_PARQUET + _CSV)
        or any(ch in text for ch in "*?[")
        or os.sep in text
        or text.startswith(("s3://", "gs://", "http://", "https://", "az://"))
    )


def _file_source(path: str) -> str:
    remote = "://" in path
    if not remote and not glob.glob(path):
        raise UnknownTableError(f"no file matches {path!r}")
    reader = "read_parquet" if path.lower().endswith(_PARQUET) else None
    if reader is None:
        reader = "read_csv" if path.lower().endswith(_CSV) else "read_parquet"
    return f"{reader}({quote_string(path)})"


def _describe(con: duckdb.DuckDBPyConnection, from_item: str) -> dict[str, str]:
    # Only string locals live in this frame, so DuckDB's Python replacement scan (which looks
    # up unknown table names among the caller's variables) finds no DataFrame here.
    rows = con.execute(f"DESCRIBE SELECT * FROM {from_item}").fetchall()
    return {row[0]: row[1] for row in rows}


def _table_exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether some table or view of the catalog could be `name`."""
    return table_kind(con, name) is not None


def table_kind(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """'table' or 'view' when some table or view of the catalog could be `name` (table,
    schema.table, catalog.table or catalog.schema.table; DuckDB compares names without case),
    else None. Asks the catalog, so that no failing statement aborts an open transaction
    (reports: a results_table that is a view can be refused before writing to it).

    >>> import duckdb
    >>> con = duckdb.connect()
    >>> _ = con.execute("CREATE TABLE t (x INTEGER); CREATE VIEW v AS SELECT 1")
    >>> table_kind(con, "T"), table_kind(con, "main.v"), table_kind(con, "memory.main.x")
    ('table', 'view', None)
    """
    parts = [p.lower() for p in name.split(".")]
    rows = con.execute(
        "SELECT lower(database_name), lower(schema_name), 'table' FROM duckdb_tables() "
        "WHERE lower(table_name) = ? UNION ALL "
        "SELECT lower(database_name), lower(schema_name), 'view' FROM duckdb_views() "
        "WHERE lower(view_name) = ? ORDER BY 3",
        [parts[-1], parts[-1]],
    ).fetchall()
    qualifiers = parts[:-1]
    for database, schema, kind in rows:
        if (
            not qualifiers
            or (len(qualifiers) == 1 and qualifiers[0] in (database, schema))
            or qualifiers == [database, schema]
        ):
            return kind
    return None


def _describe_file(con: duckdb.DuckDBPyConnection, from_item: str) -> dict[str, str]:
    """The columns of a local file, looked at through a connection of its own (a cursor), so
    that a file DuckDB cannot read does not abort the caller's open transaction. (Remote
    files are looked at with the caller's connection, which holds their settings.)"""
    if "://" in from_item:
        return _describe(con, from_item)
    cursor = con.cursor()
    try:
        return _describe(cursor, from_item)
    finally:
        cursor.close()


def _known_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE NOT internal "
        "UNION SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def resolve(
    con: duckdb.DuckDBPyConnection, obj: Any, role: str, registrations: Registrations
) -> Source:
    """Turn a user input into a Source; role is 'recs' or 'truth' (for messages)."""
    if isinstance(obj, Path):
        obj = str(obj)
    if isinstance(obj, str):
        if _looks_like_path(obj):
            from_item, label, table, path = _file_source(obj), obj, None, obj
        else:
            from_item, label, table, path = quote_table_name(obj), obj, obj, None
        try:
            # (looked up first: a statement naming a missing table would abort an open
            # transaction)
            if table is not None and not _table_exists(con, table):
                raise duckdb.CatalogException(table)
            columns = _describe_file(con, from_item) if path else _describe(con, from_item)
        except duckdb.CatalogException:
            known = ", ".join(_known_tables(con)) or "none"
            raise UnknownTableError(
                f"{role}: no table or view named {obj!r} in this connection (tables: {known})"
            ) from None
        except duckdb.Error as exc:  # not Parquet, corrupt, empty, unreachable; a broken view
            if not unreadable(exc):
                raise
            raise UnknownTableError(f"{role}: cannot read {obj!r}: {first_line(exc)}") from None
        return Source(from_item, label, columns, table=table, path=path)
    if isinstance(obj, duckdb.DuckDBPyRelation):
        if not _belongs_to(obj, con):
            # its SQL text would be read against this connection's tables of the same names
            raise UnknownTableError(
                f"{role}: this DuckDB relation belongs to another (or a closed) connection; pass "
                "a relation of the connection you evaluate on, or evaluate on the relation's own"
            )
        # (a line break: the query may end in a -- comment)
        from_item = f"({obj.sql_query()}\n)"
        try:
            columns = _describe(con, from_item)
        except duckdb.InvalidInputException as exc:
            if "parameters" not in str(exc):
                raise UnknownTableError(f"{role}: cannot read this relation: {first_line(exc)}") from None
            # its query has parameters (params=), which only the relation itself binds: it is
            # read as a registered object, like a DataFrame
            return _registered(con, obj, role, registrations, f"{role} relation")
        except duckdb.Error as exc:
            if not unreadable(exc):
                raise
            raise UnknownTableError(f"{role}: cannot read this relation: {first_line(exc)}") from None
        return Source(from_item, f"{role} relation", columns)
    if type(obj).__module__.split(".")[0] == "polars":
        obj = obj.collect() if hasattr(obj, "collect") else obj
        obj = obj.to_arrow()
    if _is_frame(obj):
        return _registered(con, obj, role, registrations, f"{role} {type(obj).__name__}")
    raise UnknownTableError(
        f"{role} must be a table or view name, a DuckDB relation, a Parquet/CSV path, or a "
        f"pandas/polars DataFrame or pyarrow Table; got {type(obj).__name__}"
    )


def _registered(
    con: duckdb.DuckDBPyConnection, obj: Any, role: str, registrations: Registrations, label: str
) -> Source:
    """`obj` registered in `con` under a unique name, for one evaluation."""
    if _column_count(obj) == 0:  # (DuckDB refuses it, aborting an open transaction)
        raise MissingColumnError(f"{role} ({label}) has no columns")
    name = f"__sqlmetrics_{role}_{uuid.uuid4().hex}"
    try:
        con.register(name, obj)
    except duckdb.InvalidInputException as exc:  # e.g. a DataFrame without columns
        raise MissingColumnError(f"{role} ({label}) cannot be read: {first_line(exc)}") from None
    registrations.names.append(name)
    from_item = quote_identifier(name)
    return Source(from_item, label, _describe(con, from_item), name, False)


def _column_count(obj: Any) -> int | None:
    """How many columns a pandas DataFrame or an Arrow table has (None: cannot tell)."""
    if hasattr(obj, "num_columns"):
        return obj.num_columns
    columns = getattr(obj, "columns", None)
    return len(columns) if columns is not None and hasattr(columns, "__len__") else None


def first_line(exc: BaseException) -> str:
    """An engine's message without the SQL it quotes (DuckDB adds 'LINE 1: ...')."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _belongs_to(relation: duckdb.DuckDBPyRelation, con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `relation` was made by `con`. DuckDB has no public accessor for a relation's
    connection, but it refuses to combine relations of two connections: a cross product with a
    relation of `con`, built and never run, asks it."""
    probe = con.sql("SELECT 1 AS __sqlmetrics_probe").set_alias(f"__sqlmetrics_{uuid.uuid4().hex}")
    try:
        probe.cross(relation)
    except duckdb.ConnectionException:  # its connection is closed
        return False
    except duckdb.Error as exc:
        return "different connections" not in str(exc)  # (anything else: the relation's own
    return True  # problem, which reading it reports in the usual way)


def _is_frame(obj: Any) -> bool:
    module = type(obj).__module__.split(".")[0]
    return module in ("pandas", "pyarrow") or hasattr(obj, "__arrow_c_stream__")
