"""The intent-aware measures over subtopics= (alpha-nDCG@k, P-IA@k, AP-IA, ERR-IA@k, NRBP)
against ndeval itself, through ir_measures' pyndeval provider, per unit to 1e-9, on random data:
graded subtopic judgements (0 to 3; relevant from the threshold), score ties, items judged for
several subtopics, units whose judgements are all 0, units of recs without a judgement and of
the judgements without a list (neither is evaluated, as ndeval), lists past ndeval's depth 20;
and where sqlmetrics differs from ndeval on purpose (ERR-IA@1: docs/metrics.md), the
difference itself. PostgreSQL, Spark (tests/test_postgres.py, tests/test_spark.py) and the
BigQuery and Snowflake texts against DuckDB (tests/subtopic_data.py: the data, check_subtopics)."""

from __future__ import annotations

import math
from collections import Counter

import duckdb
import pyarrow as pa
import pytest
from subtopic_data import MEASURES, deep_data, random_data, with_weights

import sqlmetrics

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("pyndeval")
CON = duckdb.connect()

def ndeval(recs: pa.Table, subtopics: pa.Table, names: list[str], rel: int = 1) -> dict:
    """{(unit, label): value} from ir_measures' pyndeval provider (which sorts a list by score,
    then docno ascending: sqlmetrics' ties='item_asc')."""
    qrels = subtopics.rename_columns(["query_id", "iteration", "doc_id", "relevance"]).to_pandas()
    run = recs.rename_columns(["query_id", "doc_id", "score"]).to_pandas()
    measures = {ir_measures.parse_measure(n)(rel=rel): n for n in names}
    # one call per parameter set: pyndeval's evaluators of several alphas or betas in one
    # call share its global alpha and beta (seen: 0 for all but one)
    calls: dict = {}
    for m in measures:
        calls.setdefault(tuple(m.params.get(p) for p in ("alpha", "beta")), []).append(m)
    out = {}
    for group in calls.values():
        for m in ir_measures.pyndeval.iter_calc(group, qrels, run):
            out[(m.query_id, measures[m.measure])] = m.value
    return out


def ours(recs, subtopics, names, **options) -> dict:
    rows = sqlmetrics.evaluate(CON, recs, names, subtopics=subtopics, per_user=True, **options).to_pylist()
    return {(row["user_id"], name): row[name] for row in rows for name in names}


def close(a, b, tol=1e-9) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=tol, abs_tol=tol)


@pytest.mark.parametrize("seed", range(10))
def test_per_unit_equal_to_ndeval(seed):
    recs, subtopics = random_data(seed)
    theirs = ndeval(recs, subtopics, MEASURES)
    got = ours(recs, subtopics, MEASURES, ties="item_asc")
    # the same units: those with a list and a judgement (ndeval's), each measure
    assert set(got) == set(theirs)
    wrong = {key: (got[key], v) for key, v in theirs.items() if not close(got[key], v)}
    assert not wrong, f"(sqlmetrics, ndeval) = {wrong}"


@pytest.mark.parametrize("seed", range(4))
def test_negative_grades_as_ndeval_reads_them(seed):
    """Grades -1 and -2 (a qrels file's "not relevant", "pooled but unjudged") count as not
    relevant, as ndeval and pyndeval read them; the numpy reference of tests/reference_subtopics.py
    (the weights' oracle) gives ndeval's numbers too."""
    from reference_subtopics import measures

    recs, subtopics = random_data(200 + seed)
    grades = subtopics["relevance"].to_pylist()
    grades = [(-1, -2)[i % 2] if i % 5 == 2 else g for i, g in enumerate(grades)]
    subtopics = subtopics.set_column(3, "relevance", pa.array(grades, pa.int64()))
    names = ["alpha_nDCG@5", "P_IA@5", "AP_IA", "ERR_IA@5", "NRBP"]
    theirs = ndeval(recs, subtopics, names)
    got = ours(recs, subtopics, names, ties="item_asc")
    assert set(got) == set(theirs)
    assert not {key: (got[key], v) for key, v in theirs.items() if not close(got[key], v)}
    # the reference, with pyndeval's order (score descending, then docno ascending)
    rows = recs.to_pylist()
    short = dict(zip(names, ["alpha_ndcg", "p_ia", "ap_ia", "err_ia", "nrbp"], strict=True))
    for unit in {u for u, _ in theirs}:
        ranking = [r["item_id"] for r in sorted((r for r in rows if r["user_id"] == unit),
                                                key=lambda r: (-r["score"], r["item_id"]))]  # fmt: skip
        judged = [(r["subtopic"], r["item_id"], r["relevance"])
                  for r in subtopics.to_pylist() if r["user_id"] == unit]  # fmt: skip
        want = measures(ranking, judged, k=5)
        assert all(close(want[short[n]], theirs[(unit, n)]) for n in names), unit


