"""Convention profiles: each peer tool's conventions under its name, so that
evaluate(..., profile="recommenders") gives that tool's numbers (docs/conventions.md, "Profiles").

A profile is what it changes from trec_eval's defaults, plus, for a tool whose metrics do not
share one set of conventions (Microsoft Recommenders averages ndcg over other users than
precision), the changes for one metric. Explicit keywords override both.

>>> [c.missing for c in conventions_by_metric("recommenders", {}, ["ndcg", "precision"])]
['zero', 'skip']
>>> conventions_by_metric("spark", {"gain": "linear"}, ["ndcg"])[0].gain
'linear'
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConventionError
from .conventions import ANY_TRUTH_ROW, Conventions
from .registry import METRICS

DEFAULT_PROFILE = "trec_eval"
# the keywords of evaluate() that a profile sets; None (their default) means "the profile's"
# the conventions a caller names (gain_from_threshold comes only with a peer's metric name)
KEYWORDS = tuple(f.name for f in dataclasses.fields(Conventions) if f.name != "gain_from_threshold")


@dataclass(frozen=True)
class Profile:
    name: str
    tool: str  # what it reproduces, for messages
    conventions: Mapping[str, Any] = field(default_factory=dict)  # changes from trec_eval's
    # (metric name, the conventions so far) -> changes for that metric alone
    per_metric: Callable[[str, Mapping[str, Any]], Mapping[str, Any]] | None = None


def _recommenders_metric(metric: str, conventions: Mapping[str, Any]) -> Mapping[str, Any]:
    """ndcg_at_k merges its hits with the whole truth frame (every truth user counts, one
    without predictions with 0), while precision, recall and the MAPs keep the users of both
    frames. With score_type "raw" or "exp" (gain="linear" or "exponential") it reads the
    ratings, and a user whose ratings are all 0 has ideal DCG 0: the NaN of 0/0 that pandas'
    mean() skips."""
    if metric != "ndcg":
        return {}
    changes: dict[str, Any] = {"missing": "zero"}
    if conventions["gain"] != "binary":
        changes.update(threshold=1, empty="no_gain")
    return changes


def _evidently_metric(metric: str, conventions: Mapping[str, Any]) -> Mapping[str, Any]:
    """Evidently ranks with pandas' average rank cut to an integer, so a tie group shares one
    position (ties="evidently"), for the metrics that read positions only. Its MAP also reads
    the last of the top k rows in the frame's own order, which no rule can know where scores
    tie: map, mar, mrr and the others keep trec_eval's order (item id descending)."""
    definition = METRICS[metric]
    if definition.tie_averaged and not definition.beyond:
        return {"ties": "evidently"}
    return {}


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in [
        Profile("trec_eval", "trec_eval 9.0.8 (and 10.0 where the run holds every judged query)"),
        Profile(
            "recommenders",
            "Microsoft Recommenders' python_evaluation",
            {"threshold": ANY_TRUTH_ROW, "gain": "binary", "ap_denominator": "min_k"},
            _recommenders_metric,
        ),
        Profile("ranx", "ranx's evaluate(make_comparable=True)", {"missing": "zero"}),
        Profile("sklearn", "scikit-learn's ndcg_score and dcg_score", {"ties": "average"}),
        Profile(
            "spark",
            "Spark MLlib's RankingMetrics and RankingEvaluator",
            {"gain": "binary", "ap_denominator": "min_k", "missing": "zero"},
        ),
        Profile(
            "evidently",
            "Evidently's legacy recsys metrics",
            {"empty": "skip", "short_lists": "evidently"},
            _evidently_metric,
        ),
    ]
}


def get(name: str | None) -> Profile:
    """The profile of that name (None: trec_eval's); an unknown name is a ConventionError."""
    if name is None:
        return PROFILES[DEFAULT_PROFILE]
    if not isinstance(name, str) or name not in PROFILES:
        known = ", ".join(repr(p) for p in PROFILES)
        close = difflib.get_close_matches(str(name).lower(), list(PROFILES), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConventionError(f"profile={name!r} is not a profile{hint} Known profiles: {known}.")
    return PROFILES[name]


def conventions_by_metric(
    profile: str | None,
    explicit: Mapping[str, Any],
    metrics: Sequence[str],
    own: Sequence[Mapping[str, Any]] | None = None,
) -> list[Conventions]:
    """The conventions of each metric (by its name, e.g. "ndcg"): trec_eval's defaults, then the
    profile's changes, then the explicit keywords (not None); `own`, per metric, the conventions
    its name carries (a peer's "P(rel=2)@5"), which the profile's rule for that metric sees and
    which win over everything."""
    chosen = get(profile)
    given = {k: v for k, v in explicit.items() if v is not None}
    unknown = sorted(set(given) - set(KEYWORDS))
    if unknown:
        raise ConventionError(f"not a convention: {', '.join(unknown)}")
    base = {**dataclasses.asdict(Conventions()), **chosen.conventions, **given}
    out = []
    for i, metric in enumerate(metrics):
        named = dict(own[i]) if own else {}
        seen = {**base, **named}
        changes = chosen.per_metric(metric, seen) if chosen.per_metric else {}
        out.append(Conventions(**{**seen, **changes, **given, **named}))
    return out
