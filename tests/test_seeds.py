"""Every worked example of the seed documents (../shared/seeds), reproduced.

Where a seed rounds early, the exact value is tested and the seed's printed value noted."""

import math

import pytest

import sqlmetrics
from tests.conftest import table


def one_user_list(con, relevances, name="events"):
    """A single-table log: one user, items ranked in the given order with these relevances."""
    rows = [
        ("u", f"i{pos}", float(len(relevances) - pos), rel) for pos, rel in enumerate(relevances)
    ]
    return table(
        con, name, "user_id VARCHAR, item_id VARCHAR, score DOUBLE, relevance DOUBLE", rows
    )


def value(result, column):
    assert result.num_rows == 1
    return result.column(column)[0].as_py()


# seed 000: CG sums the relevance scores; DCG discounts by log2(i + 1); NDCG = DCG / IDCG.
def test_seed_000_cumulative_gain_of_the_store_items(con):
    rels = [1, 4, 2, 3, 5, 0]  # Brazilian eggs, dread, music, toad, ballot, future
    one_user_list(con, rels)
    out = sqlmetrics.evaluate(con, "events", ["cg@6", "dcg@6", "idcg@6", "ndcg@6"])
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rels))
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(sorted(rels, reverse=True)))
    assert value(out, "cg@6") == 15
    assert value(out, "dcg@6") == pytest.approx(dcg, abs=1e-12)
    assert value(out, "idcg@6") == pytest.approx(idcg, abs=1e-12)
    assert value(out, "ndcg@6") == pytest.approx(dcg / idcg, abs=1e-12)


def test_seed_000_exponential_gain_variant(con):
    rels = [1, 4, 2, 3, 5, 0]
    one_user_list(con, rels)
    out = sqlmetrics.evaluate(con, "events", ["dcg@6"], gain="exponential")
    assert value(out, "dcg@6") == pytest.approx(
        sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(rels))
    )


def test_seed_001_ndcg_at_3_is_0_950_not_the_printed_0_94(con):
    # Recommender order d10 (rel 3), d3 (rel 4), d1 (rel 3); ideal order 4, 3, 3.
    # The seed prints 7.02 / 7.4 = 0.94 from rounded sums; exact is 7.0237 / 7.3928 = 0.9501.
    table(
        con,
        "recs",
        "user_id VARCHAR, item_id VARCHAR, score DOUBLE",
        [("u", "d10", 3.0), ("u", "d3", 2.0), ("u", "d1", 1.0)],
    )
    table(
        con,
        "truth",
        "user_id VARCHAR, item_id VARCHAR, relevance INTEGER",
        [("u", "d10", 3), ("u", "d3", 4), ("u", "d1", 3)],
    )
    out = sqlmetrics.evaluate(con, "recs", ["dcg@3", "idcg@3", "ndcg@3"], truth="truth")
    assert value(out, "dcg@3") == pytest.approx(3 + 4 / math.log2(3) + 3 / 2, abs=1e-12)
    assert value(out, "dcg@3") == pytest.approx(7.02, abs=0.005)
    assert value(out, "idcg@3") == pytest.approx(4 + 3 / math.log2(3) + 3 / 2, abs=1e-12)
    assert value(out, "idcg@3") == pytest.approx(7.39, abs=0.005)
    assert value(out, "ndcg@3") == pytest.approx(0.9501, abs=5e-5)


def test_seed_002_cg_dcg_ndcg_of_2_0_3_2(con):
    one_user_list(con, [2, 0, 3, 2])
    out = sqlmetrics.evaluate(con, "events", ["cg@4", "dcg@4", "idcg@4", "ndcg@4"])
    assert value(out, "cg@4") == 7  # 2 + 0 + 3 + 2
    # the best arrangement (3, 2, 2, 0): 3 + 1.26 + 1 + 0, printed as 5.3
    assert value(out, "idcg@4") == pytest.approx(3 + 2 / math.log2(3) + 1, abs=1e-12)
    assert value(out, "idcg@4") == pytest.approx(5.3, abs=0.05)
    # (2 + 0 + 1.5 + 0.86) / 5.26 = 0.829, printed as 4.4 / 5.3 = 0.83
    assert value(out, "dcg@4") == pytest.approx(2 + 1.5 + 2 / math.log2(5), abs=1e-12)
    assert value(out, "ndcg@4") == pytest.approx(0.83, abs=0.005)


def test_seed_002_ideal_arrangement_has_ndcg_1(con):
    one_user_list(con, [3, 2, 2, 0])
    assert value(sqlmetrics.evaluate(con, "events", ["ndcg@4"]), "ndcg@4") == pytest.approx(
        1.0, abs=1e-15
    )


def test_seed_003_implicit_feedback_ndcg_at_5(con):
    # k = 5, actual_set = {3, 4}, pred = [6, 3, 8, 4, 5]; binary relevance (a truth table of
    # (user, item) pairs without a relevance column: every row is relevant).
    table(
        con,
        "pred",
        "user_id INTEGER, item_id INTEGER, score DOUBLE",
        [(1, item, 5.0 - pos) for pos, item in enumerate([6, 3, 8, 4, 5])],
    )
    table(con, "actual", "user_id INTEGER, item_id INTEGER", [(1, 3), (1, 4)])
    for gain in ("linear", "exponential"):  # 2^1 - 1 = 1: the paper's formula gives the same
        out = sqlmetrics.evaluate(
            con, "pred", ["idcg@5", "dcg@5", "ndcg@5"], truth="actual", gain=gain
        )
        assert round(value(out, "idcg@5"), 4) == 1.6309
        assert round(value(out, "dcg@5"), 4) == 1.0616
        assert round(value(out, "ndcg@5"), 4) == 0.6509