@pytest.mark.parametrize("seed", range(4))
def test_a_threshold_and_the_default_ties(seed):
    """P_IA(rel=2): relevant from grade 2; sqlmetrics' own names under its default ties
    (score, then item descending), given to ndeval as a list without ties."""
    recs, subtopics = random_data(100 + seed, ties=False)
    names = ["alpha_nDCG@10", "P_IA@5", "AP_IA", "ERR_IA@10", "NRBP"]
    theirs = ndeval(recs, subtopics, names, rel=2)
    got = ours(recs, subtopics, names, threshold=2)
    assert set(got) == set(theirs)
    assert not {key: (got[key], v) for key, v in theirs.items() if not close(got[key], v)}
    own = ["alpha_ndcg@10", "p_ia@5", "ap_ia", "err_ia@10", "nrbp"]
    mine = ours(recs, subtopics, own)
    base = ours(recs, subtopics, names)
    for (unit, name), value in base.items():
        assert close(mine[(unit, own[names.index(name)])], value)


def reference_alpha_ndcg(recs: pa.Table, subtopics: pa.Table, k: int, alpha: float = 0.5) -> dict:
    """alpha-nDCG@k per unit (Clarke et al. 2008) written out here, the ideal list built
    greedily as ndeval builds it (at each position the item of the largest gain, exact sums
    by math.fsum; ties: the larger item), for any k: {unit: value} for the units with a list
    and a judgement; the list by score, then item ascending (ties='item_asc'); relevant from
    grade 1."""
    lists: dict = {}
    for row in recs.to_pylist():
        lists.setdefault(row["user_id"], []).append((-row["score"], row["item_id"]))
    grades: dict = {}
    for row in subtopics.to_pylist():
        key, g = (row["user_id"], row["subtopic"], row["item_id"]), row["relevance"]
        grades[key] = max(grades.get(key, g), g)
    relevant: dict = {unit: {} for unit, _, _ in grades}
    for (unit, s, item), g in grades.items():
        if g >= 1:
            relevant[unit].setdefault(item, set()).add(s)

    def gain(item, judged, counts):
        return math.fsum((1 - alpha) ** counts[s] for s in judged.get(item, ()))

    def dcg(order, judged):
        counts, terms = Counter(), []
        for i, item in enumerate(order, 1):
            terms.append(gain(item, judged, counts) / math.log2(i + 1))
            counts.update(judged.get(item, ()))
        return math.fsum(terms)

    out = {}
    for unit in lists.keys() & relevant.keys():
        judged = relevant[unit]
        ranking = [item for _, item in sorted(lists[unit])][:k]
        left, ideal, counts = set(judged), [], Counter()
        while left and len(ideal) < k:
            pick = max(left, key=lambda item: (gain(item, judged, counts), item))
            ideal.append(pick)
            left.remove(pick)
            counts.update(judged[pick])
        got = dcg(ranking, judged)
        out[unit] = got / dcg(ideal, judged) if got > 0 else 0.0
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_reference_is_ndeval(seed):
    """The reference above equals ndeval to its depth, 20 (pyndeval refuses deeper cutoffs)."""
    for recs, subtopics in (random_data(seed), deep_data(seed)):
        for k in (1, 5, 10, 20):
            theirs = ndeval(recs, subtopics, [f"alpha_nDCG@{k}"])
            mine = reference_alpha_ndcg(recs, subtopics, k)
            assert {u for u, _ in theirs} == set(mine)
            assert all(close(mine[u], v) for (u, _), v in theirs.items())


