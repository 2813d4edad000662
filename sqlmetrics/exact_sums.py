"""Exact sums in two forms (sql/exact_sum.sql.j2): the fast one, whose scale is fixed per call
site, gives NaN for a group whose terms fall outside its window; the statement then runs again
in the wide form, whose scale follows each group's largest term. Ordinary data runs once.

>>> import pyarrow as pa
>>> calls = []
>>> def run(form):
...     calls.append(form)
...     return pa.table({"dcg@3": [float("nan") if form == "fast" else 1.5e20]})
>>> with_exact_sums(run).to_pylist(), calls
([{'dcg@3': 1.5e+20}], ['fast', 'wide'])
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc


def has_nan(table: pa.Table) -> bool:
    """Whether a floating-point column of `table` holds a NaN."""
    return any(
        pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py()
        for column in table.columns
    )


def with_exact_sums(run: Callable[[str], pa.Table]) -> pa.Table:
    """run("fast"); if its result holds a NaN, run("wide") (a NaN the wide form gives too is
    the data's own, as from an infinite grade, and is returned)."""
    result = run("fast")
    return run("wide") if has_nan(result) else result
