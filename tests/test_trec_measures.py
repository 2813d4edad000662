"""trec_eval's official measures beyond the cutoff families (bpref, gm_map, iprec_at_recall_*,
11pt_avg, num_*, set_*, success@k) and the whole-list names (ndcg, map, recall, mrr, precision)
against trec_eval itself: through pytrec_eval on random data, per query to 1e-9, and against
trec_eval 10.0's own outputs on its test collection. judged@k against a short pure-Python
reference (ir_measures' Judged@k), also under ties="average".

The random data (tests/strategies.py) have score ties, graded and negative grades (trec_eval's
"unjudged"), users without a relevant item and truth never retrieved."""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal

import duckdb
import pytest
import pytrec_eval
import reference
from cross_engine import ALL_TREC_CASES, ALL_TREC_REST, assert_close_tables
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FAST, EvalData, batch
from test_against_pytrec_eval import trec_inputs
from test_dialects import TREC, TREC_AVERAGED, _through_duckdb
from test_trec_eval_parity import CASES, TOLERANCE, data_dir
from trec_eval_expected import read_trec_eval_output

import sqlmetrics

CON = duckdb.connect()

LEVELS = [f"{level / 10:.2f}" for level in range(11)]
IPREC = [f"iprec_at_recall_{level}" for level in LEVELS]
SUCCESS = (1, 2, 5)

# trec_eval measure -> the sqlmetrics metric that must equal it per query
SAME = {
    "bpref": "bpref",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "set_P": "set_P",
    "set_recall": "set_recall",
    "set_F": "set_F",
    **{f"success_{k}": f"success@{k}" for k in SUCCESS},
    "ndcg": "ndcg",
    "map": "map",
    "recip_rank": "mrr",
}
# whole-list names that are trec_eval's set measures
WHOLE_LIST = {"precision": "set_P", "recall": "set_recall", "hit_rate": "success_1000"}
TREC_MEASURES = {
    "bpref", "iprec_at_recall", "11pt_avg", "num_q", "num_ret", "num_rel", "num_rel_ret", "set_P",
    "set_recall", "set_F", f"success.{','.join(map(str, (*SUCCESS, 1000)))}", "ndcg", "map",
    "recip_rank", "gm_map",
}
OURS = [*dict.fromkeys(SAME.values()), *WHOLE_LIST, "gm_map", "num_q", *IPREC, "11pt_avg"]


def without_all_negative_queries(data: EvalData) -> EvalData:
    """The data without the users whose every judgment is negative: trec_eval has no value
    for them (form_res_rels sizes its per-grade counts by the largest grade, -1 here, so the
    query is skipped or read out of bounds: pytrec_eval returns zeros or crashes)."""
    rows = data.recs if data.truth is None else data.truth
    grades: dict = defaultdict(list)
    for row in rows:
        grades[row["user"]].append(row["relevance"])
    dropped = {user for user, gs in grades.items() if max(gs) < 0}
    if data.truth is None:
        recs = [r for r in data.recs if r["user"] not in dropped]
        return EvalData(recs, None, data.item_type, data.grouped)
    truth = [r for r in data.truth if r["user"] not in dropped]
    return EvalData(data.recs, truth, data.item_type, data.grouped)