@pytest.mark.parametrize("seed", range(6))
def test_alpha_ndcg_at_any_depth(seed):
    """alpha_ndcg@k past ndeval's 20 and past 100, past the unit's relevant items (q1 of
    deep_data has over 100), against the reference: long lists with tied scores, negative and
    zero grades, a unit without a relevant judgement, several alphas in one call."""
    recs, subtopics = deep_data(seed) if seed % 3 else random_data(seed)
    cases = [(k, 0.5) for k in (5, 10, 20, 30, 101, 150)] + [(25, 0.25), (150, 0.25), (40, 0.7), (10, 1.0)]
    names = [f"alpha_nDCG(alpha={a})@{k}" for k, a in cases]
    got = ours(recs, subtopics, names, ties="item_asc")
    for (k, a), name in zip(cases, names, strict=True):
        expected = reference_alpha_ndcg(recs, subtopics, k, a)
        assert {u for u, n in got if n == name} == set(expected)
        wrong = {u: (got[(u, name)], v) for u, v in expected.items() if not close(got[(u, name)], v)}
        assert not wrong, f"{name}: (sqlmetrics, reference) = {wrong}"


def test_err_ia_at_1_is_normalized_as_at_every_other_cutoff():
    """ndeval leaves ERR-IA@1 without its normalization (its loop starts at the second
    position): sqlmetrics divides by N * 1, so ndeval's value is N times sqlmetrics'."""
    recs, subtopics = random_data(3)
    theirs = ndeval(recs, subtopics, ["ERR_IA@1"])
    got = ours(recs, subtopics, ["ERR_IA@1"], ties="item_asc")
    relevant = subtopics.to_pandas().query("relevance >= 1").groupby("user_id")["subtopic"].nunique()
    checked = 0
    for (unit, name), value in theirs.items():
        n = relevant.get(unit, 0)
        assert close(got[(unit, name)] * n, value) if n else got[(unit, name)] == value == 0
        checked += n > 0
    assert checked


def test_the_mean_is_the_mean_of_the_units():
    recs, subtopics = random_data(5)
    names = ["alpha_nDCG@10", "AP_IA", "NRBP"]
    per_unit = ours(recs, subtopics, names)
    means = sqlmetrics.evaluate(CON, recs, names, subtopics=subtopics).to_pylist()[0]
    units = {u for u, _ in per_unit}
    assert means["users"] == len(units)
    for name in names:
        assert close(means[name], sum(per_unit[(u, name)] for u in units) / len(units))


def test_subtopics_is_the_truth_of_the_other_metrics():
    """An item's grade is its highest over its unit's subtopics (ndeval's 'relevant to any')."""
    recs, subtopics = random_data(7)
    truth = subtopics.to_pandas().groupby(["user_id", "item_id"], as_index=False)["relevance"].max()
    a = sqlmetrics.evaluate(CON, recs, ["ndcg@10", "map"], subtopics=subtopics, per_user=True)
    b = sqlmetrics.evaluate(CON, recs, ["ndcg@10", "map"], truth=truth, per_user=True)
    assert a.to_pylist() == b.to_pylist()


def test_units_keyed_by_two_columns_and_groups():
    """user=[user_id, day], by=model: each (model, unit) its own list, judged by its unit's
    subtopics; the same values as each model's lists alone."""
    recs, subtopics = random_data(11)
    two = pa.concat_tables([
        recs.append_column("model", pa.array(["A"] * len(recs))),
        recs.set_column(2, "score", pa.array([-s for s in recs["score"].to_pylist()])).append_column(
            "model", pa.array(["B"] * len(recs))),
    ])  # fmt: skip
    names = ["alpha_nDCG@5", "P_IA@5", "AP_IA", "ERR_IA@5", "NRBP"]
    got = sqlmetrics.evaluate(CON, two, names, subtopics=subtopics, by="model", per_user=True).to_pylist()
    for model, part in (("A", recs), ("B", two.filter(pa.compute.equal(two["model"], "B")).drop(["model"]))):
        alone = ours(part, subtopics, names)
        for row in (r for r in got if r["model"] == model):
            for name in names:
                assert close(row[name], alone[(row["user_id"], name)])


