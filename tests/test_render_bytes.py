"""Rendering never changes the bytes of a quoted name or literal (issue 17, item 1): text that
holds any line break Python knows (\\r, \\n, \\x0b, \\x0c, \\x1c-\\x1e, \\x85, \\u2028, \\u2029),
blank lines or lines of spaces reaches the SQL exactly as given."""

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FAST

import sqlmetrics
from sqlmetrics.inputs.identifiers import quote_table_name
from sqlmetrics.statement.dialects import NAMES
from sqlmetrics.statement.dialects import get as get_dialect
from sqlmetrics.statement.templates import render

BREAKS = ["\r", "\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
HOSTILE = [*BREAKS, "\r\n", "\n\n", "\n \n", "\n\t\n", "\u2028\u2028"]


def _recs(scores):
    return pa.table({"user_id": [1, 1], "item_id": ["a", "b"], "score": scores})


TRUTH = pa.table({"user_id": [1], "item_id": ["a"]})
GOOD, BAD = [0.9, 0.1], [0.1, 0.9]  # precision@1: 1.0 and 0.0


@pytest.mark.parametrize("text", HOSTILE)
def test_table_names_are_not_confused(con, text):
    # "t<text>x" holds the good list, "t\nx" (what splitting lines made of it) the bad one
    for name, scores in ((f"t{text}x", GOOD), ("t\nx", BAD) if text != "\n" else ("tx", BAD)):
        con.register("frame", _recs(scores))
        con.execute(f"CREATE TABLE {quote_table_name(name)} AS SELECT * FROM frame")
        con.unregister("frame")
    got = sqlmetrics.evaluate(con, f"t{text}x", ["precision@1"], truth=TRUTH).to_pylist()
    assert got == [{"users": 1, "precision@1": 1.0}]


@pytest.mark.parametrize("text", HOSTILE)
def test_column_names_are_kept(con, text):
    recs = pa.table({f"u{text}": [1, 1], f"i{text}": ["a", "b"], f"s{text}": GOOD})
    truth = pa.table({f"u{text}": [1], f"i{text}": ["a"]})
    got = sqlmetrics.evaluate(
        con, recs, ["precision@1"], truth=truth, user=f"u{text}", item=f"i{text}", score=f"s{text}",
        by=None,
    ).to_pylist()
    assert got == [{"users": 1, "precision@1": 1.0}]


@pytest.mark.parametrize("text", HOSTILE)
def test_file_paths_are_kept(con, tmp_path, text):
    pq.write_table(_recs(GOOD), tmp_path / f"day{text}1.parquet")
    other = "day\n1.parquet" if text != "\n" else "day1.parquet"
    pq.write_table(_recs(BAD), tmp_path / other)
    got = sqlmetrics.evaluate(con, str(tmp_path / f"day{text}1.parquet"), ["precision@1"], truth=TRUTH)
    assert got.to_pylist() == [{"users": 1, "precision@1": 1.0}]


@pytest.mark.parametrize("text", HOSTILE)
def test_action_names_are_kept(con, text):
    # the bought item is first: ndcg 1.0; were "buy<text>" read as another action, it would
    # not be graded and ndcg would be 0.0
    truth = pa.table({"user_id": [1, 1], "item_id": ["a", "b"], "act": [f"buy{text}", "view"]})
    got = sqlmetrics.evaluate(
        con, _recs([0.9, 0.1]), ["ndcg@1"], truth=truth, action="act",
        relevance={f"buy{text}": 3, "buy": 0, "view": 0},
    )
    assert got.to_pylist() == [{"users": 1, "ndcg@1": 1.0}]


@pytest.mark.parametrize("text", HOSTILE)
def test_results_table_names_are_kept(text):
    quoted = quote_table_name(f"r{text}x")
    sql = render("reports/results_table.sql.j2", {"table": quoted})
    assert quoted in sql


TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00."), min_size=1, max_size=12
)


@FAST
@given(TEXT)
def test_any_name_and_literal_reach_the_sql_unchanged(text):
    schema = {"user_id": "BIGINT", "item_id": "VARCHAR", "score": "DOUBLE", "act": "VARCHAR"}
    for dialect in NAMES:
        d = get_dialect(dialect)
        sql = sqlmetrics.sql(
            None, (f"t{text}x", schema), ["ndcg@3"], truth=(f"t{text}x", schema), action="act",
            relevance={text: 2}, dialect=dialect,
        )
        assert d.quote_identifier(f"t{text}x") in sql
        assert d.quote_string(text) in sql


@settings(FAST, max_examples=25)  # 1 to 8 names per evaluation: about 110 names
@given(st.lists(TEXT, min_size=1, max_size=8, unique=True))
def test_any_action_name_is_graded(texts):
    # user i bought "a" (action texts[i], graded 3) and did texts[i] + "!" to "b" (ungraded
    # unless it is another user's name); "a" is first: ndcg 1.0 for every user, and 0.0 for
    # a user whose name changed on its way into the SQL
    con = duckdb.connect()
    users = [u for u in range(len(texts)) for _ in range(2)]
    truth = pa.table({
        "user_id": users,
        "item_id": ["a", "b"] * len(texts),
        "act": [t + end for t in texts for end in ("", "!")],
    })
    recs = pa.table({"user_id": users, "item_id": ["a", "b"] * len(texts), "score": [0.9, 0.1] * len(texts)})
    got = sqlmetrics.evaluate(
        con, recs, ["ndcg@1"], truth=truth, action="act", relevance=dict.fromkeys(texts, 3)
    )
    assert got.to_pylist() == [{"users": len(texts), "ndcg@1": 1.0}]


@pytest.mark.parametrize("name", ["t\n", " t", "t\u2028", "\x85t", "main.t\r"])
def test_table_names_are_not_stripped(con, name):
    # "t" holds the bad list: a name that lost its outer whitespace would read it
    for table, scores in ((name, GOOD), ("t", BAD)):
        con.register("frame", _recs(scores))
        con.execute(f"CREATE OR REPLACE TABLE {quote_table_name(table)} AS SELECT * FROM frame")
        con.unregister("frame")
    got = sqlmetrics.evaluate(con, name, ["precision@1"], truth=TRUTH).to_pylist()
    assert got == [{"users": 1, "precision@1": 1.0}]
