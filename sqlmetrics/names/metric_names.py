"""Parsing metric names such as "ndcg@10" into (metric, cutoff)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from numbers import Integral

from ..errors import ConventionError, InvalidCutoffError, UnknownMetricError
from . import peer_names
from .registry import METRICS, MetricDefinition

# a name is letters, digits, "_" and "." (iprec_at_recall_0.50, 11pt_avg), then perhaps @k;
# no space inside: the name is also the result's column ("ndcg@ 10" is refused, not renamed;
# spaces around a name are dropped)
_NAME = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.]*?)(?:@(\S+))?$")
# the same with spaces allowed, to say what is wrong with "ndcg@ 10" or "ndcg @10"
_SPACED_NAME = re.compile(r"^([A-Za-z0-9_][A-Za-z0-9_.]*?)\s*(?:@\s*(\S+))?$")
# names are matched without case (set_P, set_p)
_BY_NAME = {name.lower(): definition for name, definition in METRICS.items()}


@dataclass(frozen=True)
class RequestedMetric:
    label: str  # the output column, exactly as requested ("ndcg@10")
    definition: MetricDefinition
    k: int | None  # None: no cutoff, the whole list
    # conventions of this metric alone, from a peer's name ("P(rel=2)@5": threshold 2)
    overrides: peer_names.Overrides = ()
    param: float | None = None  # the metric's number from a peer's name (set_F's beta)

    @property
    def name(self) -> str:
        return self.definition.name


# The largest cutoff: a 32-bit integer in every engine's SQL. A k beyond a user's list means the
# whole list, so larger cutoffs could change nothing.
MAX_CUTOFF = 2**31 - 1


def check_cutoff(k: object, what: str = "k") -> int:
    """Return k if it is an integer from 1 to 2^31 - 1, else raise InvalidCutoffError."""
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise InvalidCutoffError(f"{what} must be a positive integer, got {k!r}")
    if k < 1:
        raise InvalidCutoffError(f"{what} must be at least 1, got {k}")
    if k > MAX_CUTOFF:
        raise InvalidCutoffError(
            f"{what} must be at most {MAX_CUTOFF} (2^31 - 1; a k beyond a list means the whole "
            f"list), got {k}"
        )
    return int(k)


def _unknown(name: str) -> UnknownMetricError:
    # every accepted name, sqlmetrics' own first: compared without case, shown as spelled
    accepted: dict[str, str] = {}
    for candidate in [*METRICS, *peer_names.suggestions()]:
        accepted.setdefault(candidate.lower(), candidate)
    close = difflib.get_close_matches(name.lower(), list(accepted), n=1, cutoff=0.5)
    hint = f"; did you mean {accepted[close[0]]!r}?" if close else ""
    known = ", ".join(f"{m}@k" if METRICS[m].needs_cutoff else m for m in METRICS)
    return UnknownMetricError(
        f"unknown metric {name!r}{hint} Known metrics: {known}, and the names of trec_eval, "
        "ranx and ir_measures (docs/metrics.md)."
    )


def parse_metric(label: str) -> RequestedMetric:
    """Parse one metric name: "ndcg@10" -> ndcg with k = 10; "r_precision" has no cutoff; a
    ranking metric without @k ("ndcg", "map") is over the whole list, as trec_eval's measures."""
    if not isinstance(label, str):
        raise UnknownMetricError(f"a metric name must be a string like 'ndcg@10', got {label!r}")
    label = label.strip()  # as the peers' names are read (peer_names.resolve)
    match = _NAME.match(label)
    if not match:
        spaced = _SPACED_NAME.match(label)
        if spaced and spaced.group(1).lower() in _BY_NAME:
            written = spaced.group(1) + (f"@{spaced.group(2)}" if spaced.group(2) else "")
            raise UnknownMetricError(
                f"metric name {label!r} has a space in it; a name is also its result column, "
                f"so write it without spaces: {written!r}"
            )
        raise _unknown(label)
    name, cutoff = match.group(1).lower(), match.group(2)
    definition = _BY_NAME.get(name)
    if definition is None:
        raise _unknown(name)
    name = definition.name
    if not definition.needs_cutoff:
        if cutoff is not None:
            over = "R" if name == "r_precision" else "the whole list"
            raise UnknownMetricError(f"{name} takes no cutoff (it is over {over}): write {name!r}")
        return RequestedMetric(label, definition, None)
    if cutoff is None:
        if definition.beyond:
            raise UnknownMetricError(f"{name} needs a cutoff, for example '{name}@10'")
        return RequestedMetric(label, definition, None)  # the whole list
    if not re.fullmatch(r"[0-9]+", cutoff):
        raise InvalidCutoffError(f"the cutoff in {label!r} must be a positive integer")
    return RequestedMetric(label, definition, check_cutoff(int(cutoff), f"the cutoff in {label!r}"))


