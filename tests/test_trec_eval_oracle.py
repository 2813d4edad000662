"""trec_eval 10.0 itself, built from its C source, as an oracle (tests/trec_eval_data.py): it prints
the expected outputs kept in tests/data/trec_eval byte for byte from the inputs kept there (so
the copies the other tests read are trec_eval's), and `sqlmetrics evaluate --format trec` agrees
with it on random collections, query by query, for every measure of all_trec sqlmetrics prints.

Without trec_eval's source (a fresh clone: it lives in ../shared only) these tests are skipped
with one reason; under CI=true they fail."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest
from trec_eval_data import DATA, trec_eval_binary
from trec_eval_expected import parse_trec_eval_output

from sqlmetrics.cli import main

pytestmark = pytest.mark.xdist_group("trec_eval")  # one worker builds trec_eval

MEAS_PARAMS = [
    "-miprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
    "-m", "Rprec_mult.5.0,0.2,0.35", "-mutility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75",
    "-mndcg.1=3,2=9,4=4.5", "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20",
]  # fmt: skip
# expected file -> trec_eval's arguments (tests/data/trec_eval/README.md)
COMMANDS = {
    "out.test": ["qrels.test", "results.test"],
    "out.comment.test": ["qrels.comment.test", "results.comment.test"],
    "out.test.a": ["-m", "all_trec", "qrels.test", "results.test"],
    "out.test.aq": ["-m", "all_trec", "-q", "qrels.test", "results.test"],
    "out.test.aqc": ["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"],
    "out.test.aqcM": ["-m", "all_trec", "-q", "-c", "-M100", "qrels.test", "results.trunc"],
    "out.test.aql": ["-m", "all_trec", "-mrelstring.20", "-q", "-l2", "qrels.rel_level", "results.test"],
    "out.test.meas_params": ["-q", *MEAS_PARAMS, "qrels.test", "results.test"],
}

# trec_eval prints %6.4f: two printed values of the same number differ by at most one unit of
# the 4th decimal (a value on a rounding tie, summed in another order: see docs/conventions.md)
TOLERANCE = 1e-4 + 1e-12


def trec_eval(*args: str | Path) -> bytes:
    """trec_eval's output for these arguments (file names relative to tests/data/trec_eval)."""
    command = [str(trec_eval_binary()), *map(str, args)]
    done = subprocess.run(command, cwd=DATA, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


def test_every_expected_output_has_its_command():
    assert set(COMMANDS) == {path.name for path in DATA.glob("out.*")}


@pytest.mark.parametrize("expected", sorted(COMMANDS))
def test_trec_eval_prints_the_kept_outputs_from_the_kept_inputs(expected):
    assert trec_eval(*COMMANDS[expected]) == (DATA / expected).read_bytes()


def random_collection(seed: int, directory: Path, unrun: bool) -> tuple[Path, Path]:
    """A run and qrels with what trec_eval reads with care: score ties (broken by docno,
    descending), graded and negative grades, judged queries without a relevant document,
    unjudged documents, short lists, and with `unrun` judged queries without a run (trec_eval
    10 exits 4 on those without -c, and on a run's query that the qrels lack)."""
    rng = random.Random(seed)
    run, qrels = [], []
    for q in range(rng.randint(5, 25)):
        qid = f"q{q}"
        docs = [f"d{rng.randint(0, 60):02d}" for _ in range(rng.randint(1, 40))]
        docs = list(dict.fromkeys(docs))
        judged = rng.sample(docs, rng.randint(0, len(docs))) + [f"x{i}" for i in range(rng.randint(1, 4))]
        qrels += [f"{qid} 0 {doc} {rng.choice([-1, 0, 0, 1, 1, 2, 3])}" for doc in judged]
        if not unrun or rng.random() < 0.8:
            for rank, doc in enumerate(docs):  # scores of 9 values: ties
                run.append(f"{qid} Q0 {doc} {rank} {rng.randint(0, 8) / 4} seed{seed}")
    (directory / "run").write_text("\n".join(run) + "\n")
    (directory / "qrels").write_text("\n".join(qrels) + "\n")
    return directory / "run", directory / "qrels"


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("options", [[], ["-c"], ["-l2"]], ids=["default", "c", "l2"])
def test_sqlmetrics_agrees_with_trec_eval_on_random_collections(tmp_path, seed, options):
    run, qrels = random_collection(seed, tmp_path, unrun=options == ["-c"])
    theirs = parse_trec_eval_output(trec_eval("-q", "-m", "all_trec", *options, qrels, run).decode())
    ours_options = {"-c": ["--missing", "zero"], "-l2": ["--threshold", "2"]}.get(" ".join(options), [])
    out = tmp_path / "ours.txt"
    args = ["evaluate", str(run), "--truth", str(qrels), "--metrics", "all_trec", "--per-user", *ours_options]
    assert main([*args, "--format", "trec", "-o", str(out)]) == 0
    ours = parse_trec_eval_output(out.read_text())
    measures = {measure for measure, _ in ours}
    assert len(measures) >= 35, sorted(measures)  # not trivially small
    kept = {key: value for key, value in theirs.items() if key[0] in measures}
    assert set(ours) == set(kept), set(ours) ^ set(kept)
    wrong = {key: (ours[key], kept[key]) for key in ours if abs(ours[key] - kept[key]) > TOLERANCE}
    assert not wrong, f"(sqlmetrics, trec_eval): {wrong}"
