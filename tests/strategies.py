"""Hypothesis strategies for random evaluation data.

The data are small but awkward on purpose: few distinct scores (exact ties are common),
graded relevance 0..3 with some negative grades, users without any relevant item, truth items
never recommended, recs users without truth, truth users without recs, and item ids that are
either strings or integers whose text order differs from their numeric order (9 vs 10).
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import pyarrow as pa
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

# Shared settings. Every example calls DuckDB (~50 ms), so shrinking a failure can take
# minutes; the generated data are small already, so shrinking is off unless asked for with
# SQLMETRICS_SHRINK=1 (then failures are reported as minimal examples).
FAST = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=(
        tuple(Phase)
        if os.environ.get("SQLMETRICS_SHRINK")
        else (Phase.explicit, Phase.reuse, Phase.generate)
    ),
)

SCORES = (-0.5, 0.0, 0.25, 0.5, 1.0)  # few values: ties everywhere
GRADES = (-1, 0, 0, 1, 1, 2, 3)  # graded relevance, some negative
NON_RELEVANT = (-1, 0)
INT_ITEMS = (1, 2, 9, 10, 11, 20, 100, 3)  # text order: "9" > "3" > "20" > "2" > "11" > ...
STR_ITEMS = ("a", "b", "B", "d1", "d10", "d9", "x", "Z")
GROUPS = ("m1", "m2")


@dataclass
class EvalData:
    """recs rows {"user", "item", "score"[, "group"][, "relevance"]}; truth rows
    {"user", "item", "relevance"} or None in single-table mode (recs carry the relevance)."""

    recs: list[dict]
    truth: list[dict] | None
    item_type: pa.DataType
    grouped: bool

    def recs_table(self, rows: list[dict] | None = None) -> pa.Table:
        rows = self.recs if rows is None else rows
        columns = {
            "user_id": pa.array([r["user"] for r in rows], pa.int64()),
            "item_id": pa.array([r["item"] for r in rows], self.item_type),
            "score": pa.array([r["score"] for r in rows], pa.float64()),
        }
        if self.grouped:
            columns["model"] = pa.array([r["group"] for r in rows], pa.string())
        if self.truth is None:
            columns["relevance"] = pa.array([r["relevance"] for r in rows], pa.float64())
        return pa.table(columns)

    def truth_table(self, rows: list[dict] | None = None) -> pa.Table | None:
        if self.truth is None:
            return None
        rows = self.truth if rows is None else rows
        return pa.table(
            {
                "user_id": pa.array([r["user"] for r in rows], pa.int64()),
                "item_id": pa.array([r["item"] for r in rows], self.item_type),
                "relevance": pa.array([r["relevance"] for r in rows], pa.int64()),
            }
        )


@st.composite
def scored_list(draw, pool, max_items, scores=SCORES, min_items=1, all_tied=None):
    """{item: score} for one user."""
    items = draw(st.lists(st.sampled_from(pool), min_size=min_items, max_size=max_items, unique=True))
    if all_tied is None:
        all_tied = draw(st.integers(0, 7)) == 0
    if all_tied:
        score = draw(st.sampled_from(scores))
        return {item: score for item in items}
    return {item: draw(st.sampled_from(scores)) for item in items}


@st.composite
def graded(draw, items, grades=GRADES):
    """{item: grade}; sometimes no relevant item at all."""
    if draw(st.integers(0, 5)) == 0:
        grades = NON_RELEVANT
    return {item: draw(st.sampled_from(grades)) for item in items}


@st.composite
def eval_data(draw, *, single_table=None, grouped=None, string_ids=None, max_items=6):
    """A random evaluation: recs (with relevance in single-table mode) and perhaps truth."""
    single_table = draw(st.booleans()) if single_table is None else single_table
    grouped = draw(st.booleans()) if grouped is None else grouped
    string_ids = draw(st.booleans()) if string_ids is None else string_ids
    pool = STR_ITEMS if string_ids else INT_ITEMS
    item_type = pa.string() if string_ids else pa.int64()
    users = draw(st.lists(st.integers(1, 9), min_size=1, max_size=5, unique=True))
    groups = GROUPS if grouped else (None,)

    recs, truth = [], []
    for user in users:
        # both, recs only (no truth), truth only (no recs)
        kind = draw(st.sampled_from(("both", "both", "both", "recs", "truth")))
        if single_table:
            kind = "recs"
        if kind in ("both", "recs"):
            for group in groups:
                if grouped and draw(st.integers(0, 3)) == 0:
                    continue  # absent from this group
                scores = draw(scored_list(pool, max_items))
                grades = draw(graded(list(scores))) if single_table else {}
                for item, score in scores.items():
                    row = {"user": user, "item": item, "score": score}
                    if grouped:
                        row["group"] = group
                    if single_table:
                        row["relevance"] = grades[item]
                    recs.append(row)
        if kind in ("both", "truth") and not single_table:
            # an independent draw from the small pool: overlaps the list in part, and holds
            # items never recommended
            items = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6, unique=True))
            for item, grade in draw(graded(items)).items():
                truth.append({"user": user, "item": item, "relevance": grade})
    rows = draw(st.permutations(recs))
    return EvalData(list(rows), None if single_table else truth, item_type, grouped)


@st.composite
def batch(draw, most=8, *, parts=None, tag_groups=False, single_table=None, grouped=None,
          string_ids=None, max_items=6):
    """1 to `most` (or exactly `parts`) eval_data() draws as ONE data set: every statement costs
    DuckDB tens of milliseconds to plan, whatever its few rows, so a batch checks several random
    cases for the price of one. Part i's users become i * 100 + user, so the parts never meet
    (except where a convention joins every group with every truth user, missing='zero', which
    the reference does alike); they share their mode (single table or truth, grouped or not)
    and their kind of item ids, which are columns of the one table. tag_groups: each part its
    own groups, "b<i>" or "b<i>/<group>" (then always grouped), so that each part's aggregates
    are checked too. The rows are shuffled across the parts."""
    single_table = draw(st.booleans()) if single_table is None else single_table
    string_ids = draw(st.booleans()) if string_ids is None else string_ids
    if not tag_groups:  # tagged parts draw their own: the tags group them all
        grouped = draw(st.booleans()) if grouped is None else grouped
    recs, truth = [], []
    for i in range(draw(st.integers(1, most)) if parts is None else parts):
        part = draw(eval_data(single_table=single_table, grouped=grouped, string_ids=string_ids,
                              max_items=max_items))
        for row in part.recs:
            row = {**row, "user": i * 100 + row["user"]}
            if tag_groups:
                row["group"] = f"b{i}" if row.get("group") is None else f"b{i}/{row['group']}"
            recs.append(row)
        truth += [{**row, "user": i * 100 + row["user"]} for row in part.truth or []]
    item_type = pa.string() if string_ids else pa.int64()
    return EvalData(list(draw(st.permutations(recs))), None if single_table else truth, item_type,
                    tag_groups or grouped)


cutoffs = st.lists(st.integers(1, 7), min_size=1, max_size=3, unique=True).map(sorted)


@st.composite
def sklearn_users(draw, max_items=7):
    """Single-table data for sklearn.metrics.ndcg_score: every user has at least two items
    and non-negative relevance (sklearn refuses negative grades); some users have all
    their scores tied, some only zero relevance."""
    users = draw(st.lists(st.integers(1, 9), min_size=1, max_size=5, unique=True))
    rows = []
    for user in users:
        scores = draw(scored_list(STR_ITEMS, max_items, min_items=2))
        grades = (0.0,) if draw(st.integers(0, 4)) == 0 else (0.0, 0.0, 0.5, 1.0, 2.0, 3.0)
        for item, score in scores.items():
            rows.append(
                {"user": user, "item": item, "score": score, "relevance": draw(st.sampled_from(grades))}
            )
    return EvalData(draw(st.permutations(rows)), None, pa.string(), False)


# ---- units of evaluation with several key columns (user=[...]) --------------------------------

DAY0 = datetime.date(2026, 11, 1)
# Each kind of key: (column, Arrow type, the key value from eval_data's integer user u). The
# first column is shared by several units (u // 3: one user, several days or sessions), so an
# evaluation that joined on it alone would mix their truth.
UNIT_KEYS = {
    "integer": [("user_id", pa.int64(), lambda u: u // 3), ("day", pa.int64(), lambda u: u % 3)],
    "text_date": [
        ("user_id", pa.string(), lambda u: f"u{u // 3}"),
        ("day", pa.date32(), lambda u: DAY0 + datetime.timedelta(days=u % 3)),
    ],
    "three": [
        ("user_id", pa.int64(), lambda u: u // 3),
        ("session", pa.string(), lambda u: f"s{u % 3}"),
        ("day", pa.date32(), lambda u: DAY0 + datetime.timedelta(days=u % 2)),
    ],
}


@dataclass
class UnitData(EvalData):
    """eval_data() with each integer user u turned into a unit of several key columns
    (UNIT_KEYS[kind]): the rows' "user" is the key as a tuple (for tests/reference.py)."""

    kind: str = "integer"

    @property
    def key(self) -> list[str]:
        return [name for name, _, _ in UNIT_KEYS[self.kind]]

    def _key_columns(self, rows: list[dict]) -> dict[str, pa.Array]:
        return {
            name: pa.array([r["user"][i] for r in rows], arrow_type)
            for i, (name, arrow_type, _) in enumerate(UNIT_KEYS[self.kind])
        }

    def recs_table(self, rows: list[dict] | None = None) -> pa.Table:
        rows = self.recs if rows is None else rows
        plain = super().recs_table([{**r, "user": 0} for r in rows]).drop_columns(["user_id"])
        columns = {**self._key_columns(rows), **{n: plain.column(n) for n in plain.column_names}}
        return pa.table(columns)

    def truth_table(self, rows: list[dict] | None = None) -> pa.Table | None:
        if self.truth is None:
            return None
        rows = self.truth if rows is None else rows
        plain = super().truth_table([{**r, "user": 0} for r in rows]).drop_columns(["user_id"])
        return pa.table({**self._key_columns(rows), **{n: plain.column(n) for n in plain.column_names}})


def as_units(data: EvalData, kind: str) -> UnitData:
    """data with every integer user u replaced by its key tuple (UNIT_KEYS[kind])."""
    parts = [f for _, _, f in UNIT_KEYS[kind]]

    def key(row: dict) -> dict:
        return {**row, "user": tuple(f(row["user"]) for f in parts)}

    truth = None if data.truth is None else [key(r) for r in data.truth]
    return UnitData([key(r) for r in data.recs], truth, data.item_type, data.grouped, kind)


@st.composite
def unit_data(draw, kind=None, **options):
    """eval_data(**options) over units of several key columns (as_units)."""
    kind = draw(st.sampled_from(sorted(UNIT_KEYS))) if kind is None else kind
    return as_units(draw(eval_data(**options)), kind)


@st.composite
def unit_batch(draw, kind=None, **options):
    """batch(**options) over units of several key columns (as_units; the users i * 100 + u
    stay distinct units, and share their first key column in threes)."""
    kind = draw(st.sampled_from(sorted(UNIT_KEYS))) if kind is None else kind
    return as_units(draw(batch(**options)), kind)
