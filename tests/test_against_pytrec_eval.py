"""sqlmetrics against trec_eval (through pytrec_eval), per query, on random data.

trec_eval orders a run by score descending and breaks ties by docno compared as text,
descending: sqlmetrics' default tie order (and ties="trec_eval") for string item ids.
It reports the queries that are both in the run and in the qrels: missing="skip",
empty="zero" (the defaults)."""

from __future__ import annotations

import math

import duckdb
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FAST, batch, cutoffs

import sqlmetrics

CON = duckdb.connect()
MRR_CUTOFF = 1000  # longer than any list: mrr@1000 is trec_eval's recip_rank


def trec_inputs(data):
    """run {qid: {docno: score}} and qrels {qid: {docno: grade}}, all ids as strings."""
    run: dict[str, dict[str, float]] = {}
    for row in data.recs:
        run.setdefault(str(row["user"]), {})[row["item"]] = row["score"]
    judged = data.recs if data.truth is None else data.truth
    qrels: dict[str, dict[str, int]] = {}
    for row in judged:
        qrels.setdefault(str(row["user"]), {})[row["item"]] = int(row["relevance"])
    return run, qrels


@pytest.mark.parametrize("ties", ["item_desc", "trec_eval"])
@settings(FAST, max_examples=14)  # batches of 1 to 8 random evaluations (strategies.batch)
@given(
    data=batch(string_ids=True, grouped=False),
    ks=cutoffs,
    threshold=st.sampled_from([1, 2]),
)
def test_matches_trec_eval(ties, data, ks, threshold):
    run, qrels = trec_inputs(data)
    cut = ",".join(str(k) for k in ks)
    measures = {f"ndcg_cut.{cut}", f"P.{cut}", f"recall.{cut}", f"map_cut.{cut}", "recip_rank", "Rprec"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=threshold).evaluate(run)

    pairs = {"recip_rank": f"mrr@{MRR_CUTOFF}", "Rprec": "r_precision"}
    for k in ks:
        pairs.update(
            {
                f"ndcg_cut_{k}": f"ndcg@{k}",
                f"P_{k}": f"precision@{k}",
                f"recall_{k}": f"recall@{k}",
                f"map_cut_{k}": f"map@{k}",
            }
        )
    table = sqlmetrics.evaluate(
        CON, data.recs_table(), list(pairs.values()), truth=data.truth_table(),
        per_user=True, ties=ties, threshold=threshold,
    )
    actual = {str(row["user_id"]): row for row in table.to_pylist()}

    assert set(actual) == set(expected), "evaluated queries differ from trec_eval's"
    for qid, values in expected.items():
        wrong = {
            trec: (actual[qid][ours], values[trec])
            for trec, ours in pairs.items()
            if actual[qid][ours] is None
            or not math.isclose(actual[qid][ours], values[trec], rel_tol=1e-9, abs_tol=1e-9)
        }
        assert not wrong, f"query {qid}: (sqlmetrics, trec_eval) = {wrong}"
