"""Benchmark sqlmetrics.evaluate against pytrec_eval, ranx, polars and two DuckDB floors.

CI (the tiny size, well under a minute; exits non-zero if a contender disagrees or fails;
a contender whose library is not installed, e.g. ranx, is reported as skipped):

    python benchmarks/run.py --users 2000 --repeat 1

The headline size (100,000 users x 100 candidates = 10M recommendation rows):

    python benchmarks/run.py --sizes 100k

Every contender runs in its OWN subprocess (`run.py --child NAME ...`), once per repeat, the
repeats round robin (run 1 of every contender, then run 2, ...) so drift hits all alike:
  seconds      wall time inside the child from before the Parquet files are opened to the
               final numbers (imports and ranx's numba warm-up happen before the clock);
               the table shows the median over --repeat runs
  process s    the same child's whole wall time as seen from here: interpreter start-up,
               imports and warm-up included (median)
  peak RSS     the child's own peak (VmHWM) when the clock stops (max over the runs); the
               kernel's ru_maxrss for the whole child (os.wait4) goes to --json

Contenders (see benchmarks/README.md):
  sqlmetrics     sqlmetrics.evaluate(con, recs.parquet, [ndcg, map, recall, precision, mrr @k],
                 truth=truth.parquet)
  pytrec_eval    dicts of strings built from the same Parquet files; ndcg_cut, map_cut, recall,
                 P at k and recip_rank (no cutoff in trec_eval: checked against mrr@C)
  ranx           Qrels/Run from the same files; ties broken arbitrarily: difference reported
  polars         the five metrics written in polars (same definitions and tie order)
  duckdb_scan    floor: a scan of the three recs columns
  duckdb_top10   floor: arg_max(item_id, score, k) per user, output consumed
Optional rows: --per-user (sqlmetrics with per_user=True), --k-sweep (sqlmetrics at k = 1, 10,
100). The numbers every row is checked against come from one extra, untimed sqlmetrics child
(the five metrics at k, plus mrr@C for pytrec_eval's recip_rank).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-9
MAIN = ["sqlmetrics", "pytrec_eval", "ranx", "polars", "duckdb_scan", "duckdb_top10"]
FLOORS = ("duckdb_scan", "duckdb_top10")
FAMILIES = ("ndcg", "map", "recall", "precision", "mrr")


def metric_names(k: int) -> list[str]:
    return [f"{family}@{k}" for family in FAMILIES]


# --------------------------------------------------------------------------------------------
# Children: each returns a callable doing the timed work; everything before it is untimed.
# The callable returns {"users": evaluated users, "metrics": {name: mean}} (floors: "floor").
# --------------------------------------------------------------------------------------------


def _duckdb_connect(memory_limit: str | None):
    import duckdb

    con = duckdb.connect()
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit]).fetchall()
    return con


def _quote(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def child_sqlmetrics(args: argparse.Namespace) -> Callable[[], dict]:
    import sqlmetrics

    metrics = metric_names(args.k) + list(args.extra_metric or [])

    def work() -> dict:
        con = _duckdb_connect(args.memory_limit)
        table = sqlmetrics.evaluate(con, args.recs, metrics, truth=args.truth, per_user=args.per_user)
        if not args.per_user:
            row = table.to_pylist()[0]
            return {"users": row["users"], "metrics": {m: row[m] for m in metrics}}
        # per_user=True: the whole per-user table is fetched inside the clock; its means
        # (for the check) are computed here too, they cost little.
        return {
            "users": table.num_rows,
            "metrics": {m: math.fsum(table.column(m).to_pylist()) / table.num_rows for m in metrics},
        }

    return work


def nested_dicts(path: str, value: str) -> dict[str, dict[str, float]]:
    """{user: {item: value}} with string ids, the input pytrec_eval and ranx take, read from
    Parquet (part of their measured time: building it is what using them costs)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["user_id", "item_id", value])
    users = pc.cast(table["user_id"], pa.string()).to_pylist()
    items = pc.cast(table["item_id"], pa.string()).to_pylist()
    values = table[value].to_pylist()
    del table
    out: dict[str, dict[str, float]] = {}
    for user, item, v in zip(users, items, values, strict=True):
        per = out.get(user)
        if per is None:
            per = out[user] = {}
        per[item] = v
    return out


