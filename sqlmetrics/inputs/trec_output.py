"""trec_eval's text output, byte for byte: `measure<TAB>qid<TAB>value` lines.

As trec_eval 10.0 prints them (meas_print_single.c, meas_print_final.c): the measure name
left-justified in 22 characters ("%-22s"), values with "%6.4f", counts (num_*) as integers,
measures in trec_eval's own order (its measure table, then ascending cutoffs), per-query lines
first (-q), queries in strcmp order, then the `all` lines, led by `runid`."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..errors import SqlMetricsError
from ..names.metric_names import parse_metric
from ..names.peer_names import (
    TREC_COUNTS,
    TREC_MEASURES,
    TREC_NOT_PER_QUERY,
    trec_name,
    trec_position,
)


def ordered(labels: Sequence[str]) -> list[str]:
    """The labels in trec_eval's print order; names that are not trec_eval's follow, as asked.

    >>> ordered(["ndcg_cut_10", "P_10", "P_5", "ndcg@3", "map"])
    ['map', 'P_5', 'P_10', 'ndcg_cut_10', 'ndcg@3']
    """
    last = len(TREC_MEASURES)
    keyed = [(trec_position(label) or (last, float(i)), i, label) for i, label in enumerate(labels)]
    return [label for _, _, label in sorted(keyed)]


def printed_name(label: str) -> str:
    """The measure name trec_eval prints for a requested label: its own wherever it has one
    (ndcg@10 is ndcg_cut_10, precision@5 P_5, mrr recip_rank), else the label as requested
    (mrr@10; a peer's name with conventions of its own, "P(rel=2)@5", stays as written).

    >>> [printed_name(n) for n in ("ndcg@10", "P_5", "NDCG@3", "r_precision", "mrr@10")]
    ['ndcg_cut_10', 'P_5', 'ndcg_cut_3', 'Rprec', 'mrr@10']
    """
    try:
        metric = parse_metric(label)
    except SqlMetricsError:  # a peer's name: trec_eval's own already, or one with conventions
        return label
    return trec_name(metric.name, metric.k) or label


def line(measure: str, qid: str, value: object) -> str:
    """One line as trec_eval prints it.

    >>> line("P_5", "all", 0.26666)
    'P_5                   \\tall\\t0.2667'
    >>> line("num_rel", "301", 474.0)
    'num_rel               \\t301\\t474'
    """
    if isinstance(value, str):
        text = value
    elif value is None:
        text = "nan"  # no value for this unit (not a number trec_eval would print)
    elif _is_count(measure):
        text = str(int(round(float(value))))
    else:
        text = f"{float(value):6.4f}"  # C's "%6.4f"
    return f"{measure:<22}\t{qid}\t{text}"


def _is_count(measure: str) -> bool:
    return measure in TREC_COUNTS or measure.startswith("num_")


def render(
    means: pa.Table,
    labels: Sequence[str],
    *,
    per_query: pa.Table | None = None,
    user_column: str | None = None,
    runid: str | None = None,
) -> str:
    """The text trec_eval prints for these tables of evaluate(): `means` (one row, no `by`),
    `per_query` (evaluate(per_user=True), for -q) and the run's tag; each measure under
    trec_eval's name for it (printed_name)."""
    names = {printed_name(label): label for label in labels}  # (parse_metrics: no two alike)
    measures = ordered(list(names))
    out: list[str] = []
    if per_query is not None:
        rows = per_query.to_pylist()
        rows.sort(key=lambda row: str(row[user_column]).encode("utf-8"))  # strcmp
        for row in rows:
            qid = str(row[user_column])
            out += [line(m, qid, row[names[m]]) for m in measures if m not in TREC_NOT_PER_QUERY]
    if runid is not None:
        out.append(line("runid", "all", runid))
    if means.num_rows:
        row = means.to_pylist()[0]
        out += [line(m, "all", row[names[m]]) for m in measures]
    return "".join(text + "\n" for text in out)
