"""The command line, `sqlmetrics COMMAND` (also `python -m sqlmetrics`): one module per command
(evaluate, sql, report, compare), the options they share in options.py, the parser and the exit
statuses in main.py. May import every other layer; nothing imports it."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
