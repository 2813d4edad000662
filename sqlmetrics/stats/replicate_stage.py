"""compare()'s replicate tests on DuckDB, in two stages: the per-unit values are evaluated on
the caller's connection, then compared, replicates and all, on a private in-memory DuckDB
connection, in batches of comparisons (sql/compare/batch.sql.j2).

Why: the replicate stage keeps rows per (comparison, replicate) (the bootstrap) or per
(comparison, replicate block, hash byte) (the randomization test), so its memory grows with the
comparisons of one statement x the replicates, which partitions=N (a bound on the evaluation of
the users) does not touch: 1,000 systems x 10,000 replicates ran out of memory under 1 GB, and
DuckDB spilled tens of GB into ./.tmp meanwhile. The batches keep each statement's rows under a
share of the memory limit; the private connection has the caller's threads, the memory its
limit leaves beside what the caller's connection holds (memory_share), and a temporary
directory of its own, under the system's temp (TMPDIR), with a size bound, removed
when the call ends (DuckDB cannot move a connection's temporary directory once it has been used,
so the caller's connection is left as it was).
"""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import duckdb
import pyarrow as pa

from ..engines.duckdb import DuckDBEngine
from ..errors import OutOfMemoryError
from ..statement.templates import render

# rows of the replicate stage per statement: at most the memory limit over this many bytes
# (measured: the randomization test of 200 systems x 300 users x 2,000 replicates, 12.8M rows in
# one statement, ran out of memory under 100 MB with partitions=4; in batches of 1M rows it fits)
BYTES_PER_ROW = 100
TEMP_PER_MEMORY = 10  # the temporary directory's bound: this many times the memory limit
_BYTES = {"b": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip


def size_setting(con: duckdb.DuckDBPyConnection, name: str) -> int | None:
    """A size setting of DuckDB (memory_limit reads '476.8 MiB') in bytes, or None.

    >>> con = duckdb.connect()
    >>> _ = con.execute("SET memory_limit = '300MB'")
    >>> size_setting(con, "memory_limit") // 2**20
    286
    """
    text = str(con.execute(f"SELECT current_setting('{name}')").fetchall()[0][0])
    match = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]+)\s*", text)
    if not match or match.group(2).lower() not in _BYTES:
        return None
    return math.ceil(float(match.group(1)) * _BYTES[match.group(2).lower()])


def rows_per_comparison(test: str, replicates: int, metrics: int, units: float) -> int:
    """The replicate stage's rows of one comparison: the bootstrap's replicate sums (a row per
    replicate and metric, then ranked); the randomization test's byte sums (a row per block of
    32 replicates, byte of the hash and byte value present among the units, per metric).

    >>> rows_per_comparison("bootstrap", 10_000, 2, 1000)
    20000
    >>> rows_per_comparison("randomization", 10_000, 1, 1000)
    320512
    """
    if test == "bootstrap":
        return replicates * metrics
    return math.ceil(replicates / 32) * 4 * min(256, max(1, math.ceil(units))) * metrics