def lround(x: float) -> int:
    """C's lround of a non-negative double: to the nearest integer, halves away from zero."""
    return int(Decimal(x).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def iprec_trec_eval_10(relevant: list[bool], R: int) -> list[float]:
    """trec_eval 10.0's m_iprec_at_recall.c, line for line: the 11 interpolated precisions
    of a ranking (relevant[i]: the item at rank i + 1 is relevant)."""
    levels = [level / 10 for level in range(11)]
    cutoffs = [lround(p * R) for p in levels]
    num_ret, num_rel_ret = len(relevant), sum(relevant)
    values = [0.0] * 11
    current = 10
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    int_precis = num_rel_ret / num_ret
    rel_so_far = num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        int_precis = max(int_precis, rel_so_far / i)
        if relevant[i - 1]:
            while current >= 0 and rel_so_far == cutoffs[current]:
                values[current] = int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = int_precis
        current -= 1
    return values


def same_cutoffs_in_trec_eval_9(R: int) -> bool:
    """Whether trec_eval 9 (pytrec_eval's: (long) (p R + 0.9)) takes trec_eval 10's cutoffs
    (lround(p R)) at every level for R relevant items."""
    return all(int(level / 10 * R + 0.9) == lround(level / 10 * R) for level in range(11))


def close(a, b) -> bool:
    return a is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.parametrize("ties", ["item_desc", "trec_eval"])
@settings(FAST, max_examples=14)  # batches of 1 to 8 random evaluations (strategies.batch)
@given(data=batch(string_ids=True, grouped=False), threshold=st.sampled_from([1, 2]))
def test_matches_trec_eval_per_query_and_aggregated(ties, data, threshold):
    data = without_all_negative_queries(data)
    run, qrels = trec_inputs(data)
    judged = qrels
    ported: dict[str, list[float]] = {}  # qid -> trec_eval 10.0's 11 iprec values
    expected = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES, relevance_level=threshold).evaluate(run)
    options = dict(truth=data.truth_table(), ties=ties, threshold=threshold)
    rows = sqlmetrics.evaluate(CON, data.recs_table(), OURS, per_user=True, **options).to_pylist()
    actual = {str(row["user_id"]): row for row in rows}
    assert set(actual) == set(expected), "evaluated queries differ from trec_eval's"
    for qid, values in expected.items():
        ours = actual[qid]
        wrong = {
            name: (ours[name], values[trec])
            for trec, name in SAME.items()
            if not close(ours[name], values[trec])
        }
        wrong.update({
            name: (ours[name], values[trec])
            for name, trec in WHOLE_LIST.items()
            if not close(ours[name], values[trec])
        })
        # per query, gm_map is AP; trec_eval keeps ln(max(AP, 1e-5)) to average
        if not (close(ours["gm_map"], values["map"])
                and close(math.log(max(ours["gm_map"], 1e-5)), values["gm_map"])):
            wrong["gm_map"] = (ours["gm_map"], values["gm_map"])
        if ours["num_q"] != 1:
            wrong["num_q"] = (ours["num_q"], 1)
        # iprec_at_recall, 11pt_avg: trec_eval 10.0 rounds p R to the nearest integer where
        # trec_eval 9 (pytrec_eval) added 0.9 and truncated: the port of 10.0 for every query,
        # pytrec_eval where the two rules agree
        relevant = [judged[qid].get(item, 0) >= threshold for item in reference.ranking(run[qid], ties)]
        R = sum(1 for grade in judged[qid].values() if grade >= threshold)
        want = iprec_trec_eval_10(relevant, R)
        ported[qid] = want
        got = [ours[name] for name in IPREC]
        if not all(close(g, w) for g, w in zip(got, want, strict=True)) or not close(
            ours["11pt_avg"], sum(want) / 11
        ):
            wrong["iprec (trec_eval 10)"] = (got, want)
        if same_cutoffs_in_trec_eval_9(R):
            if not all(close(ours[name], values[name]) for name in [*IPREC, "11pt_avg"]):
                wrong["iprec (pytrec_eval)"] = (got, [values[name] for name in IPREC])
        assert not wrong, f"query {qid}: (sqlmetrics, trec_eval) = {wrong}"

    # over queries: sums for num_*, the geometric mean for gm_map, else the mean (trec_eval's
    # aggregation as pytrec_eval spells it)
    if not expected:
        return
    (means,) = sqlmetrics.evaluate(CON, data.recs_table(), OURS, **options).to_pylist()
    for trec, name in [*SAME.items(), ("gm_map", "gm_map"), ("num_q", "num_q")]:
        want = pytrec_eval.compute_aggregated_measure(trec, [v[trec] for v in expected.values()])
        assert close(means[name], want), (name, means[name], want)
    for i, name in enumerate(IPREC):
        want = sum(values[i] for values in ported.values()) / len(ported)
        assert close(means[name], want), (name, means[name], want)


# ---- trec_eval 10.0's own outputs on its test collection -------------------------------------

PARITY = {
    "bpref": "bpref",
    "gm_map": "gm_map",
    **{name: name for name in IPREC},
    "11pt_avg": "11pt_avg",
    "num_q": "num_q",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    "set_P": "set_P",
    "set_recall": "set_recall",
    "set_F": "set_F",
    "success_1": "success@1",
    "success_5": "success@5",
    "success_10": "success@10",
    "ndcg": "ndcg",
    "map": "map",
    "recip_rank": "mrr",
}


