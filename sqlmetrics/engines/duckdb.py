"""DuckDB: sqlmetrics' own engine (sources.py and run.py), behind the engine interface."""

from __future__ import annotations

import fnmatch
import re
from typing import Any

import duckdb
import pyarrow as pa

from ..errors import UnknownTableError
from ..run import run
from ..sources import UNREADABLE, Registrations, Source, first_line, resolve

_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']+)'")


class DuckDBEngine:
    dialect = "duckdb"

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.registrations = Registrations(con)
        self.files: list[tuple[str, Source]] = []  # (role, source) of each file input

    def resolve(self, obj: Any, role: str) -> Source:
        source = resolve(self.con, obj, role, self.registrations)
        if source.path is not None:
            self.files.append((role, source))
        return source

    def run(self, sql: str) -> pa.Table:
        try:
            return run(self.con, sql)
        except UNREADABLE as exc:
            # a file of a glob that the first look did not open: corrupt, or with columns
            # that disagree with the others'
            found = self._file_named_in(str(exc))
            if found is None:
                raise
            role, source = found
            raise UnknownTableError(f"{role}: cannot read {source.path!r}: {first_line(exc)}") from None

    def _file_named_in(self, message: str) -> tuple[str, Source] | None:
        quoted = [a or b for a, b in _QUOTED.findall(message)]
        for role, source in self.files:
            if any(p == source.path or fnmatch.fnmatchcase(p, source.path) for p in quoted):
                return role, source
        if len(self.files) == 1 and "file" in message.lower():
            return self.files[0]
        return None

    def release(self) -> None:
        self.registrations.release()