def test_weights_in_partitions():
    """partitions=3 (each statement a slice of the units, subtopics= filtered alike) gives the
    values of one statement, with intent weights too."""
    recs, subtopics = random_data(5)
    subtopics = with_weights(subtopics, 3)
    names = ["P_IA@5", "AP_IA", "ERR_IA@10", "alpha_nDCG@5", "NRBP"]
    one = sqlmetrics.evaluate(CON, recs, names, subtopics=subtopics, per_user=True).sort_by("user_id")
    three = sqlmetrics.evaluate(CON, recs, names, subtopics=subtopics, per_user=True, partitions=3)
    assert three.sort_by("user_id").equals(one) and one.num_rows > 3


ERRORS = [
    (["alpha_nDCG@10"], {"truth": True}, "needs subtopic judgements"),
    (["ndcg@10"], {"truth": True, "subtopics": True}, "not both"),
    (["alpha_ndcg"], {"subtopics": True}, "needs a cutoff"),
    (["p_ia"], {"subtopics": True}, "needs a cutoff"),
    (["alpha_nDCG(alpha=1.5)@10"], {"subtopics": True}, "between 0 and 1"),
    (["alpha_ndcg@10"], {"subtopics": True, "ties": "average"}, "ties='average'"),
]


@pytest.mark.parametrize(("names", "options", "message"), ERRORS)
def test_refused(names, options, message):
    recs, subtopics = random_data(1)
    options = {k: subtopics if v is True else v for k, v in options.items()}
    with pytest.raises(sqlmetrics.SqlMetricsError, match=message):
        sqlmetrics.evaluate(CON, recs, names, **options)


def test_peer_names():
    from sqlmetrics.names.metric_names import parse_metrics

    labels = ["alpha_nDCG(alpha=0.3)@5", "NRBP(alpha=0.5,beta=0.8)", "AP_IA", "P_IA(rel=2)@10", "ERR_IA@20"]
    parsed = {m.label: m for m in parse_metrics(labels)}
    alpha, nrbp = parsed["alpha_nDCG(alpha=0.3)@5"], parsed["NRBP(alpha=0.5,beta=0.8)"]
    assert (alpha.name, alpha.k, alpha.param) == ("alpha_ndcg", 5, 0.3)
    assert (nrbp.name, nrbp.param) == ("nrbp", 0.8)
    assert parsed["P_IA(rel=2)@10"].overrides == (("threshold", 2),)
    assert (parsed["ERR_IA@20"].name, parsed["ERR_IA@20"].k) == ("err_ia", 20)
    with pytest.raises(sqlmetrics.UnknownMetricError, match="alpha"):
        parse_metrics(["NRBP(alpha=0.3)"])
    with pytest.raises(sqlmetrics.UnknownMetricError, match="did you mean"):
        parse_metrics(["alpha_ndgc@10"])


# ---- other engines: DuckDB's numbers (subtopic_data.check_subtopics: PostgreSQL, Spark) -------


@pytest.mark.parametrize("weights", [False, True], ids=["uniform", "weights"])
@pytest.mark.parametrize("dialect", ["bigquery", "snowflake"])
@pytest.mark.parametrize("deep", [False, True])
def test_bigquery_and_snowflake_text(dialect, weights, deep):
    """deep: alpha-nDCG's ideal list (a recursive CTE in both texts) past 100 positions."""
    sqlglot = pytest.importorskip("sqlglot")
    recs, subtopics = deep_data(1) if deep else random_data(8)
    if weights:
        subtopics = with_weights(subtopics)
    names = ["alpha_nDCG@5", "P_IA@5", "AP_IA", "ERR_IA@5", "NRBP"]
    names += ["alpha_nDCG@150", "alpha_nDCG(alpha=0.25)@30"] if deep else []
    expected = sqlmetrics.evaluate(CON, recs, names, subtopics=subtopics, per_user=True)
    con = duckdb.connect()
    con.register("recs_frame", recs)
    con.register("subtopics_frame", subtopics)
    con.execute("CREATE TABLE recs AS SELECT * FROM recs_frame")
    con.execute("CREATE TABLE subtopics AS SELECT * FROM subtopics_frame")
    text = sqlmetrics.sql(con, "recs", names, subtopics="subtopics", per_user=True, dialect=dialect)
    rendered = con.sql(sqlglot.transpile(text, read=dialect, write="duckdb")[0]).to_arrow_table()
    from cross_engine import assert_close_tables

    assert_close_tables(rendered.rename_columns(expected.column_names).cast(expected.schema), expected)
