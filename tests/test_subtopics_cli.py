"""`--subtopics` on the command line (evaluate, sql, compare): an ndeval qrels file (topic
subtopic docno judgement) beside a TREC run, as a trec_eval or ndeval user runs them, gives
ndeval's numbers per query (pyndeval, to 1e-9) and evaluate()'s; a Parquet file and a table of
--db too; the wrong inputs exit 2 with one line."""

from __future__ import annotations

import json
import re

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from subtopic_data import random_data

import sqlmetrics
from sqlmetrics.cli import main
from sqlmetrics.inputs.trec import read_subtopic_qrels

NAMES = ["alpha_nDCG@5", "alpha_nDCG@20", "P_IA@5", "AP_IA", "ERR_IA@10", "NRBP", "ndcg@10"]


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def write_trec(folder, recs: pa.Table, subtopics: pa.Table):
    """recs as a TREC run file (qid Q0 docno rank score tag), subtopics as ndeval's qrels."""
    run_path, qrels_path = folder / "run.txt", folder / "qrels.txt"
    with open(run_path, "w") as out:
        for i, row in enumerate(recs.to_pylist()):
            out.write(f"{row['user_id']} Q0 {row['item_id']} {i} {row['score']!r} tag\n")
    with open(qrels_path, "w") as out:
        for row in subtopics.to_pylist():
            out.write(f"{row['user_id']} {row['subtopic']} {row['item_id']} {row['relevance']}\n")
    return run_path, qrels_path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("subtopics_cli")
    recs, subtopics = random_data(21, ties=False)
    # negative grades too (not relevant, as in a qrels file)
    rel = [-1 if i % 7 == 3 else r for i, r in enumerate(subtopics["relevance"].to_pylist())]
    subtopics = subtopics.set_column(3, "relevance", pa.array(rel, pa.int64()))
    run_path, qrels_path = write_trec(folder, recs, subtopics)
    pq.write_table(subtopics, folder / "subtopics.parquet")
    return folder, recs, subtopics, run_path, qrels_path


def test_the_reader_reads_ndeval_s_qrels(files, tmp_path):
    _, _, subtopics, _, qrels_path = files
    assert read_subtopic_qrels(qrels_path).to_pylist() == subtopics.to_pylist()
    # the line loop (non-ASCII text) reads the same columns, and names a short line
    (tmp_path / "q.txt").write_text("51 a dé 1\n52 b d2 -1\n", encoding="utf-8")
    assert read_subtopic_qrels(tmp_path / "q.txt").to_pylist() == [
        {"user_id": "51", "subtopic": "a", "item_id": "dé", "relevance": 1},
        {"user_id": "52", "subtopic": "b", "item_id": "d2", "relevance": -1},
    ]
    (tmp_path / "bad.txt").write_text("51 a dé\n", encoding="utf-8")
    with pytest.raises(sqlmetrics.InvalidDataError, match="bad.txt:1: .*qid subtopic docno rel"):
        read_subtopic_qrels(tmp_path / "bad.txt")


def test_a_trec_run_and_ndeval_qrels_give_ndeval_s_numbers(files, capsys):
    pytest.importorskip("pyndeval")
    from test_subtopics import close, ndeval

    _, recs, subtopics, run_path, qrels_path = files
    status, out, err = run(capsys, "evaluate", run_path, "--subtopics", qrels_path, "-m", ",".join(NAMES),
                           "--per-user", "--format", "json")  # fmt: skip
    assert status == 0, err
    rows = json.loads(out)
    peer = [n for n in NAMES if n != "ndcg@10"]
    theirs = ndeval(recs, subtopics, peer)
    got = {(row["user_id"], name): row[name] for row in rows for name in peer}
    assert set(got) == set(theirs)
    assert not {key: (got[key], v) for key, v in theirs.items() if not close(got[key], v)}
    expected = sqlmetrics.evaluate(duckdb.connect(), recs, NAMES, subtopics=subtopics, per_user=True)
    assert rows == json.loads(json.dumps(expected.to_pylist()))


def test_format_trec_prints_trec_eval_s_lines(files, capsys):
    _, recs, subtopics, run_path, qrels_path = files
    status, out, err = run(capsys, "evaluate", run_path, "--subtopics", qrels_path, "-m", ",".join(NAMES),
                           "--per-user", "--format", "trec")  # fmt: skip
    assert status == 0, err
    per_query = sqlmetrics.evaluate(duckdb.connect(), recs, NAMES, subtopics=subtopics, per_user=True)
    lines = {tuple(line.split("\t")[:2]): line.split("\t")[2] for line in out.splitlines()}
    for row in per_query.to_pylist():
        assert lines[("alpha_nDCG@5".ljust(22), row["user_id"])] == f"{row['alpha_nDCG@5']:6.4f}"
        assert lines[("ndcg_cut_10".ljust(22), row["user_id"])] == f"{row['ndcg@10']:6.4f}"
    means = sqlmetrics.evaluate(duckdb.connect(), recs, NAMES, subtopics=subtopics).to_pylist()[0]
    assert lines[("AP_IA".ljust(22), "all")] == f"{means['AP_IA']:6.4f}"
    assert len(lines) == (per_query.num_rows + 1) * len(NAMES)


