"""One function per metric: sqlmetrics.ndcg(con, "events", k=10) and so on. Each is
evaluate() with the metric's names; k may be a list for one column per cutoff, or None for the
whole list ("ndcg"). The names that are no Python identifier (iprec_at_recall_0.50, 11pt_avg)
are names for evaluate() only."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from ..names.metric_names import check_cutoff
from ..names.registry import METRICS
from .evaluation import evaluate


def _names(metric: str, k: int | Sequence[int] | None) -> list[str]:
    if k is None:
        return [metric]  # the whole list
    cutoffs = [k] if isinstance(k, int) or not isinstance(k, Sequence) else list(k)
    return [f"{metric}@{check_cutoff(c)}" for c in cutoffs]


def _metric_function(metric: str):
    definition = METRICS[metric]
    # evaluate()'s signature with `metrics` replaced by the cutoff `k` (or by nothing, for the
    # metrics without one): every keyword of evaluate(), shown explicitly by help()
    evaluate_parameters = list(inspect.signature(evaluate).parameters.values())
    cutoff = inspect.Parameter(
        "k", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=10, annotation="int | Sequence[int] | None"
    )
    parameters = [p if p.name != "metrics" else cutoff for p in evaluate_parameters]
    if not definition.needs_cutoff:
        parameters.remove(cutoff)
    signature = inspect.signature(evaluate).replace(parameters=parameters)

    def function(*args: Any, **kwargs: Any) -> pa.Table:
        bound = signature.bind(*args, **kwargs)
        con, recs = bound.args[:2]
        k = bound.arguments.get("k", 10) if definition.needs_cutoff else None
        names = _names(metric, k) if definition.needs_cutoff else [metric]
        return evaluate(con, recs, names, **bound.kwargs)

    function.__signature__ = signature  # type: ignore[attr-defined]
    if definition.needs_cutoff:
        example = (
            f'sqlmetrics.{metric}(con, "events", k=[5, 10])  # columns {metric}@5, {metric}@10'
        )
    else:
        example = f'sqlmetrics.{metric}(con, "recs", truth="purchases")'

    function.__name__ = function.__qualname__ = metric
    function.__doc__ = (
        f"{metric}: {definition.formula}.\n\n"
        f"Same keyword arguments as sqlmetrics.evaluate (truth, by, per_user, column names,\n"
        f"conventions). Example:\n\n    {example}\n"
    )
    if "subtopics" in definition.reads:
        function.__doc__ = (
            f"{metric}: {definition.formula} (see docs/metrics.md, \"Subtopics\").\n\n"
            "Same keyword arguments as sqlmetrics.evaluate, with subtopics= (unit, subtopic,\n"
            "item[, relevance]) in place of truth=. User 1's list is a, b, c; a and b are\n"
            f"relevant to subtopic s1, c to s2:\n{_SUBTOPICS_SETUP}{_SUBTOPIC_EXAMPLES[metric]}"
        )
    if metric in _BEYOND_EXAMPLES:
        function.__doc__ = (
            f"{metric}: {definition.formula} (see docs/metrics.md, \"Beyond accuracy\").\n\n"
            "Same keyword arguments as sqlmetrics.evaluate, with history= (user, item\n"
            "interactions), catalog= (all items) and item_features= (item vectors) where the\n"
            f"metric needs them.\n{_SETUP}{_BEYOND_EXAMPLES[metric]}"
        )
    return function


# Runnable examples (doctests) of the beyond-accuracy functions, on one small data set: users 1
# and 2 get lists (a, b) and (a, c); in history, users 3 and 4 have (a, b) and (a, c), user 5 (d).
_SETUP = """
    >>> import duckdb, pyarrow as pa, sqlmetrics
    >>> con = duckdb.connect()
    >>> recs = pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "a", "c"],
    ...                  "score": [0.9, 0.8, 0.7, 0.6]})
    >>> history = pa.table({"user_id": [3, 3, 4, 4, 5], "item_id": ["a", "b", "a", "c", "d"]})