def child_pytrec_eval(args: argparse.Namespace) -> Callable[[], dict]:
    import pytrec_eval

    k = args.k
    measures = {f"ndcg_cut.{k}", f"map_cut.{k}", f"recall.{k}", f"P.{k}", "recip_rank"}
    keys = {f"ndcg_cut_{k}": f"ndcg@{k}", f"map_cut_{k}": f"map@{k}", f"recall_{k}": f"recall@{k}",
            f"P_{k}": f"precision@{k}", "recip_rank": "recip_rank"}

    def work() -> dict:
        qrels = nested_dicts(args.truth, "relevance")
        run = nested_dicts(args.recs, "score")
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
        results = evaluator.evaluate(run)
        n = len(results)
        means = {keys[m]: math.fsum(r[m] for r in results.values()) / n for m in keys}
        return {"users": n, "metrics": means}

    return work


def child_ranx(args: argparse.Namespace) -> Callable[[], dict]:
    warnings.filterwarnings("ignore")  # numba's NumbaTypeSafetyWarning on every call
    import ranx

    metrics = metric_names(args.k)

    # Warm numba's JIT (loading its on-disk cache costs seconds in every new process) on a
    # tiny input of the same types (7-character doc ids), before the clock starts.
    tiny_qrels = {"1": {"1000001": 1, "1000002": 0}, "2": {"2000001": 3}}
    tiny_run = {"1": {"1000001": 0.5, "1000003": 0.5}, "2": {"1000004": 0.1}}
    ranx.evaluate(ranx.Qrels.from_dict(tiny_qrels), ranx.Run.from_dict(tiny_run), metrics)

    def work() -> dict:
        qrels = nested_dicts(args.truth, "relevance")
        run = nested_dicts(args.recs, "score")
        # ranx needs the same query ids on both sides: keep the users in both (the users
        # sqlmetrics evaluates); make_comparable=True would score truth-only users 0 instead.
        both = run.keys() & qrels.keys()
        qrels = {u: qrels[u] for u in qrels if u in both}
        run = {u: run[u] for u in run if u in both}
        ranx_qrels = ranx.Qrels.from_dict(qrels)
        means = ranx.evaluate(ranx_qrels, ranx.Run.from_dict(run), metrics)
        out = {"users": len(both), "metrics": {m: float(means[m]) for m in metrics}}
        if args.tie_check:
            out["after_clock"] = lambda: tie_free(ranx_qrels, run)
        return out

    def tie_free(ranx_qrels, run: dict[str, dict[str, float]]) -> dict:
        """Untimed: ranx again, on scores made distinct in sqlmetrics' order (score desc,
        then item id desc; the ids are same-length digit strings), to show that the
        difference comes from ties alone."""
        distinct = {}
        for user, scored in run.items():
            ordered = sorted(scored, key=lambda item: (scored[item], item))
            distinct[user] = {item: float(i) for i, item in enumerate(ordered, start=1)}
        means = ranx.evaluate(ranx_qrels, ranx.Run.from_dict(distinct), metrics)
        return {"tie_free_metrics": {m: float(means[m]) for m in metrics}}

    return work