@functools.cache
def computed(case_name: str):
    case = CASES[case_name]
    root = data_dir()
    options = {
        "truth": sqlmetrics.read_qrels(root / case.qrels),
        "threshold": case.threshold,
        "missing": case.missing,
    }
    run = sqlmetrics.read_run(root / case.run)
    metrics = list(dict.fromkeys(PARITY.values()))
    con = duckdb.connect()
    rows = sqlmetrics.evaluate(con, run, metrics, per_user=True, **options).to_pylist()
    (mean,) = sqlmetrics.evaluate(con, run, metrics, **options).to_pylist()
    per_query = {row["user_id"]: row for row in rows}
    return read_trec_eval_output(root / case.expected), per_query, mean


@pytest.mark.parametrize("measure", PARITY)
@pytest.mark.parametrize("case_name", ["aq", "aqc", "aql"])
def test_matches_trec_eval_test_collection(case_name, measure):
    expected, per_query, mean = computed(case_name)
    column = PARITY[measure]
    lines = {qid: value for (m, qid), value in expected.items() if m == measure}
    assert "all" in lines, f"{CASES[case_name].expected} has no {measure} all line"
    problems = []
    for qid, want in sorted(lines.items()):
        got = mean[column] if qid == "all" else per_query[qid][column]
        if not abs(got - want) <= TOLERANCE:
            problems.append(f"{measure} {qid}: sqlmetrics {got!r}, trec_eval {want}")
    assert not problems, "\n".join(problems)


# ---- judged@k: ir_measures' Judged@k -------------------------------------------------------


def judged_share(order: list, judged: set, k: int | None) -> float:
    """The share of the top k (the whole list for k None) that is judged, of min(k, N)."""
    top = order if k is None else order[:k]
    return sum(item in judged for item in top) / len(top) if top else 0.0


def judged_reference(data, k: int | None, ties: str, missing: str = "skip") -> dict:
    """{user: judged@k} for ungrouped data: a truth row of any grade is a judgment (every row
    of recs in single-table mode); ties="average" averages over every tie order."""
    lists: dict = defaultdict(dict)
    for row in data.recs:
        lists[row["user"]][row["item"]] = row["score"]
    rows = data.recs if data.truth is None else data.truth
    judged: dict = defaultdict(set)
    for row in rows:
        judged[row["user"]].add(row["item"])
    users = set(lists) if data.truth is None else set(lists) & set(judged)
    if missing == "zero" and data.truth is not None and lists:  # (no recs: no group to add to)
        users |= set(judged)
    out = {}
    for user in users:
        scores = lists.get(user, {})
        if ties == "average":
            orders = reference.all_orders(scores) or [[]]
            out[user] = sum(judged_share(o, judged[user], k) for o in orders) / len(orders)
        else:
            out[user] = judged_share(reference.ranking(scores, ties), judged[user], k)
    return out


@pytest.mark.parametrize("ties", ["item_desc", "item_asc", "average"])
@settings(FAST, max_examples=10)
@given(
    data=batch(grouped=False),
    k=st.sampled_from([1, 2, 3, 10, None]),
    missing=st.sampled_from(["skip", "zero"]),
)
def test_judged_matches_reference(ties, data, k, missing):
    label = "judged" if k is None else f"judged@{k}"
    rows = sqlmetrics.evaluate(
        CON, data.recs_table(), [label, "num_ret"], truth=data.truth_table(), per_user=True,
        ties=ties, missing=missing,
    ).to_pylist()
    expected = judged_reference(data, k, ties, missing)
    actual = {row["user_id"]: row[label] for row in rows}
    assert set(actual) == set(expected)
    wrong = {u: (actual[u], v) for u, v in expected.items() if not close(actual[u], v)}
    assert not wrong, f"(sqlmetrics, reference) = {wrong}"


# ---- conventions, aggregation paths and refusals -------------------------------------------

TIE_FREE = ["num_q", "num_ret", "num_rel", "num_rel_ret", "set_P", "set_recall", "set_F",
            "ndcg", "precision", "recall", "hit_rate", "cg", "dcg", "idcg", "arhr"]


