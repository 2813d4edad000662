"""The layout promise of sql/: every metric formula is written in exactly one template, and
engines override only building blocks (sql/dialects/<engine>.sql.j2, `<engine>__` macros)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from sqlmetrics.names.registry import METRICS
from sqlmetrics.statement.templates import template_dir

MACRO = re.compile(r"\{%-?\s*macro\s+(\w+)\s*\(")


def _macros() -> dict[Path, list[str]]:
    return {path: MACRO.findall(path.read_text()) for path in template_dir().rglob("*.sql.j2")}


def test_no_metric_macro_is_defined_twice():
    defined = Counter(name for names in _macros().values() for name in names)
    ranking = [m.macro for m in METRICS.values() if not m.beyond]
    assert ranking, "the registry lists no ranking metric"
    assert len(set(ranking)) == len(ranking), "two metrics share a macro"
    for name in ranking:
        assert defined[name] == 1, f"{name} is defined in {defined[name]} templates"


def test_each_metric_lives_in_its_registered_template():
    macros = _macros()
    for name, m in METRICS.items():
        if m.beyond:
            continue
        path = template_dir() / m.template
        assert m.macro in macros[path], f"{name}: {m.macro} is not a macro of {m.template}"


def test_engine_overrides_are_building_blocks_only():
    """An `<engine>__name` macro always has its portable `default__name` beside it."""
    for path, names in _macros().items():
        for name in names:
            engine, sep, block = name.partition("__")
            if sep and engine != "default":
                assert f"default__{block}" in names, f"{path.name}: {name} has no default__{block}"


def test_every_dialect_spells_the_same_building_blocks():
    folder = template_dir() / "dialects"
    dialects = {p.stem.split(".")[0]: set(MACRO.findall(p.read_text())) for p in folder.glob("*.sql.j2")}
    assert set(dialects) == {"duckdb", "spark", "postgres", "bigquery", "snowflake"}
    blocks = dialects["duckdb"]
    for name, macros in dialects.items():
        assert macros == blocks, f"{name} spells {sorted(macros ^ blocks)} differently"
