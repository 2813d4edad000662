"""A small parser of trec_eval's output (`measure<TAB>qid<TAB>value`, one value a line).

trec_eval left-pads the measure name with spaces, prints floats with %6.4f, counts (num_*)
as integers and a few values as text (runid, relstring). Only the numeric values are kept.
"""

from __future__ import annotations

import math
from pathlib import Path

Expected = dict[tuple[str, str], float]


def _number(text: str) -> float | None:
    try:
        return float(int(text))
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    # "nan", "inf" and the like would be a run tag, not a value trec_eval printed with %f.
    return value if math.isfinite(value) else None


def parse_trec_eval_output(text: str) -> Expected:
    """Parse trec_eval output text into {(measure, qid): value}, numeric values only.

    >>> parse_trec_eval_output("P_5                   \\tall\\t0.2667\\nrunid \\tall\\tSTANDARD\\n")
    {('P_5', 'all'): 0.2667}
    """
    values: Expected = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            # Some trec_eval builds separate with spaces only: fall back to whitespace.
            fields = line.split()
        if len(fields) != 3:
            raise ValueError(f"line {number}: expected 'measure<TAB>qid<TAB>value', got {line!r}")
        measure, qid, raw = (field.strip() for field in fields)
        value = _number(raw)
        if value is None:
            continue  # runid, relstring: text, not a number
        key = (measure, qid)
        if key in values:
            raise ValueError(f"line {number}: {measure} for {qid} is given twice")
        values[key] = value
    return values


def read_trec_eval_output(path: str | Path) -> Expected:
    """Parse a trec_eval output file (see parse_trec_eval_output)."""
    return parse_trec_eval_output(Path(path).read_text(encoding="utf-8"))


def measures(expected: Expected) -> set[str]:
    """The measure names present in a parsed output."""
    return {measure for measure, _ in expected}


def query_ids(expected: Expected, measure: str) -> set[str]:
    """The per-query ids (not 'all') that have a value for `measure`."""
    return {qid for m, qid in expected if m == measure and qid != "all"}
