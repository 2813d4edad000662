"""Evaluating users in hash partitions: one statement per partition, then one that combines them.

DuckDB keeps the per-user state of a top-n aggregate in memory (it does not spill), so a log
with more users than memory_limit can hold is evaluated N slices of users at a time. Each
statement reads every input but keeps only the users whose hash falls in its partition
(sql/inputs/partition.sql.j2), and returns per group the user count and each metric's per-user
values as a list, into a temporary table of the caller's connection (the engine's keep(),
dropped by its release()); the combining statement (sql/partitions/combine.sql.j2) reads it,
sums the lists exactly and divides, so the means are bit for bit those of one statement.

A partition holds a share of the users, so more partitions than users only repeat the reads:
`--partitions` above the number of users is refused by the command line, and the API refuses
it above ALWAYS_COUNTED partitions (below, a few empty partitions are harmless, and counting
the users costs a read of the inputs). Above MAX_PARTITIONS, partitions are refused: each one
costs a statement."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from ..errors import ConventionError, UnsupportedError
from .progress import Progress
from .templates import render

# Each partition is a statement of its own that reads every input again: about 45 ms of fixed
# cost each even on a small log (5,000 partitions ran past 120 s), and a few are enough for logs
# far larger than memory (1B rows: 10 under memory_limit='4GB', docs/performance.md)
MAX_PARTITIONS = 1_000


def check(partitions: Any, dialect: str, context: dict[str, Any]) -> int:
    """partitions, validated against what the statement would compute.

    >>> check(5_000, "duckdb", {"beyond": None})
    Traceback (most recent call last):
    ...
    sqlmetrics.errors.ConventionError: partitions=5000 is more than 1,000, the most taken: ...
    """
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise ConventionError(f"partitions must be a whole number >= 1, got {partitions!r}")
    if partitions > MAX_PARTITIONS:
        raise ConventionError(
            f"partitions={partitions} is more than {MAX_PARTITIONS:,}, the most taken: each "
            "partition is one more statement that reads every input again, and a few are enough "
            "for logs far larger than memory (1B rows: 10 under memory_limit='4GB')"
        )
    if partitions > 1 and dialect != "duckdb":
        raise UnsupportedError(
            f"partitions={partitions} runs on DuckDB only; {dialect} spills its own aggregates"
        )
    if partitions > 1 and context["beyond"] is not None:
        raise UnsupportedError(
            "the beyond-accuracy metrics look at every user's list together (coverage, "
            "personalization, popularity counts); evaluate them without partitions"
        )
    contexts = [part["context"] for part in context.get("parts", [])] or [context]
    texts = [m["name"] for c in contexts for m in c.get("metrics", []) if m["aggregate"] == "none"]
    if partitions > 1 and texts and not context["per_user"]:
        raise UnsupportedError(
            f"{', '.join(texts)} is a text per user with no group value; with partitions, ask "
            "it per_user=True or without it"
        )
    return partitions


ALWAYS_COUNTED = 100  # the API counts the users (one more read) only above this many partitions


def units_sql(
    recs: dict[str, Any], truth: dict[str, Any] | None, hash_casts: list[str | None]
) -> str:
    """The statement that counts the distinct units (users) of the inputs: recs and truth are
    {"source": FROM item, "unit": [quoted key columns]}; hash_casts, one per key column."""
    return render(
        "partitions/units.sql.j2", {"recs": recs, "truth": truth, "hash_casts": hash_casts}
    )


def check_units(partitions: int, units: int, option: str = "partitions") -> None:
    """Refuse more partitions than users: the extra ones would be empty, each one more read.
    (The message goes on: each partition is a slice of the users, so at most 3.)

    >>> check_units(4, 3, "--partitions")
    Traceback (most recent call last):
    ...
    sqlmetrics.errors.ConventionError: --partitions 4 is more than the 3 users of the inputs ...
    """
    if partitions > max(units, 1):
        sep = " " if option.startswith("-") else "="
        raise ConventionError(
            f"{option}{sep}{partitions} is more than the {units:,} users of the inputs (each "
            f"partition is a slice of the users, so at most {max(units, 1):,})"
        )


# What one statement holds, measured with benchmarks/memory_per_user.py (DuckDB 2.0, 2 threads,
# 300,000 users x 100 Parquet rows; the table is in benchmarks/README.md): a fixed part, whatever
# the users, and per user a part that grows with the list it keeps: the top k (a bounded heap,
# k < the user's rows: up to ~67 bytes an item measured) or the whole list (k >= the rows, or a
# metric without k: up to ~200 bytes an item). The figures below are those bounds rounded up.
FIXED_BYTES = 100 * 10**6
BYTES_PER_TOP_K_ITEM = 80
BYTES_PER_WHOLE_LIST_ITEM = 220
MARGIN = 1.5  # other thread counts, other data: leave room rather than fail again


def suggest_partitions(units: int, list_length: int, memory_limit: int, whole_lists: bool) -> int | None:
    """The partitions N whose slices of `units` users fit in `memory_limit` bytes when each
    user keeps a list of `list_length` items (its top k, or its whole list); None when not even
    one user per statement fits (then the memory limit must grow).

    >>> suggest_partitions(300_000, 100, 500 * 10**6, whole_lists=True)
    25
    >>> suggest_partitions(300_000, 10, 200 * 10**6, whole_lists=False)
    4
    >>> suggest_partitions(1000, 10, 10 * 10**6, whole_lists=False) is None
    True
    """
    room = memory_limit - FIXED_BYTES
    if room <= 0:
        return None
    per_item = BYTES_PER_WHOLE_LIST_ITEM if whole_lists else BYTES_PER_TOP_K_ITEM
    partitions = max(1, math.ceil(MARGIN * units * per_item * max(list_length, 1) / room))
    return partitions if partitions <= max(units, 1) else None


def evaluate_in_partitions(
    engine: Any, template: str, context: dict[str, Any], partitions: int, progress: bool
) -> pa.Table:
    """Run the statement once per partition of the users, then combine the partial results."""
    return engine.run(combining_sql(engine, template, context, partitions, progress))


def combining_sql(
    engine: Any, template: str, context: dict[str, Any], partitions: int, progress: bool
) -> str:
    """Run the statement once per partition of the users; the statement that combines their
    partial results (which compare() embeds, with per_user=True, where the one statement
    would stand)."""
    if partitions > ALWAYS_COUNTED:
        truth = context["truth"]
        sql = units_sql(
            {"source": context["recs"]["source"], "unit": context["recs"]["unit"]},
            {"source": truth["source"], "unit": [u["column"] for u in truth["unit"]]} if truth else None,
            [u["hash_cast"] for u in context["unit"]],
        )
        check_units(partitions, engine.run(sql).column("units")[0].as_py())
    bar = Progress(partitions, "sqlmetrics partitions") if progress else None
    table = None
    for index in range(partitions):
        label = f"partition {index + 1}"
        if bar:
            bar.start(label)
        sql = render(template, {**context, "partition": {"count": partitions, "index": index}})
        # (the partial results stay in DuckDB, in a temporary table of the caller's connection
        # that the engine's release() drops: per-user values held in Python as Arrow between
        # the statements, 514 MB at 10M users, came on top of DuckDB's memory_limit)
        table, rows = engine.keep(sql.rstrip().rstrip(";"), table)
        if bar:
            bar.finish(label, f"{rows} rows")
    if bar:
        bar.close()
    return render("partitions/combine.sql.j2", {**context, "partials": table})