def require_means(metrics: list[RequestedMetric], what: str) -> None:
    """Refuse the metrics whose group value is no mean of the units' values (num_* are sums,
    gm_map a geometric mean): `what` (intervals, paired tests) is about means."""
    refused = [m.label for m in metrics if m.definition.aggregate != "mean"]
    if refused:
        raise ConventionError(
            f"{what} is about means over units, and {', '.join(refused)} is not one (num_* are "
            "sums, gm_map a geometric mean); drop it, or request it without this option"
        )


# The most metrics one call evaluates (after a trec_eval group's expansion): each is columns of
# one statement, and DuckDB plans a statement in time that grows faster than its metrics (one
# row, ndcg@1..ndcg@n, CPU seconds to plan and run: 100 0.6, 200 1.5, 400 11, 500 14, 1,000 106;
# docs/errors.md). The statement's own text renders in linear time (about 0.5 ms per metric).
MAX_METRICS = 500


def split_metric_list(text: str) -> list[str]:
    """Metric names separated by commas or spaces, except inside ir_measures' parentheses
    ("nDCG(dcg='exp-log2')@10") and trec_eval's parameter lists ("P.5,10" is one name); a space
    beside "@" stays in its name ("ndcg@ 10"), which parse_metric then refuses by name.
    The command line's --metrics and evaluate()'s metrics given as one string both use it.

    >>> split_metric_list("ndcg@10,map@10 recall@20")
    ['ndcg@10', 'map@10', 'recall@20']
    >>> split_metric_list("P.5,10, nDCG(dcg='exp-log2')@10")
    ['P.5,10', "nDCG(dcg='exp-log2')@10"]
    """
    parts, current, depth = [], "", 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        beside_at = char == " " and (
            current.rstrip().endswith("@") or text[i:].lstrip(" ").startswith("@")
        )
        if char in ", " and depth == 0 and not beside_at:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    names: list[str] = []
    for part in filter(None, (p.strip() for p in parts)):
        if names and re.fullmatch(r"[0-9.]+", part) and re.fullmatch(r"\w+\.[0-9.,]*", names[-1]):
            names[-1] += "," + part  # the next cutoff of "P.5,10"
        else:
            names.append(part)
    return names


def parse_metrics(metrics: str | list[str] | tuple[str, ...]) -> list[RequestedMetric]:
    """Parse a list of metric names, or one string of names separated by commas or spaces as
    the command line takes them ("ndcg@10,map@10"); each may be requested once."""
    labels = split_metric_list(metrics) if isinstance(metrics, str) else list(metrics)
    if not labels:
        raise UnknownMetricError("no metric requested: pass names like ['ndcg@10', 'map@10']")
    parsed = [m for label in labels for m in _parse_any(label)]
    if len(parsed) > MAX_METRICS:
        raise UnknownMetricError(
            f"{len(parsed):,} metrics requested in one call; at most {MAX_METRICS} are (a "
            "statement of more takes DuckDB minutes to plan): split them into several calls"
        )
    seen: dict[tuple, str] = {}
    for m in parsed:
        key = (m.name, m.k, m.overrides, m.param)
        if key in seen:
            raise UnknownMetricError(f"{m.label!r} is requested twice (also as {seen[key]!r})")
        seen[key] = m.label
    return parsed


def _parse_any(label: object) -> list[RequestedMetric]:
    """sqlmetrics' own name, else a peer's (peer_names.py): one metric, or a trec_eval group's
    members that sqlmetrics has."""
    try:
        return [parse_metric(label)]
    except (UnknownMetricError, InvalidCutoffError):
        resolved = peer_names.resolve(label) if isinstance(label, str) else None
        if resolved is None:
            raise
    found = []
    for peer in resolved.names:
        if peer.canonical is None:
            if resolved.group:
                continue
            raise UnknownMetricError(
                f"{label!r} is a measure of {peer.peer} that sqlmetrics does not compute"
            ) from None
        try:
            own = parse_metric(peer.canonical)
        except (UnknownMetricError, InvalidCutoffError) as exc:
            if resolved.group and isinstance(exc, UnknownMetricError):
                continue  # a member this version does not have
            if peer.canonical == label:
                raise
            raise type(exc)(f"{label!r} is {_of(peer.peer)} {peer.canonical!r}, but: {exc}") from None
        if peer.param is not None and not own.definition.parameter:
            raise UnknownMetricError(f"{label!r}: {own.name} takes no parameter")
        found.append(RequestedMetric(peer.label, own.definition, own.k, peer.overrides, peer.param))
    if not found:
        raise UnknownMetricError(f"none of the measures of trec_eval's {label!r} is in sqlmetrics")
    return found


def _of(peer: str) -> str:
    return f"{peer}' name for" if peer.endswith("s") else f"{peer}'s name for"
