"""PostgreSQL through ADBC (adbc-driver-postgresql): the metrics render as PostgreSQL SQL
(sql/dialects/portable/ with postgres.sql.j2), run in the server as one statement, and come
back as Arrow: the driver reads the result with COPY ... TO STDOUT (FORMAT binary) straight
into Arrow arrays (cursor.fetch_arrow_table()), with no Python object per row. psycopg 3
returns rows as Python tuples, which is why ADBC is the connection sqlmetrics takes.

Inputs: a table or view name (schema.table too; looked up as given, then in lower case, as
PostgreSQL folds unquoted names), or in-memory data (pyarrow Table, pandas or polars
DataFrame) and local Parquet/CSV files (read with pyarrow), copied with COPY into a TEMPORARY
table under a unique name for the one query and dropped afterwards.

Transactions: ADBC connections start with autocommit off, so everything runs inside the
connection's open transaction and leaves nothing behind. When the statement fails (bad
input data, a missing permission), PostgreSQL has aborted that transaction already, and the
ADBC driver runs nothing more on it (a savepoint cannot be rolled back to): sqlmetrics rolls it
back, so that the connection is usable again, and its error says that this happened."""

from __future__ import annotations

import contextlib
import glob
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..errors import DuplicateRowError, InvalidDataError, UnknownTableError
from ..inputs.sources import Source, _looks_like_path
from ..statement.dialects import arrow_type_name, get, normalize_type
from ..statement.run import input_problem

_PG = get("postgres")
_CSV = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".txt")


def _type_name(field: pa.Field) -> str:
    """A result column's type in DuckDB's words, from the driver's PostgreSQL type name."""
    metadata = field.metadata or {}
    pg_type = metadata.get(b"POSTGRESQL:type")
    if pg_type is not None:
        return normalize_type(pg_type.decode())
    return arrow_type_name(field.type)


def _plain(table: pa.Table) -> pa.Table:
    """The result without the driver's per-field metadata (PostgreSQL type names)."""
    return table.cast(pa.schema([pa.field(f.name, f.type, True) for f in table.schema]))


class PostgresEngine:
    dialect = "postgres"

    def __init__(self, con: Any) -> None:
        vendor = str(con.adbc_get_info().get("vendor_name", "")).lower()
        if "postgres" not in vendor:
            from ..errors import SqlMetricsError

            raise SqlMetricsError(
                f"this ADBC connection is to {vendor or 'an unknown database'}; sqlmetrics runs on "
                "ADBC connections to PostgreSQL (adbc_driver_postgresql.dbapi.connect())"
            )
        self.con = con
        self.temp_tables: list[str] = []
        self.failed = False  # a statement failed: the open transaction is aborted
        try:
            autocommit = con.adbc_connection.get_option("adbc.connection.autocommit")
        except Exception:  # noqa: BLE001 - a driver without the option: assume the default
            autocommit = "false"
        self.autocommit = str(autocommit).lower() == "true"

    # ---- inputs --------------------------------------------------------------------------------

    def _schema(self, from_item: str) -> dict[str, str]:
        with self.con.cursor() as cur:
            schema = cur.adbc_execute_schema(f"SELECT * FROM {from_item}")
        return {f.name: _type_name(f) for f in schema}

    def _existing(self, name: str) -> str | None:
        """The quoted name of table `name` if it exists: as given, else folded to lower case."""
        for candidate in dict.fromkeys((name, name.lower())):
            quoted = _PG.quote_table_name(candidate)
            with self.con.cursor() as cur:
                cur.execute("SELECT to_regclass($1) IS NOT NULL", parameters=(quoted,))
                if cur.fetchall()[0][0]:
                    return quoted
        return None

    def _known_tables(self) -> str:
        with self.con.cursor() as cur:
            cur.execute(
                "SELECT CASE WHEN table_schema = current_schema() THEN table_name "
                "ELSE table_schema || '.' || table_name END FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
                "AND table_schema NOT LIKE 'pg_temp%' ORDER BY 1"
            )
            return ", ".join(row[0] for row in cur.fetchall()) or "none"

    def _copy_in(self, table: pa.Table, role: str, label: str) -> Source:
        name = f"__sqlmetrics_{role}_{uuid.uuid4().hex}"
        with self.con.cursor() as cur:
            self.temp_tables.append(name)
            cur.adbc_ingest(name, table, mode="create", temporary=True)
        from_item = _PG.quote_identifier(name)
        return Source(from_item, label, self._schema(from_item), name, False)

    def resolve(self, obj: Any, role: str) -> Source:
        if isinstance(obj, Path):
            obj = str(obj)
        if isinstance(obj, str):
            if _looks_like_path(obj):
                return self._copy_in(_read_file(obj, role), role, obj)
            quoted = self._existing(obj)
            if quoted is None:
                raise UnknownTableError(
                    f"{role}: no table or view named {obj!r} in this database "
                    f"(tables: {self._known_tables()})"
                )
            return Source(quoted, obj, self._schema(quoted), table=obj)
        if type(obj).__module__.split(".")[0] == "polars":
            obj = obj.collect() if hasattr(obj, "collect") else obj
            obj = obj.to_arrow()
        if type(obj).__module__.split(".")[0] == "pandas":
            obj = pa.Table.from_pandas(obj, preserve_index=False)
        if isinstance(obj, pa.Table):
            return self._copy_in(obj, role, f"{role} {type(obj).__name__}")
        raise UnknownTableError(
            f"{role} must be a table or view name, a Parquet/CSV path, or a pandas/polars "
            f"DataFrame or pyarrow Table; got {type(obj).__name__}"
        )

    # ---- running -------------------------------------------------------------------------------

    def run(self, sql: str) -> pa.Table:
        import adbc_driver_manager

        previous = None
        try:
            with self.con.cursor() as cur:
                previous = self._jit_off(cur)
                cur.execute(sql)
                table = _plain(cur.fetch_arrow_table())
                if previous is not None:
                    self._set_jit(cur, previous)
                return table
        except adbc_driver_manager.Error as exc:
            self.failed = True
            if previous is not None and self.autocommit:  # (else release()'s rollback undoes it)
                with contextlib.suppress(adbc_driver_manager.Error), self.con.cursor() as cur:
                    self._set_jit(cur, previous)
            problem = _check_problem(exc)
            if problem is None:  # the server's own error: a permission, a timeout, ...
                if hasattr(exc, "add_note") and self._aborted_note():  # (Python 3.11+)
                    exc.add_note(self._aborted_note().strip(" ()"))
                raise
            error = DuplicateRowError if " duplicate " in problem else InvalidDataError
            raise error(problem + self._aborted_note()) from None

    # PostgreSQL's JIT compiles a statement's expressions with LLVM once its estimated cost
    # passes jit_above_cost (100,000 by default). sqlmetrics' statements pass it on a few
    # hundred rows (their CTEs' sizes are unknown to the planner: 200 rows each, multiplied by
    # every join), and compiling their hundreds of expressions takes seconds to a minute: 37
    # metrics on 96 rows, 779 functions, 49.9 s in LLVM; the whole evaluation 0.38 s without
    # (PostgreSQL 15, 2026-11-25, docs/engines.md). So the statement runs with jit off, and
    # the setting is put back right after it: SET LOCAL inside the caller's open transaction,
    # the session's own setting under autocommit.
    def _jit_off(self, cur: Any) -> str | None:
        """Turn jit off; the value to put back, or None (off already, or no JIT: before 11)."""
        cur.execute("SELECT current_setting('jit', true)")
        previous = cur.fetchall()[0][0]
        if previous is None or previous == "off":
            return None
        self._set_jit(cur, "off")
        return previous

    def _set_jit(self, cur: Any, value: str) -> None:
        cur.execute("SELECT set_config('jit', $1, $2)", parameters=(value, not self.autocommit))
        cur.fetchall()

    def _aborted_note(self) -> str:
        """PostgreSQL aborts the open transaction on any error, and the ADBC driver then runs
        nothing (not even ROLLBACK TO SAVEPOINT) before a full rollback: say so."""
        if self.autocommit:
            return ""
        return (
            " (PostgreSQL aborted the open transaction on it, and sqlmetrics rolled it back: "
            "work not yet committed on this connection is lost)"
        )

    def release(self) -> None:
        """Drop the temporary tables; after a failed statement, roll the aborted transaction
        back (which drops them too)."""
        import adbc_driver_manager

        if self.failed and not self.autocommit:
            self.temp_tables.clear()
            self.con.rollback()
            return
        try:
            with self.con.cursor() as cur:
                while self.temp_tables:
                    cur.execute(f"DROP TABLE IF EXISTS pg_temp.{_PG.quote_identifier(self.temp_tables[-1])}")
                    self.temp_tables.pop()
        except adbc_driver_manager.Error:
            self.temp_tables.clear()
            if not self.autocommit:
                self.con.rollback()


