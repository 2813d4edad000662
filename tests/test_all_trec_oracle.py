"""sqlmetrics against trec_eval 10.0 itself (built from its C source: trec_eval_data.py) on
random collections: every measure of `-m all_trec` that sqlmetrics computes, per query and in
`all`, to 1e-9 (the precise build prints %.17g), under trec_eval's defaults, -c (missing
"zero") and -l 2 (threshold 2); and `sqlmetrics evaluate --format trec` byte for byte equal to
what trec_eval prints. The collections have score ties, negative grades (trec_eval's "pooled
but unjudged"), retrieved items without a judgment, grades above 9, queries without a
relevant item, run queries without judgments and (with -c) judged queries the run misses."""

from __future__ import annotations

import math
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from test_trec_format import supported
from trec_eval_data import trec_eval_binary

import sqlmetrics
from sqlmetrics.cli import main

pytestmark = pytest.mark.xdist_group("trec_eval")  # one worker builds trec_eval


def run_trec_eval(args: list[str], precise: bool = False) -> str:
    """trec_eval's standard output for these arguments (precise: the %.17g build)."""
    done = subprocess.run(
        [str(trec_eval_binary(precise)), *args], capture_output=True, text=True, check=False
    )  # fmt: skip
    assert done.returncode == 0, f"trec_eval {' '.join(args)} failed: {done.stderr}"
    return done.stdout


@dataclass(frozen=True)
class Collection:
    qrels: Path
    run: Path


# grades of random judgments: negative ones (trec_eval's "pooled but unjudged"), 0, graded
# relevance and one above 9 (relstring's '>')
GRADES = (-2, -1, 0, 0, 0, 1, 1, 1, 2, 2, 3, 4, 12)


def random_collection(seed: int, folder: Path, complete: bool = False) -> Collection:
    """A random qrels and run in `folder`: score ties (trec_eval orders them by docno,
    descending), judgments of every grade above, retrieved items without a judgment, queries
    without a relevant item, queries of the run without judgments; complete=True: some
    judged queries are missing from the run (for -c; without it trec_eval refuses them)."""
    rng = random.Random(seed)
    qrels_lines, run_lines = [], []
    queries = [f"{rng.choice(['q', '', 'Q-'])}{i}" for i in range(rng.randint(1, 14))]
    for number, qid in enumerate(queries):
        docs = [f"d{rng.randint(0, 60)}" for _ in range(rng.randint(1, 45))]
        docs = list(dict.fromkeys(docs))
        judged = [d for d in docs if rng.random() < 0.7]
        in_qrels = number == 0 or rng.random() < 0.9
        if in_qrels:
            grades = {d: rng.choice(GRADES) for d in judged}
            if not grades or max(grades.values()) < 0:
                # trec_eval cannot evaluate a query whose every grade is negative
                grades[docs[0]] = rng.choice((0, 1, 3))
            qrels_lines += [f"{qid} 0 {d} {g}" for d, g in grades.items()]
        if in_qrels and complete and number > 0 and rng.random() < 0.25:
            continue  # a judged query the run misses
        retrieved = [d for d in docs if rng.random() < 0.8] or docs[:1]
        levels = rng.choice((3, 10, 1000))  # few score values: many ties
        for d in retrieved:
            score = rng.randrange(levels) / 4
            run_lines.append(f"{qid} Q0 {d} 0 {score} run{seed}")
    rng.shuffle(run_lines)
    qrels, run = folder / f"qrels.{seed}", folder / f"run.{seed}"
    qrels.write_text("".join(line + "\n" for line in qrels_lines), encoding="utf-8")
    run.write_text("".join(line + "\n" for line in run_lines), encoding="utf-8")
    return Collection(qrels, run)


def parse_values(text: str) -> dict[tuple[str, str], float | str]:
    """{(measure, qid): value} of trec_eval's output: floats, and relstring's text unquoted."""
    values: dict[tuple[str, str], float | str] = {}
    for line in text.splitlines():
        measure, qid, value = (field.strip() for field in line.split("\t"))
        if measure == "runid":
            continue
        values[measure, qid] = value[1:-1] if value.startswith("'") else float(value)
    return values


# (trec_eval's options, sqlmetrics' conventions)
SETTINGS = {
    "plain": ([], {}),
    "complete": (["-c"], {"missing": "zero"}),
    "level2": (["-l", "2"], {"threshold": 2}),
    "level2-complete": (["-c", "-l", "2"], {"threshold": 2, "missing": "zero"}),
}
SEEDS = range(5)