def child_polars(args: argparse.Namespace) -> Callable[[], dict]:
    import polars as pl

    k = args.k

    def work() -> dict:
        recs = pl.scan_parquet(args.recs)
        truth = pl.scan_parquet(args.truth)
        # evaluated users: in both inputs
        users = recs.select("user_id").unique().join(truth.select("user_id").unique(), on="user_id")
        # top k by score desc, ties by item id desc; positions 1..k
        top = (
            recs.join(users, on="user_id", how="semi")
            .sort(["user_id", "score", "item_id"], descending=[False, True, True])
            .group_by("user_id", maintain_order=True)
            .head(k)
            .with_columns(pos=pl.int_range(1, pl.len() + 1).over("user_id"))
        )
        judged = truth.join(users, on="user_id", how="semi")
        relevant_count = judged.group_by("user_id").agg(R=(pl.col("relevance") >= 1).sum())
        ideal = (
            judged.filter(pl.col("relevance") > 0)
            .sort(["user_id", "relevance"], descending=[False, True])
            .group_by("user_id", maintain_order=True)
            .head(k)
            .with_columns(i=pl.int_range(1, pl.len() + 1).over("user_id"))
            .group_by("user_id")
            .agg(idcg=(pl.col("relevance") / (pl.col("i") + 1).log(2)).sum())
        )
        hit = pl.col("rel") >= 1
        per_list = (
            top.join(judged, on=["user_id", "item_id"], how="left")
            .with_columns(rel=pl.col("relevance").fill_null(0))
            .sort(["user_id", "pos"])
            .with_columns(hits_so_far=hit.cast(pl.Int64).cum_sum().over("user_id"))
            .group_by("user_id")
            .agg(
                dcg=(pl.col("rel").clip(lower_bound=0) / (pl.col("pos") + 1).log(2)).sum(),
                hits=hit.sum(),
                ap=pl.when(hit).then(pl.col("hits_so_far") / pl.col("pos")).otherwise(0.0).sum(),
                first=pl.col("pos").filter(hit).min(),
            )
        )
        per_user = (
            users.join(relevant_count, on="user_id", how="left")
            .join(ideal, on="user_id", how="left")
            .join(per_list, on="user_id", how="left")
            .select(
                pl.when(pl.col("idcg") > 0).then(pl.col("dcg") / pl.col("idcg")).otherwise(0.0)
                .alias(f"ndcg@{k}"),
                pl.when(pl.col("R") > 0).then(pl.col("ap") / pl.col("R")).otherwise(0.0)
                .alias(f"map@{k}"),
                pl.when(pl.col("R") > 0).then(pl.col("hits") / pl.col("R")).otherwise(0.0)
                .alias(f"recall@{k}"),
                (pl.col("hits").fill_null(0) / k).alias(f"precision@{k}"),
                (1.0 / pl.col("first")).fill_null(0.0).alias(f"mrr@{k}"),
            )
        )
        means = per_user.select(pl.len().alias("users"), pl.all().mean()).collect().to_dicts()[0]
        return {"users": means.pop("users"), "metrics": means}

    return work


def child_duckdb_scan(args: argparse.Namespace) -> Callable[[], dict]:
    query = (
        "SELECT count(*), sum(user_id), sum(item_id), sum(score) "
        f"FROM read_parquet({_quote(args.recs)})"
    )

    def work() -> dict:
        con = _duckdb_connect(args.memory_limit)
        rows = con.execute(query).fetchall()[0][0]
        return {"floor": {"rows": rows}}

    return work


def child_duckdb_top10(args: argparse.Namespace) -> Callable[[], dict]:
    # sum(len(top)) consumes every list, so the optimizer cannot drop the aggregate.
    query = (
        "SELECT count(*), sum(len(top)) FROM ("
        f"SELECT user_id, arg_max(item_id, score, {int(args.k)}) AS top "
        f"FROM read_parquet({_quote(args.recs)}) GROUP BY user_id)"
    )

    def work() -> dict:
        con = _duckdb_connect(args.memory_limit)
        users, listed = con.execute(query).fetchall()[0]
        return {"floor": {"users": users, "listed": listed}}

    return work


CHILDREN: dict[str, Callable[[argparse.Namespace], Callable[[], dict]]] = {
    "sqlmetrics": child_sqlmetrics,
    "pytrec_eval": child_pytrec_eval,
    "ranx": child_ranx,
    "polars": child_polars,
    "duckdb_scan": child_duckdb_scan,
    "duckdb_top10": child_duckdb_top10,
}


