"""read_run and read_qrels: the TREC file formats as trec_eval reads them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from trec_eval_data import DATA
from trec_eval_expected import read_trec_eval_output

import sqlmetrics

TOLERANCE = 0.00005 + 1e-12


def data_dir() -> Path:
    """trec_eval's test collection, in the repository (tests/data/trec_eval)."""
    return DATA


def write(tmp_path: Path, text: str, name: str = "file.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- small files --------------------------------------------------------------------------


def test_read_run_columns_and_types(tmp_path):
    path = write(tmp_path, "301 Q0 doc1 1 2.5 myrun\n301 Q0 doc2 2 -1e-3 myrun\n")
    table = sqlmetrics.read_run(path)
    assert table.schema == pa.schema(
        [
            ("user_id", pa.string()),
            ("item_id", pa.string()),
            ("rank", pa.int64()),
            ("score", pa.float64()),
            ("run", pa.string()),
        ]
    )
    assert table.to_pylist() == [
        {"user_id": "301", "item_id": "doc1", "rank": 1, "score": 2.5, "run": "myrun"},
        {"user_id": "301", "item_id": "doc2", "rank": 2, "score": -0.001, "run": "myrun"},
    ]


def test_read_qrels_columns_and_types(tmp_path):
    path = write(tmp_path, "301 0 doc1 2\n301 0 doc2 -1\n302\t0\tdoc3\t0\n")
    table = sqlmetrics.read_qrels(path)
    assert table.schema == pa.schema(
        [("user_id", pa.string()), ("item_id", pa.string()), ("relevance", pa.int64())]
    )
    assert table.to_pylist() == [
        {"user_id": "301", "item_id": "doc1", "relevance": 2},
        {"user_id": "301", "item_id": "doc2", "relevance": -1},
        {"user_id": "302", "item_id": "doc3", "relevance": 0},
    ]


def test_comment_lines_are_skipped_and_hash_inside_docno_is_kept(tmp_path):
    qrels = write(
        tmp_path,
        "# a comment\n301 0 CR#93E-1860 1\n#301 0 not-a-row 1\n301 0 doc# 0\n",
        "qrels",
    )
    assert sqlmetrics.read_qrels(qrels).to_pylist() == [
        {"user_id": "301", "item_id": "CR#93E-1860", "relevance": 1},
        {"user_id": "301", "item_id": "doc#", "relevance": 0},
    ]
    run = write(tmp_path, "# run comment\n301 Q0 CR#93E-1860 1 3.0 tag\n#301 Q0 x 2 1 tag\n", "run")
    table = sqlmetrics.read_run(run)
    assert table.column("item_id").to_pylist() == ["CR#93E-1860"]


def test_run_junk_after_tag_is_ignored(tmp_path):
    path = write(tmp_path, "301 Q0 d1 1 2.0 tag more junk at\n301 Q0 d2 2 1.0 tag\n")
    table = sqlmetrics.read_run(path)
    assert table.column("item_id").to_pylist() == ["d1", "d2"]
    assert table.column("run").to_pylist() == ["tag", "tag"]
    assert table.column("score").to_pylist() == [2.0, 1.0]


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("301 Q0 doc1 1 2.5", id="five-fields"),
        pytest.param("301 Q0 doc1", id="three-fields"),
        pytest.param("301 Q0 doc1 1 high tag", id="text-score"),
    ],
)
def test_malformed_run_line_raises(tmp_path, line):
    path = write(tmp_path, f"301 Q0 ok 1 3.0 tag\n{line}\n")
    with pytest.raises(sqlmetrics.InvalidDataError, match=":2:"):
        sqlmetrics.read_run(path)


def test_run_rank_column_is_not_needed(tmp_path):
    # trec_eval never reads the rank column: a non-integer rank is kept as NULL
    path = write(tmp_path, "301 Q0 d1 - 2.0 tag\n301 Q0 d2 7 1.0 tag\n")
    table = sqlmetrics.read_run(path)
    assert table.column("rank").to_pylist() == [None, 7]
    assert table.column("score").to_pylist() == [2.0, 1.0]


def test_run_indented_comment_lines_are_skipped(tmp_path):
    path = write(tmp_path, "  # indented comment line here x\n301 Q0 d1 1 2.0 tag\n")
    assert sqlmetrics.read_run(path).column("item_id").to_pylist() == ["d1"]


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("301 0 doc1", id="three-fields"),
        pytest.param("301 0 doc1 1 extra", id="five-fields"),
        pytest.param("301 0 doc1 yes", id="text-relevance"),
        pytest.param("301 0 doc1 1.5", id="fractional-relevance"),
    ],
)
def test_malformed_qrels_line_raises(tmp_path, line):
    path = write(tmp_path, f"301 0 ok 1\n{line}\n")
    with pytest.raises(sqlmetrics.InvalidDataError, match=":2:"):
        sqlmetrics.read_qrels(path)


def test_invalid_data_error_is_a_sqlmetrics_value_error(tmp_path):
    path = write(tmp_path, "301 0 doc1\n")
    with pytest.raises(sqlmetrics.SqlMetricsError):
        sqlmetrics.read_qrels(path)
    with pytest.raises(ValueError):
        sqlmetrics.read_qrels(path)


# --- the trec_eval test collection --------------------------------------------------------


