"""One function per metric: sqlmetrics.ndcg(con, "events", k=10) and so on. Each is
evaluate() with the metric's names; k may be a list for one column per cutoff."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from .api import Input, evaluate
from .metric_names import check_cutoff
from .registry import METRICS


def _names(metric: str, k: int | Sequence[int]) -> list[str]:
    cutoffs = [k] if isinstance(k, int) or not isinstance(k, Sequence) else list(k)
    return [f"{metric}@{check_cutoff(c)}" for c in cutoffs]


def _metric_function(metric: str):
    definition = METRICS[metric]

    if definition.needs_cutoff:

        def function(
            con: duckdb.DuckDBPyConnection, recs: Input, k: int | Sequence[int] = 10, **options: Any
        ) -> pa.Table:
            return evaluate(con, recs, _names(metric, k), **options)

        example = (
            f'sqlmetrics.{metric}(con, "events", k=[5, 10])  # columns {metric}@5, {metric}@10'
        )
    else:

        def function(con: duckdb.DuckDBPyConnection, recs: Input, **options: Any) -> pa.Table:
            return evaluate(con, recs, [metric], **options)

        example = f'sqlmetrics.{metric}(con, "recs", truth="purchases")'

    function.__name__ = function.__qualname__ = metric
    function.__doc__ = (
        f"{metric}: {definition.formula}.\n\n"
        f"Same keyword arguments as sqlmetrics.evaluate (truth, by, per_user, column names,\n"
        f"conventions). Example:\n\n    {example}\n"
    )
    return function


cg = _metric_function("cg")
dcg = _metric_function("dcg")
idcg = _metric_function("idcg")
ndcg = _metric_function("ndcg")
precision = _metric_function("precision")
recall = _metric_function("recall")
hit_rate = _metric_function("hit_rate")
mrr = _metric_function("mrr")
arhr = _metric_function("arhr")
map = _metric_function("map")  # noqa: A001 - named like the metric, as in ranx and sklearn
mar = _metric_function("mar")
r_precision = _metric_function("r_precision")
