"""sqlmetrics: ranking metrics as SQL templates that run where the logs live (DuckDB).

On the example warehouse (python warehouse_examples/make_warehouse.py; `recs` and `purchases`
are its views of the last day):

    import duckdb, sqlmetrics
    con = duckdb.connect("warehouse.duckdb")
    sqlmetrics.ndcg(con, "recs", k=10, truth="purchases", by="model")
    sqlmetrics.evaluate(con, "recs", ["ndcg@10", "map@10"], truth="purchases", by="model")
"""

from .api.evaluation import evaluate, sql
from .api.functions import (
    arhr,
    bpref,
    catalog_coverage,
    cg,
    dcg,
    distributional_coverage,
    diversity,
    f1,
    fcp,
    fcp_surprise,
    gini,
    gm_map,
    hit_rate,
    idcg,
    judged,
    map,
    mar,
    mrr,
    ndcg,
    novelty,
    num_q,
    num_rel,
    num_rel_ret,
    num_ret,
    personalization,
    popularity,
    precision,
    r_precision,
    recall,
    serendipity,
    set_F,
    set_P,
    set_recall,
    success,
)
from .api.macros import install_macros
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
from .inputs.trec import read_qrels, read_run
from .names.registry import METRICS
from .statement.run import run as _run  # noqa: F401  (its warning filter, in the process's list from the start)
from .stats.compare import compare
from .stats.off_policy import OffPolicyWarning, off_policy, off_policy_sql

__version__ = "0.1.0"

__all__ = [
    "evaluate",
    "compare",
    "off_policy",
    "off_policy_sql",
    "OffPolicyWarning",
    "sql",
    "install_macros",
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
    "success",
    "set_P",
    "set_recall",
    "set_F",
    "gm_map",
    "bpref",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "judged",
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