def _check_problem(exc: BaseException) -> str | None:
    """The problem of one of the statement's own checks, or None for any other error. A check
    casts its message to an integer, `ERROR:  invalid input syntax for type integer:
    "sqlmetrics: <problem>"` (SQLSTATE 22P02): only the server's primary message counts, since
    the driver appends the whole statement to its text, and the statement holds the checks'
    marker whatever went wrong (a permission, a timeout, an unknown function).

    >>> _check_problem(Exception('ERROR:  invalid input syntax for type integer: '
    ...                          '"sqlmetrics: recs has a NULL score"'))
    'recs has a NULL score'
    >>> _check_problem(Exception("ERROR:  permission denied for table recs\\n"
    ...                          "Query was: SELECT CAST('sqlmetrics: ...' AS INTEGER)")) is None
    True
    """
    details = dict(getattr(exc, "details", None) or [])
    primary = details.get(b"PG_DIAG_MESSAGE_PRIMARY")
    if primary is not None:
        message = primary.decode("utf-8", "replace")
    else:  # a driver without the diagnostics: the first line of its text, before the statement
        message = (str(exc).split("\nQuery was:")[0].splitlines() or [""])[0]
    sqlstate = getattr(exc, "sqlstate", None) or details.get(b"PG_DIAG_SQLSTATE", b"").decode() or None
    if sqlstate not in (None, "22P02") or '"sqlmetrics: ' not in message:
        return None
    problem = input_problem(message)
    return problem[:-1] if problem and problem.endswith('"') else problem


def _read_file(path: str, role: str) -> pa.Table:
    """A local Parquet or CSV file (or glob) as an Arrow table, to copy into the server."""
    import pyarrow.csv
    import pyarrow.dataset

    files = sorted(glob.glob(path)) if any(ch in path for ch in "*?[") else [path]
    if not files or not all(Path(f).exists() for f in files):
        raise UnknownTableError(f"no file matches {path!r}")
    if path.lower().endswith(_CSV):
        return pa.concat_tables([pyarrow.csv.read_csv(f) for f in files])
    try:
        return pyarrow.dataset.dataset(files, format="parquet").to_table()
    except (OSError, pa.ArrowInvalid) as exc:
        raise UnknownTableError(f"{role}: cannot read {path!r}: {exc}") from None
