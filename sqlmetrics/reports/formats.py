"""Writing an Arrow table as a readable text table, CSV, JSON or Parquet."""

from __future__ import annotations

import io
import json
import math
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from ..errors import SqlMetricsError

FORMATS = ("table", "csv", "json", "parquet")
_SUFFIXES = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet", ".txt": "table"}


def counted(count: int, noun: str) -> str:
    """`count` and `noun`, plural unless the count is one.

    >>> counted(1, "period"), counted(3, "period"), counted(1_000, "row")
    ('1 period', '3 periods', '1,000 rows')
    """
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def format_for(output: str | None, requested: str | None) -> str:
    """The output format: as requested, else from the output file's suffix, else 'table'.

    >>> format_for("out.parquet", None), format_for(None, None), format_for("x.csv", "json")
    ('parquet', 'table', 'json')
    """
    if requested:
        return requested
    if output:
        return _SUFFIXES.get(Path(output).suffix.lower(), "table")
    return "table"


SMALLEST_P = 1e-300  # smaller p-values (down to 0, where the tail underflowed) print as "< 1e-300"


def p_text(p: float | None, form: str = ".3g") -> str:
    """A p-value as text: "" for None, "< 1e-300" below SMALLEST_P (a p of 0 is an underflow,
    not a certainty), else in `form`.

    >>> p_text(0.0123), p_text(0.0), p_text(1e-320), p_text(2.5e-12, ".3e"), p_text(None)
    ('0.0123', '< 1e-300', '< 1e-300', '2.500e-12', '')
    """
    if p is None:
        return ""
    if p < SMALLEST_P:
        return f"< {SMALLEST_P:g}"
    return format(p, form)


def cell_text(value: object, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.{digits}f}"
    if isinstance(value, (list, tuple)) and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return ", ".join(f"{k}={v}" for k, v in value)  # a MAP
    return str(value)


def text_table(table: pa.Table, digits: int = 4) -> str:
    """A plain-text table, numbers right-aligned, floats with `digits` decimals.

    >>> import pyarrow as pa
    >>> print(text_table(pa.table({"model": ["A", "B"], "users": [3, 12], "ndcg@10": [0.5, 0.25]})))
    model  users  ndcg@10
    -----  -----  -------
    A          3   0.5000
    B         12   0.2500
    """
    names = table.column_names
    rows = [[cell_text(v, digits) for v in row.values()] for row in table.to_pylist()]
    numeric = [
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        for t in table.schema.types
    ]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]

    def line(cells: list[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line(names), line(["-" * w for w in widths])] + [line(r) for r in rows]
    if not rows:
        out.append("(no rows)")
    return "\n".join(out)


def _json_value(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list) and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return dict(value)
    return value


def json_lines(table: pa.Table) -> str:
    """A JSON array, one object per row on its own line.

    >>> import pyarrow as pa
    >>> print(json_lines(pa.table({"users": [3], "ndcg@10": [0.5]})))
    [
    {"users": 3, "ndcg@10": 0.5}
    ]
    """
    rows = [
        json.dumps({k: _json_value(v) for k, v in row.items()}, ensure_ascii=False)
        for row in table.to_pylist()
    ]
    return "[\n" + ",\n".join(rows) + ("\n" if rows else "") + "]"


def write(table: pa.Table, fmt: str, output: str | None = None, stdout: BinaryIO | None = None) -> None:
    """Write `table` in `fmt` to the file `output`, or to stdout (Parquet needs a file)."""
    if fmt not in FORMATS:
        raise SqlMetricsError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt == "parquet":
        if not output:
            raise SqlMetricsError("--format parquet needs --output PATH (Parquet is not for a terminal)")
        pq.write_table(table, output)
        return
    if fmt == "csv":
        buffer = io.BytesIO()
        pa_csv.write_csv(_csv_ready(table), buffer)
        data = buffer.getvalue()
    else:
        text = text_table(table) if fmt == "table" else json_lines(table)
        data = (text + "\n").encode()
    if output:
        Path(output).write_bytes(data)
    else:
        target = stdout or sys.stdout.buffer
        target.write(data)
        target.flush()


def _csv_ready(table: pa.Table) -> pa.Table:
    """CSV has no maps or lists: such columns are written as their text."""
    columns = []
    for column in table.columns:
        if pa.types.is_nested(column.type):
            column = pa.array(
                [None if v is None else cell_text(v, 17) for v in column.to_pylist()], pa.string()
            )
        columns.append(column)
    return pa.table(columns, names=table.column_names)
