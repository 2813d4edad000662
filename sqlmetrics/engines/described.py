"""No connection: sqlmetrics.sql(None, ...) renders SQL for a warehouse it cannot reach
(BigQuery, Snowflake, or any dialect), from inputs given as (table name, columns)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import SqlMetricsError
from ..inputs.sources import Source
from ..statement.dialects import arrow_type_name, normalize_type


def _columns(spec: Any) -> dict[str, str]:
    if isinstance(spec, Mapping):
        return {str(name): normalize_type(str(kind)) for name, kind in spec.items()}
    names = getattr(spec, "names", None)
    types = getattr(spec, "types", None)
    if names is not None and types is not None:  # a pyarrow.Schema
        return {name: arrow_type_name(t) for name, t in zip(names, types, strict=True)}
    raise TypeError


class Described:
    dialect = None  # no engine: sql() renders for the dialect asked (DuckDB by default)

    def resolve(self, obj: Any, role: str) -> Source:
        try:
            name, spec = obj
            if not isinstance(name, str):
                raise TypeError
            columns = _columns(spec)
        except (TypeError, ValueError):
            raise SqlMetricsError(
                f"without a connection, {role} must be a (table name, columns) pair, e.g. "
                "('analytics.recs', {'user_id': 'INT64', 'item_id': 'STRING', 'score': 'FLOAT64'}) "
                f"or (name, pyarrow.Schema); got {type(obj).__name__}"
            ) from None
        return Source(name, name, columns, table=name)

    def run(self, sql: str):
        raise SqlMetricsError("evaluate() needs a connection to run on (con=None only renders SQL)")

    def release(self) -> None:
        pass
