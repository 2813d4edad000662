"""The keyword arguments of a call turned into the statement's template and context: the
metric names parsed, the conventions grouped, the inputs resolved by the engine, the plan built.
evaluate(), sql() and compare() all start here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConventionError
from ..inputs.sources import Input, Source
from ..names.conventions import Conventions
from ..names.metric_names import RequestedMetric, parse_metrics
from ..names.profiles import conventions_by_metric
from .convention_groups import GROUPED_TEMPLATE, grouped_context
from .dialects import from_item
from .dialects import get as get_dialect
from .keywords import CONVENTION_KEYWORDS, takes_inputs
from .plan import ColumnNames, build_context


@takes_inputs()
def prepare(
    engine: Any,
    recs: Input,
    metrics: str | Sequence[str],
    *,
    by: str | Sequence[str] | None,
    per_user: bool,
    dialect: str | None = None,
    baseline: Any = None,
    **inputs: Any,
) -> tuple[str, dict[str, Any], Source, Source | None, list[Source]]:
    """The template and its context for a call's keywords (statement/keywords.py's, complete)."""
    # the engine's own dialect, unless sql() renders for another (engines.Described has none)
    dialect = get_dialect(dialect or engine.dialect or "duckdb").name
    requested = parse_metrics(metrics)
    explicit = {name: inputs[name] for name in CONVENTION_KEYWORDS}
    # the metrics that share their conventions, in the order requested (one group unless a
    # profile gives a metric conventions of its own: Microsoft Recommenders' ndcg)
    convention_groups: dict[Conventions, list[RequestedMetric]] = {}
    # or a peer's name carries its own: "P(rel=2)@5", ranx's "ndcg@10-l2"; peer_names.py)
    per_metric = conventions_by_metric(
        inputs["profile"], explicit, [m.name for m in requested], [dict(m.overrides) for m in requested]
    )
    for m, conventions in zip(requested, per_metric, strict=True):
        convention_groups.setdefault(conventions, []).append(m)
    groups = [by] if isinstance(by, str) else list(by or [])
    names = ColumnNames.of(inputs)
    recs_source = engine.resolve(recs, "recs")
    truth = inputs["truth"]
    truth_source = None if truth is None else engine.resolve(truth, "truth")
    subtopics_source = subtopic_truth(engine, inputs["subtopics"], truth_source)
    if subtopics_source is not None:
        truth_source = subtopics_source
    # beyond-accuracy inputs: accepted in every form recs and truth are
    extra = {
        role: engine.resolve(obj, role)
        for role, obj in ((role, inputs[role]) for role in BEYOND_INPUTS)
        if obj is not None
    }
    if dialect != engine.dialect:  # sql(dialect=...): the inputs named in the target dialect
        for source in (recs_source, truth_source, *extra.values()):
            if source is not None:
                source.sql = from_item(source, dialect)
    contexts = [
        build_context(
            recs_source,
            truth_source,
            group,
            names,
            conventions,
            groups,
            per_user,
            history=extra.get("history"),
            catalog=extra.get("catalog"),
            item_features=extra.get("item_features"),
            item_genres=extra.get("item_genres"),
            group_target=extra.get("group_target"),
            subtopics=subtopics_source,
            dialect=dialect,
            baseline=baseline,
        )
        for conventions, group in convention_groups.items()
    ]
    sources = (recs_source, truth_source, list(extra.values()))
    if len(contexts) == 1:
        return get_dialect(dialect).template, contexts[0], *sources
    context = grouped_context(get_dialect(dialect), contexts, list(convention_groups), requested, per_user)
    return GROUPED_TEMPLATE, context, *sources


NOT_BOTH_TRUTHS = "give subtopics= or truth=, not both"  # (the command line: its options)


def subtopic_truth(engine: Any, subtopics: Input | None, truth: Source | None) -> Source | None:
    """subtopics= resolved: the call's truth too (an item's grade is its highest over its unit's
    subtopics, ndeval's "relevant to any subtopic"), so truth= may not come with it."""
    if subtopics is None:
        return None
    if truth is not None:
        raise ConventionError(
            "subtopics= is the truth of the call too (an item's grade: its highest over the "
            f"unit's subtopics); {NOT_BOTH_TRUTHS}"
        )
    return engine.resolve(subtopics, "subtopics")


# the beyond-accuracy metrics' inputs, resolved as recs and truth are
BEYOND_INPUTS = ("history", "catalog", "item_features", "item_genres", "group_target")


def with_truth_hint(message: str) -> str:
    """A duplicate in the truth is usually an event log's repeated event: say what accepts it."""
    if not message.startswith("truth"):
        return message
    return (
        f"{message} (an event log? truth_duplicates='max' counts the highest grade, 'sum' adds "
        "the grades up)"
    )
