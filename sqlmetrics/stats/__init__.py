"""The statistics of comparisons: compare(), its significance tests, multiple-comparison corrections,
the replicate draws, and the confidence intervals of evaluate(confidence=).
May import sqlmetrics.engines, sqlmetrics.statement, sqlmetrics.inputs, sqlmetrics.names, errors."""
