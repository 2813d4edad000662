"""Quoting for identifiers and string literals. Every name or text that reaches SQL passes
through here, so that a table or column name can never be read as SQL."""

from __future__ import annotations

from ..errors import ConventionError, UnknownTableError


def quote_identifier(name: str) -> str:
    """'my col' -> "my col" (a double quote inside is doubled)."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise UnknownTableError(f"not a valid name: {name!r}")
    return '"' + name.replace('"', '""') + '"'


def quote_string(text: str) -> str:
    """O'Brien -> 'O''Brien' (DuckDB strings have no backslash escapes)."""
    if "\x00" in text:
        raise ConventionError(f"text with a NUL character cannot be a SQL literal: {text!r}")
    return "'" + text.replace("'", "''") + "'"


def quote_table_name(name: str) -> str:
    """'events' -> "events"; 'warehouse.main.events' -> "warehouse"."main"."events".

    A dot separates catalog, schema and table; each part is quoted on its own, so nothing in
    the name can end the identifier."""
    parts = name.split(".")
    if len(parts) > 3 or not all(parts):
        raise UnknownTableError(
            f"{name!r} is not a table name (expected table, schema.table or db.schema.table)"
        )
    return ".".join(quote_identifier(p) for p in parts)  # as given: " x" is not "x"
