"""Scale beyond memory, by hand: 1B recommendation rows (10M users x 100 candidates, Parquet on
disk) evaluated by sqlmetrics under DuckDB's `SET memory_limit='4GB'`.

    python benchmarks/billion.py build                                # once: 6.7 GB of Parquet, ~1 min
    python benchmarks/billion.py run --partitions 16 --memory-limit 4GB --progress
    python benchmarks/billion.py run --partitions 1,8,32 --repeat 2   # a sweep, one line per run
    python benchmarks/billion.py run --floor                          # the score-only floor
    python benchmarks/billion.py run --parts 1                        # the first replica only (100M)

build: benchmarks/data/10000000u100c/ holds 10 replicas of benchmarks/data/1000000u100c (from
generate.py; run `python benchmarks/generate.py --users 1000000` first if it is missing):
replica r is recs.parquet and truth.parquet with user_id + r * 2,000,000, so replicas never
share a user, not even the truth-only extra users (ids 1,000,000 and up), written by DuckDB's
COPY (streaming: memory_limit 4GB, preserve_insertion_order false) to recs/part-<r>.parquet and
truth/part-<r>.parquet. A replica whose file exists is skipped; each part is counted afterwards
(rows, users, id range) and meta.json records the counts and how the data was built.

run: every run is a child process (`billion.py child ...`, hidden) on a fresh DuckDB connection
with `SET memory_limit` and `SET temp_directory` (a folder under benchmarks/data/tmp, removed
afterwards), timing

    sqlmetrics.evaluate(con, "<data>/recs/*.parquet", [ndcg, map, recall, precision, mrr @10],
                        truth="<data>/truth/*.parquet", partitions=N)

from the call to the fetched Arrow table (`--partitions 1`, the default, leaves the keyword
out), or with --floor the score-only floor: `arg_max(item_id, score, 10)` grouped by user_id,
consumed by count(*) and sum(len(top)) so that the optimizer cannot drop the aggregate. An
out-of-memory error (or any other) is reported as that run's result, not raised.

One line per run: partitions, seconds inside the child, its CPU seconds (user + system), the
child's peak RSS in GiB (the kernel's ru_maxrss from wait4: the whole child, failed runs
included; DuckDB's '4GB' is 4 * 10^9 bytes, 3.73 GiB), the most the temp directory held while
it ran (sampled twice a second), the five means and the users evaluated, checked against the
replicas' count (exit status 1 on a failed or wrong run). Every replica is the same data set, so
the means at any --parts equal those of the 1M-user set (`--parts 1`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import fmt_seconds, log, metric_names, peak_rss_mb  # noqa: E402  (benchmarks/run.py)

DATA = os.path.join(HERE, "data")
SOURCE = os.path.join(DATA, "1000000u100c")
BILLION = os.path.join(DATA, "10000000u100c")
TEMP = os.path.join(DATA, "tmp")
REPLICAS = 10
SHIFT = 2_000_000
K = 10
METRICS = metric_names(K)
GiB = 1024**3
SAMPLE_SECONDS = 0.5  # how often the parent measures the child's temp directory

FLOOR_SQL = (
    "SELECT count(*), sum(len(top)) FROM ("
    "SELECT user_id, arg_max(item_id, score, {k}) AS top FROM read_parquet({recs}) GROUP BY user_id)"
)


def quote(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def connect(memory_limit: str | None, temp_directory: str | None = None, threads: int | None = None):
    import duckdb

    con = duckdb.connect()
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit]).fetchall()
    if temp_directory:
        con.execute("SET temp_directory = ?", [temp_directory]).fetchall()
    if threads:
        con.execute(f"SET threads = {int(threads)}").fetchall()
    return con


# --------------------------------------------------------------------------------------------
# build: 10 replicas of the 1M-user data set
# --------------------------------------------------------------------------------------------


def part_path(out: str, table: str, replica: int) -> str:
    return os.path.join(out, table, f"part-{replica}.parquet")


def copy_replica(con, source: str, target: str, offset: int, columns: str) -> bool:
    """Write one shifted replica of `source` to `target`; False if it was already there. The
    file appears under its name only once complete, so an interrupted build is redone."""
    if os.path.exists(target):
        return False
    partial = target + ".partial"
    con.execute(
        f"COPY (SELECT user_id + {int(offset)} AS user_id, {columns} FROM read_parquet({quote(source)})) "
        f"TO {quote(partial)} (FORMAT parquet)"
    ).fetchall()
    os.replace(partial, target)
    return True


def count_part(con, path: str) -> dict:
    """Rows, distinct users and the user id range of one Parquet file."""
    rows, users, low, high = con.execute(
        "SELECT count(*), count(DISTINCT user_id), min(user_id), max(user_id) "
        f"FROM read_parquet({quote(path)})"
    ).fetchall()[0]
    return {"rows": rows, "users": users, "min_user": low, "max_user": high}


def build(args: argparse.Namespace) -> int:
    import duckdb

    recs_source = os.path.join(args.source, "recs.parquet")
    truth_source = os.path.join(args.source, "truth.parquet")
    for path in (recs_source, truth_source):
        if not os.path.exists(path):
            log(f"missing {path}: python benchmarks/generate.py --users 1000000 --out {args.source}")
            return 2
    for table in ("recs", "truth"):
        os.makedirs(os.path.join(args.out, table), exist_ok=True)
    os.makedirs(TEMP, exist_ok=True)
    con = connect(args.memory_limit, TEMP, args.threads)
    con.execute("SET preserve_insertion_order = false").fetchall()

    source_counts = {
        name: count_part(con, path) for name, path in (("recs", recs_source), ("truth", truth_source))
    }
    highest = max(c["max_user"] for c in source_counts.values())
    if highest >= args.shift:
        log(f"--shift {args.shift:,} would make replicas collide: the source's user ids reach {highest:,}")
        return 2

    started = time.perf_counter()
    parts = []
    for r in range(args.replicas):
        part = {"replica": r, "user_id_offset": r * args.shift}
        for table, source, columns in (
            ("recs", recs_source, "item_id, score"),
            ("truth", truth_source, "item_id, relevance"),
        ):
            target = part_path(args.out, table, r)
            t0 = time.perf_counter()
            wrote = copy_replica(con, source, target, r * args.shift, columns)
            copied = time.perf_counter() - t0
            part[table] = count_part(con, target)
            part[table]["bytes"] = os.path.getsize(target)
            if wrote:
                part[table]["copy_seconds"] = round(copied, 1)
            log(
                f"replica {r} {table}: {'wrote' if wrote else 'exists, kept'} "
                f"{part[table]['rows']:,} rows, {part[table]['users']:,} users "
                f"({part[table]['min_user']:,}..{part[table]['max_user']:,})"
                + (f" in {copied:.1f} s" if wrote else "")
            )
        parts.append(part)
    seconds = time.perf_counter() - started

    # the parts' user id ranges are disjoint, so their user counts add up to the totals
    for table in ("recs", "truth"):
        ranges = sorted((p[table]["min_user"], p[table]["max_user"]) for p in parts)
        if any(a[1] >= b[0] for a, b in zip(ranges, ranges[1:], strict=False)):
            log(f"{table}: the replicas' user id ranges overlap: {ranges}")
            return 1
    totals = {
        f"{table}_{what}": sum(p[table][what] for p in parts)
        for table in ("recs", "truth")
        for what in ("rows", "users", "bytes")
    }
    with open(os.path.join(args.source, "meta.json"), encoding="utf-8") as handle:
        source_meta = json.load(handle)
    source_name = os.path.relpath(args.source, os.path.dirname(HERE))
    meta = {
        "users": totals["recs_users"],
        "candidates": source_meta.get("candidates"),
        **totals,
        "evaluated_users": args.replicas * source_meta["evaluated_users"],
        "replicas": args.replicas,
        "user_id_shift": args.shift,
        "how": (
            f"{args.replicas} replicas of {source_name} (generate.py): replica r is "
            f"its recs.parquet and truth.parquet with user_id + r * {args.shift}, written by DuckDB "
            f"{duckdb.__version__} COPY ... TO recs/part-<r>.parquet, truth/part-<r>.parquet "
            "(FORMAT parquet) with memory_limit and preserve_insertion_order = false"
        ),
        "source": {
            "path": source_name,
            **source_counts,
            "meta": source_meta,
        },
        "parts": parts,
        "seconds": round(seconds, 1),
    }
    with open(os.path.join(args.out, "meta.json"), "w", encoding="utf-8") as handle:
        json.dump(meta, handle, indent=2)
    size = (totals["recs_bytes"] + totals["truth_bytes"]) / GiB
    log(
        f"{meta['recs_rows']:,} recs rows, {meta['recs_users']:,} recs users, {meta['truth_rows']:,} truth "
        f"rows, {meta['truth_users']:,} truth users, {size:.2f} GiB in {args.out} ({seconds:.0f} s)"
    )
    return 0


# --------------------------------------------------------------------------------------------
# child: one timed run in its own process
# --------------------------------------------------------------------------------------------


def is_out_of_memory(exc: BaseException) -> bool:
    import duckdb

    return isinstance(exc, duckdb.OutOfMemoryException) or "out of memory" in str(exc).lower()


def child(args: argparse.Namespace) -> int:
    import resource

    import sqlmetrics

    con = connect(args.memory_limit, args.temp_directory, args.threads)
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    try:
        if args.floor:
            users, listed = con.execute(FLOOR_SQL.format(k=K, recs=quote(args.recs))).fetchall()[0]
            out: dict = {"users": users, "listed": listed}
        else:
            # partitions=1 leaves the keyword out (it runs on a sqlmetrics without it, too)
            extra = {} if args.partitions == 1 else {"partitions": args.partitions, "progress": args.progress}
            row = sqlmetrics.evaluate(con, args.recs, METRICS, truth=args.truth, **extra).to_pylist()[0]
            out = {"users": row["users"], "metrics": {m: row[m] for m in METRICS}}
    except Exception as exc:  # reported as this run's result, e.g. DuckDB running out of memory
        traceback.print_exc()
        kind = "out of memory" if is_out_of_memory(exc) else type(exc).__name__
        out = {"error": kind, "message": str(exc).strip().splitlines()[0][:300]}
    used = resource.getrusage(resource.RUSAGE_SELF)
    out["seconds"] = time.perf_counter() - started
    out["cpu_seconds"] = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
    out["vmhwm_gib"] = peak_rss_mb() / 1024
    with open(args.result, "w", encoding="utf-8") as handle:
        json.dump(out, handle)
    return 0


# --------------------------------------------------------------------------------------------
# run: the parent, which stays small (no DuckDB here) and measures each child from outside
# --------------------------------------------------------------------------------------------


def dir_bytes(path: str) -> int:
    """Disk space the files under `path` take (allocated blocks, so sparse files count as such)."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:  # DuckDB removed it meanwhile
                pass
    return total


