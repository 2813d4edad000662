"""sqlmetrics: ranking metrics as SQL templates that run where the logs live (DuckDB).

import duckdb, sqlmetrics
con = duckdb.connect("warehouse.duckdb")
sqlmetrics.ndcg(con, "events", k=10)
sqlmetrics.evaluate(con, "recs", ["ndcg@10", "map@10"], truth="purchases", by="model")
"""

from .api import evaluate, sql
from .compare import compare
from .errors import (
    ColumnTypeError,
    ConventionError,
    DuplicateRowError,
    InvalidCutoffError,
    InvalidDataError,
    MissingColumnError,
    MissingExtraError,
    OutOfMemoryError,
    SqlMetricsError,
    UnknownMetricError,
    UnknownTableError,
    UnsupportedError,
)
from .functions import (
    arhr,
    catalog_coverage,
    cg,
    dcg,
    distributional_coverage,
    diversity,
    f1,
    fcp,
    fcp_surprise,
    gini,
    hit_rate,
    idcg,
    map,
    mar,
    mrr,
    ndcg,
    novelty,
    personalization,
    popularity,
    precision,
    r_precision,
    recall,
    serendipity,
)
from .registry import METRICS
from .trec import read_qrels, read_run

__version__ = "0.1.0"

__all__ = [
    "evaluate",
    "compare",
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
    "f1",
    "hit_rate",
    "mrr",
    "arhr",
    "map",
    "mar",
    "r_precision",
    "fcp",
    "fcp_surprise",
    "catalog_coverage",
    "distributional_coverage",
    "gini",
    "novelty",
    "popularity",
    "diversity",
    "serendipity",
    "personalization",
    "SqlMetricsError",
    "UnknownMetricError",
    "InvalidCutoffError",
    "ConventionError",
    "UnknownTableError",
    "MissingColumnError",
    "ColumnTypeError",
    "InvalidDataError",
    "MissingExtraError",
    "DuplicateRowError",
    "UnsupportedError",
    "OutOfMemoryError",
]
