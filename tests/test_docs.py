"""The README documents what the code does: every metric and every convention choice."""

import inspect
import re
from pathlib import Path

import sqlmetrics
from sqlmetrics.conventions import CHOICES

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_every_metric_is_in_the_readme_table():
    table = README.split("## Metrics", 1)[1].split("## Conventions", 1)[0]
    rows = set(re.findall(r"^\| `([a-z_]+)(?:@k)?` \|", table, flags=re.M))
    assert rows == set(sqlmetrics.METRICS)


def test_every_convention_choice_is_documented():
    for argument, choices in CHOICES.items():
        assert f"`{argument}`" in README
        for choice in choices:
            assert f'"{choice}"' in README, (argument, choice)


def test_every_keyword_of_evaluate_is_documented():
    keywords = [
        p for p in inspect.signature(sqlmetrics.evaluate).parameters if p not in ("con", "recs", "metrics")
    ]
    for keyword in keywords:
        assert f"`{keyword}" in README, keyword


def test_the_readme_starts_with_the_two_commands_and_ci_runs_the_test_command():
    commands = re.findall(r"```bash\n(.+?)\n```", README)[:2]
    assert "daily_report.py" in commands[0]
    assert commands[1].endswith(".venv/bin/python -m pytest")
    ci = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest\n" in ci
