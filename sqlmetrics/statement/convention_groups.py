"""Metrics that do not share their conventions (a profile whose metrics average over
different users: Microsoft Recommenders' ndcg and precision), in one statement: the context of
sql/convention_groups.sql.j2, which embeds evaluate's statement once per group of metrics and
joins them on the by columns (and the user)."""

from __future__ import annotations

from typing import Any

from ..names.conventions import Conventions
from .dialects import get as get_dialect
from .templates import render

GROUPED_TEMPLATE = "convention_groups.sql.j2"


def grouped_context(
    dialect, contexts: list[dict[str, Any]], conventions: list[Conventions], requested, per_user: bool
) -> dict[str, Any]:
    """The context of sql/convention_groups.sql.j2: one evaluate statement per group of
    metrics that share their conventions, joined into the table one statement would give."""
    part_of = {}
    for i, context in enumerate(contexts):
        for m in context["metrics"] + ((context["beyond"] or {}).get("metrics") or []):
            part_of[m["column"]] = i
    # who a mean is over: the metrics whose users differ from the first metric's get a count
    # (empty="no_gain" asks which users have a positive gain, which the gain decides too)
    counted = [
        (
            c.missing,
            c.empty,
            c.threshold if c.empty != "zero" else None,
            (c.gain, c.gain_from_threshold) if c.empty == "no_gain" else None,
        )
        for c in conventions
    ]
    # each metric's result column (BigQuery's without a ".": dialects.result_name)
    first = part_of[dialect.quote_identifier(dialect.result_name(requested[0].label))]
    columns = []
    for m in requested:
        column = dialect.quote_identifier(dialect.result_name(m.label))
        part = part_of[column]
        users = None
        if counted[part] != counted[first]:
            users = dialect.quote_identifier(dialect.result_name(f"{m.label}_users"))
        columns.append({"part": f"_c{part}", "column": column, "users": users})
    head = contexts[0]
    return {
        "dialect": dialect.name,
        "parts": [{"alias": f"_c{i}", "context": c} for i, c in enumerate(contexts)],
        "columns": columns,
        "groups": head["groups"],
        "unit": head["unit"],
        "per_user": per_user,
        "fail_function": "error",
        "render_part": _render_part,
        "beyond": None,  # (partitions=N refuses grouped metrics before it looks)
        "partition": None,
    }


def _render_part(
    context: dict[str, Any], per_user: bool, fail_function: str, exact_sums: str
) -> str:
    """One group's statement, as sql/convention_groups.sql.j2 embeds it."""
    part = {**context, "per_user": per_user, "fail_function": fail_function, "exact_sums": exact_sums}
    return render(get_dialect(context["dialect"]).template, part).rstrip("\n")


def grouped_labels(context: dict[str, Any]) -> str:
    """The groups' metrics, for messages: "ndcg@10 and precision@10, map@10"."""
    return " and ".join(
        ", ".join(m["column"] for m in part["context"]["metrics"]) for part in context["parts"]
    )
