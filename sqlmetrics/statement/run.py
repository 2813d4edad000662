"""Running a rendered statement and turning engine errors into sqlmetrics errors."""

from __future__ import annotations

import warnings

import duckdb
import pyarrow as pa

from ..errors import DuplicateRowError, InvalidDataError

_MARKER = "sqlmetrics: "
_COPY_WARNING = "Arrow output on a DB-API result"

# Also once for the process: catch_warnings() below swaps the process's filter list, which is
# not thread-safe (a thread leaving it restores the list another thread's call is running
# under, or leaves its own copy in place), so two threads evaluating at once could let the
# warning through. Both filters match warnings raised from this module only, so a list left
# behind never silences the caller's own calls.
warnings.filterwarnings("ignore", message=_COPY_WARNING, category=UserWarning, module=__name__)


def run(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """Execute one statement and return its result as Arrow; input problems found by the
    statement's own checks come back as InvalidDataError (or DuplicateRowError)."""
    try:
        return _arrow(con, sql)
    except duckdb.Error as exc:
        problem = input_problem(exc)
        if problem is None:
            raise
        raise problem_error(problem) from None


def _arrow(con: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    """The statement's result as Arrow, prepared once: DuckDB's relation API (con.sql) would
    bind the statement once more first, to learn its schema (a small evaluation's statement
    took a third less time without it: docs/performance.md). DuckDB warns that this path copies
    the result's rows, one per group or user, which costs little beside the statement; that
    warning is not the caller's business, whatever their own filters say."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_COPY_WARNING, category=UserWarning, module=__name__)
        result = con.execute(sql)
        # (DuckDB 2 names it to_arrow_table; 1.x connections have fetch_arrow_table)
        fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
        return fetch()


def problem_error(problem: str) -> InvalidDataError:
    """The exception for a problem text of the statement's checks (without the marker)."""
    error = DuplicateRowError if " duplicate " in problem else InvalidDataError
    return error(problem)


def input_problem(exc: BaseException | str) -> str | None:
    """The text of a check raised by the statement's error() call (or handed to Python by
    engines/duckdb.py's problem function), or None."""
    message = str(exc)
    start = message.find(_MARKER)
    if start < 0:
        return None
    return message[start + len(_MARKER) :].splitlines()[0].strip()