"""
_BEYOND_EXAMPLES = {
    "catalog_coverage": """
    3 of the 4 items of history are recommended:

    >>> sqlmetrics.catalog_coverage(con, recs, k=2, history=history).to_pylist()
    [{'users': 2, 'catalog_coverage@2': 0.75}]
""",
    "distributional_coverage": """
    a is half of the 4 recommendations, b and c a quarter each: 0.5 * 1 + 2 * 0.25 * 2 bits:

    >>> sqlmetrics.distributional_coverage(con, recs, k=2).to_pylist()
    [{'users': 2, 'distributional_coverage@2': 1.5}]
""",
    "gini": """
    the catalog's counts, ascending, are d: 0, b: 1, c: 1, a: 2; (-3*0 - 1 + 1 + 3*2) / (3 * 4):

    >>> sqlmetrics.gini(con, recs, k=2, history=history).to_pylist()
    [{'users': 2, 'gini@2': 0.5}]
""",
    "novelty": """
    of the 5 history rows, a has 2, b and c one each: (2 * log2(5/2) + 2 * log2(5)) / 4:

    >>> sqlmetrics.novelty(con, recs, k=2, history=history).to_pylist()
    [{'users': 2, 'novelty@2': 1.8219280948873622}]
""",
    "popularity": """
    a has 2 history users, b and c one each: both lists average 1.5:

    >>> sqlmetrics.popularity(con, recs, k=2, history=history).to_pylist()
    [{'users': 2, 'popularity@2': 1.5}]
""",
    "diversity": """
    a and b share one of their users: sim = 1 / (sqrt(2) * sqrt(1)); the same for a and c:

    >>> sqlmetrics.diversity(con, recs, k=2, history=history, per_user=True).to_pylist()
    [{'user_id': 1, 'diversity@2': 0.29289321881345254}, {'user_id': 2, 'diversity@2': 0.29289321881345254}]
""",
    "serendipity": """
    user 3 (history a, b) is recommended d, which is relevant to it, and c, which is not:
    d never co-occurs with a or b, so its serendipity is (1 - 0) * 1; c's is 0:

    >>> recs = pa.table({"user_id": [3, 3], "item_id": ["c", "d"], "score": [0.9, 0.8]})
    >>> truth = pa.table({"user_id": [3], "item_id": ["d"]})
    >>> sqlmetrics.serendipity(con, recs, k=2, truth=truth, history=history).to_pylist()
    [{'users': 1, 'serendipity@2': 0.5}]
""",
    "personalization": """
    the two lists share one of their two items: cosine 1/2:

    >>> sqlmetrics.personalization(con, recs, k=2).to_pylist()
    [{'users': 2, 'personalization@2': 0.5}]
""",
    "calibration": """
    genre weights per item (a, c: genre 0; b, d: genre 1); user 1's history (a, b) matches its
    list, user 2's (d) shares no genre with its list (a, c): ln(1 / 0.01); the mean of 0 and that:

    >>> features = pa.table({"item_id": ["a", "b", "c", "d"],
    ...                      "genres": [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]})
    >>> history = pa.table({"user_id": [1, 1, 2], "item_id": ["a", "b", "d"]})
    >>> sqlmetrics.calibration(con, recs, k=2, history=history, item_features=features,
    ...                        features="genres").to_pylist()
    [{'users': 2, 'calibration@2': 2.302585092994046}]
