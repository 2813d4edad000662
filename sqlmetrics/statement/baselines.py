"""A by column's value given in Python (compare()'s and evaluate()'s baseline=) as a SQL
literal of the column's type, checked against that type."""

from __future__ import annotations

import datetime
import math
from numbers import Real
from typing import Any

from ..errors import ConventionError
from ..inputs import columns as col


class TextBaselineError(ConventionError):
    """A baseline given as text for a by column that is not text (the command line's
    --baseline is always text: it reads the value again with `baseline_from_text`)."""

    def __init__(self, message: str, position: int, column_type: str) -> None:
        super().__init__(message)
        self.position = position  # of the by column, in by=
        self.column_type = column_type


def baseline_literal(dialect, recs_source, name: str, value: Any, position: int = 0) -> str | None:
    """The baseline value of one by column as a SQL literal of its type (None: IS NULL)."""
    if value is None:
        return None
    column = col.find_column(recs_source, name, "recs", "by")
    column_type = recs_source.type_of(column)
    family = col.type_family(column_type)
    if isinstance(value, str):
        if family != "text":
            raise TextBaselineError(
                f"baseline={value!r} is text, but the by column {column!r} is "
                f"{column_type}; give the baseline as a value of that type",
                position, column_type,
            )  # fmt: skip
        return dialect.quote_string(value)
    if isinstance(value, bool) or column_type == "BOOLEAN":
        if not isinstance(value, bool) or column_type != "BOOLEAN":
            raise ConventionError(
                f"baseline={value!r}: the by column {column!r} is {column_type}; a boolean "
                "baseline needs a BOOLEAN by column"
            )
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime.date):
        return _time_literal(dialect, value, column, column_type)
    if not isinstance(value, Real) or not math.isfinite(value):
        raise ConventionError(
            f"baseline={value!r}: give a string, a finite number, a boolean, a date, a datetime or None"
        )
    if family == "text" or not col.is_numeric(recs_source.type_of(column)):
        raise ConventionError(
            f"baseline={value!r} is a number, but the by column {column!r} is "
            f"{recs_source.type_of(column)}"
        )
    return str(int(value)) if isinstance(value, int) else repr(float(value))


def _time_literal(dialect, value: datetime.date, column: str, column_type: str) -> str:
    """A date or datetime baseline as a literal of its DATE or TIMESTAMP by column's type."""
    is_datetime = isinstance(value, datetime.datetime)
    aware = is_datetime and value.tzinfo is not None
    zoned = column_type == "TIMESTAMP WITH TIME ZONE"
    if column_type == "DATE" and not is_datetime:
        return f"DATE {dialect.quote_string(value.isoformat())}"
    if col.is_time(column_type) and column_type != "DATE" and is_datetime and aware == zoned:
        text = dialect.quote_string(value.isoformat(sep=" "))
        return f"CAST({text} AS TIMESTAMP WITH TIME ZONE)" if zoned else f"TIMESTAMP {text}"
    kind = "a datetime with a time zone" if aware else f"a {type(value).__name__}"
    raise ConventionError(
        f"baseline={value!r} is {kind}, but the by column {column!r} is {column_type}; give a "
        "datetime.date for a DATE column, a datetime for a TIMESTAMP (with a time zone for a "
        "TIMESTAMP WITH TIME ZONE)"
    )
