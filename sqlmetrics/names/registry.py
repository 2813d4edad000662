"""The metric registry: each metric name maps to one SQL macro in one template of sql/metrics/
(ranking metrics) or to one family template of sql/beyond/ (beyond-accuracy metrics).

Adding a metric means adding its macro to a template and one line here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    template: str  # path under sql/, holding the metric's macro
    formula: str  # as printed in docs/metrics.md's metric table
    needs_cutoff: bool = True  # True: takes @k (a ranking metric without it: the whole list);
    # False: never a cutoff (r_precision, bpref)
    tie_averaged: bool = True  # True: defined under ties="average"
    macro: str = ""  # the macro's name where the metric's is no identifier; "": the name
    # the one number the metric takes from a peer's name, passed to its macro after k: "beta"
    # (set_F: trec_eval's set_F.0.5, ir_measures' SetF(beta=0.5)); "": none
    parameter: str = ""
    # how a group's value comes from its units' values: "mean"; "sum" (trec_eval's num_*);
    # "geometric" (gm_map: exp(mean(ln(max(value, 1e-5)))), trec_eval's floor); "none" (a
    # text per unit, relstring: no group value)
    aggregate: str = "mean"
    # per-unit values (the terms of the group's exact sum) below 2^bound: the fast exact sum's
    # scale (sql/exact_sum.sql.j2); a larger value only costs a second, wide run
    bound: int = 1
    # what the macro reads beyond the judged rows (rel > 0): "retrieved" (the list's length,
    # _retrieved), "judgments" (every truth row, of any grade: _judged, _nonrelevant),
    # "grades" (the truth's grade as given: _grade)
    reads: tuple[str, ...] = ()
    whole_list_reads: tuple[str, ...] = ()  # ... and what it reads without @k only
    # ... and with @k under short_lists="evidently" (it then reads the list's length N)
    short_list_reads: tuple[str, ...] = ()
    # Beyond-accuracy metrics (sql/beyond/) only:
    beyond: bool = False  # True: not a macro over judged rows; its family template computes it
    per_user: bool = True  # False: a property of all lists together (per_user=True refuses it)
    needs: tuple[str, ...] = ()  # inputs: "history", "catalog" (catalog= or history=),
    # "similarity" (history= or item_features=), "relevance" (truth= or a relevance column),
    # "genres" (item_features= read as genre weights), "baseline" (by= and baseline=),
    # "truth" (a truth= table)
    uses_lists: bool = True  # reads the users' top-k lists

    def __post_init__(self) -> None:
        if not self.macro:
            object.__setattr__(self, "macro", self.name)


_GAIN = "metrics/gain.sql.j2"
_HITS = "metrics/hits.sql.j2"
_RR = "metrics/reciprocal_rank.sql.j2"
_AP = "metrics/average_precision.sql.j2"
_BPREF = "metrics/bpref.sql.j2"
_IPREC = "metrics/interpolated_precision.sql.j2"
_COUNTS = "metrics/counts.sql.j2"
_JUDGED = "metrics/judged.sql.j2"
_INFAP = "metrics/inferred_ap.sql.j2"
_RBP = "metrics/rank_biased.sql.j2"
_GAIN_AT_HITS = "metrics/gain_at_hits.sql.j2"
_RELSTRING = "metrics/relstring.sql.j2"
_CASCADE = "metrics/cascade.sql.j2"
_SUBTOPICS = "metrics/subtopics.sql.j2"
_FCP = "beyond/fcp.sql.j2"
_COVERAGE = "beyond/coverage.sql.j2"
_NOVELTY = "beyond/novelty.sql.j2"
_DIVERSITY = "beyond/diversity.sql.j2"
_SERENDIPITY = "beyond/serendipity.sql.j2"
_PERSONALIZATION = "beyond/personalization.sql.j2"
# recommendation measures over item groups (issue 37, item 4)
_CALIBRATION = "beyond/calibration.sql.j2"
_RBO = "beyond/rbo.sql.j2"
_EXPOSURE = "metrics/exposure.sql.j2"
_GROUP_EXPOSURE = "beyond/group_exposure.sql.j2"
_AWRF = "beyond/awrf.sql.j2"

METRICS: dict[str, MetricDefinition] = {
    m.name: m
    for m in [
        MetricDefinition("cg", _GAIN, "sum_{i<=k} gain_i", bound=16),
        MetricDefinition("dcg", _GAIN, "sum_{i<=k} gain_i / log2(i+1)", bound=16),
        MetricDefinition("idcg", _GAIN, "dcg@k of the ideal list (truth gains sorted descending)", bound=16),
        MetricDefinition("ndcg", _GAIN, "dcg@k / idcg@k (0 when idcg@k = 0)"),
        MetricDefinition(
            "precision",
            _HITS,
            "hits@k / k",
            whole_list_reads=("retrieved",),
            short_list_reads=("retrieved",),
        ),
        MetricDefinition("recall", _HITS, "hits@k / R"),
        MetricDefinition(
            "f1",
            _HITS,
            "2 precision@k recall@k / (precision@k + recall@k); the whole list: set_F",
            whole_list_reads=("retrieved",),
            short_list_reads=("retrieved",),
        ),
        MetricDefinition("hit_rate", _HITS, "1 if hits@k > 0 else 0"),
        MetricDefinition(
            "mrr", _RR, "1 / position of the first hit (0 if none)", tie_averaged=False
        ),
        MetricDefinition("arhr", _RR, "sum over hits of 1 / position", bound=6),
        MetricDefinition(
            "map",
            _AP,
            "(1/R) sum over hits at i of precision@i",
            tie_averaged=False,
            short_list_reads=("retrieved",),
        ),
        MetricDefinition(
            "mar",
            _AP,
            "(1/R) sum over hits at i of recall@i",
            tie_averaged=False,
            short_list_reads=("retrieved",),
        ),
        MetricDefinition(
            "r_precision", _HITS, "hits in the top R / R", needs_cutoff=False, tie_averaged=False
        ),
        MetricDefinition("success", _HITS, "hit_rate@k (trec_eval's name)"),
        MetricDefinition(
            "set_P", _HITS, "hits / N over the whole list", needs_cutoff=False, reads=("retrieved",)
        ),
        MetricDefinition("set_recall", _HITS, "hits / R over the whole list", needs_cutoff=False),
        MetricDefinition(
            "set_F",
            _HITS,
            "(beta + 1) set_P set_recall / (beta set_P + set_recall) = (beta + 1) hits / (beta R + N)",
            needs_cutoff=False,
            reads=("retrieved",),
            parameter="beta",
        ),
        MetricDefinition(
            "gm_map",
            _AP,
            "map@k per user; over users exp(mean(ln(max(AP, 1e-5))))",
            tie_averaged=False,
            aggregate="geometric",
            bound=4,
            short_list_reads=("retrieved",),
        ),
        MetricDefinition(
            "bpref",
            _BPREF,
            "(1/R) sum over hits of 1 - min(n above, R) / min(N_n, R)",
            needs_cutoff=False,
            tie_averaged=False,
            reads=("judgments",),
        ),
        *[
            MetricDefinition(
                f"iprec_at_recall_{level / 10:.2f}",
                _IPREC,
                f"max over hits i >= max(1, lround({level / 10:.1f} R)) of i / position of hit i",
                needs_cutoff=False,
                tie_averaged=False,
                macro=f"iprec_at_recall_{level}0",
            )
            for level in range(11)
        ],
        MetricDefinition(
            "11pt_avg",
            _IPREC,
            "mean of the 11 iprec_at_recall values",
            needs_cutoff=False,
            tie_averaged=False,
            macro="eleven_pt_avg",
        ),
        MetricDefinition(
            "num_q", _COUNTS, "1 per user; summed", needs_cutoff=False, aggregate="sum", bound=60
        ),
        MetricDefinition(
            "num_ret",
            _COUNTS,
            "N, the items retrieved; summed",
            needs_cutoff=False,
            aggregate="sum", bound=60,
            reads=("retrieved",),
        ),
        MetricDefinition("num_rel", _COUNTS, "R; summed", needs_cutoff=False, aggregate="sum", bound=60),
        MetricDefinition(
            "num_rel_ret",
            _COUNTS,
            "hits in the whole list; summed",
            needs_cutoff=False,
            aggregate="sum",
            bound=60,
        ),
        MetricDefinition(
            "judged",
            _JUDGED,
            "items of the top k with a truth row of any grade / min(k, N)",
            reads=("retrieved", "judgments"),
        ),
        # the rest of trec_eval 10.0's all_trec (its m_*.c); order statistics of one exact
        # order each (ties="average" is refused)
        MetricDefinition(
            "gm_bpref",
            _BPREF,
            "bpref per user; over users exp(mean(ln(max(bpref, 1e-5))))",
            needs_cutoff=False,
            tie_averaged=False,
            aggregate="geometric",
            bound=4,
            reads=("judgments",),
        ),
        MetricDefinition(
            "infAP",
            _INFAP,
            "(1/R) sum over retrieved hits at p of 1/p + ((p-1)/p) (h+n+u)/(p-1) (h+eps)/(h+n+2eps)"
            " (1 at p = 1); h, n, u the relevant, judged non-relevant and unjudged (grade < 0)"
            " items above, eps = 1e-5",
            needs_cutoff=False,
            tie_averaged=False,
            reads=("judgments",),
        ),
        MetricDefinition(
            "Rprec_mult",
            _HITS,
            "hits in the top c / c, c = floor(x R + 0.9) (0 when c = 0); x = 1 unless given",
            needs_cutoff=False,
            tie_averaged=False,
            parameter="multiple",
        ),
        MetricDefinition(
            "utility",
            _COUNTS,
            "a - b: relevant minus non-relevant retrieved items (trec_eval's coefficients 1, -1, 0, 0)",
            needs_cutoff=False,
            tie_averaged=False,
            bound=40,
            reads=("retrieved",),
        ),
        MetricDefinition(
            "binG",
            _GAIN_AT_HITS,
            "(1/R) sum over retrieved hits at p of 1 / log2(2 + items not relevant above)",
            needs_cutoff=False,
            tie_averaged=False,
        ),
        MetricDefinition(
            "G",
            _GAIN_AT_HITS,
            "sum over retrieved items of gain / log2(2 + ideal cost(p) - gains down to p), over the"
            " sum of gains (trec_eval's normalized gain)",
            needs_cutoff=False,
            tie_averaged=False,
        ),
        MetricDefinition(
            "ndcg_rel",
            _GAIN_AT_HITS,
            "ndcg at each relevant item (the whole list's for one not retrieved), averaged",
            needs_cutoff=False,
            tie_averaged=False,
        ),
        MetricDefinition(
            "Rndcg",
            _GAIN_AT_HITS,
            "ndcg at the ends of the ideal list's gain levels (and at N past them), averaged",
            needs_cutoff=False,
            tie_averaged=False,
            reads=("retrieved",),
        ),
        MetricDefinition(
            "relative_P",
            _HITS,
            "hits@k / min(k, R) (0 when R = 0); the whole list: hits / min(N, R)",
            tie_averaged=False,
            whole_list_reads=("retrieved",),
        ),
        MetricDefinition(
            "set_relative_P",
            _HITS,
            "hits / min(N, R) over the whole list (0 when N or R is 0)",
            needs_cutoff=False,
            tie_averaged=False,
            reads=("retrieved",),
        ),
        MetricDefinition(
            "set_map",
            _HITS,
            "hits^2 / (N R) over the whole list (0 when N or R is 0)",
            needs_cutoff=False,
            tie_averaged=False,
            reads=("retrieved",),
        ),
        MetricDefinition(
            "num_nonrel_judged_ret",
            _COUNTS,
            "retrieved items judged 0 <= grade < threshold; summed",
            needs_cutoff=False,
            tie_averaged=False,
            aggregate="sum",
            bound=60,
            reads=("judgments",),
        ),
        MetricDefinition(
            "rbp",
            _RBP,
            "(1 - p) sum over positions i of gain_i p^(i-1), gain = grade / max(1, the largest grade);"
            " p = 0.9 unless given (trec_eval's default)",
            needs_cutoff=False,
            tie_averaged=False,
            parameter="p",
            reads=("grades",),
        ),
        MetricDefinition(
            "rbp_resid",
            _RBP,
            "rbp's residual: p^N + (1 - p) sum over unjudged positions i of p^(i-1); 0 when no"
            " retrieved item is unjudged (not in the truth, or grade < 0)",
            needs_cutoff=False,
            tie_averaged=False,
            parameter="p",
            reads=("retrieved", "judgments"),
        ),
        MetricDefinition(
            "rbp_gain",
            _RBP,
            "(1 - p) sum_{i<=k} gain_i p^(i-1), sqlmetrics' gains; p = 0.8 unless given (ranx's"
            " rbp.95, ir_measures' RBP(p=0.8))",
            tie_averaged=False,
            parameter="p",
            bound=16,
        ),
        MetricDefinition(
            "err",
            _CASCADE,
            "sum_{i<=k} R_i / i prod_{j<i} (1 - R_j), R = (2^min(grade, M) - 1) / 2^M, M = 4 unless"
            " given (gdeval's ERR@k)",
            tie_averaged=False,
            parameter="max_grade",
            reads=("grades",),
        ),
        MetricDefinition(
            "nerr",
            _CASCADE,
            "err@k / err@k of the ideal list (grades sorted descending)",
            tie_averaged=False,
            parameter="max_grade",
            reads=("grades",),
        ),
        MetricDefinition(
            "unj",
            _JUDGED,
            "items of the top k not in the truth or graded < 0 / k (the whole list: / N)",
            tie_averaged=False,
            reads=("retrieved", "judgments"),
        ),
        MetricDefinition(
            "relstring",
            _RELSTRING,
            "the grades of the first L items as text (L = 10 unless given): 0-9, '>' above 9,"
            " '.' below 0, '-' not in the truth",
            needs_cutoff=False,
            tie_averaged=False,
            parameter="length",
            aggregate="none",
            reads=("retrieved", "judgments", "grades"),
        ),
        # intent-aware, over subtopics= (ndeval's; N: the unit's subtopics with a relevant item,
        # c: the items relevant to the row's subtopic retrieved above it)
        MetricDefinition(
            "alpha_ndcg",
            _SUBTOPICS,
            "sum_{i<=k} sum_s rel_is (1-alpha)^c / log2(i+1), / the same of the greedy ideal list;"
            " alpha = 0.5 unless given",
            tie_averaged=False,
            parameter="alpha",
            reads=("subtopics",),
        ),
        MetricDefinition(
            "p_ia",
            _SUBTOPICS,
            "sum_{i<=k} sum_s rel_is / (k N)",
            tie_averaged=False,
            reads=("subtopics",),
        ),
        MetricDefinition(
            "ap_ia",
            _SUBTOPICS,
            "(1/N) sum_s (1/R_s) sum over hits of s at i of precision_s@i",
            needs_cutoff=False,
            tie_averaged=False,
            reads=("subtopics",),
        ),
        MetricDefinition(
            "err_ia",
            _SUBTOPICS,
            "sum_{i<=k} sum_s rel_is (1-alpha)^c / i, / (N sum_{i<=k} (1-alpha)^(i-1) / i)"
            " (ndeval's normalization); alpha = 0.5 unless given",
            tie_averaged=False,
            parameter="alpha",
            reads=("subtopics",),
        ),
        MetricDefinition(
            "nrbp",
            _SUBTOPICS,
            "(1 - (1-alpha) beta) / N sum_i beta^(i-1) sum_s rel_is (1-alpha)^c, alpha = 0.5;"
            " beta = 0.5 unless given",
            needs_cutoff=False,
            tie_averaged=False,
            parameter="beta",
            reads=("subtopics",),
        ),
        # beyond accuracy
        MetricDefinition(
            "fcp",
            _FCP,
            "sum of concordant / sum of (concordant + discordant) pairs (Koren)",
            needs_cutoff=False,
            beyond=True,
            needs=("relevance",),
            uses_lists=False,
        ),
        MetricDefinition(
            "fcp_surprise",
            _FCP,
            "Surprise's fcp: score ties discordant, counts averaged over users",
            needs_cutoff=False,
            beyond=True,
            per_user=False,
            needs=("relevance",),
            uses_lists=False,
        ),
        MetricDefinition(
            "catalog_coverage",
            _COVERAGE,
            "distinct items in the top-k lists / items in the catalog",
            tie_averaged=False,
            beyond=True,
            per_user=False,
            needs=("catalog",),
        ),
        MetricDefinition(
            "distributional_coverage",
            _COVERAGE,
            "-sum_i p_i log2 p_i, p_i = share of the top-k rows that recommend item i",
            tie_averaged=False,
            beyond=True,
            per_user=False,
        ),
        MetricDefinition(
            "gini",
            _COVERAGE,
            "Gini index of how often the catalog's items are recommended",
            tie_averaged=False,
            beyond=True,
            per_user=False,
            needs=("catalog",),
        ),
        MetricDefinition(
            "novelty",
            _NOVELTY,
            "mean over recommendation rows of -log2(c_i / N)",
            tie_averaged=False,
            beyond=True,
            needs=("history",),
        ),
        MetricDefinition(
            "popularity",
            _NOVELTY,
            "mean over users of the mean history users of the listed items",
            tie_averaged=False,
            beyond=True,
            needs=("history",),
        ),
        MetricDefinition(
            "diversity",
            _DIVERSITY,
            "1 - mean similarity of the pairs of items in the list",
            tie_averaged=False,
            beyond=True,
            needs=("similarity",),
        ),
        MetricDefinition(
            "serendipity",
            _SERENDIPITY,
            "mean of (1 - mean similarity to the user's history) * relevance",
            tie_averaged=False,
            beyond=True,
            needs=("history", "similarity", "relevance"),
        ),
        MetricDefinition(
            "personalization",
            _PERSONALIZATION,
            "1 - mean cosine similarity between two users' lists",
            tie_averaged=False,
            beyond=True,
            per_user=False,
        ),
        # recommendation measures over item groups (issue 37, item 4)
        MetricDefinition(
            "calibration",
            _CALIBRATION,
            "Steck's C_KL(p || (1 - alpha) q + alpha p): p the history's genre distribution, q the"
            " top k's; alpha = 0.01 unless given",
            tie_averaged=False,
            beyond=True,
            needs=("history", "genres"),
            parameter="alpha",
        ),
        MetricDefinition(
            "rbo",
            _RBO,
            "Webber's RBO_ext of the top k and the baseline's top k (uneven lengths, eq. 32);"
            " p = 0.9 unless given",
            tie_averaged=False,
            beyond=True,
            needs=("baseline",),
            parameter="p",
        ),
        MetricDefinition(
            "ee_l",
            _EXPOSURE,
            "||e - e*||^2: expected exposure loss, e_i = gamma^(i-1) in the top k, e* the ideal"
            " policy's (Diaz et al. 2020); gamma = 0.5 unless given",
            tie_averaged=False,
            parameter="gamma",
            bound=6,
            reads=("retrieved", "grades", "judgments"),
        ),
        MetricDefinition(
            "ee_d",
            _EXPOSURE,
            "||e||^2: expected exposure disparity, (1 - gamma^(2n)) / (1 - gamma^2), n = min(k, N)",
            tie_averaged=False,
            parameter="gamma",
            bound=6,
            reads=("retrieved",),
        ),
        MetricDefinition(
            "ee_r",
            _EXPOSURE,
            "e . e*: expected exposure relevance",
            tie_averaged=False,
            parameter="gamma",
            bound=6,
            reads=("grades", "judgments"),
        ),
        *[
            MetricDefinition(
                f"group_ee_{form}",
                _GROUP_EXPOSURE,
                formula + " over item groups: E_G, T_G the sums of e, e* over the relevant items in"
                " group G (the genres of positive weight); gamma = 0.5 unless given",
                tie_averaged=False,
                beyond=True,
                needs=("genres", "truth"),
                parameter="gamma",
            )
            for form, formula in (
                ("l", "sum_G (E_G - T_G)^2"),
                ("d", "sum_G E_G^2"),
                ("r", "sum_G E_G T_G"),
            )
        ],
        MetricDefinition(
            "awrf",
            _AWRF,
            "1 - JSD(p, uniform): attention-weighted rank fairness, p the groups' shares of the"
            " top k's attention 1 / log2(max(i, 2)) (TREC Fair Ranking's)",
            tie_averaged=False,
            beyond=True,
            needs=("genres",),
        ),
        MetricDefinition(
            "rbo_sum",
            _RBO,
            "(1 - p) sum_{d<=s} p^(d-1) X_d / d: RBO to the shorter list's depth s, a lower bound;"
            " p = 0.9 unless given",
            tie_averaged=False,
            beyond=True,
            needs=("baseline",),
            parameter="p",
        ),
    ]
}
