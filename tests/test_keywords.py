"""The shared keywords (sqlmetrics/statement/keywords.py) are defined once and reach every entry
point: each public function shows them explicitly in its signature, with their defaults, and the
command line offers each one."""

import inspect

import pytest

import sqlmetrics
from sqlmetrics.cli import build_parser
from sqlmetrics.cli.options import NOT_ON_THE_COMMAND_LINE
from sqlmetrics.names.registry import METRICS
from sqlmetrics.statement import keywords

FUNCTIONS = [sqlmetrics.evaluate, sqlmetrics.sql, sqlmetrics.compare] + [
    getattr(sqlmetrics, name) for name in METRICS if hasattr(sqlmetrics, name)
]


@pytest.mark.parametrize("function", FUNCTIONS, ids=lambda f: f.__name__)
def test_every_public_function_shows_every_shared_keyword(function):
    parameters = inspect.signature(function).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values()), "a bare **kwargs"
    for shared in keywords.INPUTS:
        assert shared.name in parameters, shared.name
        ours = parameters[shared.name]
        assert ours.kind is ours.KEYWORD_ONLY and ours.default == shared.default, shared.name
        assert ours.annotation == shared.annotation, shared.name


@pytest.mark.parametrize(
    "call",
    [
        lambda **kw: sqlmetrics.evaluate(None, "recs", "ndcg@10", **kw),
        lambda **kw: sqlmetrics.compare(None, "recs", "ndcg@10", by="model", baseline="A", **kw),
        lambda **kw: sqlmetrics.ndcg(None, "recs", **kw),
    ],
    ids=["evaluate", "compare", "ndcg"],
)
def test_an_unknown_keyword_is_a_type_error(call):
    with pytest.raises(TypeError, match="truthh"):
        call(truthh="t")


def test_the_evaluating_functions_own_keywords_agree():
    """evaluate(), sql() and the metric functions also share by, per_user, partitions, progress
    and confidence: the metric functions take evaluate()'s signature, sql() lists them."""
    ours = inspect.signature(sqlmetrics.evaluate).parameters
    for function in (sqlmetrics.sql, sqlmetrics.ndcg, sqlmetrics.r_precision):
        theirs = inspect.signature(function).parameters
        for name in ("by", "per_user", "partitions", "progress", "confidence"):
            assert theirs[name].default == ours[name].default, (function.__name__, name)


@pytest.mark.parametrize("command", ["evaluate", "sql", "compare"])
def test_the_command_line_offers_every_shared_keyword(command):
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a.choices, dict)).choices
    dests = {action.dest for action in commands[command]._actions}
    for name in keywords.NAMES:
        if name not in NOT_ON_THE_COMMAND_LINE:
            assert name in dests, f"sqlmetrics {command} has no --{name.replace('_', '-')}"