def inputs(data: str, parts: int | None) -> tuple[str, str]:
    """The recs and truth globs: every part, or parts 0 .. parts-1."""
    if parts is None:
        pattern = "*.parquet"
    elif parts == 1:
        pattern = "part-0.parquet"
    else:
        pattern = f"part-[0-{parts - 1}].parquet"
    return os.path.join(data, "recs", pattern), os.path.join(data, "truth", pattern)


def spawn(child_args: list[str], workdir: str, timeout: float | None, progress: bool = False) -> dict:
    """Run one child; return its result with the process's wall time, peak RSS and peak spill.
    Its output goes to a log file; with progress, its stderr (sqlmetrics' progress lines and any
    traceback) comes through to this process's stderr instead."""
    result = os.path.join(workdir, "result.json")
    spill = os.path.join(workdir, "spill")
    os.makedirs(spill)
    log_path = os.path.join(workdir, "child.log")
    argv = [
        sys.executable,
        os.path.abspath(__file__),
        "child",
        *child_args,
        "--temp-directory",
        spill,
        "--result",
        result,
    ]
    started = time.perf_counter()
    peak_spill, sampled = 0, 0.0
    with open(log_path, "wb") as log_file:
        stderr = None if progress else subprocess.STDOUT
        proc = subprocess.Popen(argv, stdout=log_file, stderr=stderr)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            now = time.perf_counter()
            if now - sampled >= SAMPLE_SECONDS:
                peak_spill, sampled = max(peak_spill, dir_bytes(spill)), now
            if timeout is not None and time.perf_counter() - started > timeout:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                status = None
                break
            time.sleep(0.05)
    proc.returncode = None if status is None else os.waitstatus_to_exitcode(status)
    out = {
        "process_seconds": time.perf_counter() - started,
        "peak_rss_gib": usage.ru_maxrss * 1024 / GiB,  # Linux: KiB
        "peak_spill_gib": peak_spill / GiB,
    }
    if status is None:
        out["error"] = f"timed out after {timeout:g} s"
    elif os.path.exists(result):
        with open(result, encoding="utf-8") as handle:
            out.update(json.load(handle))
    else:
        code = proc.returncode
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
        out["error"] = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        if lines:
            out["message"] = lines[-1][:300]
    return out


