"""trec_eval's text output, byte for byte: `measure<TAB>qid<TAB>value` lines.

As trec_eval 10.0 prints them (meas_print_single.c, meas_print_final.c): the measure name
left-justified in 22 characters ("%-22s"), values with "%6.4f", counts (num_*) as integers,
measures in trec_eval's own order (its measure table, then ascending cutoffs), per-query lines
first (-q), queries in strcmp order, then the `all` lines, led by `runid`."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyarrow as pa

from ..errors import SqlMetricsError
from ..names.metric_names import RequestedMetric, parse_metric
from ..names.peer_names import (
    TREC_COUNTS,
    TREC_GROUPS,
    TREC_MEASURES,
    TREC_NOT_PER_QUERY,
    TREC_TEXTS,
    resolve,
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


def last_parameters_win(names: Sequence[str]) -> list[str]:
    """The -m list as trec_eval reads it: a measure named again, alone, takes the parameters
    of its last naming, also over a group's (`-m all_trec -m relstring.20` prints relstring_20
    alone); a group that loses a member is written as its other members' names.

    >>> last_parameters_win(["official", "P.5"])[-2:]
    ['iprec_at_recall_1.00', 'P.5']
    >>> last_parameters_win(["map", "P.5"])
    ['map', 'P.5']
    """
    kept: list[list[str]] = []
    for name in names:
        base = _base(name)
        if base is not None and name.partition(".")[0] == base:  # "P", "P.5", "relstring.20"
            for i, earlier in enumerate(kept):
                if len(earlier) == 1 and earlier[0] in TREC_GROUPS:
                    members = resolve(earlier[0]).names  # type: ignore[union-attr]
                    earlier[:] = [m.label for m in members if m.canonical is not None]
                kept[i] = [e for e in earlier if _base(e) != base]
        kept.append([name])
    return [name for group in kept for name in group]


def _base(name: str) -> str | None:
    """trec_eval's measure of a name or label (P for P_5, P.5 and P), or None."""
    position = trec_position(name.partition(".")[0])
    return None if position is None else TREC_MEASURES[position[0]][0]


def line(measure: str, qid: str, value: object) -> str:
    """One line as trec_eval prints it.

    >>> line("P_5", "all", 0.26666)
    'P_5                   \\tall\\t0.2667'
    >>> line("num_rel", "301", 474.0)
    'num_rel               \\t301\\t474'
    >>> line("relstring", "301", "0010")
    "relstring             \\t301\\t'0010'"
    """
    if _is_text(measure):
        text = f"'{'' if value is None else value}'"  # relstring, as trec_eval quotes it
    elif isinstance(value, str):
        text = value
    elif value is None:
        text = "nan"  # no value for this unit (not a number trec_eval would print)
    elif _is_count(measure):
        text = str(int(round(float(value))))
    else:
        text = f"{float(value):6.4f}"  # C's "%6.4f"
    return f"{measure:<22}\t{qid}\t{text}"


def _is_text(measure: str) -> bool:
    """relstring and relstring_20: a text per query, no `all` line."""
    return any(measure == name or measure.startswith(f"{name}_") for name in TREC_TEXTS)


def _is_count(measure: str) -> bool:
    return measure in TREC_COUNTS or measure.startswith("num_")


# What the text form reads beyond the measures asked: set_F's counts (trec_eval computes it from
# P and R in doubles), and, with -c, num_rel's `all` line counts every judgment of grade > 0
# (m_num_rel.c), whatever the threshold.
SET_F_COUNTS = ("num_rel_ret", "num_ret", "num_rel")
ANY_GRADE_NUM_REL = "NumRel(rel=1)"


def extra_labels(requested: Sequence[RequestedMetric], missing: str | None, threshold: object) -> list[str]:
    """The metrics render() reads that are not asked (evaluate() them with the asked ones)."""
    labels = {m.label for m in requested}
    extra = []
    if any(m.name == "set_F" for m in requested):
        extra += [label for label in SET_F_COUNTS if label not in labels]
    if missing == "zero" and threshold not in (None, 1) and "num_rel" in labels:
        extra.append(ANY_GRADE_NUM_REL)
    return extra


def render(
    per_query: pa.Table,
    requested: Sequence[RequestedMetric],
    *,
    user_column: str,
    show_per_query: bool = True,
    runid: str | None = None,
) -> str:
    """The text trec_eval prints for evaluate(per_user=True)'s table (with the extra_labels()
    columns): the per-query lines (-q, when show_per_query), the run's tag, the `all` lines.

    The text follows trec_eval's double arithmetic, so that a value on a tie of the 4th
    decimal prints as trec_eval prints it; evaluate()'s own numbers are the exact ones:
    set_F is (x + 1) P R / (x P + R) of the doubles P = h / N and R = h / num_rel (m_set_F.c),
    and an `all` mean is the per-query doubles added in query order (strcmp of the qids, as
    trec_eval reads its sorted qrels), divided by the queries (meas_acc.c, meas_avg.c); a
    geometric mean (gm_map, gm_bpref) adds ln(max(value, 1e-5)) in that order; num_* sum.
    """
    how = {printed_name(m.label): m for m in requested}  # each under trec_eval's name for it
    measures = ordered(list(how))
    rows = per_query.to_pylist()
    rows.sort(key=lambda row: str(row[user_column]).encode("utf-8"))  # strcmp
    values = {m: [_as_trec_eval(how[m], row) for row in rows] for m in measures}
    out: list[str] = []
    if show_per_query:
        for i, row in enumerate(rows):
            qid = str(row[user_column])
            out += [line(m, qid, values[m][i]) for m in measures if m not in TREC_NOT_PER_QUERY]
    if runid is not None:
        out.append(line("runid", "all", runid))
    if rows:
        if how.get("num_rel") is not None and ANY_GRADE_NUM_REL in per_query.column_names:
            values["num_rel"] = [row[ANY_GRADE_NUM_REL] for row in rows]
        out += [
            line(m, "all", _all(how[m].definition.aggregate, values[m])) for m in measures if not _is_text(m)
        ]
    return "".join(text + "\n" for text in out)


def _as_trec_eval(metric: RequestedMetric, row: dict) -> object:
    """A per-query value as trec_eval computes it in doubles (set_F), else evaluate()'s."""
    if metric.name != "set_F":
        return row[metric.label]
    hits, retrieved, relevant = (float(row[label]) for label in SET_F_COUNTS)
    if hits == 0:
        return 0.0
    x = 1.0 if metric.param is None else float(metric.param)
    precision, recall = hits / retrieved, hits / relevant
    return (x + 1.0) * precision * recall / (x * precision + recall)


def _all(aggregate: str, values: list) -> object:
    """The `all` value of per-query values (in query order) as trec_eval accumulates them."""
    if any(value is None for value in values):
        return None
    if aggregate == "sum":
        return sum(values)
    total = 0.0
    for value in values:
        total += math.log(max(value, MIN_GEO_MEAN)) if aggregate == "geometric" else value
    mean = total / len(values)
    return math.exp(mean) if aggregate == "geometric" else mean


MIN_GEO_MEAN = 0.00001  # trec_eval.h
