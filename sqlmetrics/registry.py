"""The metric registry: each metric name maps to one SQL macro in one template of sql/metrics/
(ranking metrics) or to one family template of sql/beyond/ (beyond-accuracy metrics).

Adding a metric means adding its macro to a template and one line here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    template: str  # path under sql/, holding a macro named like the metric
    formula: str  # as printed in docs/metrics.md's metric table
    needs_cutoff: bool = True  # False: the metric takes no @k (r_precision)
    tie_averaged: bool = True  # True: defined under ties="average"
    # Beyond-accuracy metrics (sql/beyond/) only:
    beyond: bool = False  # True: not a macro over judged rows; its family template computes it
    per_user: bool = True  # False: a property of all lists together (per_user=True refuses it)
    needs: tuple[str, ...] = ()  # inputs: "history", "catalog" (catalog= or history=),
    # "similarity" (history= or item_features=), "relevance" (truth= or a relevance column)
    uses_lists: bool = True  # reads the users' top-k lists


_GAIN = "metrics/gain.sql.j2"
_HITS = "metrics/hits.sql.j2"
_RR = "metrics/reciprocal_rank.sql.j2"
_AP = "metrics/average_precision.sql.j2"
_FCP = "beyond/fcp.sql.j2"
_COVERAGE = "beyond/coverage.sql.j2"
_NOVELTY = "beyond/novelty.sql.j2"
_DIVERSITY = "beyond/diversity.sql.j2"
_SERENDIPITY = "beyond/serendipity.sql.j2"
_PERSONALIZATION = "beyond/personalization.sql.j2"

METRICS: dict[str, MetricDefinition] = {
    m.name: m
    for m in [
        MetricDefinition("cg", _GAIN, "sum_{i<=k} gain_i"),
        MetricDefinition("dcg", _GAIN, "sum_{i<=k} gain_i / log2(i+1)"),
        MetricDefinition("idcg", _GAIN, "dcg@k of the ideal list (truth gains sorted descending)"),
        MetricDefinition("ndcg", _GAIN, "dcg@k / idcg@k (0 when idcg@k = 0)"),
        MetricDefinition("precision", _HITS, "hits@k / k"),
        MetricDefinition("recall", _HITS, "hits@k / R"),
        MetricDefinition("f1", _HITS, "2 precision@k recall@k / (precision@k + recall@k)"),
        MetricDefinition("hit_rate", _HITS, "1 if hits@k > 0 else 0"),
        MetricDefinition(
            "mrr", _RR, "1 / position of the first hit (0 if none)", tie_averaged=False
        ),
        MetricDefinition("arhr", _RR, "sum over hits of 1 / position"),
        MetricDefinition("map", _AP, "(1/R) sum over hits at i of precision@i", tie_averaged=False),
        MetricDefinition("mar", _AP, "(1/R) sum over hits at i of recall@i", tie_averaged=False),
        MetricDefinition(
            "r_precision", _HITS, "hits in the top R / R", needs_cutoff=False, tie_averaged=False
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
    ]
}