def expected_users(data: str, parts: int | None, floor: bool) -> int | None:
    """Users a run should count, from the data's meta.json (None without one)."""
    try:
        with open(os.path.join(data, "meta.json"), encoding="utf-8") as handle:
            meta = json.load(handle)
    except FileNotFoundError:
        return None
    source = meta.get("source", {}).get("meta")
    if source is None:  # not a data set built by `build`
        return None
    per_replica = source["recs_users"] if floor else source["evaluated_users"]
    return per_replica * (meta["replicas"] if parts is None else parts)


def check(out: dict, expected: int | None, floor: bool) -> str:
    if "error" in out:
        return f"FAILED: {out['error']}" + (f" ({out['message']})" if out.get("message") else "")
    if expected is None:
        return "users not checked (no meta.json)"
    if out["users"] != expected:
        return f"WRONG users: {out['users']:,} != {expected:,}"
    if floor and out["listed"] != K * out["users"]:
        return f"WRONG list lengths: {out['listed']:,} != {K * out['users']:,}"
    return "ok"


HEADER = (
    "| what | partitions | seconds | CPU s | process s | peak RSS GiB | peak spill GiB | "
    + " | ".join(METRICS)
    + " | users | check |"
)


def row(label: str, partitions: str, out: dict, verdict: str) -> str:
    metrics = out.get("metrics", {})
    values = [f"{metrics[m]:.12f}" if m in metrics else "—" for m in METRICS]
    users = f"{out['users']:,}" if "users" in out else "—"
    seconds = fmt_seconds(out["seconds"]) if "seconds" in out else "—"  # failed runs: until the error
    cpu = f"{out['cpu_seconds']:.0f}" if "cpu_seconds" in out else "—"
    return (
        f"| {label} | {partitions} | {seconds} | {cpu} | {fmt_seconds(out['process_seconds'])} | "
        f"{out['peak_rss_gib']:.2f} | {out['peak_spill_gib']:.2f} | {' | '.join(values)} | {users} | "
        f"{verdict} |"
    )


