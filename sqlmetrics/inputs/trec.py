"""Readers for TREC run and qrels files, the format IR test collections and trec_eval use.

The tables they return use sqlmetrics' default column names, so they plug straight into
evaluate(): user_id is the query id, item_id the document id.

Each file is read twice over at most: first by Arrow's vectorized string kernels (the common
case: ASCII text whose every field is well formed; 2.7x faster than Python's line loop on
two 2M-line runs and their qrels, which were most of compare()'s time), and, when that fast
path declines anything it cannot reproduce exactly (non-ASCII text, a malformed line, a
score that is not a plain decimal), by the line loop, which gives the same table or the
error naming the line."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidDataError

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


# The longest prefix C's strtod (trec_eval's atof, glibc) reads as a number, in ASCII only:
# a decimal or hexadecimal float, inf/infinity or nan/nan(chars), each with an optional sign
_C_FLOAT = re.compile(
    r"""[+-]?(?:
        (?P<hex>0x(?:[0-9a-f]+\.?[0-9a-f]*|\.[0-9a-f]+)(?:p[+-]?[0-9]+)?)
      | (?P<decimal>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?)
      | (?P<inf>inf(?:inity)?)
      | (?P<nan>nan(?:\([0-9a-z_]*\))?)
    )""",
    re.ASCII | re.IGNORECASE | re.VERBOSE,
)


def c_atof(text: str) -> float:
    """The number C's atof reads from `text`, as trec_eval reads a run's score: the longest
    prefix that is a number, else 0 (Python's float() would also take "1_0" as 10 and
    Arabic-Indic or full-width digits, and refuse "1.5x", "0x1p3" or "nan(1)").

    >>> [c_atof(t) for t in ("2.5", "1_0", "1.5e3x", "0x1p3", "-inf", "abc", "1e", "\u0661")]
    [2.5, 1.0, 1500.0, 8.0, -inf, 0.0, 1.0, 0.0]
    """
    found = _C_FLOAT.match(text)
    if found is None:
        return 0.0
    number = found.group(0)
    negative = number.startswith("-")
    if found.group("hex"):
        value = float.fromhex(found.group("hex"))
        return -value if negative else value
    if found.group("nan"):
        return math.copysign(math.nan, -1.0 if negative else 1.0)
    return float(number)  # a decimal (correctly rounded, as glibc's strtod) or inf


def reads_as_score(text: str) -> bool:
    """Whether `text` starts with a number as trec_eval's atof reads one (what a run's score
    field looks like; atof would read anything else as 0).

    >>> reads_as_score("2.5"), reads_as_score("1_0"), reads_as_score("high")
    (True, True, False)
    """
    return _C_FLOAT.match(text) is not None


def looks_like_grade(text: str) -> bool:
    """Whether `text` is written as a qrels grade: a whole number in ASCII digits with an
    optional sign, of any size (read_qrels names the line of one beyond 64 bits).

    >>> [looks_like_grade(t) for t in ("2", "+2", "-1", "9223372036854775808", "\u0662", "1.5")]
    [True, True, True, True, False, False]
    """
    return _INTEGER.fullmatch(text) is not None


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


# ASCII whitespace as str.split() sees it: Arrow's ascii_split_whitespace leaves out \x1c-\x1f
_OTHER_SEPARATORS = (b"\x1c", b"\x1d", b"\x1e", b"\x1f")
_DECIMAL = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"  # float() and Arrow agree
_WHOLE = r"^[+-]?[0-9]+$"


def _fast_fields(path: str | Path, indented_comments: bool) -> pa.ListArray | None:
    """Each data line's fields, or None when the file is not plain ASCII."""
    data = Path(path).read_bytes()
    if not data.isascii() or any(c in data for c in _OTHER_SEPARATORS):
        return None
    # the file's bytes as one large_string, without a copy (ASCII is UTF-8)
    offsets = pa.array([0, len(data)], pa.int64()).buffers()[1]
    text = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(data)])
    lines = pc.split_pattern(text, "\n").values
    trimmed = pc.ascii_trim_whitespace(lines)  # (a split keeps an empty field at either end)
    blank = pc.equal(trimmed, "")
    # a run's comment starts with '#' after the line's leading blanks, a qrels comment at once
    comment = pc.starts_with(trimmed if indented_comments else lines, "#")
    return pc.ascii_split_whitespace(trimmed.filter(pc.invert(pc.or_(blank, comment))))


def _int64_column(texts: pa.Array, *, all_needed: bool) -> pa.Array | None:
    """The int64s written in `texts` (NULL where one is not a whole number), or None when Arrow
    cannot tell (a number beyond 64 bits) or, with all_needed, when one is not a number."""
    whole = pc.match_substring_regex(texts, _WHOLE)
    if all_needed and not pc.all(whole).as_py():
        return None
    unsigned = pc.replace_substring_regex(pc.if_else(whole, texts, None), r"^\+", "")
    try:
        return pc.cast(unsigned, pa.int64())
    except pa.ArrowInvalid:
        return None


