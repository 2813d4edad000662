"""sqlmetrics: ranking metrics as SQL templates that run where the logs live (DuckDB).

import duckdb, sqlmetrics
con = duckdb.connect("warehouse.duckdb")
sqlmetrics.ndcg(con, "events", k=10)
sqlmetrics.evaluate(con, "recs", ["ndcg@10", "map@10"], truth="purchases", by="model")
"""

from .api import evaluate, sql
from .errors import (
    ColumnTypeError,
    ConventionError,
    DuplicateRowError,
    InvalidCutoffError,
    InvalidDataError,
    MissingColumnError,
    SqlMetricsError,
    UnknownMetricError,
    UnknownTableError,
)
from .functions import (
    arhr,
    cg,
    dcg,
    hit_rate,
    idcg,
    map,
    mar,
    mrr,
    ndcg,
    precision,
    r_precision,
    recall,
)
from .registry import METRICS
from .trec import read_qrels, read_run

__version__ = "0.1.0"

__all__ = [
    "evaluate",
    "sql",
    "read_run",
    "read_qrels",
    "METRICS",
    "cg",
    "dcg",
    "idcg",
    "ndcg",
    "precision",
    "recall",
    "hit_rate",
    "mrr",
    "arhr",
    "map",
    "mar",
    "r_precision",
    "SqlMetricsError",
    "UnknownMetricError",
    "InvalidCutoffError",
    "ConventionError",
    "UnknownTableError",
    "MissingColumnError",
    "ColumnTypeError",
    "InvalidDataError",
    "DuplicateRowError",
]
