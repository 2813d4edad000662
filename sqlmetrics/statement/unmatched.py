"""Units of recs that never match truth's (`U1` against `u1`): evaluate() finds nothing to
average and would return users = 0 without a word. Only when its result shows no unit, one
small statement (sql/inputs/unmatched_units.sql.j2) counts both sides' units and those they
share, and names an example of each; the normal path reads nothing more."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..inputs import columns as col
from ..inputs.sources import Source
from .dialects import get as get_dialect
from .plan import unit_columns
from .templates import render


def evaluated_nothing(table: pa.Table) -> bool:
    """Whether an evaluate() result averages no unit: no row, or every `users` count 0."""
    if table.num_rows == 0:
        return True
    if "users" not in table.column_names:
        return False
    return pc.max(table.column("users")).as_py() == 0


def unmatched_message(
    engine: Any, dialect: str, recs: Source, truth: Source, user: str | Sequence[str]
) -> str | None:
    """The warning's text when recs and truth both have units and share none, else None."""
    sql_dialect = get_dialect(dialect)
    keys = unit_columns(user)
    recs_keys = [col.find_column(recs, name, "recs", "user") for name in keys]
    truth_keys = [col.find_column(truth, name, "truth", "user") for name in keys]
    context = {
        "dialect": sql_dialect.name,
        "literal": sql_dialect.quote_string,
        "unit": [{"alias": "_user" if i == 0 else f"_u{i}"} for i in range(len(keys))],
        "recs": {"source": recs.sql, "unit": [sql_dialect.quote_identifier(c) for c in recs_keys]},
        "truth": {"source": truth.sql, "unit": [sql_dialect.quote_identifier(c) for c in truth_keys]},
    }
    row = engine.run(render("inputs/unmatched_units.sql.j2", context)).to_pylist()[0]
    if row["matched"] or not row["recs_units"] or not row["truth_units"]:
        return None
    what = "users" if len(keys) == 1 else f"units ({', '.join(recs_keys)})"

    def example(columns: list[str], text: str) -> str:
        if len(columns) == 1:
            return f"{columns[0]} = {text!r}"
        return f"({', '.join(columns)}) = ({text})"

    return (
        f"no unit of recs ({recs.label}) is in truth ({truth.label}), so nothing was evaluated "
        f"(users = 0): recs has {row['recs_units']:,} {what} (e.g. "
        f"{example(recs_keys, row['recs_example'])}), truth has {row['truth_units']:,} (e.g. "
        f"{example(truth_keys, row['truth_example'])}), none in common; compare how the ids are "
        "written (case, spaces, a prefix, a number stored as text)"
    )