def peak_rss_mb() -> float:
    """This process's peak resident set size, in MiB.

    Linux's VmHWM belongs to the process's own address space. ru_maxrss (getrusage, wait4,
    RUSAGE_CHILDREN) would do on a fresh process too, but Linux carries it over across exec()
    from the forked copy of the parent, so every child would report at least the parent's
    RSS at spawn time; VmHWM has no such floor."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20  # Linux KiB, macOS bytes


def child_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="run.py --child")
    parser.add_argument("--child", required=True, choices=sorted(CHILDREN))
    parser.add_argument("--recs", required=True)
    parser.add_argument("--truth", required=True)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--per-user", action="store_true")
    parser.add_argument("--extra-metric", action="append")
    parser.add_argument("--memory-limit")
    parser.add_argument("--tie-check", action="store_true")
    parser.add_argument("--result", required=True)
    args = parser.parse_args(argv)
    try:
        work = CHILDREN[args.child](args)
    except ImportError as exc:  # an optional contender (ranx, pytrec_eval, polars) is missing
        with open(args.result, "w", encoding="utf-8") as handle:
            json.dump({"skipped": f"{exc.name or exc} is not installed"}, handle)
        return
    started = time.perf_counter()
    out = work()
    out["seconds"] = time.perf_counter() - started
    # the peak RSS so far (imports and the timed work), before any untimed extra check
    out["peak_rss_mb"] = peak_rss_mb()
    after_clock = out.pop("after_clock", None)
    if after_clock is not None:
        out.update(after_clock())
    with open(args.result, "w", encoding="utf-8") as handle:
        json.dump(out, handle)


# --------------------------------------------------------------------------------------------
# The parent: data, subprocesses, checks, the table.
# --------------------------------------------------------------------------------------------


@dataclass
class Contender:
    label: str  # the row name
    child: str  # which child function
    k: int = 10
    per_user: bool = False
    check: str = "exact"  # exact | ranx | floor | self (k sweep: no other contender to agree with)
    runs: list[dict] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None


def parse_size(text: str) -> int:
    text = text.strip().lower().replace("_", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    number = text[:-1] if scale > 1 else text
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 2000, 100k, 1m)") from None
    if value < 1:
        raise argparse.ArgumentTypeError("sizes must be at least 1 user")
    return value


def human(n: int) -> str:
    for unit, scale in (("m", 1_000_000), ("k", 1_000)):
        if n >= scale and n % (scale // 10 or 1) == 0:
            return f"{n / scale:g}{unit}"
    return str(n)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ensure_data(users: int, candidates: int, data_dir: str, seed: int) -> tuple[str, dict]:
    out = os.path.join(data_dir, f"{users}u{candidates}c" + (f"s{seed}" if seed else ""))
    meta_path = os.path.join(out, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path, encoding="utf-8") as handle:
            meta = json.load(handle)
        if (meta.get("users"), meta.get("candidates"), meta.get("seed")) == (users, candidates, seed):
            return out, meta
    log(f"generating {users:,} users x {candidates} candidates in {out} ...")
    # in a subprocess, so that this process stays small (see peak_rss_mb)
    subprocess.run(
        [sys.executable, os.path.join(HERE, "generate.py"), "--users", str(users),
         "--candidates", str(candidates), "--seed", str(seed), "--out", out],
        check=True, stdout=subprocess.DEVNULL,
    )
    with open(meta_path, encoding="utf-8") as handle:
        meta = json.load(handle)
    log(f"  {meta['recs_rows']:,} recs rows, {meta['truth_rows']:,} truth rows in {meta['seconds']} s")
    return out, meta


def spawn(child_args: list[str], workdir: str, timeout: float | None) -> dict:
    """Run one child; return its result plus process wall time and peak RSS (MB)."""
    result = os.path.join(workdir, "result.json")
    if os.path.exists(result):
        os.remove(result)
    log_path = os.path.join(workdir, "child.log")
    argv = [sys.executable, os.path.abspath(__file__), *child_args, "--result", result]
    started = time.perf_counter()
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT)
        deadline = None if timeout is None else started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG if deadline else 0)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                return {"error": f"timed out after {timeout:g} s"}
            time.sleep(0.05)
    wall = time.perf_counter() - started
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    if code != 0 or not os.path.exists(result):
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip() for line in handle if line.strip()]
        errors = [line for line in lines if "Error" in line or "error" in line]
        why = (errors or lines or [f"killed by signal {-code}" if code < 0 else f"exit {code}"])[-1]
        return {"error": why[:200]}
    with open(result, encoding="utf-8") as handle:
        out = json.load(handle)
    out["process_seconds"] = wall
    # the kernel's figure for the whole child (ru_maxrss, which has this process's RSS at spawn
    # time as a floor); the table uses the child's own VmHWM taken when the clock stopped
    out["process_peak_rss_mb"] = usage.ru_maxrss / 1024  # Linux: KiB
    return out


def compare(contender: Contender, result: dict, reference: dict, candidates: int, meta: dict) -> str:
    """The check column's text; raises nothing. Sets contender.error on a mismatch."""
    if contender.check == "floor":
        floor = result.get("floor", {})
        if contender.child == "duckdb_scan":
            got, expected, what = floor.get("rows"), meta["recs_rows"], "row count"
        else:
            got, what = floor.get("listed"), "sum of list lengths"
            expected = meta["recs_users"] * min(contender.k, candidates)
        if got == expected:
            return "floor (no metrics)"
        contender.error = "wrong floor"
        return f"WRONG {what}: {got} != {expected}"
    if contender.check == "self":
        return "n/a (k sweep)"
    ref = reference["metrics"]
    diffs = {}
    notes = []
    for name, value in result["metrics"].items():
        if name == "recip_rank":  # trec_eval's recip_rank has no cutoff: mrr@C
            diffs[name] = abs(value - ref[f"mrr@{candidates}"])
            notes.append(f"recip_rank vs mrr@{candidates}")
        else:
            diffs[name] = abs(value - ref[name])
    worst = max(diffs, key=lambda n: diffs[n])
    users_ok = result["users"] == reference["users"]
    users_note = "" if users_ok else f"; users {result['users']} != {reference['users']}"
    note = f" ({', '.join(notes)})" if notes else ""
    text = f"max abs diff {diffs[worst]:.1e}"
    if contender.check == "ranx":
        if diffs[worst] > TOLERANCE:
            text += f" at {worst} (ranx breaks score ties arbitrarily)"
        else:
            text += " (reported, not checked)"
        tie_free = result.get("tie_free_metrics")
        if tie_free:
            gap = max(abs(v - ref[m]) for m, v in tie_free.items())
            text += f"; with ties pre-broken in sqlmetrics' order: {gap:.1e}"
        return text + note + users_note
    if diffs[worst] > TOLERANCE or not users_ok:
        contender.error = "mismatch"
        return f"MISMATCH: {text} at {worst}{note}{users_note}"
    return f"ok, {text}{note}"


