"""The public functions: evaluate() and sql() (evaluation.py), one function per metric
(functions.py), and the keywords they all share (keywords.py).
May import sqlmetrics.stats and every layer below it; only reports and cli import it."""
