"""The public functions: evaluate() and sql() (evaluation.py), one function per metric
(functions.py), and the keywords they all share (keywords.py); the DuckDB macros
(macros.py: install_macros()) and the dbt package's generated files (dbt_package.py), both
rendered from the templates, and `python -m sqlmetrics.api.regenerate`, which writes them.
May import sqlmetrics.stats and every layer below it; only reports and cli import it."""