def test_a_trec_run_defaults_to_ndeval_s_measures(files, capsys):
    from sqlmetrics.cli.evaluate import NDEVAL_DEFAULT

    _, recs, subtopics, run_path, qrels_path = files
    status, out, err = run(capsys, "evaluate", run_path, "--subtopics", qrels_path, "--format", "json")
    assert status == 0, err
    [row] = json.loads(out)
    assert list(row) == ["users", *NDEVAL_DEFAULT]
    expected = sqlmetrics.evaluate(duckdb.connect(), recs, list(NDEVAL_DEFAULT), subtopics=subtopics)
    assert [row] == json.loads(json.dumps(expected.to_pylist()))


def test_a_parquet_file_and_a_table(files, capsys, tmp_path):
    folder, recs, subtopics, run_path, _ = files
    expected = sqlmetrics.evaluate(duckdb.connect(), recs, NAMES, subtopics=subtopics)
    status, out, err = run(capsys, "evaluate", run_path, "--subtopics", folder / "subtopics.parquet",
                           "-m", ",".join(NAMES), "--format", "json")  # fmt: skip
    assert status == 0, err
    assert json.loads(out) == json.loads(json.dumps(expected.to_pylist()))
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.register("r", recs)
    con.register("s", subtopics)
    con.execute("CREATE TABLE recs AS SELECT * FROM r")
    con.execute("CREATE TABLE judgements AS SELECT * FROM s")
    con.close()
    status, out, err = run(capsys, "evaluate", "recs", "--db", db, "--subtopics", "judgements",
                           "-m", ",".join(NAMES), "--format", "json")  # fmt: skip
    assert status == 0, err
    assert json.loads(out) == json.loads(json.dumps(expected.to_pylist()))
    status, out, err = run(capsys, "sql", "recs", "--db", db, "--subtopics", "judgements", "-m", "p_ia@5")
    assert status == 0, err
    assert "judgements" in out
    con = duckdb.connect(str(db), read_only=True)
    [got] = con.sql(out).fetchall()
    [want] = sqlmetrics.evaluate(con, "recs", "p_ia@5", subtopics="judgements").to_pylist()
    assert got == pytest.approx(tuple(want.values()), abs=1e-12)


def test_compare_takes_subtopics(files, capsys, tmp_path):
    folder, recs, subtopics, _, _ = files
    two = pa.concat_tables([
        recs.append_column("model", pa.array(["A"] * len(recs))),
        recs.set_column(2, "score", pa.array([-s for s in recs["score"].to_pylist()])).append_column(
            "model", pa.array(["B"] * len(recs))),
    ])  # fmt: skip
    pq.write_table(two, tmp_path / "two.parquet")
    con = duckdb.connect()
    expected = sqlmetrics.compare(con, two, ["AP_IA"], subtopics=subtopics, by="model", baseline="A")
    status, out, err = run(capsys, "compare", tmp_path / "two.parquet", "--subtopics",
                           folder / "subtopics.parquet", "-m", "AP_IA", "--by", "model", "--baseline",
                           "A", "--format", "json")  # fmt: skip
    assert status == 0, err
    [row] = json.loads(out)
    assert row["delta"] == pytest.approx(expected.to_pylist()[0]["delta"], abs=1e-12)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--subtopics", "RUN"], "--subtopics '.*run.txt' is a TREC run"),
        (["--subtopics", "QRELS", "--truth", "QRELS"], "give --subtopics or --truth, not both"),
        ([], "needs subtopic judgements: pass --subtopics SOURCE"),
        (["--subtopics", "ODD"], "cannot tell what .* is: .* subtopic qrels"),
        (["--subtopics", "QRELS", "-o", "QRELS"], "would overwrite it"),
    ],
)
def test_wrong_inputs_exit_2_in_one_line(files, capsys, extra, message):
    folder, _, _, run_path, qrels_path = files
    odd = folder / "odd.qrels"
    odd.write_text("51 1 d1\n")
    paths = {"RUN": run_path, "QRELS": qrels_path, "ODD": odd}
    argv = [paths.get(a, a) for a in extra]
    status, out, err = run(capsys, "evaluate", run_path, "-m", "alpha_ndcg@5", *argv)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert re.search(message, err), err