def _fast_run(path: str | Path) -> pa.Table | None:
    fields = _fast_fields(path, indented_comments=True)
    if fields is None or len(fields) and pc.min(pc.list_value_length(fields)).as_py() < 6:
        return None
    scores = pc.list_element(fields, 4)
    if not pc.all(pc.match_substring_regex(scores, _DECIMAL)).as_py():
        return None
    ranks = _int64_column(pc.list_element(fields, 3), all_needed=False)
    try:
        scores = pc.cast(scores, pa.float64())
    except pa.ArrowInvalid:
        return None
    if ranks is None:
        return None
    items, tags = pc.list_element(fields, 2), pc.list_element(fields, 5)
    return _run_table(pc.list_element(fields, 0), items, ranks, scores, tags)


def _fast_qrels(path: str | Path, subtopics: bool = False) -> pa.Table | None:
    fields = _fast_fields(path, indented_comments=False)
    if fields is None or not pc.all(pc.equal(pc.list_value_length(fields), 4)).as_py():
        return None
    relevance = _int64_column(pc.list_element(fields, 3), all_needed=True)
    if relevance is None:
        return None
    subtopic = pc.list_element(fields, 1) if subtopics else None
    return _qrels_table(pc.list_element(fields, 0), pc.list_element(fields, 2), relevance, subtopic)


def _run_table(users, items, ranks, scores, tags) -> pa.Table:
    return pa.table(
        {
            "user_id": pa.array(users, pa.string()),
            "item_id": pa.array(items, pa.string()),
            "rank": pa.array(ranks, pa.int64()),
            "score": pa.array(scores, pa.float64()),
            "run": pa.array(tags, pa.string()),
        }
    )


def _qrels_table(users, items, relevance, subtopics=None) -> pa.Table:
    columns = {"user_id": pa.array(users, pa.string())}
    if subtopics is not None:  # a subtopic qrels file's second field
        columns["subtopic"] = pa.array(subtopics, pa.string())
    columns["item_id"] = pa.array(items, pa.string())
    columns["relevance"] = pa.array(relevance, pa.int64())
    return pa.table(columns)


def read_run(path: str | Path) -> pa.Table:
    """Read a run file (`qid Q0 docno rank score tag`, extra columns ignored).

    Columns: user_id (qid), item_id (docno), rank (as written, NULL when not a 64-bit integer
    in ASCII digits; trec_eval ignores it and orders by score), score (float64, read as
    trec_eval's atof reads it: the longest prefix that is a number, else 0; see c_atof), run
    (the tag).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "run.txt")
    >>> _ = open(p, "w").write("301 Q0 doc1 1 2.5 myrun\\n")
    >>> read_run(p).to_pylist()
    [{'user_id': '301', 'item_id': 'doc1', 'rank': 1, 'score': 2.5, 'run': 'myrun'}]
    """
    fast = _fast_run(path)
    return fast if fast is not None else _read_run_lines(path)


def _read_run_lines(path: str | Path) -> pa.Table:
    users, items, ranks, scores, tags = [], [], [], [], []
    for number, fields in _lines(path, indented_comments=True):
        if len(fields) < 6:
            raise InvalidDataError(
                f"{path}:{number}: a run line needs 6 fields (qid Q0 docno rank score tag)"
            )
        score = c_atof(fields[4])
        rank = _int64(fields[3])
        users.append(fields[0])
        items.append(fields[2])
        ranks.append(rank)
        scores.append(score)
        tags.append(fields[5])
    return _run_table(users, items, ranks, scores, tags)


def read_qrels(path: str | Path) -> pa.Table:
    """Read a qrels file (`qid iteration docno relevance`).

    Columns: user_id (qid), item_id (docno), relevance (int64; may be negative: not relevant).
    A relevance that is not a 64-bit integer in ASCII digits is an InvalidDataError.
    """
    fast = _fast_qrels(path)
    return fast if fast is not None else _read_qrels_lines(path)


def read_subtopic_qrels(path: str | Path) -> pa.Table:
    """Read a subtopic qrels file, as ndeval (the TREC Web track's diversity tool) reads one:
    `topic subtopic docno judgement`, the qrels format with the subtopic in place of the
    iteration.

    Columns: user_id (topic), subtopic, item_id (docno), relevance (int64), what evaluate()'s
    subtopics= takes; the same rules as read_qrels otherwise.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "qrels.txt")
    >>> _ = open(p, "w").write("51 2 doc1 1\\n")
    >>> read_subtopic_qrels(p).to_pylist()
    [{'user_id': '51', 'subtopic': '2', 'item_id': 'doc1', 'relevance': 1}]
    """
    fast = _fast_qrels(path, subtopics=True)
    return fast if fast is not None else _read_qrels_lines(path, subtopics=True)


def _read_qrels_lines(path: str | Path, subtopics: bool = False) -> pa.Table:
    users, items, rels, subtopic = [], [], [], []
    for number, fields in _lines(path, indented_comments=False):
        if len(fields) != 4:
            second = "subtopic" if subtopics else "iter"
            raise InvalidDataError(
                f"{path}:{number}: a qrels line needs 4 fields (qid {second} docno rel)"
            )
        rel = _int64(fields[3])
        if rel is None:
            raise InvalidDataError(
                f"{path}:{number}: relevance must be an integer from -2^63 to 2^63-1: {fields[3]!r}"
            )
        users.append(fields[0])
        subtopic.append(fields[1])
        items.append(fields[2])
        rels.append(rel)
    return _qrels_table(users, items, rels, subtopic if subtopics else None)


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
