"""Evaluating users in hash partitions: one statement per partition, then one that combines them.

DuckDB keeps the per-user state of a top-n aggregate in memory (it does not spill), so a log
with more users than memory_limit can hold is evaluated N slices of users at a time. Each
statement reads every input but keeps only the users whose hash falls in its partition
(sql/inputs/partition.sql.j2), and returns exact DECIMAL sums and user counts per group; the
combining statement (sql/partitions/combine.sql.j2) adds them and divides, so the means are
bit for bit those of one statement."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .errors import ConventionError, UnsupportedError
from .progress import Progress
from .templates import render


def check(partitions: Any, dialect: str, context: dict[str, Any]) -> int:
    """partitions, validated against what the statement would compute."""
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ConventionError(f"partitions must be a whole number >= 1, got {partitions!r}")
    if partitions > 1 and dialect != "duckdb":
        raise UnsupportedError(
            f"partitions={partitions} runs on DuckDB only; {dialect} spills its own aggregates"
        )
    if partitions > 1 and context["beyond"] is not None:
        raise UnsupportedError(
            "the beyond-accuracy metrics look at every user's list together (coverage, "
            "personalization, popularity counts); evaluate them without partitions"
        )
    return partitions


def evaluate_in_partitions(
    engine: Any, template: str, context: dict[str, Any], partitions: int, progress: bool
) -> pa.Table:
    """Run the statement once per partition of the users, then combine the partial results."""
    bar = Progress(partitions, "sqlmetrics partitions") if progress else None
    partials = []
    for index in range(partitions):
        label = f"partition {index + 1}"
        if bar:
            bar.start(label)
        partial = engine.run(
            render(template, {**context, "partition": {"count": partitions, "index": index}})
        )
        partials.append(partial)
        if bar:
            bar.finish(label, f"{partial.num_rows} rows")
    if bar:
        bar.close()
    combined = engine.resolve(pa.concat_tables(partials), "partials")
    return engine.run(render("partitions/combine.sql.j2", {**context, "partials": combined.sql}))
