"""python -m sqlmetrics.api.regenerate: rewrite the repository's generated files (the DuckDB macro
file and the dbt package's generated macros) from the templates of sql/, and print those that
changed. tests/test_macros.py fails while a checked-in copy differs from what this writes."""

from __future__ import annotations

from pathlib import Path

from .macros import regenerate

if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent.parent
    for path in regenerate(root) or ["(nothing changed)"]:
        print(path)
