"""From the caller's arguments to the context the SQL template renders: validated, quoted
identifiers and literals only. Nothing here writes a formula."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from . import columns as col
from .conventions import Conventions
from .errors import ConventionError, MissingColumnError
from .identifiers import quote_identifier, quote_string
from .metric_names import RequestedMetric
from .sources import Source


@dataclass(frozen=True)
class ColumnNames:
    user: str = "user_id"
    item: str = "item_id"
    score: str = "score"
    rank: str | None = None
    relevance: str | Mapping[str, float] | None = None  # None: "relevance" where present
    action: str | None = None


def _grades(mapping: Mapping[str, float]) -> list[tuple[str, str]]:
    if not mapping:
        raise ConventionError("relevance={} grades no action; give e.g. {'purchase': 3, 'view': 1}")
    out = []
    for action, grade in mapping.items():
        if not isinstance(action, str):
            raise ConventionError(f"action names must be strings, got {action!r}")
        if isinstance(grade, bool) or not isinstance(grade, Real) or not math.isfinite(grade):
            raise ConventionError(
                f"the grade of action {action!r} must be a finite number, got {grade!r}"
            )
        out.append((quote_string(action), repr(float(grade))))
    return out


def _relevance(source: Source, names: ColumnNames, role: str, required: bool) -> dict[str, Any]:
    """How the relevance of each row of `source` is obtained."""
    if names.action is not None:
        if not isinstance(names.relevance, Mapping):
            raise ConventionError(
                f"action={names.action!r} needs relevance= as a mapping of actions to grades, "
                "e.g. relevance={'purchase': 3, 'add_to_cart': 2, 'view': 1}"
            )
        column = col.find_column(source, names.action, role, "action")
        return {
            "kind": "action",
            "column": quote_identifier(column),
            "grades": _grades(names.relevance),
            "is_float": False,
        }
    if isinstance(names.relevance, Mapping):
        raise ConventionError(
            "relevance= as a mapping of actions to grades needs action='<column>'"
        )
    wanted = names.relevance or "relevance"
    try:
        column = col.find_column(source, wanted, role, "relevance")
    except MissingColumnError:
        if names.relevance is None and not required:
            # A truth table of (user, item) pairs without grades: every row is relevant.
            return {"kind": "constant", "column": None, "grades": [], "is_float": False}
        raise
    duck_type = col.require_numeric(source, column, role, "relevance", allow_bool=True)
    return {
        "kind": "column",
        "column": quote_identifier(column),
        "grades": [],
        "is_float": col.is_float(duck_type),
    }


def build_context(
    recs: Source,
    truth: Source | None,
    metrics: Sequence[RequestedMetric],
    names: ColumnNames,
    conventions: Conventions,
    by: Sequence[str],
    per_user: bool,
) -> dict[str, Any]:
    user = col.find_column(recs, names.user, "recs", "user")
    item = col.find_column(recs, names.item, "recs", "item")
    if names.rank is not None:
        key = col.find_column(recs, names.rank, "recs", "rank")
        key_type = col.require_numeric(recs, key, "recs", "rank")
        order_by = "rank"
        if conventions.ties == "average":
            raise ConventionError("ties='average' needs scores; ranks cannot tie (rank= was given)")
    else:
        key = col.find_column(recs, names.score, "recs", "score")
        key_type = col.require_numeric(recs, key, "recs", "score")
        order_by = "score"
    # _key is "larger is better" throughout the templates: a rank is negated
    key_sql = quote_identifier(key)
    if order_by == "rank":
        key_sql = f"-CAST({key_sql} AS DOUBLE)"
    elif conventions.ties == "item_asc" and col.is_unsigned(key_type):
        key_sql = f"CAST({key_sql} AS HUGEINT)"  # item_asc negates the score

    if conventions.ties == "average":
        refused = [m.label for m in metrics if not m.definition.tie_averaged]
        if refused:
            raise ConventionError(
                f"ties='average' (the expectation over all orders of tied items) is not defined here "
                f"for {', '.join(refused)}; use ties='item_desc' (trec_eval) or drop those metrics"
            )

    groups = []
    taken = {user, item, key}
    for i, name in enumerate(by):
        column = col.find_column(recs, name, "recs", "by")
        if column in taken:
            raise ConventionError(
                f"by={name!r} names a column that is already the user, item or score"
            )
        taken.add(column)
        groups.append(
            {
                "alias": f"_g{i}",
                "column": quote_identifier(column),
                "name": quote_identifier(column),
            }
        )

    recs_ctx: dict[str, Any] = {
        "source": recs.sql,
        "label": recs.label,
        "user": quote_identifier(user),
        "item": quote_identifier(item),
        "key": key_sql,
        "key_is_float": col.is_float(key_type),
        "names": {"user": user, "item": item, "key": key},
        "relevance": None,
    }
    truth_ctx = None
    if truth is None:
        if (
            names.action is None
            and names.relevance is None
            and "relevance" not in {c.lower() for c in recs.columns}
        ):
            raise MissingColumnError(
                f"recs ({recs.label}) has no relevance column and no truth= table was given; pass "
                "truth='<table of (user, item[, relevance])>', or relevance='<column>', or "
                "action='<column>' with relevance={'purchase': 3, ...}"
            )
        recs_ctx["relevance"] = _relevance(recs, names, "recs", required=True)
    else:
        t_user = col.find_column(truth, names.user, "truth", "user")
        t_item = col.find_column(truth, names.item, "truth", "item")
        col.require_same_family(recs, user, truth, t_user, "user")
        col.require_same_family(recs, item, truth, t_item, "item")
        truth_ctx = {
            "source": truth.sql,
            "label": truth.label,
            "user": quote_identifier(t_user),
            "item": quote_identifier(t_item),
            "names": {"user": t_user, "item": t_item},
            "relevance": _relevance(truth, names, "truth", required=False),
        }

    cutoffs = [m.k for m in metrics]
    list_length = None if any(k is None for k in cutoffs) else max(cutoffs)
    return {
        "recs": recs_ctx,
        "truth": truth_ctx,
        "groups": groups,
        "user_name": quote_identifier(user),
        "order_by": order_by,
        "ties": "item_desc" if order_by == "rank" else conventions.ties,  # ranks cannot tie
        "list_length": list_length,
        "threshold": conventions.threshold_literal,
        "gain_kind": conventions.gain,
        "empty": conventions.empty,
        "missing": conventions.missing,
        "ap_denominator": conventions.ap_denominator,
        "duplicates": conventions.duplicates,
        "per_user": per_user,
        "metrics": [
            {
                "template": m.definition.template,
                "macro": m.name,
                "k": m.k,
                "column": quote_identifier(m.label),
            }
            for m in metrics
        ],
    }