def close(a: object, b: object) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)  # type: ignore[arg-type]


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("seed", SEEDS)
def test_all_trec_per_query_and_all_match_trec_eval(tmp_path, seed, setting):
    options, conventions = SETTINGS[setting]
    data = random_collection(seed, tmp_path, complete="missing" in conventions)
    expected = parse_values(
        run_trec_eval([*options, "-q", "-m", "all_trec", str(data.qrels), str(data.run)], precise=True)
    )
    run, qrels = sqlmetrics.read_run(data.run), sqlmetrics.read_qrels(data.qrels)
    con = duckdb.connect()
    try:
        rows = sqlmetrics.evaluate(
            con, run, ["all_trec"], truth=qrels, per_user=True, **conventions
        ).to_pylist()
        (means,) = sqlmetrics.evaluate(con, run, ["all_trec"], truth=qrels, **conventions).to_pylist()
    finally:
        con.close()
    ours = {(label, row["user_id"]): value for row in rows for label, value in row.items()}
    ours.update({(label, "all"): value for label, value in means.items()})
    measures = {measure for measure, _ in expected}
    assert measures <= set(means), "a measure of all_trec is not computed"
    assert {qid for _, qid in expected} == {row["user_id"] for row in rows} | {"all"}
    wrong = {
        key: (ours.get(key), want)
        for key, want in expected.items()
        if not close(ours.get(key), want)
    }
    if setting == "level2-complete":
        # trec_eval -c sums num_rel over every judgment with a grade > 0, whatever -l says
        # (m_num_rel.c, te_calc_avg_num_rel); sqlmetrics sums the users' R (docs/metrics.md)
        wrong.pop(("num_rel", "all"), None)
    assert not wrong, f"(sqlmetrics, trec_eval): {wrong}"


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("seed", SEEDS)
def test_format_trec_prints_what_trec_eval_prints(tmp_path, seed, setting):
    options, conventions = SETTINGS[setting]
    data = random_collection(seed, tmp_path, complete="missing" in conventions)
    printed = run_trec_eval([*options, "-q", "-m", "all_trec", str(data.qrels), str(data.run)])
    kept = [line for line in printed.splitlines(keepends=True) if supported(line.split("\t")[0].strip())]
    args = ["evaluate", str(data.run), "--truth", str(data.qrels), "--metrics", "all_trec", "--per-user"]
    if "missing" in conventions:
        args += ["--missing", "zero"]
    if "threshold" in conventions:
        args += ["--threshold", str(conventions["threshold"])]
    out = tmp_path / "out.txt"
    assert main([*args, "--format", "trec", "-o", str(out)]) == 0
    produced = out.read_text(encoding="utf-8").splitlines(keepends=True)
    assert produced == kept


# P_5 of 32 queries whose hits in the top 5 add up to 55: the exact mean is 11/32 = 0.34375, on
# a tie of the 4th decimal; trec_eval's doubles, added in this order, fall just below it
TIED_P5_HITS = (2, 0, 1, 1, 2, 3, 4, 1, 2, 2, 0, 0, 1, 3, 1, 2, 3, 0, 3, 3, 3, 3, 2, 0, 1, 2, 1, 1,
                2, 0, 3, 3)  # fmt: skip


def tied_collection(folder) -> tuple:
    """Query "a": R = 40, N = 24, 3 hits, set_F = 6 / 64 = 0.09375 exactly; queries q00..q31:
    the P_5 above."""
    qrels = [f"a 0 r{i:02d} 1" for i in range(40)]
    listed = ["r00", "r01", "r02"] + [f"n{i:02d}" for i in range(21)]
    run = [f"a Q0 {doc} 0 {100 - i} tied" for i, doc in enumerate(listed)]
    for q, hits in enumerate(TIED_P5_HITS):
        qrels += [f"q{q:02d} 0 r{i} 1" for i in range(5)]
        docs = [f"r{i}" for i in range(hits)] + [f"n{i}" for i in range(5 - hits)]
        run += [f"q{q:02d} Q0 {doc} 0 {10 - i} tied" for i, doc in enumerate(docs)]
    (folder / "qrels").write_text("".join(line + "\n" for line in qrels))
    (folder / "run").write_text("".join(line + "\n" for line in run))
    return folder / "qrels", folder / "run"


def test_ties_of_the_fourth_decimal_print_as_trec_eval_prints(tmp_path):
    """evaluate() returns the exact 0.09375 and 0.34375; the text form prints what trec_eval
    prints from its doubles (0.0937 and, for the mean over the 33 queries, its own sum)."""
    qrels, run = tied_collection(tmp_path)
    printed = run_trec_eval(["-q", "-m", "set_F", "-m", "P.5", str(qrels), str(run)])
    assert "set_F                 \ta\t0.0937\n" in printed  # trec_eval's, not 0.0938
    con = duckdb.connect()
    rows = sqlmetrics.evaluate(
        con, sqlmetrics.read_run(run), ["set_F", "P_5"], truth=sqlmetrics.read_qrels(qrels), per_user=True
    ).to_pylist()
    assert rows[0]["user_id"] == "a" and rows[0]["set_F"] == 0.09375  # exact
    p5 = [row["P_5"] for row in rows[1:]]
    assert sum(TIED_P5_HITS) == 55 and math.fsum(p5) / 32 == 0.34375
    out = tmp_path / "out.txt"
    assert main(["evaluate", str(run), "--truth", str(qrels), "--metrics", "set_F,P.5", "--per-user",
                 "--format", "trec", "-o", str(out)]) == 0  # fmt: skip
    assert out.read_text() == printed
    # the 32 queries alone: the mean is the tie itself, and trec_eval prints 0.3437
    for name, path in [("qrels32", qrels), ("run32", run)]:
        lines = path.read_text().splitlines(keepends=True)
        (tmp_path / name).write_text("".join(line for line in lines if line.startswith("q")))
    args = [str(tmp_path / "qrels32"), str(tmp_path / "run32")]
    printed = run_trec_eval(["-m", "P.5", *args])
    assert printed == "P_5                   \tall\t0.3437\n"
    args = ["evaluate", args[1], "--truth", args[0], "--metrics", "P.5", "--format", "trec"]
    assert main([*args, "-o", str(out)]) == 0
    assert out.read_text() == printed
