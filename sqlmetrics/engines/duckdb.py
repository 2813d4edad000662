"""DuckDB: sqlmetrics' own engine (sources.py and run.py), behind the engine interface."""

from __future__ import annotations

from typing import Any

import duckdb
import pyarrow as pa

from ..run import run
from ..sources import Registrations, Source, resolve


class DuckDBEngine:
    dialect = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.registrations = Registrations(con)

    def resolve(self, obj: Any, role: str) -> Source:
        return resolve(self.con, obj, role, self.registrations)

    def run(self, sql: str) -> pa.Table:
        return run(self.con, sql)

    def release(self) -> None:
        self.registrations.release()