def test_qrels_with_comments_is_qrels_test_plus_comments():
    root = data_dir()
    plain = sqlmetrics.read_qrels(root / "qrels.test")
    commented = sqlmetrics.read_qrels(root / "qrels.test.with-comments")
    assert commented.schema == plain.schema
    assert plain.num_rows == commented.num_rows == 3681
    # The only data difference: one docno gained a '#', which is part of the docno.
    renamed = [
        {**row, "item_id": "CR#93E-1860"} if row["item_id"] == "CR93E-1860" else row
        for row in plain.to_pylist()
    ]
    assert commented.to_pylist() == renamed
    assert "CR#93E-1860" in commented.column("item_id").to_pylist()
    assert not any(item.startswith("#") for item in commented.column("item_id").to_pylist())


def test_comment_qrels_keep_hash_docnos():
    root = data_dir()
    qrels = sqlmetrics.read_qrels(root / "qrels.comment.test")
    run = sqlmetrics.read_run(root / "results.comment.test")
    assert len(set(qrels.column("user_id").to_pylist())) == 31
    assert len(set(run.column("user_id").to_pylist())) == 301
    assert all("#" in item for item in qrels.column("item_id").to_pylist())
    assert all("#" in item for item in run.column("item_id").to_pylist())
    assert set(run.column("run").to_pylist()) == {"comment.test"}


def test_results_trunc_junk_words_are_ignored():
    root = data_dir()
    lines = (root / "results.trunc").read_text(encoding="utf-8").splitlines()
    with_junk = [line.split() for line in lines if len(line.split()) > 6]
    assert with_junk, "results.trunc should carry junk words after the tag on some lines"
    table = sqlmetrics.read_run(root / "results.trunc")
    assert table.num_rows == len([line for line in lines if line.strip()]) == 584
    assert set(table.column("run").to_pylist()) == {"STANDARD"}
    rows = {(r["user_id"], r["item_id"]): r for r in table.to_pylist()}
    for fields in with_junk:
        row = rows[(fields[0], fields[2])]
        assert row["rank"] == int(fields[3])
        assert row["score"] == float(fields[4])
        assert row["run"] == fields[5] == "STANDARD"
    assert Counter(table.column("user_id").to_pylist()) == {"301": 500, "303": 84}


@pytest.mark.parametrize("qrels_file", ["qrels.test", "qrels.test.with-comments"])
def test_out_test_default_measures(qrels_file):
    """out.test: `trec_eval qrels.test[.with-comments] results.test` (default measures)."""
    root = data_dir()
    expected = read_trec_eval_output(root / "out.test")
    run = sqlmetrics.read_run(root / "results.test")
    qrels = sqlmetrics.read_qrels(root / qrels_file)
    longest = max(Counter(run.column("user_id").to_pylist()).values())
    assert longest <= 1000  # so map@1000 is trec_eval's uncut map
    con = duckdb.connect()
    try:
        out = sqlmetrics.evaluate(con, run, ["precision@10", "map@1000"], truth=qrels)
        (ours,) = out.to_pylist()
    finally:
        con.close()
    assert ours["users"] == expected[("num_q", "all")] == 3
    assert abs(ours["precision@10"] - expected[("P_10", "all")]) <= TOLERANCE
    assert abs(ours["map@1000"] - expected[("map", "all")]) <= TOLERANCE


# --- malformed numbers are sqlmetrics errors (issue 17, item 10) ----------------------------


@pytest.mark.parametrize("rank", ["²", "١", "1_0", "9223372036854775808", "-9223372036854775809"])
def test_a_rank_that_is_not_a_64_bit_integer_is_null_as_trec_eval_ignores_it(tmp_path, rank):
    path = write(tmp_path, f"301 Q0 doc1 {rank} 2.5 myrun\n301 Q0 doc2 -9223372036854775808 1 myrun\n")
    assert sqlmetrics.read_run(path).column("rank").to_pylist() == [None, -(2**63)]


@pytest.mark.parametrize(
    "rel", ["²", "١", "1_0", "9223372036854775808", "18446744073709551616", "-9223372036854775809"]
)
def test_a_relevance_that_is_not_a_64_bit_integer_is_an_invalid_data_error(tmp_path, rel):
    path = write(tmp_path, f"301 0 doc1 1\n301 0 doc2 {rel}\n")
    with pytest.raises(sqlmetrics.InvalidDataError, match=r"file\.txt:2: relevance must be an integer"):
        sqlmetrics.read_qrels(path)


def test_the_64_bit_range_of_relevance_is_read_exactly(tmp_path):
    path = write(tmp_path, "301 0 doc1 9223372036854775807\n301 0 doc2 -9223372036854775808\n301 0 d3 +2\n")
    assert sqlmetrics.read_qrels(path).column("relevance").to_pylist() == [2**63 - 1, -(2**63), 2]


def test_a_file_that_is_not_utf8_is_an_invalid_data_error(tmp_path):
    path = tmp_path / "run.txt"
    path.write_bytes(b"301 Q0 doc1 1 2.5 myrun\n301 Q0 d\xff 2 1.5 myrun\n")
    with pytest.raises(sqlmetrics.InvalidDataError, match=r"run\.txt:2: not UTF-8"):
        sqlmetrics.read_run(path)
