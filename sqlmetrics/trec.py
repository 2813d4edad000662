"""Readers for TREC run and qrels files, the format IR test collections and trec_eval use.

The tables they return use sqlmetrics' default column names, so they plug straight into
evaluate(): user_id is the query id, item_id the document id."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidDataError

# A whole number as C's strtol reads it, in ASCII only: Python's int() would also take "²" (no:
# ValueError), "١" or "1_000", which trec_eval does not.
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_INT64 = (-(2**63), 2**63 - 1)


def _int64(text: str) -> int | None:
    """The 64-bit integer written in `text`, or None (not an integer, or out of range)."""
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


def _lines(path: str | Path, indented_comments: bool):
    """Numbered, split lines. A line that starts with '#' is a comment (trec_eval's run reader
    also skips one whose first non-blank character is '#'); a '#' inside a docno is kept."""
    with open(path, "rb") as handle:  # decoded line by line, so an error names its line
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidDataError(f"{path}:{number}: not UTF-8 text ({exc.reason})") from None
            head = line.lstrip() if indented_comments else line
            if head.startswith("#") or not line.strip():
                continue
            yield number, line.split()


def read_run(path: str | Path) -> pa.Table:
    """Read a run file (`qid Q0 docno rank score tag`, extra columns ignored).

    Columns: user_id (qid), item_id (docno), rank (as written, NULL when not a 64-bit integer
    in ASCII digits; trec_eval ignores it and orders by score), score (float64), run (the tag).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = open(p, "w").write("301 Q0 doc1 1 2.5 myrun\\n")
    >>> read_run(p).to_pylist()
    [{'user_id': '301', 'item_id': 'doc1', 'rank': 1, 'score': 2.5, 'run': 'myrun'}]
    """
    users, items, ranks, scores, tags = [], [], [], [], []
    for number, fields in _lines(path, indented_comments=True):
        if len(fields) < 6:
            raise InvalidDataError(
                f"{path}:{number}: a run line needs 6 fields (qid Q0 docno rank score tag)"
            )
        try:
            score = float(fields[4])
        except ValueError:
            raise InvalidDataError(
                f"{path}:{number}: the score must be a number: {' '.join(fields)}"
            ) from None
        rank = _int64(fields[3])
        users.append(fields[0])
        items.append(fields[2])
        ranks.append(rank)
        scores.append(score)
        tags.append(fields[5])
    return pa.table(
        {
            "user_id": pa.array(users, pa.string()),
            "item_id": pa.array(items, pa.string()),
            "rank": pa.array(ranks, pa.int64()),
            "score": pa.array(scores, pa.float64()),
            "run": pa.array(tags, pa.string()),
        }
    )


def read_qrels(path: str | Path) -> pa.Table:
    """Read a qrels file (`qid iteration docno relevance`).

    Columns: user_id (qid), item_id (docno), relevance (int64; may be negative: not relevant).
    A relevance that is not a 64-bit integer in ASCII digits is an InvalidDataError.
    """
    users, items, rels = [], [], []
    for number, fields in _lines(path, indented_comments=False):
        if len(fields) != 4:
            raise InvalidDataError(
                f"{path}:{number}: a qrels line needs 4 fields (qid iter docno rel)"
            )
        rel = _int64(fields[3])
        if rel is None:
            raise InvalidDataError(
                f"{path}:{number}: relevance must be an integer from -2^63 to 2^63-1: {fields[3]!r}"
            )
        users.append(fields[0])
        items.append(fields[2])
        rels.append(rel)
    return pa.table(
        {
            "user_id": pa.array(users, pa.string()),
            "item_id": pa.array(items, pa.string()),
            "relevance": pa.array(rels, pa.int64()),
        }
    )


def truncate_run(run: pa.Table, n: int) -> pa.Table:
    """Each query's first n documents in trec_eval's order (score descending, ties by docno
    descending): trec_eval -M n.

    >>> t = pa.table({"user_id": ["1"] * 3, "item_id": ["a", "b", "c"], "score": [1.0, 2.0, 2.0]})
    >>> truncate_run(t, 2).column("item_id").to_pylist()
    ['c', 'b']
    """
    order = pc.sort_indices(
        run, [("user_id", "ascending"), ("score", "descending"), ("item_id", "descending")]
    )
    ordered = run.take(order)
    keep, seen, previous = [], 0, object()
    for user in ordered.column("user_id").to_pylist():
        seen = seen + 1 if user == previous else 1
        previous = user
        keep.append(seen <= n)
    return ordered.filter(pa.array(keep, pa.bool_()))