def run(args: argparse.Namespace) -> int:
    recs, truth = inputs(args.data, args.parts)
    label = "floor (arg_max top-10)" if args.floor else "sqlmetrics"
    partition_list = [1] if args.floor else args.partitions
    expected = expected_users(args.data, args.parts, args.floor)
    log(f"{label}: {recs} (truth {truth}), memory_limit {args.memory_limit}")
    os.makedirs(TEMP, exist_ok=True)
    print(HEADER)
    print("|" + "---|" * (HEADER.count("|") - 1), flush=True)
    raw = []
    failed = False
    for partitions in partition_list:
        for i in range(args.repeat):
            workdir = os.path.join(TEMP, f"billion-{os.getpid()}-{partitions}p-{i}")
            os.makedirs(workdir)
            child_args = [
                "--recs",
                recs,
                "--truth",
                truth,
                "--partitions",
                str(partitions),
                "--memory-limit",
                args.memory_limit,
            ]
            child_args += ["--floor"] if args.floor else []
            child_args += ["--threads", str(args.threads)] if args.threads else []
            child_args += ["--progress"] if args.progress else []
            try:
                out = spawn(child_args, workdir, args.timeout, args.progress)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
            verdict = check(out, expected, args.floor)
            failed = failed or verdict.startswith(("FAILED", "WRONG"))
            log(f"{label}, {partitions} partitions, run {i + 1}/{args.repeat}: {json.dumps(out)}")
            print(row(label, "—" if args.floor else str(partitions), out, verdict), flush=True)
            raw.append({"what": label, "partitions": partitions, "recs": recs, **out})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(raw, handle, indent=2)
    return 1 if failed else 0