""",
    "rbo": """
    model B's list (b, a, d) against model A's (a, b, c): X_d = 0, 2, 2 over depths 1 to 3, so
    (1 - 0.9) (0.9 * 2/2 + 0.81 * 2/3) + 2/3 * 0.9^3; model A's own lists: 1:

    >>> recs = pa.table({"user_id": [1] * 6, "item_id": ["a", "b", "c", "b", "a", "d"],
    ...                  "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0], "model": ["A"] * 3 + ["B"] * 3})
    >>> sqlmetrics.rbo(con, recs, k=3, by="model", baseline="A").to_pylist()
    [{'model': 'A', 'users': 1, 'rbo@3': 1.0}, {'model': 'B', 'users': 1, 'rbo@3': 0.6300000000000001}]
""",
    "rbo_sum": """
    the same lists: the sum to depth 3 without the extrapolation, 0.1 * (0.9 + 0.54):

    >>> recs = pa.table({"user_id": [1] * 6, "item_id": ["a", "b", "c", "b", "a", "d"],
    ...                  "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0], "model": ["A"] * 3 + ["B"] * 3})
    >>> sqlmetrics.rbo_sum(con, recs, k=3, by="model", baseline="A").column("rbo_sum@3").to_pylist()
    [0.271, 0.14400000000000002]
""",
    "fcp": """
    seed 004: true order A > B > C, ranked B, A, C: A > C and B > C concordant, A > B not:

    >>> recs = pa.table({"user_id": [1, 1, 1], "item_id": ["B", "A", "C"], "score": [3.0, 2.0, 1.0]})
    >>> truth = pa.table({"user_id": [1, 1, 1], "item_id": ["A", "B", "C"], "relevance": [3, 2, 1]})
    >>> sqlmetrics.fcp(con, recs, truth=truth).to_pylist()
    [{'users': 1, 'fcp': 0.6666666666666666}]
""",
    "fcp_surprise": """
    Surprise's definition: a score tie between different grades counts as discordant:

    >>> recs = pa.table({"user_id": [1, 1, 1], "item_id": ["A", "B", "C"], "score": [2.0, 2.0, 1.0]})
    >>> truth = pa.table({"user_id": [1, 1, 1], "item_id": ["A", "B", "C"], "relevance": [3, 2, 1]})
    >>> sqlmetrics.evaluate(con, recs, ["fcp", "fcp_surprise"], truth=truth).to_pylist()
    [{'users': 1, 'fcp': 1.0, 'fcp_surprise': 0.6666666666666666}]
""",
}


# ... of the intent-aware measures (subtopics=)
_SUBTOPICS_SETUP = """
    >>> import duckdb, pyarrow as pa, sqlmetrics
    >>> con = duckdb.connect()
    >>> recs = pa.table({"user_id": [1, 1, 1], "item_id": ["a", "b", "c"], "score": [0.9, 0.8, 0.7]})
    >>> subtopics = pa.table({"user_id": [1, 1, 1], "subtopic": ["s1", "s1", "s2"],
    ...                       "item_id": ["a", "b", "c"], "relevance": [1, 1, 1]})
"""
_SUBTOPIC_EXAMPLES = {
    "alpha_ndcg": """
    gains 1, 0.5 (s1 seen once), 1; the greedy ideal list c, b, a has gains 1, 1, 0.5:

    >>> sqlmetrics.alpha_ndcg(con, recs, k=3, subtopics=subtopics).to_pylist()
    [{'users': 1, 'alpha_ndcg@3': 0.9651954696014428}]
""",
    "p_ia": """
    a covers one of the 2 subtopics:

    >>> sqlmetrics.p_ia(con, recs, k=1, subtopics=subtopics).to_pylist()
    [{'users': 1, 'p_ia@1': 0.5}]
""",
    "ap_ia": """
    s1: (1/1 + 2/2) / 2 = 1; s2: (1/3) / 1; their mean:

    >>> sqlmetrics.ap_ia(con, recs, subtopics=subtopics).to_pylist()
    [{'users': 1, 'ap_ia': 0.6666666666666666}]
""",
    "err_ia": """
    (1 + 0.5/2) / (2 * (1 + 0.5/2)):

    >>> sqlmetrics.err_ia(con, recs, k=2, subtopics=subtopics).to_pylist()
    [{'users': 1, 'err_ia@2': 0.5}]
""",
    "nrbp": """
    (1 - 0.5 * 0.5) / 2 * (1 + 0.5 * 0.5 + 1 * 0.25):

    >>> sqlmetrics.nrbp(con, recs, subtopics=subtopics).to_pylist()
    [{'users': 1, 'nrbp': 0.5625}]
""",
}


cg = _metric_function("cg")
dcg = _metric_function("dcg")
idcg = _metric_function("idcg")
ndcg = _metric_function("ndcg")
precision = _metric_function("precision")
recall = _metric_function("recall")
f1 = _metric_function("f1")
hit_rate = _metric_function("hit_rate")
mrr = _metric_function("mrr")
arhr = _metric_function("arhr")
map = _metric_function("map")  # noqa: A001 - named like the metric, as in ranx and sklearn
mar = _metric_function("mar")
r_precision = _metric_function("r_precision")
# trec_eval's measures (the iprec_at_recall_* and 11pt_avg names are for evaluate() only)
success = _metric_function("success")
set_P = _metric_function("set_P")  # noqa: N816 - trec_eval's name
set_recall = _metric_function("set_recall")
set_F = _metric_function("set_F")  # noqa: N816 - trec_eval's name
gm_map = _metric_function("gm_map")
bpref = _metric_function("bpref")
num_q = _metric_function("num_q")
num_ret = _metric_function("num_ret")
num_rel = _metric_function("num_rel")
num_rel_ret = _metric_function("num_rel_ret")
judged = _metric_function("judged")
# the rest of trec_eval's all_trec, ERR and RBP
gm_bpref = _metric_function("gm_bpref")
infAP = _metric_function("infAP")  # noqa: N816 - trec_eval's name
Rprec_mult = _metric_function("Rprec_mult")  # noqa: N816 - trec_eval's name
utility = _metric_function("utility")
binG = _metric_function("binG")  # noqa: N816 - trec_eval's name
G = _metric_function("G")  # noqa: N816 - trec_eval's name
ndcg_rel = _metric_function("ndcg_rel")
Rndcg = _metric_function("Rndcg")  # noqa: N816 - trec_eval's name
relative_P = _metric_function("relative_P")  # noqa: N816 - trec_eval's name
set_relative_P = _metric_function("set_relative_P")  # noqa: N816 - trec_eval's name
set_map = _metric_function("set_map")
num_nonrel_judged_ret = _metric_function("num_nonrel_judged_ret")
rbp = _metric_function("rbp")
rbp_resid = _metric_function("rbp_resid")
rbp_gain = _metric_function("rbp_gain")
err = _metric_function("err")
nerr = _metric_function("nerr")
unj = _metric_function("unj")
relstring = _metric_function("relstring")
# intent-aware, over subtopics=
alpha_ndcg = _metric_function("alpha_ndcg")
p_ia = _metric_function("p_ia")
ap_ia = _metric_function("ap_ia")
err_ia = _metric_function("err_ia")
nrbp = _metric_function("nrbp")

# beyond accuracy: the same keyword arguments, plus history=, catalog=, item_features=
fcp = _metric_function("fcp")
fcp_surprise = _metric_function("fcp_surprise")
catalog_coverage = _metric_function("catalog_coverage")
distributional_coverage = _metric_function("distributional_coverage")
gini = _metric_function("gini")
novelty = _metric_function("novelty")
popularity = _metric_function("popularity")
diversity = _metric_function("diversity")
serendipity = _metric_function("serendipity")
personalization = _metric_function("personalization")
# over item groups (issue 37, item 4)
calibration = _metric_function("calibration")
rbo = _metric_function("rbo")
rbo_sum = _metric_function("rbo_sum")
ee_l = _metric_function("ee_l")
ee_d = _metric_function("ee_d")
ee_r = _metric_function("ee_r")
group_ee_l = _metric_function("group_ee_l")
group_ee_d = _metric_function("group_ee_d")
group_ee_r = _metric_function("group_ee_r")
awrf = _metric_function("awrf")