def fmt_seconds(s: float) -> str:
    return f"{s:.3f}" if s < 10 else f"{s:.2f}" if s < 100 else f"{s:.1f}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--child" in argv:
        child_main(argv)
        return 0
    parser = argparse.ArgumentParser(
        description="Benchmark sqlmetrics against pytrec_eval, ranx, polars and DuckDB floors.",
        epilog="CI: python benchmarks/run.py --users 2000 --repeat 1",
    )
    parser.add_argument("--sizes", type=lambda s: [parse_size(x) for x in s.split(",") if x.strip()],
                        default=None, help="comma-separated user counts, e.g. 2k,100k (default 100k)")
    parser.add_argument("--users", type=parse_size, action="append", default=None,
                        help="one size in users (repeatable; same as --sizes)")
    parser.add_argument("--candidates", type=int, default=100, help="candidates per user C (default 100)")
    parser.add_argument("--k", type=int, default=10, help="cutoff of the five metrics (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per contender; the median is shown")
    parser.add_argument("--only", default=None,
                        help=f"comma-separated subset of: {', '.join(MAIN)}")
    parser.add_argument("--memory-limit", default=None,
                        help="SET memory_limit on the DuckDB connections (sqlmetrics, floors), e.g. 1GB")
    parser.add_argument("--per-user", action="store_true", help="also time sqlmetrics with per_user=True")
    parser.add_argument("--k-sweep", nargs="?", const="1,10,100", default=None,
                        help="also time sqlmetrics alone at these cutoffs (default 1,10,100)")
    parser.add_argument("--data-dir", default=os.path.join(HERE, "data"),
                        help="where generated data lives (default benchmarks/data)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=None, help="seconds per child run")
    parser.add_argument("--json", default=None, help="also write every run's raw numbers here")
    args = parser.parse_args(argv)

    sizes = (args.sizes or []) + (args.users or []) or [100_000]
    only = MAIN if args.only is None else [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = sorted(set(only) - set(MAIN))
    if unknown:
        parser.error(f"--only: unknown contender(s) {', '.join(unknown)}; choose from {', '.join(MAIN)}")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    sweep = [] if args.k_sweep is None else [int(x) for x in args.k_sweep.split(",") if x.strip()]

    rows: list[tuple[int, dict, list[Contender]]] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="sqlmetrics-bench-") as workdir:
        for users in sizes:
            data, meta = ensure_data(users, args.candidates, args.data_dir, args.seed)
            recs, truth = os.path.join(data, "recs.parquet"), os.path.join(data, "truth.parquet")
            common = ["--recs", recs, "--truth", truth]
            limit = ["--memory-limit", args.memory_limit] if args.memory_limit else []

            contenders = []
            for name in MAIN:
                if name in only:
                    check = "floor" if name in FLOORS else "ranx" if name == "ranx" else "exact"
                    contenders.append(Contender(name, name, args.k, check=check))
            if args.per_user:
                contenders.append(Contender("sqlmetrics per_user=True", "sqlmetrics", args.k, True))
            for k in sweep:
                if k == args.k and "sqlmetrics" in only:
                    continue  # the main row already is sqlmetrics at this k
                contenders.append(Contender(f"sqlmetrics @{k} (k sweep)", "sqlmetrics", k,
                                            check="exact" if k == args.k else "self"))

            # The numbers to agree with: sqlmetrics once, untimed, with mrr@C as well and without
            # --memory-limit. It also brings the Parquet files into the page cache before
            # anything is timed.
            wanted = ", ".join(metric_names(args.k) + [f"mrr@{args.candidates}"])
            log(f"[{human(users)}] reference: sqlmetrics {wanted}")
            reference = spawn(["--child", "sqlmetrics", *common, "--k", str(args.k),
                               "--extra-metric", f"mrr@{args.candidates}"], workdir, args.timeout)
            if "error" in reference:
                log(f"  reference failed: {reference['error']}")
                return 2

            # Round robin: run i of every contender before run i + 1 of any, so that a drift
            # in the machine's speed (a shared VM drifts 10-20% over an hour) weighs on every
            # contender alike instead of on whichever ran during the slow minutes.
            for i in range(args.repeat):
                for c in contenders:
                    if c.error or c.skipped:
                        continue
                    extra = ["--k", str(c.k)] + (["--per-user"] if c.per_user else [])
                    if c.check == "ranx" and i == args.repeat - 1:
                        extra.append("--tie-check")
                    out = spawn(["--child", c.child, *common, *limit, *extra], workdir, args.timeout)
                    if "error" in out:
                        c.error = out["error"]
                        log(f"[{human(users)}] {c.label} run {i + 1}: FAILED {c.error}")
                        continue
                    if "skipped" in out:
                        c.skipped = out["skipped"]
                        log(f"[{human(users)}] {c.label}: skipped, {c.skipped}")
                        continue
                    c.runs.append(out)
                    log(f"[{human(users)}] {c.label} run {i + 1}/{args.repeat}: "
                        f"{out['seconds']:.3f} s (process {out['process_seconds']:.2f} s), "
                        f"{out['peak_rss_mb']:.0f} MB")
            rows.append((users, {"meta": meta, "reference": reference}, contenders))

    lines = [
        "| users | recs rows | contender | median s | peak RSS MB | × sqlmetrics | process s | check |",
        "|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    raw = []
    for users, info, contenders in rows:
        meta, reference = info["meta"], info["reference"]
        base = next((c for c in contenders if c.label == "sqlmetrics" and c.runs), None)
        base_s = statistics.median(r["seconds"] for r in base.runs) if base else None
        for c in contenders:
            head = f"| {users:,} | {meta['recs_rows']:,} | {c.label} |"
            if c.skipped:
                lines.append(f"{head} — | — | — | — | skipped: {c.skipped} |")
                raw.append({"users": users, "contender": c.label, "skipped": c.skipped})
                continue
            if not c.runs:
                lines.append(f"{head} — | — | — | — | FAILED: {c.error} |")
                failed = True
                raw.append({"users": users, "contender": c.label, "error": c.error})
                continue
            seconds = statistics.median(r["seconds"] for r in c.runs)
            process = statistics.median(r["process_seconds"] for r in c.runs)
            rss = max(r["peak_rss_mb"] for r in c.runs)
            # every run is checked; the last one's text is shown unless an earlier run failed
            texts = [compare(c, run, reference, args.candidates, meta) for run in c.runs]
            check = next((t for t in texts if t.startswith(("MISMATCH", "WRONG"))), texts[-1])
            if c.error:
                failed = True
            ratio = f"{seconds / base_s:.2f}" if base_s else "—"
            lines.append(f"{head} {fmt_seconds(seconds)} | {rss:,.0f} | {ratio} | "
                         f"{fmt_seconds(process)} | {check} |")
            raw.append({"users": users, "contender": c.label, "k": c.k, "runs": c.runs,
                        "check": check})
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"sizes": sizes, "candidates": args.candidates, "repeat": args.repeat,
                       "results": raw,
                       "references": [{"users": u, **i["reference"]} for u, i, _ in rows]},
                      handle, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
