"""Random subtopic judgements for tests/test_subtopics.py (against ndeval) and the other engines'
tests (check_subtopics: tests/test_postgres.py, tests/test_spark.py)."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa

import sqlmetrics

CON = duckdb.connect()

# every measure under ir_measures' names (the labels of both tools)
MEASURES = [
    "alpha_nDCG@1", "alpha_nDCG@2", "alpha_nDCG@5", "alpha_nDCG@10", "alpha_nDCG@20",
    "alpha_nDCG(alpha=0.25)@10", "P_IA@1", "P_IA@5", "P_IA@20", "AP_IA", "ERR_IA@2",
    "ERR_IA@5", "ERR_IA@20", "NRBP", "NRBP(beta=0.8)",
]  # fmt: skip


def random_data(seed: int, ties: bool = True):
    """recs (user_id, item_id, score) and subtopics (user_id, subtopic, item_id, relevance)
    tables: units "q1".. with 1 to 40 recommended items d00..d49, subtopics s0..s4 judged on a
    pool of the retrieved and other items."""
    rng = random.Random(seed)
    recs, judged = [], []
    for user in range(1, rng.randint(3, 14)):
        qid = f"q{user}"
        kind = rng.random()
        docs = list(dict.fromkeys(f"d{rng.randint(0, 49):02d}" for _ in range(rng.randint(1, 40))))
        if kind > 0.1:  # else: judgements without a list
            recs += [(qid, d, float(rng.randint(0, 6) if ties else rng.random())) for d in docs]
        if kind < 0.2:
            continue  # a list without a judgement
        unretrieved = [f"d{rng.randint(50, 59)}" for _ in range(rng.randint(0, 4))]
        pool = [d for d in docs if rng.random() < 0.6] + unretrieved
        all_zero = rng.random() < 0.15
        for s in range(rng.randint(1, 5)):
            for d in dict.fromkeys(pool):
                if rng.random() < 0.5:
                    judged.append((qid, f"s{s}", d, 0 if all_zero else rng.choice((0, 1, 1, 2, 3))))
        if not any(j[0] == qid for j in judged):
            judged.append((qid, "s0", pool[0] if pool else "d99", 0))
    recs_t = pa.table({"user_id": [r[0] for r in recs], "item_id": [r[1] for r in recs],
                       "score": [r[2] for r in recs]})  # fmt: skip
    columns = ("user_id", "subtopic", "item_id", "relevance")
    subtopics_t = pa.table({name: [j[i] for j in judged] for i, name in enumerate(columns)})
    return recs_t, subtopics_t


def with_weights(subtopics: pa.Table, seed: int = 0) -> pa.Table:
    """subtopics with a `weight` column: one weight (0.5, 1, 2 or 3) per (unit, subtopic)."""
    rng = random.Random(seed)
    chosen: dict = {}
    keys = zip(subtopics["user_id"].to_pylist(), subtopics["subtopic"].to_pylist(), strict=True)
    weights = [chosen.setdefault(key, rng.choice((0.5, 1.0, 2.0, 3.0))) for key in keys]
    return subtopics.append_column("weight", pa.array(weights, pa.float64()))


def deep_data(seed: int):
    """As random_data, with long lists and many relevant items, for alpha-nDCG's ideal list
    past ndeval's depth 20 and past 100: units "q1".. with up to 130 recommended items of
    d000..d299 (tied scores; q1 about 170, over 100 of them relevant), 1 to 6 subtopics,
    grades -2 to 3 (below 1 not relevant), a unit of judgements all below 1 (q3), a unit
    without judgements (q2)."""
    rng = random.Random(seed)
    recs, judged = [], []
    for user in range(1, rng.randint(3, 8)):
        qid = f"q{user}"
        draws = 260 if user == 1 else rng.randint(1, 130)
        docs = list(dict.fromkeys(f"d{rng.randint(0, 299):03d}" for _ in range(draws)))
        recs += [(qid, d, float(rng.randint(0, 9))) for d in docs]
        if user == 2:
            continue  # a list without a judgement
        pool = [d for d in docs if rng.random() < 0.7]
        pool += [f"d{rng.randint(300, 349)}" for _ in range(rng.randint(0, 10))]
        grades = (-2, -1, 0) if user == 3 else (-2, -1, 0, 1, 1, 2, 3)
        for s in range(6 if user == 1 else rng.randint(1, 6)):
            chosen = [d for d in dict.fromkeys(pool) if rng.random() < 0.5]
            judged += [(qid, f"s{s}", d, rng.choice(grades)) for d in chosen]
    recs_t = pa.table({"user_id": [r[0] for r in recs], "item_id": [r[1] for r in recs],
                       "score": [r[2] for r in recs]})  # fmt: skip
    columns = ("user_id", "subtopic", "item_id", "relevance")
    return recs_t, pa.table({name: [j[i] for j in judged] for i, name in enumerate(columns)})


def check_subtopics(con) -> None:
    """`con`'s values of every intent-aware measure equal DuckDB's, per unit and aggregated,
    to 1e-9 (tests/test_postgres.py, tests/test_spark.py); alpha-nDCG's ideal list past 100
    positions on deep_data (per unit only: Spark takes some 20 s a call)."""
    from cross_engine import assert_close_tables

    deep = ["alpha_nDCG@150", "alpha_nDCG(alpha=0.25)@30", "P_IA@5"]
    cases = [(random_data(2), MEASURES, {}), (random_data(4), MEASURES, {"threshold": 2, "by": "model"}),
             (random_data(6), MEASURES, {"missing": "zero"}),
             ((random_data(8)[0], with_weights(random_data(8)[1], 8)), MEASURES, {}),  # intent weights
             (deep_data(1), deep, {})]  # fmt: skip
    for (recs, subtopics), measures, options in cases:
        if "by" in options:
            recs = recs.append_column("model", pa.array([["A", "B"][i % 2] for i in range(len(recs))]))
        for per_user in (True, False) if measures is MEASURES else (True,):
            call = dict(subtopics=subtopics, per_user=per_user, **options)
            expected = sqlmetrics.evaluate(CON, recs, measures, **call)
            actual = sqlmetrics.evaluate(con, recs, measures, **call)
            assert_close_tables(actual.cast(expected.schema), expected)
