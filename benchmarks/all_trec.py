"""`-m all_trec` in one call against trec_eval 10.0 itself, on the same TREC files, in the same run.

    python benchmarks/all_trec.py benchmarks/data/100000u100c --repeat 3

The data set's recs.parquet and truth.parquet (benchmarks/generate.py) are written once as a
TREC run and qrels (into --trec-dir, default <data>.trec/ beside it; the run ranks each user's
items by score, then item descending, trec_eval's own order), trec_eval is built from its C
source (../shared/peer_data/trec_eval/src, or $SQLMETRICS_TREC_EVAL_SRC), and each round runs,
alternately in fresh processes (so that a shared machine's drift weighs on both alike):

  trec_eval    trec_eval -c -m all_trec QRELS RUN
  sqlmetrics   sqlmetrics evaluate RUN --truth QRELS --metrics all_trec --missing zero --format trec
               (the command line: reading the two text files, one statement, the text)

-c (--missing zero): the data's users with truth and no list are scored 0 (without it,
trec_eval 10.0 stops at the first of them: "result qid ... not found in qrels").

Each side's wall time is the whole process's (start-up and reading the text files included),
and the peak resident set size of the process (os.wait4's ru_maxrss). The two outputs are
compared line by line: they must be the same text (exit status 1 otherwise). Prints a markdown
table with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = Path(os.environ.get("SQLMETRICS_TREC_EVAL_SRC", REPO.parent / "shared/peer_data/trec_eval/src"))


def build_trec_eval(build: Path) -> Path:
    """trec_eval compiled in a copy of its source (which may be read-only)."""
    if not (SOURCE / "Makefile").is_file():
        sys.exit(f"trec_eval's C source not found at {SOURCE} (set SQLMETRICS_TREC_EVAL_SRC)")
    shutil.copytree(SOURCE, build / "src")
    for path in (build / "src").rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    subprocess.run(["make"], cwd=build / "src", capture_output=True, check=True)
    return build / "src" / "trec_eval"


def write_trec_files(data: Path, out: Path) -> tuple[Path, Path]:
    """The data set as a TREC run and qrels (written once; DuckDB's COPY)."""
    run, qrels = out / "run.txt", out / "qrels.txt"
    if run.is_file() and qrels.is_file():
        return run, qrels
    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(
        f"""COPY (SELECT user_id, 'Q0', item_id,
                     row_number() OVER (PARTITION BY user_id ORDER BY score DESC, item_id DESC),
                     CAST(score AS VARCHAR), 'bench'
                 FROM read_parquet('{data / "recs.parquet"}') ORDER BY ALL)
            TO '{run}.part' (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')"""
    )
    con.execute(
        f"""COPY (SELECT user_id, 0, item_id, relevance
                 FROM read_parquet('{data / "truth.parquet"}') ORDER BY ALL)
            TO '{qrels}.part' (FORMAT csv, DELIMITER ' ', HEADER false, QUOTE '')"""
    )
    os.replace(f"{qrels}.part", qrels)
    os.replace(f"{run}.part", run)
    return run, qrels


def timed(command: list[str], output: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one process, its stdout into `output`."""
    with output.open("wb") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
    if status != 0:
        sys.exit(f"{command[0]} failed: {process.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("data", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trec-dir", type=Path)
    args = parser.parse_args()
    data = args.data
    trec_dir = args.trec_dir or data.parent / f"{data.name}.trec"
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    run, qrels = write_trec_files(data, trec_dir)
    with tempfile.TemporaryDirectory(prefix="sqlmetrics-all_trec-") as tmp:
        binary = build_trec_eval(Path(tmp))
        sides = {
            "trec_eval": [str(binary), "-c", "-m", "all_trec", str(qrels), str(run)],
            "sqlmetrics": [sys.executable, "-m", "sqlmetrics", "evaluate", str(run), "--truth", str(qrels),
                           "--metrics", "all_trec", "--missing", "zero", "--format", "trec"],
        }  # fmt: skip
        times: dict[str, list[float]] = {name: [] for name in sides}
        memory: dict[str, float] = dict.fromkeys(sides, 0.0)
        loads = [os.getloadavg()[0]]
        for round_ in range(args.repeat):
            for name, command in sides.items():
                wall, rss = timed(command, Path(tmp) / f"{name}.txt")
                times[name].append(wall)
                memory[name] = max(memory[name], rss)
                print(f"round {round_ + 1} {name}: {wall:.2f} s", file=sys.stderr)
            loads.append(os.getloadavg()[0])
        ours = (Path(tmp) / "sqlmetrics.txt").read_text().splitlines()
        theirs = (Path(tmp) / "trec_eval.txt").read_text().splitlines()
    differ = [(a, b) for a, b in zip(ours, theirs, strict=False) if a != b]
    if len(ours) != len(theirs):
        differ.append((f"{len(ours)} lines", f"{len(theirs)} lines"))
    base = min(times["trec_eval"])
    print(f"`-m all_trec` on {data.name} ({len(theirs)} lines of output), {args.repeat} rounds, "
          f"load average (1 min) {min(loads):.2f} to {max(loads):.2f}\n")  # fmt: skip
    print("| | min s | median s | x trec_eval | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for name, values in times.items():
        print(f"| {name} | {min(values):.2f} | {statistics.median(values):.2f} | "
              f"{min(values) / base:.2f} | {memory[name]:.0f} |")  # fmt: skip
    print(f"\noutputs: {'the same text' if not differ else f'{len(differ)} lines differ, e.g. {differ[:3]}'}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