@settings(FAST, max_examples=8)
@given(data=batch(grouped=False))
def test_whole_list_order_free_measures_ignore_ties_average(data):
    """Counts and set measures do not depend on the order: ties="average" gives the exact
    orders' numbers; the whole-list ndcg, cg, ... are the expectation over tie orders."""
    options = dict(truth=data.truth_table(), per_user=True)
    average = sqlmetrics.evaluate(CON, data.recs_table(), TIE_FREE, ties="average", **options).to_pylist()
    exact = sqlmetrics.evaluate(CON, data.recs_table(), TIE_FREE, **options).to_pylist()
    for a, e in zip(average, exact, strict=True):
        for name in TIE_FREE[:7]:
            assert close(a[name], e[name]), (name, a, e)
    # against the brute-force reference (whole list = a k no list reaches)
    names = ["ndcg", "precision@1000", "recall", "hit_rate", "cg", "dcg", "idcg", "arhr"]
    whole = [n if "@" in n else f"{n}@1000" for n in names]
    users, _ = reference.evaluate(data.recs, [w for w in whole if not w.startswith("precision")],
                                  data.truth, ties="average")
    by_user = {row["user_id"]: row for row in average}
    for (_, user), values in users.items():
        for name, ref in zip(names, whole, strict=True):
            if name.startswith("precision"):
                continue
            assert close(by_user[user][name], values[ref]), (user, name, by_user[user][name], values[ref])


@pytest.mark.parametrize("missing", ["skip", "zero"])
@pytest.mark.parametrize("empty", ["zero", "skip"])
@settings(FAST, max_examples=3)
@given(data=batch(grouped=True))
def test_aggregates_from_per_user_values_and_partitions(data, missing, empty):
    """Per group: num_* are sums of the per-user values, num_q the users, gm_map the geometric
    mean of per-user AP floored at 1e-5, the rest means; partitions=3 gives the same."""
    metrics = ["num_q", "num_ret", "num_rel", "num_rel_ret", "gm_map", "gm_map@2", "bpref",
               "set_F", "judged@2", "11pt_avg"]
    options = dict(truth=data.truth_table(), by="model", missing=missing, empty=empty)
    rows = sqlmetrics.evaluate(CON, data.recs_table(), metrics, per_user=True, **options).to_pylist()
    groups: dict = defaultdict(list)
    for row in rows:
        groups[row["model"]].append(row)
    for partitions in (1, 3):
        table = sqlmetrics.evaluate(CON, data.recs_table(), metrics, partitions=partitions, **options)
        result = {row["model"]: row for row in table.to_pylist()}
        assert set(result) == set(groups)
        for group, users in groups.items():
            got = result[group]
            assert got["users"] == len(users) == got["num_q"]
            for name in metrics:
                values = [u[name] for u in users]
                if name.startswith("num_"):
                    want = sum(values)
                elif name.startswith("gm_map"):
                    want = math.exp(sum(math.log(max(v, 1e-5)) for v in values) / len(values))
                else:
                    want = sum(values) / len(values)
                assert close(got[name], want), (partitions, group, name, got[name], want)


def test_gm_map_floors_zero_ap():
    """trec_eval's MIN_GEO_MEAN: a query with AP 0 counts as 1e-5, so the geometric mean of
    AP 1 and AP 0 is sqrt(1e-5)."""
    import pyarrow as pa

    recs = pa.table({"user_id": [1, 2], "item_id": ["a", "b"], "score": [1.0, 1.0]})
    truth = pa.table({"user_id": [1, 2], "item_id": ["a", "c"], "relevance": [1, 1]})
    (row,) = sqlmetrics.evaluate(CON, recs, ["gm_map", "map"], truth=truth).to_pylist()
    assert close(row["gm_map"], math.sqrt(1e-5)) and row["map"] == 0.5


@pytest.mark.parametrize(
    "name", ["bpref", "gm_map", "gm_map@3", "iprec_at_recall_0.50", "11pt_avg", "map", "mrr"]
)
def test_order_statistics_refuse_ties_average(name):
    import pyarrow as pa

    recs = pa.table({"user_id": [1], "item_id": ["a"], "score": [1.0], "relevance": [1]})
    with pytest.raises(sqlmetrics.ConventionError, match="ties='average'"):
        sqlmetrics.evaluate(CON, recs, [name], ties="average")


@pytest.mark.parametrize("name", ["num_q", "num_ret", "num_rel", "num_rel_ret", "gm_map", "gm_map@5"])
def test_no_interval_or_paired_test_of_a_sum_or_geometric_mean(name):
    import pyarrow as pa

    recs = pa.table({"user_id": [1, 2], "item_id": ["a", "a"], "score": [1.0, 1.0],
                     "model": ["x", "y"], "relevance": [1, 0]})
    with pytest.raises(sqlmetrics.ConventionError, match="not one"):
        sqlmetrics.evaluate(CON, recs, ["ndcg@2", name], confidence=0.9)
    with pytest.raises(sqlmetrics.ConventionError, match="not one"):
        sqlmetrics.compare(CON, recs, [name], by="model", baseline="x")


