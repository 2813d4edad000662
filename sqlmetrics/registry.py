"""The metric registry: each metric name maps to one SQL macro in one template of sql/metrics/.

Adding a metric means adding its macro to a template and one line here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetricDefinition:
    name: str
    template: str  # path under sql/, holding a macro named like the metric
    formula: str  # as printed in the README's metric table
    needs_cutoff: bool = True  # False: the metric takes no @k (r_precision)
    tie_averaged: bool = True  # True: defined under ties="average"


_GAIN = "metrics/gain.sql.j2"
_HITS = "metrics/hits.sql.j2"
_RR = "metrics/reciprocal_rank.sql.j2"
_AP = "metrics/average_precision.sql.j2"

METRICS: dict[str, MetricDefinition] = {
    m.name: m
    for m in [
        MetricDefinition("cg", _GAIN, "sum_{i<=k} gain_i"),
        MetricDefinition("dcg", _GAIN, "sum_{i<=k} gain_i / log2(i+1)"),
        MetricDefinition("idcg", _GAIN, "dcg@k of the ideal list (truth gains sorted descending)"),
        MetricDefinition("ndcg", _GAIN, "dcg@k / idcg@k (0 when idcg@k = 0)"),
        MetricDefinition("precision", _HITS, "hits@k / k"),
        MetricDefinition("recall", _HITS, "hits@k / R"),
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
    ]
}
