"""Column resolution: named columns must exist and have a type the metrics can use."""

from __future__ import annotations

import re

from ..errors import ColumnTypeError, MissingColumnError
from .identifiers import quote_identifier
from .sources import Source

_INTEGER = re.compile(r"^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$")
_UNSIGNED = re.compile(r"^U(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$")
_FLOAT = re.compile(r"^(FLOAT|DOUBLE|REAL)$")
_DECIMAL = re.compile(r"^DECIMAL\(\d+,\s*\d+\)$")
_TIME = re.compile(r"^(DATE|TIMESTAMP|TIMESTAMP_S|TIMESTAMP_MS|TIMESTAMP_NS|TIMESTAMP WITH TIME ZONE)$")


def find_column(source: Source, name: str, role: str, what: str) -> str:
    """The input's own spelling of column `name` (DuckDB names are case-insensitive)."""
    if not isinstance(name, str) or not name:
        raise MissingColumnError(f"the {what} column name must be a non-empty string, got {name!r}")
    if name in source.columns:
        return name
    folded = [c for c in source.columns if c.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    existing = ", ".join(source.columns)
    raise MissingColumnError(
        f"{role} ({source.label}) has no {what} column {name!r}; its columns are: {existing}"
    )


def is_numeric(duck_type: str) -> bool:
    return bool(_INTEGER.match(duck_type) or _FLOAT.match(duck_type) or _DECIMAL.match(duck_type))


def is_float(duck_type: str) -> bool:
    return bool(_FLOAT.match(duck_type))


def is_time(duck_type: str) -> bool:
    """A DATE or a TIMESTAMP, with or without a time zone (not a list of them: DATE[]).

    >>> [is_time(t) for t in ("DATE", "TIMESTAMP WITH TIME ZONE", "DATE[]", "VARCHAR")]
    [True, True, False, False]
    """
    return bool(_TIME.match(duck_type))


def is_unsigned(duck_type: str) -> bool:
    return bool(_UNSIGNED.match(duck_type))


def require_numeric(
    source: Source, column: str, role: str, what: str, allow_bool: bool = False
) -> str:
    duck_type = source.type_of(column)
    if is_numeric(duck_type) or (allow_bool and duck_type == "BOOLEAN"):
        return duck_type
    raise ColumnTypeError(
        f"{role} ({source.label}): the {what} column {column!r} must be numeric, but it is {duck_type}"
    )


def type_family(duck_type: str) -> str:
    """Types that compare with each other without surprises share a family."""
    if _INTEGER.match(duck_type):
        return "integer"
    if duck_type.startswith("VARCHAR") or duck_type == "STRING":
        return "text"
    return duck_type


def require_same_family(
    a: Source, a_col: str, b: Source, b_col: str, what: str, role: str = "truth", a_role: str = "recs"
) -> None:
    """The `a_role` input's column a_col and the `role` input's column b_col must compare (say,
    both text)."""
    ta, tb = a.type_of(a_col), b.type_of(b_col)
    if type_family(ta) != type_family(tb):
        raise ColumnTypeError(
            f"the {what} columns do not compare: {a_role} {a_col!r} is {ta} but {role} {b_col!r} is "
            f"{tb}; cast one of them so that both have the same type"
        )


def quoted(column: str) -> str:
    return quote_identifier(column)