def batch_count(comparisons: int, rows: int, memory_limit: int | None) -> int:
    """How many batches (a power of two) keep each statement's rows under the memory limit's
    share: comparisons x rows per comparison, at most memory_limit / BYTES_PER_ROW per batch.

    >>> batch_count(1000, 320_000, 10**9), batch_count(2, 20_000, 10**9), batch_count(5, 10, None)
    (32, 1, 1)
    """
    if memory_limit is None or comparisons <= 1:
        return 1
    budget = max(1, memory_limit // BYTES_PER_ROW)
    needed = math.ceil(comparisons * rows / budget)
    count = 1
    while count < needed and count < comparisons:
        count *= 2
    return count


def memory_share(con: duckdb.DuckDBPyConnection, held: int = 0) -> int | None:
    """The memory limit of the private connection: what `con`'s memory limit leaves beside what
    its buffer pool holds now (its tables, cached blocks, kept partial results) and `held` bytes
    of Arrow the private connection reads, at least MIN_SHARE of it; None without a limit. Both
    connections live in one process: with the whole limit each, the paired bootstrap at 1M
    units peaked at 2,188 MB under memory_limit 1500MB (1,694 MB before the private one).

    >>> con = duckdb.connect()
    >>> _ = con.execute("SET memory_limit = '400MB'")
    >>> memory_share(con, held=10**9) // 10**6  # (the floor: a quarter of 400MB, read as 381.4 MiB)
    99
    """
    memory = size_setting(con, "memory_limit")
    if memory is None:
        return None
    used = con.execute("SELECT sum(memory_usage_bytes) FROM duckdb_memory()").fetchall()[0][0] or 0
    return max(memory - int(used) - held, int(memory * MIN_SHARE))


MIN_SHARE = 0.25  # the private connection's memory limit: at least this share of the caller's


@contextmanager
def private_connection(
    con: duckdb.DuckDBPyConnection, held: int = 0
) -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB connection with `con`'s threads and time zone, a share of its memory
    limit (memory_share: `held` bytes of Arrow read from Python), and a temporary directory of
    its own, bounded (TEMP_PER_MEMORY x the memory limit, at most 90% of the free space there)
    and removed, with its files, when the block ends."""
    memory = memory_share(con, held)
    threads = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
    directory = tempfile.mkdtemp(prefix="sqlmetrics-compare-")
    try:
        bound = int(shutil.disk_usage(directory).free * 0.9)
        if memory is not None:
            bound = min(bound, TEMP_PER_MEMORY * memory)
        config = {"temp_directory": directory, "threads": threads,
                  "max_temp_directory_size": f"{max(bound, 2**20) // 2**20}MiB"}  # fmt: skip
        if memory is not None:
            config["memory_limit"] = f"{max(memory, 2**20)}B"
        private = duckdb.connect(config=config)
        try:
            try:  # (a unit key of TIMESTAMPTZ hashes as its text, which the time zone writes)
                zone = con.execute("SELECT current_setting('TimeZone')").fetchall()[0][0]
                private.execute("SET TimeZone = $1", [zone])
            except duckdb.Error:  # no time zones here (the icu extension is not loaded)
                pass
            yield private
        finally:
            private.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def compare_in_batches(
    con: duckdb.DuckDBPyConnection,
    values: pa.Table,
    context: dict[str, Any],
    run: Callable[[Callable[[str], pa.Table]], pa.Table],
    statement: Callable[[str, str], str],
) -> pa.Table:
    """The comparison of the per-unit `values` (evaluate(per_user=True)'s table) on a private
    connection, one statement per batch. context: compare.sql.j2's (systems, within, test,
    replicates, metrics); run(attempt): runs attempt(form) in the call's form of the exact sums;
    statement(form, per_user_sql): the comparison's text. Rows in the one statement's order."""
    with private_connection(con, values.nbytes) as private:
        engine = DuckDBEngine(private)
        try:
            source = engine.resolve(values, "per_user").sql
            names = ", ".join(c["name"] for c in context["within"] + context["systems"])
            counted = engine.run(f"SELECT count(*) AS n FROM (SELECT DISTINCT {names} FROM {source}) AS _c")
            comparisons = counted.column("n")[0].as_py()
            units = values.num_rows / max(comparisons, 1)
            rows = rows_per_comparison(context["test"], context["replicates"], len(context["metrics"]), units)
            count = batch_count(comparisons, rows, size_setting(private, "memory_limit"))
            parts = []
            for index in range(count):
                batch = {"count": count, "index": index}
                text = render("compare/batch.sql.j2", {**context, "source": source, "batch": batch})
                try:
                    parts.append(run(lambda form, text=text: engine.run(statement(form, text))))
                except duckdb.OutOfMemoryException as exc:
                    raise _out_of_memory(exc, comparisons, count, context) from None
        finally:
            engine.release()
    result = pa.concat_tables(parts)
    if count == 1:
        return result
    keys = ["_row_kind"] + [c["alias"] for c in context["within"] + context["systems"]] + ["_k"]
    return result.sort_by([(k, "ascending", "at_end") for k in keys])


def _out_of_memory(
    exc: BaseException, comparisons: int, batches: int, context: dict[str, Any]
) -> OutOfMemoryError:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return OutOfMemoryError(
        f"DuckDB ran out of memory in the replicates of test={context['test']!r} ({first}), "
        f"{comparisons} comparisons in {batches} batch(es) of {context['replicates']:,} replicates: "
        "partitions=N does not bound this stage (it slices the evaluation of the users); fewer "
        "replicates, fewer systems or segments per call, or a larger memory_limit do"
    )
