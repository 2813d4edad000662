"""Any cutoff from 1 to 2^31 - 1 works, beyond the longest list it means the whole list; larger
cutoffs raise InvalidCutoffError (issue 17, item 11)."""

import pyarrow as pa
import pytest
import pytrec_eval

import sqlmetrics
from sqlmetrics.errors import InvalidCutoffError

# lists of at most 4 items, with tied scores (the tie order matters) and graded relevance
RECS = pa.table(
    {
        "user_id": [1, 1, 1, 1, 2, 2, 3],
        "item_id": ["a", "b", "c", "d", "a", "e", "b"],
        "score": [0.9, 0.5, 0.5, 0.1, 0.3, 0.3, 0.2],
    }
)
TRUTH = pa.table(
    {"user_id": [1, 1, 2, 2, 3], "item_id": ["c", "d", "e", "z", "q"], "relevance": [1, 2, 2, 1, 1]}
)
LONGEST = 4
HUGE = [999_997, 10**6, 2**31 - 1]
NAMES = ["ndcg", "map", "mrr", "recall", "hit_rate"]  # the same for every k >= the longest list


def _values(con, k, ties="item_desc", **options):
    names = [n for n in NAMES if ties != "average" or n in ("ndcg", "precision")]
    got = sqlmetrics.evaluate(
        con, RECS, [f"{n}@{k}" for n in names] + [f"precision@{k}"], truth=TRUTH, ties=ties,
        **options,
    ).to_pylist()[0]
    out = {n: got[f"{n}@{k}"] for n in names}
    # relevant items retrieved: tiny per-user terms (1 / 2^31) keep only ~9 digits in the
    # DECIMAL(38,18) exact sums (issue 17 item 5, a separate fix): compared to 1e-6 below
    out["precision*k"] = round(got[f"precision@{k}"] * k, 6)
    return out


@pytest.mark.parametrize("k", HUGE)
@pytest.mark.parametrize("ties", ["item_desc", "trec_eval", "item_asc", "average"])
def test_a_cutoff_beyond_every_list_means_the_whole_list(con, k, ties):
    expected = _values(con, LONGEST, ties)
    got = _values(con, k, ties)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("k", HUGE)
def test_huge_cutoffs_in_partitions_and_per_user(con, k):
    assert _values(con, k, partitions=2) == pytest.approx(_values(con, LONGEST), rel=1e-12)
    per_user = sqlmetrics.evaluate(con, RECS, [f"ndcg@{k}"], truth=TRUTH, per_user=True)
    small = sqlmetrics.evaluate(con, RECS, [f"ndcg@{LONGEST}"], truth=TRUTH, per_user=True)
    assert per_user.column(f"ndcg@{k}").to_pylist() == small.column(f"ndcg@{LONGEST}").to_pylist()


def test_mrr_at_a_million_is_trec_evals_recip_rank(con):
    qrels = {}
    for u, i, r in zip(*(TRUTH.column(c).to_pylist() for c in TRUTH.column_names), strict=True):
        qrels.setdefault(str(u), {})[i] = r
    run = {}
    for u, i, s in zip(*(RECS.column(c).to_pylist() for c in RECS.column_names), strict=True):
        run.setdefault(str(u), {})[i] = s
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    expected = sum(q["recip_rank"] for q in per_query.values()) / len(per_query)
    got = sqlmetrics.evaluate(con, RECS, ["mrr@1000000"], truth=TRUTH, ties="trec_eval")
    assert got.column("mrr@1000000")[0].as_py() == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("k", [2**31, 2**63, 10**20])
@pytest.mark.parametrize("ties", ["item_desc", "average"])
def test_a_cutoff_past_2_to_the_31_is_refused(con, k, ties):
    with pytest.raises(InvalidCutoffError, match="at most 2147483647"):
        sqlmetrics.evaluate(con, RECS, [f"ndcg@{k}"], truth=TRUTH, ties=ties)
    with pytest.raises(InvalidCutoffError):
        sqlmetrics.ndcg(con, RECS, truth=TRUTH, k=k)
