"""Opening the warehouse: one DuckDB file, written by one process at a time.

DuckDB locks a database file for the process that opens it read-write; a second process gets
an IO error on connect. That becomes WarehouseBusyError, after waiting up to `wait` seconds."""

from __future__ import annotations

import re
import time
from pathlib import Path

import duckdb

from ..errors import SqlMetricsError


class WarehouseBusyError(SqlMetricsError):
    """Another process holds the warehouse file (another report run, a notebook, a BI tool)."""


def connect(path: str | Path, *, read_only: bool = False, wait: float = 0.0) -> duckdb.DuckDBPyConnection:
    """Open the DuckDB file at `path`, retrying for up to `wait` seconds while another process
    holds it. A read-only open needs the file to exist.

    >>> import tempfile, os
    >>> con = connect(os.path.join(tempfile.mkdtemp(), "w.duckdb"))
    >>> con.execute("SELECT 42").fetchall()
    [(42,)]
    """
    path = str(path)
    if read_only and not Path(path).exists():
        raise SqlMetricsError(f"no database file {path!r}")
    deadline = time.monotonic() + max(0.0, wait)
    delay = 0.05
    while True:
        try:
            return duckdb.connect(path, read_only=read_only)
        except duckdb.IOException as exc:
            message = str(exc)
            if "lock" not in message.lower():
                raise SqlMetricsError(f"cannot open {path!r}: {message.splitlines()[0]}") from None
            if time.monotonic() >= deadline:
                pid = re.search(r"PID (\d+)", message)
                holder = f"process {pid.group(1)}" if pid else "another process"
                waited = f" (waited {wait:g} s)" if wait > 0 else ""
                raise WarehouseBusyError(
                    f"{path} is in use by {holder}{waited}: one process writes a DuckDB file at a "
                    "time; retry when it is done, or pass --wait SECONDS"
                ) from None
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 1.0)