BETAS = ("0", "0.5", "2.5")  # set_F's parameter, trec_eval's set_F.x (x not squared)


@settings(FAST, max_examples=10)
@given(data=batch(string_ids=True, grouped=False), threshold=st.sampled_from([1, 2]))
def test_set_F_with_a_beta_matches_trec_eval(data, threshold):
    """trec_eval's set_F.x = (x + 1) P R / (x P + R) per query and its mean, for x = 0 (set_P),
    0.5 and 2.5; pytrec_eval keys each as "set_F", so one evaluator per beta."""
    data = without_all_negative_queries(data)
    run, qrels = trec_inputs(data)
    options = dict(truth=data.truth_table(), threshold=threshold)
    names = [f"set_F.{beta}" for beta in BETAS]
    rows = sqlmetrics.evaluate(CON, data.recs_table(), names, per_user=True, **options).to_pylist()
    actual = {str(row["user_id"]): row for row in rows}
    for beta in BETAS:
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"set_F.{beta}"}, relevance_level=threshold)
        expected = evaluator.evaluate(run)
        assert set(actual) == set(expected)
        wrong = {
            qid: (actual[qid][f"set_F_{beta}"], values["set_F"])
            for qid, values in expected.items()
            if not close(actual[qid][f"set_F_{beta}"], values["set_F"])
        }
        assert not wrong, f"set_F.{beta}: (sqlmetrics, trec_eval) = {wrong}"
    if rows:
        (means,) = sqlmetrics.evaluate(CON, data.recs_table(), names[:1], **options).to_pylist()
        set_p = [row["set_F_0"] for row in rows]
        assert close(means["set_F_0"], math.fsum(set_p) / len(set_p))


def test_set_F_names():
    from sqlmetrics.names.metric_names import parse_metrics

    [trec] = parse_metrics("set_F.0.5")
    [ir] = parse_metrics("SetF(beta=0.5)")
    assert (trec.label, trec.name, trec.param) == ("set_F_0.5", "set_F", 0.5)  # trec_eval's label
    assert (ir.label, ir.name, ir.param) == ("SetF(beta=0.5)", "set_F", 0.5)
    assert parse_metrics("set_F")[0].param is None
    for bad in ("set_F.x", "set_F.-1", "set_F.nan", "SetF(beta=inf)", "set_F.0.5,2"):
        with pytest.raises(sqlmetrics.UnknownMetricError, match="one number >= 0"):
            parse_metrics(bad)
    with pytest.raises(sqlmetrics.UnknownMetricError, match="requested twice"):
        parse_metrics(["set_F.0.5", "SetF(beta=0.5)"])
    from sqlmetrics.inputs.trec_output import ordered

    # --format trec prints it where trec_eval prints set_F
    labels = ["set_F_0.5", "ndcg", "set_P", "map", "P_5"]
    assert ordered(labels) == ["map", "P_5", "ndcg", "set_P", "set_F_0.5"]


@pytest.mark.parametrize(
    "label, name, k",
    [
        ("ndcg", "ndcg", None), ("MAP", "map", None), ("map@7", "map", 7), ("set_p", "set_P", None),
        ("SET_F", "set_F", None), ("iprec_at_recall_0.30", "iprec_at_recall_0.30", None),
        ("11pt_avg", "11pt_avg", None), ("success@3", "success", 3), ("judged@10", "judged", 10),
        ("gm_map@100", "gm_map", 100), ("num_rel_ret", "num_rel_ret", None),
    ],
)
def test_names(label, name, k):
    from sqlmetrics.names.metric_names import parse_metric

    parsed = parse_metric(label)
    assert (parsed.label, parsed.name, parsed.k) == (label, name, k)


@pytest.mark.parametrize(
    "label, message",
    [("bpref@10", "takes no cutoff"), ("num_q@5", "takes no cutoff"), ("diversity", "needs a cutoff"),
     ("iprec_at_recall_0.55", "unknown metric"), ("set_PP", "did you mean 'set_P'")],
)
def test_names_refused(label, message):
    from sqlmetrics.names.metric_names import parse_metric

    with pytest.raises(sqlmetrics.UnknownMetricError, match=message):
        parse_metric(label)


