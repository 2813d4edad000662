"""Running a rendered statement and turning engine errors into sqlmetrics errors."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from .errors import DuplicateRowError, InvalidDataError

_MARKER = "sqlmetrics: "


def run(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Execute one statement and return its result as Arrow; input problems found by the
    statement's own checks come back as InvalidDataError (or DuplicateRowError)."""
    try:
        return con.sql(sql).to_arrow_table()
    except duckdb.Error as exc:
        problem = input_problem(exc)
        if problem is None:
            raise
        error = DuplicateRowError if " duplicate " in problem else InvalidDataError
        raise error(problem) from None


def input_problem(exc: BaseException) -> str | None:
    """The text of a check raised by the statement's error() call, or None."""
    message = str(exc)
    start = message.find(_MARKER)
    if start < 0:
        return None
    return message[start + len(_MARKER) :].splitlines()[0].strip()
