"""evaluate(confidence=...): each mean with its t interval over the units (users) it averages.

The statement wraps evaluate()'s own per_user=True statement in sql/compare/interval.sql.j2,
which returns per group the count, the exact sum and the squared deviations of every metric;
the t quantile comes from scipy (sqlmetrics[stats]).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..errors import ConventionError
from ..names.metric_names import parse_metrics, require_means
from ..statement.dialects import get as get_dialect
from ..statement.exact_sums import with_exact_sums
from ..statement.templates import render
from .significance import scipy_stats, t_interval


def check(confidence: Any, per_user: bool, partitions: int) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 < confidence < 1:
        raise ConventionError(f"confidence must be a number between 0 and 1, got {confidence!r}")
    if per_user:
        raise ConventionError("confidence= gives intervals of the means; per_user=True returns no means")
    if partitions != 1:
        raise ConventionError("confidence= runs in one statement; it cannot be combined with partitions=N")
    scipy_stats("confidence=")


def evaluate_with_intervals(
    engine,
    template: str,
    context: dict[str, Any],
    confidence: float,
    labels: list[str],
    group_names: list[str],
) -> pa.Table:
    """evaluate()'s table, with <metric>_ci_low and <metric>_ci_high after each mean."""
    require_means(parse_metrics(labels), "confidence=")
    quote = get_dialect(context["dialect"]).quote_identifier

    def run(form: str) -> pa.Table:
        per_user_sql = render(template, {**context, "per_user": True, "exact_sums": form})
        text = render(
            "compare/interval.sql.j2",
            {
                "dialect": context["dialect"],
                "per_user_sql": per_user_sql.rstrip("\n"),
                "groups": context["groups"],
                "metrics": [quote(label) for label in labels],
                "bounds": [m.definition.bound for m in parse_metrics(labels)],
                "exact_sums": form,
            },
        )
        return engine.run(text)

    result = with_exact_sums(run)
    n = result.column("_n").to_pylist()
    columns: dict[str, Any] = {
        name: result.column(f"_g{i}") for i, name in enumerate(group_names)
    }
    columns["users"] = result.column("_n")
    for k, label in enumerate(labels):
        sums = result.column(f"_sum{k}").to_pylist()
        squares = result.column(f"_ss{k}").to_pylist()
        means = [s / c if c else None for s, c in zip(sums, n, strict=True)]
        bounds = [
            t_interval(c, mean, ss, confidence) if c else (None, None)
            for c, mean, ss in zip(n, means, squares, strict=True)
        ]
        columns[label] = pa.array(means, pa.float64())
        columns[f"{label}_ci_low"] = pa.array([b[0] for b in bounds], pa.float64())
        columns[f"{label}_ci_high"] = pa.array([b[1] for b in bounds], pa.float64())
    return pa.table(columns)
