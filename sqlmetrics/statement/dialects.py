"""The SQL dialects sqlmetrics renders: how each quotes names and text, and which template
renders the metrics there.

DuckDB runs sql/evaluate.sql.j2, the fast path (top-k aggregates, list expressions per user).
Every other engine runs sql/dialects/portable/evaluate.sql.j2: the same formulas over window
functions, joins and plain aggregates, with the few engine-specific spellings (types, log2,
how a query fails, text order) in one small macro file per engine, sql/dialects/<name>.sql.j2.

>>> spark = get("spark")
>>> spark.quote_identifier("ndcg@10"), spark.quote_string("it's")
('`ndcg@10`', "'it\\\\'s'")
>>> get("postgres").quote_table_name("analytics.recs")
'"analytics"."recs"'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ConventionError, SqlMetricsError, UnknownTableError, UnsupportedError

ENGINES = ("duckdb", "spark", "postgres")  # dialects that evaluate() runs
NAMES = ("duckdb", "spark", "postgres", "bigquery", "snowflake")  # dialects that sql() renders


@dataclass(frozen=True)
class Dialect:
    name: str
    identifier_quote: str  # '"' or '`'; a quote inside a name is doubled
    backslash_escapes: bool  # string literals read backslash escapes (Spark, BigQuery, Snowflake)
    max_name_parts: int = 3  # catalog.schema.table
    # BigQuery: quoted names read the escapes of string literals too (a backtick is \`, not
    # doubled), and neither may hold a raw line break
    escaped_names: bool = False
    # BigQuery: a "." inside a quoted name is a path (`a.b` is field b of a), so no column can
    # be named iprec_at_recall_0.50 (result_name() writes the metric's column with "_")
    dotted_names: bool = True

    @property
    def template(self) -> str:
        """The entry template that renders evaluate() for this dialect."""
        return "evaluate.sql.j2"

    def quote_identifier(self, name: str) -> str:
        """A column or table name as a quoted identifier: nothing in it can end the name."""
        if not isinstance(name, str) or not name or "\x00" in name:
            raise UnknownTableError(f"not a valid name: {name!r}")
        if not self.dotted_names and "." in name:
            raise UnsupportedError(
                f"{self.name} names cannot hold a '.' (a quoted a.b is a path): {name!r}"
            )
        q = self.identifier_quote
        if self.escaped_names:
            return q + _backslash_escaped(name, q) + q
        return q + name.replace(q, q + q) + q

    def result_name(self, label: str) -> str:
        """The result column of a metric requested as `label`: the label as typed, except in a
        dialect whose names cannot hold a "." (BigQuery), where each "." becomes "_"
        (iprec_at_recall_0.50 -> iprec_at_recall_0_50, set_F_0.5 -> set_F_0_5).

        >>> get("bigquery").result_name("iprec_at_recall_0.50"), get("spark").result_name("P.5")
        ('iprec_at_recall_0_50', 'P.5')
        """
        return label if self.dotted_names else label.replace(".", "_")

    def quote_string(self, text: str) -> str:
        """Text as a string literal of this dialect."""
        if "\x00" in text:
            raise ConventionError(f"text with a NUL character cannot be a SQL literal: {text!r}")
        if self.escaped_names:
            return "'" + _backslash_escaped(text, "'") + "'"
        if self.backslash_escapes:
            return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + text.replace("'", "''") + "'"

    def quote_table_name(self, name: str) -> str:
        """'events' -> one quoted name; 'schema.table' -> each part quoted on its own."""
        parts = name.split(".")
        if len(parts) > self.max_name_parts or not all(parts):
            raise UnknownTableError(
                f"{name!r} is not a table name (expected table, schema.table or catalog.schema.table)"
            )
        return ".".join(self.quote_identifier(p) for p in parts)  # as given: " x" is not "x"


# BigQuery's named escapes of control characters (a raw line break ends a quoted token there)
_CONTROL_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def _backslash_escaped(text: str, quote: str) -> str:
    """`text` between `quote`s of a dialect whose quoted tokens read backslash escapes."""
    table = {"\\": "\\\\", quote: "\\" + quote, **_CONTROL_ESCAPES}
    return text.translate(str.maketrans(table))


DIALECTS = {
    "duckdb": Dialect("duckdb", '"', False),
    "spark": Dialect("spark", "`", True),
    "postgres": Dialect("postgres", '"', False),
    "bigquery": Dialect("bigquery", "`", True, escaped_names=True, dotted_names=False),
    "snowflake": Dialect("snowflake", '"', True),
}


def get(name: str) -> Dialect:
    """The dialect called `name`; an unknown one raises SqlMetricsError naming the known ones."""
    if not isinstance(name, str) or name.lower() not in DIALECTS:
        known = ", ".join(repr(n) for n in NAMES)
        raise SqlMetricsError(f"dialect={name!r} is not one of {known}")
    return DIALECTS[name.lower()]


# ---- column types ------------------------------------------------------------------------------
# The column checks (sqlmetrics/inputs/columns.py) speak DuckDB's type names; the other engines'
# names are translated to them (only what the checks look at: numeric, float, text, bool).

_SIMPLE = {
    # integers
    "tinyint": "TINYINT", "byte": "TINYINT",
    "smallint": "SMALLINT", "short": "SMALLINT", "int2": "SMALLINT", "int16": "SMALLINT",
    "integer": "INTEGER", "int": "INTEGER", "int4": "INTEGER", "int32": "INTEGER", "serial": "INTEGER",
    "bigint": "BIGINT", "long": "BIGINT", "int8": "BIGINT", "int64": "BIGINT", "bigserial": "BIGINT",
    "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT",
    # floats (BigQuery's FLOAT64 and Snowflake's FLOAT are 64-bit)
    "double": "DOUBLE", "double precision": "DOUBLE", "float8": "DOUBLE", "float64": "DOUBLE",
    "real": "FLOAT", "float4": "FLOAT", "float32": "FLOAT", "float": "FLOAT", "halffloat": "FLOAT",
    "float16": "FLOAT",
    # text
    "string": "VARCHAR", "text": "VARCHAR", "varchar": "VARCHAR", "character varying": "VARCHAR",
    "char": "VARCHAR", "character": "VARCHAR", "bpchar": "VARCHAR", "large_string": "VARCHAR",
    "utf8": "VARCHAR", "large_utf8": "VARCHAR", "string_view": "VARCHAR", "name": "VARCHAR",
    # others the inputs may hold
    "boolean": "BOOLEAN", "bool": "BOOLEAN",
    "date": "DATE", "date32": "DATE", "date32[day]": "DATE",
    "timestamp": "TIMESTAMP", "timestamp without time zone": "TIMESTAMP",
    "timestamptz": "TIMESTAMP WITH TIME ZONE", "timestamp with time zone": "TIMESTAMP WITH TIME ZONE",
    "numeric": "DOUBLE", "decimal": "DOUBLE", "number": "DOUBLE", "bignumeric": "DOUBLE",
}
_DECIMAL = re.compile(r"^(?:decimal|numeric|number|decimal128|decimal256)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_ARRAY = re.compile(r"^(?:array<(.+)>|(.+)\[\d*\]|_([a-z0-9]+))$")
_SIZED_TEXT = re.compile(r"^(?:varchar|character varying|char|character|string)\s*\(\s*\d+\s*\)$")


def normalize_type(type_name: str) -> str:
    """An engine's type name in DuckDB's words: 'bigint' -> 'BIGINT', 'string' -> 'VARCHAR',
    'decimal(10,2)' -> 'DECIMAL(10,2)'; an unconstrained NUMERIC (which may hold NaN) is read
    as DOUBLE. Names it does not know are returned upper-cased.

    >>> [normalize_type(t) for t in ("bigint", "string", "double precision", "decimal(10, 2)")]
    ['BIGINT', 'VARCHAR', 'DOUBLE', 'DECIMAL(10,2)']
    >>> [normalize_type(t) for t in ("array<float>", "_float8", "double precision[]")]
    ['FLOAT[]', 'DOUBLE[]', 'DOUBLE[]']
    """
    text = " ".join(type_name.strip().lower().split())
    # arrays (item_features= vectors): Spark's array<double>, PostgreSQL's float8[] or _float8
    array = _ARRAY.match(text)
    if array:
        return normalize_type(next(g for g in array.groups() if g is not None)) + "[]"
    if text.startswith("timestamp[") or text.startswith("timestamp("):
        return "TIMESTAMP"
    match = _DECIMAL.match(text)
    if match:
        return f"DECIMAL({match.group(1)},{match.group(2)})"
    if _SIZED_TEXT.match(text):
        return "VARCHAR"
    if text in _SIMPLE:
        return _SIMPLE[text]
    return type_name.strip().upper()


def arrow_type_name(arrow_type) -> str:
    """A pyarrow type in DuckDB's words (Arrow's int8 is a TINYINT, PostgreSQL's a BIGINT).

    >>> import pyarrow as pa
    >>> [arrow_type_name(t) for t in (pa.int64(), pa.large_string(), pa.float32(), pa.decimal128(10, 2))]
    ['BIGINT', 'VARCHAR', 'FLOAT', 'DECIMAL(10,2)']
    """
    import pyarrow as pa

    t = arrow_type
    if isinstance(t, pa.ExtensionType):
        t = t.storage_type
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return arrow_type_name(t.value_type) + "[]"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP WITH TIME ZONE" if t.tz else "TIMESTAMP"
    if pa.types.is_dictionary(t):
        return arrow_type_name(t.value_type)
    names = {
        "int8": "TINYINT", "int16": "SMALLINT", "int32": "INTEGER", "int64": "BIGINT",
        "uint8": "UTINYINT", "uint16": "USMALLINT", "uint32": "UINTEGER", "uint64": "UBIGINT",
        "halffloat": "FLOAT", "float": "FLOAT", "double": "DOUBLE", "bool": "BOOLEAN",
        "string": "VARCHAR", "large_string": "VARCHAR", "string_view": "VARCHAR",
        "date32[day]": "DATE", "date64[ms]": "DATE",
    }
    return names.get(str(t), str(t).upper())


def from_item(source, dialect: str) -> str:
    """The FROM item that reads `source` in `dialect`: its table name quoted that way, or a
    file reader where the dialect has one (DuckDB's read_parquet, Spark's parquet.`path`).
    Inputs that exist only in this process (frames) cannot be named in text for elsewhere."""
    d = get(dialect)
    if source.table is not None:
        return d.quote_table_name(source.table)
    if source.path is not None:
        lowered = source.path.lower()
        parquet = not lowered.endswith((".csv", ".tsv", ".csv.gz", ".tsv.gz", ".txt"))
        if d.name == "duckdb":
            reader = "read_parquet" if parquet else "read_csv"
            return f"{reader}({d.quote_string(source.path)})"
        if d.name == "spark" and parquet:
            return "parquet." + d.quote_identifier(source.path)
        raise SqlMetricsError(
            f"{source.label}: {d.name} SQL cannot read a file by its path; load it into a table "
            "and pass the table's name"
        )
    raise SqlMetricsError(
        f"sql() returns text to run elsewhere, but {source.label} exists only in this Python "
        "process; write it to a table (or a Parquet file) and pass its name"
    )
