"""Parsing metric names such as "ndcg@10" into (metric, cutoff)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from numbers import Integral

from .errors import InvalidCutoffError, UnknownMetricError
from .registry import METRICS, MetricDefinition

_NAME = re.compile(r"^\s*([A-Za-z_]+)\s*(?:@\s*(\S+))?\s*$")


@dataclass(frozen=True)
class RequestedMetric:
    label: str  # the output column, exactly as requested ("ndcg@10")
    definition: MetricDefinition
    k: int | None

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
    close = difflib.get_close_matches(name.lower(), list(METRICS), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    known = ", ".join(f"{m}@k" if METRICS[m].needs_cutoff else m for m in METRICS)
    return UnknownMetricError(f"unknown metric {name!r}{hint} Known metrics: {known}.")


def parse_metric(label: str) -> RequestedMetric:
    """Parse one metric name: "ndcg@10" -> ndcg with k = 10; "r_precision" has no cutoff."""
    if not isinstance(label, str):
        raise UnknownMetricError(f"a metric name must be a string like 'ndcg@10', got {label!r}")
    match = _NAME.match(label)
    if not match:
        raise _unknown(label)
    name, cutoff = match.group(1).lower(), match.group(2)
    definition = METRICS.get(name)
    if definition is None:
        raise _unknown(name)
    if not definition.needs_cutoff:
        if cutoff is not None:
            raise UnknownMetricError(f"{name} takes no cutoff (its cutoff is R): write {name!r}")
        return RequestedMetric(label, definition, None)
    if cutoff is None:
        raise UnknownMetricError(f"{name} needs a cutoff, for example '{name}@10'")
    if not re.fullmatch(r"[0-9]+", cutoff):
        raise InvalidCutoffError(f"the cutoff in {label!r} must be a positive integer")
    return RequestedMetric(label, definition, check_cutoff(int(cutoff), f"the cutoff in {label!r}"))


def parse_metrics(metrics: str | list[str] | tuple[str, ...]) -> list[RequestedMetric]:
    """Parse a list of metric names (or one name); each may be requested once."""
    labels = [metrics] if isinstance(metrics, str) else list(metrics)
    if not labels:
        raise UnknownMetricError("no metric requested: pass names like ['ndcg@10', 'map@10']")
    parsed = [parse_metric(label) for label in labels]
    seen: dict[tuple[str, int | None], str] = {}
    for m in parsed:
        key = (m.name, m.k)
        if key in seen:
            raise UnknownMetricError(f"{m.label!r} is requested twice (also as {seen[key]!r})")
        seen[key] = m.label
    return parsed
