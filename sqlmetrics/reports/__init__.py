"""Scheduled reports: metrics per period and segment, kept in a results table of the warehouse.

    sqlmetrics report daily.toml --from 2026-11-01 --to 2026-11-07 --html report.html

config.py (the TOML file), periods.py (day, week, month), warehouse.py (opening the DuckDB file,
one writer at a time), runner.py (evaluate each period, skip finished ones), results_table.py
(the table; one transaction per period), comparisons.py (the comparisons table of a [compare]
section), off_policy.py (the off-policy table of an [off_policy] section), formats.py (text,
CSV, JSON, Parquet), charts.py and html.py (the self-contained HTML page). May import
sqlmetrics.api and every layer below it; only cli imports it."""

from .config import ReportConfig, ReportConfigError, config_from_dict, load_config
from .periods import Period, last_complete, period_of, periods_between
from .results_table import ResultsTableError
from .runner import PeriodOutcome, curves, evaluate_period, run_report
from .warehouse import WarehouseBusyError, connect

__all__ = [
    "ReportConfig",
    "ReportConfigError",
    "config_from_dict",
    "load_config",
    "Period",
    "period_of",
    "periods_between",
    "last_complete",
    "run_report",
    "evaluate_period",
    "curves",
    "PeriodOutcome",
    "ResultsTableError",
    "WarehouseBusyError",
    "connect",
]