# --------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------


def partition_counts(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("partitions must be at least 1")
    return counts


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[2:8]),
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="{build,run}")

    b = commands.add_parser("build", help="write the 10 replicas and meta.json (once)")
    b.add_argument("--source", default=SOURCE, help="the 1M-user data set (default %(default)s)")
    b.add_argument("--out", default=BILLION, help="default %(default)s")
    b.add_argument("--replicas", type=int, default=REPLICAS)
    b.add_argument("--shift", type=int, default=SHIFT, help="user id offset between replicas")
    b.add_argument("--memory-limit", default="4GB")
    b.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")

    r = commands.add_parser("run", help="time sqlmetrics (or --floor) in one child process per run")
    r.add_argument(
        "--partitions",
        type=partition_counts,
        default=[1],
        help="evaluate(partitions=N); a comma list runs each; 1 (default) omits the keyword",
    )
    r.add_argument("--memory-limit", default="4GB")
    r.add_argument("--repeat", type=int, default=1, help="runs per partition count")
    r.add_argument("--floor", action="store_true", help="time the score-only arg_max floor instead")
    r.add_argument("--data", default=BILLION, help="a folder with recs/ and truth/ (default %(default)s)")
    r.add_argument(
        "--parts", type=int, default=None, help="use only part-0 .. part-(P-1) (P <= 10; default: every part)"
    )
    r.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    r.add_argument("--timeout", type=float, default=None, help="kill a run after this many seconds")
    r.add_argument(
        "--progress", action="store_true", help="evaluate(progress=True): a line per partition on stderr"
    )
    r.add_argument("--json", default=None, help="also write every run's raw numbers here")

    c = commands.add_parser("child")  # hidden: one run, started by `run`
    c.add_argument("--recs", required=True)
    c.add_argument("--truth", required=True)
    c.add_argument("--partitions", type=int, default=1)
    c.add_argument("--memory-limit", required=True)
    c.add_argument("--temp-directory", required=True)
    c.add_argument("--threads", type=int, default=None)
    c.add_argument("--floor", action="store_true")
    c.add_argument("--progress", action="store_true")
    c.add_argument("--result", required=True)
    return top


def main(argv: list[str] | None = None) -> int:
    top = parser()
    args = top.parse_args(argv)
    if args.command == "build":
        return build(args)
    if args.command == "child":
        return child(args)
    if args.repeat < 1:
        top.error("--repeat must be at least 1")
    if args.parts is not None and not 1 <= args.parts <= 10:
        top.error("--parts must be 1 to 10")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
