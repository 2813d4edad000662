"""DuckDB: sqlmetrics' own engine (sources.py and run.py), behind the engine interface."""

from __future__ import annotations

import fnmatch
import re
import uuid
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import UnknownTableError, UnsupportedError
from ..inputs.sources import Registrations, Source, first_line, resolve, unreadable
from ..statement.run import input_problem, problem_error, run

_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'")


# (DuckDB 2: a connection streams one result at a time; earlier versions have no such error)
_IN_USE = getattr(duckdb, "ResourceInUseException", ())


def _require_no_open_result(con: duckdb.DuckDBPyConnection) -> None:
    """Refuse, in one line that says what to do, a connection whose streaming result (an Arrow
    RecordBatchReader not read to its end) is still open: DuckDB 2 runs no other statement on it
    and would raise its raw ResourceInUseException from the middle of the call."""
    try:
        con.execute("SELECT 1").fetchall()
    except _IN_USE:
        raise UnsupportedError(
            "this DuckDB connection is still streaming a result (a RecordBatchReader from "
            "to_arrow_reader() or fetch_record_batch(), not read to its end), and DuckDB runs no "
            "other statement on it until it is: read it to the end or close it (reader.close()) "
            "first, or evaluate on another connection"
        ) from None
    except duckdb.Error:
        pass  # an aborted transaction, a closed connection: the call itself says so


class DuckDBEngine:
    dialect = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        _require_no_open_result(con)
        self.con = con
        self.registrations = Registrations(con)
        self.files: list[tuple[str, Source]] = []  # (role, source) of each file input
        self.problem_function: str | None = None
        self.problems: list[str] = []
        self.temporary: list[str] = []  # temporary tables of the caller's connection, see keep()

    def report_problems_to_python(self) -> str:
        """The name of a function for the statement's input_check to call with the problem it
        found instead of error(): an error aborts the caller's open transaction (and its work
        with it), so the statement lets no row through and run() raises in Python."""
        if self.problem_function is None:
            name = f"__sqlmetrics_problem_{uuid.uuid4().hex}"
            self.con.create_function(name, self._record, ["VARCHAR"], "BOOLEAN", side_effects=True)
            self.problem_function = name
        return self.problem_function

    def _record(self, problem: str) -> bool:
        self.problems.append(problem)
        return False  # input_check.ok: no row passes

    def resolve(self, obj: Any, role: str) -> Source:
        source = resolve(self.con, obj, role, self.registrations)
        if source.path is not None:
            self.files.append((role, source))
        return source

    def run(self, sql: str) -> pa.Table:
        self.problems.clear()
        try:
            result = run(self.con, sql)
        except duckdb.Error as exc:
            if self.problems:
                # the bad input also broke a later step (a NaN feature in a sum, say): the
                # input's problem is the one to report, but the error has aborted an open
                # transaction
                raise problem_error(self._problem() + self._aborted_note()) from None
            if not unreadable(exc):
                raise
            # a file of a glob that the first look did not open: corrupt, or with columns
            # that disagree with the others'
            found = self._file_named_in(str(exc))
            if found is None:
                raise
            role, source = found
            raise UnknownTableError(
                f"{role}: cannot read {source.path!r}: {first_line(exc)}{self._aborted_note()}"
            ) from None
        if self.problems:
            raise problem_error(self._problem())
        return result

    def _problem(self) -> str:
        return input_problem(min(self.problems)) or min(self.problems)

    def _aborted_note(self) -> str:
        try:
            self.con.execute("SELECT 1").fetchall()
        except duckdb.Error:
            return " (DuckDB stopped on it, which aborted the open transaction: roll it back)"
        return ""

    def _file_named_in(self, message: str) -> tuple[str, Source] | None:
        quoted = [a or b for a, b in _QUOTED.findall(message)]
        for role, source in self.files:
            if any(p == source.path or fnmatch.fnmatchcase(p, source.path) for p in quoted):
                return role, source
        if len(self.files) == 1 and "file" in message.lower():
            return self.files[0]
        return None

    def keep(self, sql: str, table: str | None = None) -> tuple[str, int]:
        """Run the query `sql` into a temporary table of the caller's connection: a new one
        (table=None), or appended to `table`, one that keep() made; returns the table's quoted
        name and the rows added. The rows stay in DuckDB (within memory_limit, spilled to its
        temporary directory beyond), not in Python; release() drops the tables. In an open
        transaction they are part of it (dropped in it; after a failure that aborted it, the
        caller's rollback removes them).

        >>> con = duckdb.connect()
        >>> engine = DuckDBEngine(con)
        >>> name, rows = engine.keep("SELECT 1 AS x")
        >>> engine.keep("SELECT 2 AS x", name)[1]
        1
        >>> con.execute(f"SELECT list(x ORDER BY x) FROM {name}").fetchall()
        [([1, 2],)]
        >>> engine.release(); con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall()
        [(0,)]
        """
        if table is None:
            table = f'temp.main."__sqlmetrics_kept_{uuid.uuid4().hex}"'
            self.temporary.append(table)
            counted = self.run(f"CREATE TEMPORARY TABLE {table} AS SELECT * FROM ({sql}) AS _kept")
        else:
            counted = self.run(f"INSERT INTO {table} SELECT * FROM ({sql}) AS _kept")
        return table, int(counted.column(0)[0].as_py()) if counted.num_rows else 0

    def release(self) -> None:
        self.registrations.release()
        while self.temporary:
            try:
                self.con.execute(f"DROP TABLE IF EXISTS {self.temporary.pop()}")
            except duckdb.Error:  # an aborted transaction (its rollback removes it), a closed connection
                pass
        if self.problem_function is not None:
            try:
                self.con.remove_function(self.problem_function)
            except duckdb.Error:  # the connection may be closed
                pass
            self.problem_function = None
