"""Exact sums in two forms (sql/exact_sum.sql.j2): the fast one, whose scale is fixed per call
site, gives NaN for a group whose terms fall outside its window; the statement then runs again
in the wide form, whose scale follows each group's largest term. Ordinary data runs once.

The terms of the per-user sums and of the means are computed once per row, in subqueries of
their own (SumTerms, with_terms in sql/exact_sum.sql.j2): the fast form reads a term several
times, and a statement that spelled each term out each time would be several times longer,
and slower to plan and to run.

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

from .templates import held_text


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


class SumTerms:
    """The terms of the exact sums of one aggregate, collected while evaluate.sql.j2 renders
    it: between open() and close(), exact_sum(term, bound) reads the columns numbered
    column(term, bound) that with_terms() adds to the aggregate's input (the same term and
    bound, the same columns), instead of the term itself.

    >>> terms = SumTerms()
    >>> terms.open(), terms.column("_gain * 2", 26), terms.column("_p", 1), terms.column("_gain * 2", 26)
    ('', 0, 1, 0)
    >>> terms.close(), terms.collecting()
    ([('_gain * 2', 26), ('_p', 1)], False)
    """

    def __init__(self) -> None:
        self._terms: list[tuple[str, int]] | None = None
        # each term's column, by what it reads as: a lookup per call (a list's `in` and
        # index() made rendering quadratic in the number of metrics)
        self._keys: dict[tuple[str, int], int] = {}

    def open(self) -> str:
        self._terms, self._keys = [], {}
        return ""

    def collecting(self) -> bool:
        return self._terms is not None

    def column(self, term: str, bound: int) -> int:
        assert self._terms is not None
        key = (held_text(term), bound)  # (what the term will read as: the same SQL, one column)
        if key not in self._keys:
            self._keys[key] = len(self._terms)
            self._terms.append((term, bound))
        return self._keys[key]

    def close(self) -> list[tuple[str, int]]:
        terms, self._terms = self._terms or [], None
        return terms