def test_seed_004_ndcg_with_action_grades(con):
    # Purchase = 3, add-to-cart = 2, view = 1, no interaction = 0; top 5 = A, B, C, D, E.
    table(
        con,
        "events",
        "user_id VARCHAR, item_id VARCHAR, score DOUBLE, event_type VARCHAR",
        [
            ("u", "A", 5.0, "purchase"),
            ("u", "B", 4.0, "view"),
            ("u", "C", 3.0, None),
            ("u", "D", 2.0, "add_to_cart"),
            ("u", "E", 1.0, "impression"),
        ],
    )
    grades = {"purchase": 3, "add_to_cart": 2, "view": 1}
    out = sqlmetrics.evaluate(
        con, "events", ["dcg@5", "idcg@5", "ndcg@5"], relevance=grades, action="event_type"
    )
    assert round(value(out, "dcg@5"), 3) == 4.492
    assert round(value(out, "idcg@5"), 3) == 4.762
    assert round(value(out, "ndcg@5"), 3) == 0.943


def test_seed_004_action_grades_from_a_truth_log_keep_the_highest(con):
    table(
        con,
        "recs",
        "user_id VARCHAR, item_id VARCHAR, score DOUBLE",
        [("u", x, 5.0 - i) for i, x in enumerate("ABCDE")],
    )
    # the truth log has several actions per (user, item): the highest grade counts
    table(
        con,
        "actions",
        "user_id VARCHAR, item_id VARCHAR, event_type VARCHAR",
        [
            ("u", "A", "view"),
            ("u", "A", "purchase"),
            ("u", "B", "view"),
            ("u", "D", "view"),
            ("u", "D", "add_to_cart"),
        ],
    )
    out = sqlmetrics.evaluate(
        con,
        "recs",
        ["ndcg@5"],
        truth="actions",
        relevance={"purchase": 3, "add_to_cart": 2, "view": 1},
        action="event_type",
    )
    assert round(value(out, "ndcg@5"), 3) == 0.943


def test_seed_004_recall_at_5(con):
    # relevant {A, B, C, D}; top 5 = A, X, Y, C, Z: 2 of 4 found.
    table(
        con,
        "recs",
        "user_id VARCHAR, item_id VARCHAR, score DOUBLE",
        [("u", x, 5.0 - i) for i, x in enumerate("AXYCZ")],
    )
    table(
        con,
        "truth",
        "user_id VARCHAR, item_id VARCHAR, relevance INTEGER",
        [("u", x, 1) for x in "ABCD"],
    )
    out = sqlmetrics.evaluate(con, "recs", ["recall@5", "precision@5", "hit_rate@5"], truth="truth")
    assert value(out, "recall@5") == 0.5
    assert value(out, "precision@5") == 2 / 5
    assert value(out, "hit_rate@5") == 1.0


def test_seed_004_mrr_over_four_users(con):
    # first relevant result at 3, 1, 3 and nowhere: (1/3 + 1 + 1/3 + 0) / 4 = 0.417
    first_hit = {"u1": 3, "u2": 1, "u3": 3, "u4": None}
    recs, truth = [], []
    for user, hit in first_hit.items():
        for pos in range(1, 6):
            recs.append((user, f"{user}-{pos}", 10.0 - pos))
        truth.append((user, f"{user}-{hit}" if hit else f"{user}-never", 1))
    table(con, "recs", "user_id VARCHAR, item_id VARCHAR, score DOUBLE", recs)
    table(con, "truth", "user_id VARCHAR, item_id VARCHAR, relevance INTEGER", truth)
    out = sqlmetrics.evaluate(con, "recs", ["mrr@5"], truth="truth")
    assert value(out, "users") == 4
    assert value(out, "mrr@5") == pytest.approx((1 / 3 + 1 + 1 / 3 + 0) / 4, abs=1e-15)
    assert round(value(out, "mrr@5"), 3) == 0.417


def test_seed_004_average_precision_at_6(con):
    # relevance by rank 1, 0, 0, 1, 1, 0 and N = 3 relevant: (1 + 0.5 + 0.6) / 3 = 0.7
    one_user_list(con, [1, 0, 0, 1, 1, 0])
    out = sqlmetrics.evaluate(con, "events", ["map@6", "mar@6", "arhr@6", "precision@6"])
    assert value(out, "map@6") == pytest.approx(0.7, abs=1e-15)
    # mAR: recall at each hit is 1/3, 2/3, 3/3, averaged over N = 3
    assert value(out, "mar@6") == pytest.approx((1 / 3 + 2 / 3 + 1) / 3, abs=1e-15)
    # ARHR: 1/1 + 1/4 + 1/5
    assert value(out, "arhr@6") == pytest.approx(1 + 1 / 4 + 1 / 5, abs=1e-15)
    assert value(out, "precision@6") == 0.5