# ---- the portable SQL: BigQuery's and Snowflake's text computes DuckDB's numbers -------------


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake"])
@pytest.mark.parametrize("conventions", [{}, {"missing": "zero", "threshold": 2}, {"ties": "average"}],
                         ids=["defaults", "missing-zero", "average"])
@settings(FAST, max_examples=2)
@given(data=batch())
def test_trec_measures_in_bigquery_and_snowflake_text(dialect, conventions, data):
    metrics = TREC_AVERAGED if conventions.get("ties") == "average" else TREC
    expected = sqlmetrics.evaluate(
        CON, data.recs_table(), metrics, truth=data.truth_table(),
        by="model" if data.grouped else None, **conventions,
    )
    rendered = _through_duckdb(data, metrics, conventions, dialect)
    # BigQuery's columns hold no "." (iprec_at_recall_0_50): test_dotted_names_in_bigquery
    names = [n.replace(".", "_") if dialect == "bigquery" else n for n in expected.column_names]
    assert rendered.column_names == names
    assert_close_tables(rendered.rename_columns(expected.column_names).cast(expected.schema), expected)


@pytest.mark.parametrize("dialect", ["bigquery", "snowflake"])
@pytest.mark.parametrize("conventions", ALL_TREC_CASES, ids=["defaults", "missing-zero", "skip-empty"])
@settings(FAST, max_examples=2)
@given(data=batch())
def test_the_rest_of_all_trec_in_bigquery_and_snowflake_text(dialect, conventions, data):
    expected = sqlmetrics.evaluate(
        CON, data.recs_table(), ALL_TREC_REST, truth=data.truth_table(),
        by="model" if data.grouped else None, **conventions,
    )  # fmt: skip
    rendered = _through_duckdb(data, ALL_TREC_REST, conventions, dialect)
    names = [n.replace(".", "_") if dialect == "bigquery" else n for n in expected.column_names]
    assert rendered.column_names == names
    assert_close_tables(rendered.rename_columns(expected.column_names).cast(expected.schema), expected)


def test_dotted_names_in_bigquery():
    """BigQuery reads `a.b` as a path and allows no "." in a column name: a metric asked as
    iprec_at_recall_0.50 (or trec_eval's set_F.0.5, column set_F_0.5) comes out with "_";
    every other dialect keeps the name as typed. An input column with a "." is still refused."""
    recs = ("recs", {"user_id": "INT64", "item_id": "STRING", "score": "FLOAT64", "relevance": "INT64"})
    text = sqlmetrics.sql(None, recs, ["iprec_at_recall_0.50", "set_F.0.5"], dialect="bigquery")
    assert "AS `iprec_at_recall_0_50`" in text and "AS `set_F_0_5`" in text and "0.50`" not in text
    snowflake = sqlmetrics.sql(None, recs, ["iprec_at_recall_0.50"], dialect="snowflake")
    assert 'AS "iprec_at_recall_0.50"' in snowflake
    dotted = ("recs", {"user.id": "INT64", "item_id": "STRING", "score": "FLOAT64", "relevance": "INT64"})
    with pytest.raises(sqlmetrics.UnsupportedError, match="bigquery names cannot hold a '.'"):
        sqlmetrics.sql(None, dotted, ["ndcg@3"], user="user.id", dialect="bigquery")
    # a by column of the result's name of a metric clashes with it
    by = ("recs", {**recs[1], "set_F_0_5": "STRING"})
    with pytest.raises(sqlmetrics.ConventionError, match="two columns named 'set_F_0_5'"):
        sqlmetrics.sql(None, by, ["set_F.0.5"], by="set_F_0_5", dialect="bigquery")


@pytest.mark.parametrize("ties", ["item_desc", "average"])
@settings(FAST, max_examples=5)
@given(data=batch(), k=st.sampled_from([1, 2, 3]))
def test_success_is_hit_rate(ties, data, k):
    """success@k is hit_rate@k (asked alone, so that it builds its own tie windows)."""
    options = dict(truth=data.truth_table(), per_user=True, ties=ties,
                   by="model" if data.grouped else None)
    success = sqlmetrics.evaluate(CON, data.recs_table(), [f"success@{k}"], **options).to_pylist()
    hit_rate = sqlmetrics.evaluate(CON, data.recs_table(), [f"hit_rate@{k}"], **options).to_pylist()
    assert [row[f"success@{k}"] for row in success] == [row[f"hit_rate@{k}"] for row in hit_rate]
