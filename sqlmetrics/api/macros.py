"""DuckDB macros: every metric as a table macro, rendered from the templates of sql/.

`macro_definitions()` is the text of a SQL file of `CREATE OR REPLACE MACRO` statements (what
`sqlmetrics macros` writes, and what the repository keeps in duckdb_macros/sqlmetrics_macros.sql);
`install_macros(con)` runs it in a connection. After that, plain SQL (the DuckDB CLI included)
computes every ranking and beyond-accuracy metric (the intent-aware measures over a subtopics
table, the measures over item groups over item_genres or item_features, rbo against a baseline
system too), with the statement that evaluate() runs:

    SELECT * FROM sqlmetrics_ndcg('recommendations', 'events', k := 10, "by" := ['model'],
                                  relevance := 'event_type',
                                  grades := MAP {'purchase': 3, 'add_to_cart': 2, 'view': 1});

Nothing here writes a formula: each macro's body is evaluate.sql.j2 rendered by plan.py's
build_context() for the metric, over fixed internal column names that a short input query
fills from the macro's parameters (see _recs_input and _truth_input), with the cutoff k (and
set_F's beta) left as the macro's parameter. The conventions are trec_eval's defaults, with
truth_duplicates='max' (an event log's repeated rows count once, at their highest grade), or
those given to macros() (a variant of the file, its names under another prefix). Each macro
holds the statement three times: over every segment and unit column, and over the unit's first
column alone with no segment or with the first segment column, picked by conditions DuckDB
folds at the call (Macro.sql()).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConventionError
from ..inputs.sources import Source
from ..names.conventions import Conventions
from ..names.metric_names import parse_metric
from ..names.profiles import conventions_by_metric
from ..names.registry import METRICS, MetricDefinition
from ..statement.plan import ColumnNames, build_context
from ..statement.templates import render

# The largest k of a macro: DuckDB's top-n aggregates keep k + 3 entries, and take fewer than
# 1,000,000 (plan.py's WHOLE_LIST_FROM); the _whole macros rank the whole list.
MAX_MACRO_CUTOFF = 100_000

# The metrics whose terms the fast exact sum may not hold on ordinary data (powers of rbp's p:
# counted, a unit whose sum is tiny next to its rounded terms, a long list with no early hit,
# gives NaN and evaluate() runs the wide form): their macros are the wide form, as a macro
# cannot run a statement again
WIDE_TEMPLATES = frozenset({"metrics/rank_biased.sql.j2"})
# ... and alpha_ndcg's (its fast form gave NaN on every test data set, 2026-11-27: evaluate()
# runs it again wide)
WIDE_METRICS = frozenset({"alpha_ndcg"})
# ... nor the cosine similarities of item_features= (diversity's and serendipity's terms)
WIDE_INPUTS = frozenset({"item_features"})

# Internal names: the input queries' columns (nothing of the caller's is named like them)
# The segment: up to MAX_SEGMENT_COLUMNS plain columns (a STRUCT of them made the statement
# 1.4x slower: grouping by a nested type), the i-th the i-th `by` column or a NULL stand-in
MAX_SEGMENT_COLUMNS = 3
_GROUPS = [f"sqlmetrics_g{i}" for i in range(1, MAX_SEGMENT_COLUMNS + 1)]
_STAND_INS = [f"sqlmetrics_none{i}" for i in range(1, MAX_SEGMENT_COLUMNS + 1)]
# The unit: up to MAX_UNIT_COLUMNS plain key columns (a STRUCT: 1.4x slower too), the i-th the
# i-th `user` column or a constant stand-in (0 in both inputs: the joins compare it with =)
MAX_UNIT_COLUMNS = 2
_UNITS = [f"sqlmetrics_u{i}" for i in range(1, MAX_UNIT_COLUMNS + 1)]
_UNIT_STAND_INS = [f"sqlmetrics_unone{i}" for i in range(1, MAX_UNIT_COLUMNS + 1)]
_ITEM = "sqlmetrics_item"
_SCORE = "sqlmetrics_score"
_REL = "sqlmetrics_relevance"
_NO_GRADE = "sqlmetrics_one"  # relevance := NULL: every truth row has grade 1
_FEATURES = "sqlmetrics_features"  # item_features' vector column
_GENRE = "sqlmetrics_genre"  # item_genres' and group_target's genre (group) column
_WEIGHT = "sqlmetrics_genre_weight"  # ... and its weight
_NO_WEIGHT = "sqlmetrics_one_weight"  # genre_weight := NULL: every item_genres row weighs 1
# subtopics' subtopic column: named as evaluate() finds it (plan.py), not a parameter's name
_SUBTOPIC = "subtopic"
_INTENT_WEIGHT = "weight"  # ... and its intent weights' (plan.py finds it by this name too)
# the intent-aware measures that read the intent weights (sql/metrics/subtopics.sql.j2;
# alpha_ndcg and nrbp are uniform): each has a variant "weighted" that reads them
WEIGHTED = frozenset({"p_ia", "ap_ia", "err_ia"})

# The parameters, as the caller names them (the body refers to no column of these names:
# tests/test_macros.py checks it)
_PARAMETERS = (
    "recs",
    "truth",
    "k",
    "by",
    "user",
    "item",
    "score",
    "relevance",
    "grades",
    "beta",
    "history",
    "catalog",
    "item_features",
    "features",
    "subtopics",
    "item_genres",
    "genre",
    "genre_weight",
    "group_target",
    "baseline",
)


class _Parameter:
    """A macro parameter where the templates expect a number (k, beta): renders as its name,
    and adds up as SQL (top_k.sql.j2 asks for k + 2 candidates)."""

    def __init__(self, sql: str) -> None:
        self.sql = sql

    def __str__(self) -> str:
        return self.sql

    def __int__(self) -> int:
        # a template that counts up to a parameter fails loudly (Jinja's int filter would
        # read a TypeError as 0)
        raise RuntimeError(f"the macro parameter {self.sql} has no value to count to")

    def __add__(self, other: Any) -> _Parameter:
        return _Parameter(f"({self.sql} + {other})")

    __radd__ = __add__

    # k >= 1 (the checks): larger than the 0 of the templates' `x or 0` (similarity.sql.j2
    # takes the larger of two cutoffs, one of them absent in a macro of one metric)
    def __gt__(self, other: Any) -> bool:
        if other != 0:
            return NotImplemented
        return True

    def __lt__(self, other: Any) -> bool:
        if other != 0:
            return NotImplemented
        return False


def _by(i: int, per_user: bool) -> str:
    """The name of the segment's i-th column (1-based): the i-th `by` column, or its NULL
    stand-in when `by` has fewer (per unit, a `by` column that is one of the unit's too is
    shown as the unit's)."""
    name = f'CAST("by" AS VARCHAR[])[{i}]'  # ([] alone is an INTEGER[])
    if per_user:
        name = f'CASE WHEN list_contains(CAST("user" AS VARCHAR[]), {name}) THEN NULL ELSE {name} END'
    return f"coalesce({name}, '{_STAND_INS[i - 1]}')"


def _key(i: int) -> str:
    """The name of the unit's i-th key column (1-based), or its stand-in."""
    return f"coalesce(CAST(\"user\" AS VARCHAR[])[{i}], '{_UNIT_STAND_INS[i - 1]}')"


def _unit_columns() -> str:
    return "".join(f"COLUMNS(lambda c: c = {_key(i)}) AS {u}, " for i, u in enumerate(_UNITS, 1))


def _with_stand_ins(role: str = "recs", checks: str = "TRUE") -> str:
    """The input with a column for each stand-in, its rows where `checks` hold."""
    stand_ins = [f"0 AS {n}" for n in _UNIT_STAND_INS]
    if role == "recs":
        stand_ins += [f"NULL AS {n}" for n in _STAND_INS]
    elif role in ("truth", "subtopics"):
        stand_ins.append(f"1 AS {_NO_GRADE}")
    return f"(SELECT *, {', '.join(stand_ins)} FROM query_table({role}) WHERE {checks}) AS {role}_columns"


def _recs_input(per_user: bool, checks: str) -> str:
    """recs as the fixed columns the statement reads: the segment's columns, the unit's, the
    item and the score; `checks` fail a bad call before any row is
    read on. COLUMNS() with a lambda compares names exactly (a list given to COLUMNS() itself
    would be read as a regular expression)."""
    segment = "".join(
        f"COLUMNS(lambda c: c = {_by(i, per_user)}) AS {group}, " for i, group in enumerate(_GROUPS, 1)
    )
    return (
        f"(SELECT {segment}{_unit_columns()}"
        f"COLUMNS(lambda c: c = item) AS {_ITEM}, "
        f"COLUMNS(lambda c: c = score) AS {_SCORE} "
        f"FROM {_with_stand_ins('recs', checks)})"
    )


def _names_query(per_user: bool, metric: str) -> str:
    """No row, and the result's columns named as they should be: the segment's columns as
    recs names them (a UNION ALL takes its names from its first query), the stand-ins, then the
    statement's other columns."""
    names = [f"COLUMNS(lambda c: c = {_by(i, per_user)})" for i in range(1, len(_GROUPS) + 1)]
    if per_user:
        names += [f"COLUMNS(lambda c: c = {_key(i)})" for i in range(1, len(_UNITS) + 1)]
    else:
        names.append("NULL AS users")
    return f"SELECT {', '.join(names)}, NULL AS \"{metric}\" FROM {_with_stand_ins()} LIMIT 0"


def _truth_input(role: str = "truth", weighted: bool = False) -> str:
    """truth as the unit, the item and the raw relevance (relevance := NULL: a constant 1);
    role "subtopics": subtopics as the call's truth (evaluate()'s), and with its subtopic (and,
    weighted, its `weight` column: the intent weights)."""
    subtopic = f"COLUMNS(lambda c: c = '{_SUBTOPIC}') AS {_SUBTOPIC}, " if role == "subtopics" else ""
    subtopic += f"COLUMNS(lambda c: c = '{_INTENT_WEIGHT}') AS {_INTENT_WEIGHT}, " if weighted else ""
    return (
        f"(SELECT {_unit_columns()}{subtopic}"
        f"COLUMNS(lambda c: c = item) AS {_ITEM}, "
        f"COLUMNS(lambda c: c = coalesce(relevance, '{_NO_GRADE}')) AS {_REL} "
        f"FROM {_with_stand_ins(role)})"
    )


def _history_input() -> str:
    """history as the unit (every `user` column: it is joined on all of them) and the item."""
    item = f"COLUMNS(lambda c: c = item) AS {_ITEM}"
    return f"(SELECT {_unit_columns()}{item} FROM {_with_stand_ins('history')})"


def _catalog_input() -> str:
    """catalog as its item column."""
    return f"(SELECT COLUMNS(lambda c: c = item) AS {_ITEM} FROM query_table(catalog))"


def _features_input() -> str:
    """item_features as the item and its vector (the `features` column)."""
    return (
        f"(SELECT COLUMNS(lambda c: c = item) AS {_ITEM}, COLUMNS(lambda c: c = features) AS {_FEATURES} "
        "FROM query_table(item_features))"
    )


def _genres_input() -> str:
    """item_genres as the item, the genre and its weight (genre_weight := NULL: a constant 1)."""
    return (
        f"(SELECT COLUMNS(lambda c: c = item) AS {_ITEM}, COLUMNS(lambda c: c = genre) AS {_GENRE}, "
        f"COLUMNS(lambda c: c = coalesce(genre_weight, '{_NO_WEIGHT}')) AS {_WEIGHT} "
        f"FROM (SELECT *, 1 AS {_NO_WEIGHT} FROM query_table(item_genres)) AS item_genres_columns)"
    )


def _target_input() -> str:
    """group_target as the genre and its weight (the genre_weight column, or `weight`)."""
    return (
        f"(SELECT COLUMNS(lambda c: c = genre) AS {_GENRE}, "
        f"COLUMNS(lambda c: c = coalesce(genre_weight, 'weight')) AS {_WEIGHT} "
        "FROM query_table(group_target))"
    )


# The grade of a truth row: the relevance column's number, or (grades given) the grade its
# value has in the map, 0 for a value the map does not list (evaluate()'s action=/relevance=)
_GRADE = (
    f'CASE WHEN grades IS NULL THEN CAST("{_REL}" AS DOUBLE) '
    f'ELSE coalesce(CAST(map_extract_value(grades, "{_REL}") AS DOUBLE), 0) END'
)


def _lists_check(name: str) -> str:
    """`by` and `user` name at most as many columns as the statement has (a name that recs or
    truth lacks is a binder error: COLUMNS() matches nothing); folded away for a valid call."""
    return (
        f"CASE WHEN len(\"by\") > {MAX_SEGMENT_COLUMNS} THEN error('sqlmetrics: {name}: \"by\" names "
        f"at most {MAX_SEGMENT_COLUMNS} columns') "
        f"WHEN len(\"user\") NOT BETWEEN 1 AND {MAX_UNIT_COLUMNS} THEN error('sqlmetrics: {name}: "
        f"\"user\" names 1 to {MAX_UNIT_COLUMNS} columns') ELSE TRUE END"
    )


def _unit_segment_check(name: str) -> str:
    """missing='zero' gives a truth unit absent from a segment's lists 0 in every segment, or,
    for a `by` column that is one of the unit's (a day of a (user, day) unit), in the segments
    of its own value: the plan pairs them by name, which a macro's fixed columns do not carry.
    So the macros of missing='zero' refuse such a call rather than cross the days."""
    return (
        f"CASE WHEN len(list_intersect(CAST(\"by\" AS VARCHAR[]), CAST(\"user\" AS VARCHAR[]))) > 0 "
        f"THEN error('sqlmetrics: {name}: with missing=''zero'' no \"by\" column may be one of "
        "the \"user\" columns; use evaluate()') ELSE TRUE END"
    )


def _cutoff_check(name: str, largest: int = MAX_MACRO_CUTOFF, whole: bool = True) -> str:
    """A k outside 1 .. largest fails the call with a message that says so (DuckDB folds the
    check away for a valid constant k)."""
    hint = f" ({name}_whole ranks the whole list)" if whole else ""
    message = f"sqlmetrics: {name}: k must be an integer from 1 to {largest}{hint}, got "
    return (
        f"CASE WHEN k >= 1 AND k <= {largest} AND k = floor(k) THEN TRUE "
        f"ELSE error('{message}' || coalesce(CAST(k AS VARCHAR), 'NULL')) END"
    )


def _baseline_check(name: str) -> str:
    """rbo's reference system: the value `baseline` of the one "by" column (the system), which
    is none of the unit's columns."""
    return (
        f"CASE WHEN len(\"by\") <> 1 THEN error('sqlmetrics: {name}: \"by\" names the one column of "
        "the systems (rbo compares each system''s lists with the baseline system''s), e.g. "
        "\"by\" := [''model'']') "
        "WHEN list_contains(CAST(\"user\" AS VARCHAR[]), CAST(\"by\" AS VARCHAR[])[1]) THEN "
        f"error('sqlmetrics: {name}: the \"by\" column may not be one of the \"user\" columns') "
        f"WHEN baseline IS NULL THEN error('sqlmetrics: {name}: baseline := <the baseline system''s "
        "value of the \"by\" column> is needed') ELSE TRUE END"
    )


# The inputs (table parameters) a beyond-accuracy macro takes besides recs, by what its metric
# needs (registry.py); variant "history": the history in place of catalog= (its items) and of
# item_features= (similarity from co-occurrence), as evaluate() without them
# needs; the genres (calibration, group exposure, awrf) as rows, item_genres=, or in the
# variant "features" as item_features' vectors of genre weights; awrf's variants "target"
# with its group_target= (uniform without)
def _beyond_inputs(metric: MetricDefinition, variant: str) -> tuple[str, ...]:
    needs = metric.needs
    out = ["recs"]
    if "relevance" in needs or "truth" in needs:
        out.append("truth")
    if "history" in needs or variant == "history":
        out.append("history")
    if "catalog" in needs and not variant:
        out.append("catalog")
    if "similarity" in needs and not variant:
        out.append("item_features")
    if "genres" in needs:
        out.append("item_features" if variant.startswith("features") else "item_genres")
    if variant.endswith("target"):
        out.append("group_target")
    return tuple(out)


def _variants(metric: MetricDefinition) -> tuple[str, ...]:
    """The variants of a beyond-accuracy metric's inputs ("": its own)."""
    if {"catalog", "similarity"} & set(metric.needs):
        return ("", "history")
    if metric.name == "awrf":
        return ("", "target", "features", "features_target")
    if "genres" in metric.needs:
        return ("", "features")
    return ("",)


# The macros' conventions: trec_eval's (evaluate()'s defaults), with an event log's repeated
# (user, item) truth rows counted once, at their highest grade
MACRO_CONVENTIONS = Conventions(truth_duplicates="max")
PREFIX = "sqlmetrics_"
_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Macro:
    """One table macro: a metric, whole-list or with the cutoff k, means or per unit; a
    beyond-accuracy metric in one of its variants (inputs); under `conventions`, named with
    `prefix`."""

    metric: MetricDefinition
    whole: bool  # over the whole list (a metric that takes @k, named without it)
    per_user: bool
    variant: str = ""  # "history": the history table in place of catalog or item_features; ...
    conventions: Conventions = MACRO_CONVENTIONS
    prefix: str = PREFIX

    @property
    def name(self) -> str:
        name = self.prefix + self.metric.name.replace(".", "_")
        name += f"_{self.variant}" if self.variant else ""
        return name + ("_whole" if self.whole else "") + ("_per_user" if self.per_user else "")

    @property
    def inputs(self) -> tuple[str, ...]:
        """The table parameters, in their order."""
        if "subtopics" in self.metric.reads:
            return ("recs", "subtopics")  # (the call's truth too, as in evaluate())
        if not self.metric.beyond:
            return ("recs", "truth")
        return _beyond_inputs(self.metric, self.variant)

    @property
    def has_cutoff(self) -> bool:
        return self.metric.needs_cutoff and not self.whole

    @property
    def against_baseline(self) -> bool:
        """rbo, rbo_sum: each system's lists against the baseline system's (`baseline`)."""
        return "baseline" in self.metric.needs

    def checks(self) -> str:
        """What fails a bad call before any row is read on: k, and the lists' columns."""
        checks = _lists_check(self.name)
        if self.conventions.missing == "zero" and not self.metric.beyond:
            checks += f" AND {_unit_segment_check(self.name)}"
        if self.against_baseline:
            checks += f" AND {_baseline_check(self.name)}"
        if not self.has_cutoff:
            return checks
        whole = self.metric.needs_cutoff and not self.metric.beyond and "subtopics" not in self.metric.reads
        return f"{_cutoff_check(self.name, whole=whole)} AND {checks}"

    def parameters(self) -> str:
        params = list(self.inputs)
        if self.has_cutoff:
            params.append("k := 10")
        if self.metric.name == "set_F":
            params.append("beta := 1.0")
        params += [
            '"by" := []',
            "\"user\" := ['user_id']",
            "item := 'item_id'",
            "score := 'score'",
        ]
        if "truth" in self.inputs:
            params += ["relevance := 'relevance'", "grades := NULL"]
        if "subtopics" in self.inputs:
            params += ["relevance := 'relevance'", "grades := NULL"]
        if "item_features" in self.inputs:
            params.append("features := 'features'")
        if {"item_genres", "group_target"} & set(self.inputs):
            params += ["genre := 'genre'", "genre_weight := NULL"]
        if self.against_baseline:
            params.append("baseline := NULL")
        return ", ".join(params)

    def _sources(self) -> dict[str, Source | None]:
        """The inputs as the Sources build_context reads: the input queries, with their fixed
        internal columns."""
        unit_types = dict.fromkeys(_UNITS, "ANY")
        sources: dict[str, Source | None] = {
            "recs": Source(
                _recs_input(self.per_user, self.checks()),
                "the recs table",
                {**dict.fromkeys(_GROUPS, "ANY"), **unit_types, _ITEM: "VARCHAR", _SCORE: "DOUBLE"},
            )
        }
        inputs = {
            "truth": (_truth_input, {**unit_types, _ITEM: "VARCHAR", _REL: "DOUBLE"}),
            "history": (_history_input, {**unit_types, _ITEM: "VARCHAR"}),
            "catalog": (_catalog_input, {_ITEM: "VARCHAR"}),
            "item_features": (_features_input, {_ITEM: "VARCHAR", _FEATURES: "DOUBLE[]"}),
            "item_genres": (_genres_input, {_ITEM: "VARCHAR", _GENRE: "ANY", _WEIGHT: "DOUBLE"}),
            "group_target": (_target_input, {_GENRE: "ANY", _WEIGHT: "DOUBLE"}),
            "subtopics": (
                lambda: _truth_input("subtopics", self.variant == "weighted"),
                {**unit_types, _SUBTOPIC: "ANY", _ITEM: "VARCHAR", _REL: "DOUBLE"}
                | ({_INTENT_WEIGHT: "DOUBLE"} if self.variant == "weighted" else {}),
            ),
        }
        for role, (query, types) in inputs.items():
            present = role in self.inputs
            sources[role] = Source(query(), f"the {role} table", types) if present else None
        return sources

    def body(self, groups: list[str], units: list[str]) -> str:
        """The statement of evaluate() for the metric over the input queries' fixed columns:
        the segment's `groups` and the unit's `units` (all of them, or fewer: a variant)."""
        metric = self.metric
        label = metric.name if not self.has_cutoff else f"{metric.name}@10"
        requested = parse_metric(label)
        if metric.name == "set_F":
            requested = parse_metric("set_F")
        sources = self._sources()
        subtopics = sources["subtopics"]
        truth = sources["truth"] or subtopics  # (subtopics: the call's truth too)
        names = ColumnNames(
            user=units, item=_ITEM, score=_SCORE, relevance=_REL if truth else None,
            features=_FEATURES, genre=_GENRE, genre_weight=_WEIGHT,
        )  # fmt: skip
        context = build_context(
            sources["recs"],
            truth,
            [requested],
            names,
            self.conventions,
            groups,
            self.per_user,
            history=sources["history"],
            catalog=sources["catalog"],
            item_features=sources["item_features"],
            subtopics=subtopics,
            # (each segment column's baseline: IS NULL, the stand-ins'; the first's, the
            # parameter, is put in below)
            baseline=(None,) * len(groups) if self.against_baseline else None,
            item_genres=sources["item_genres"],
            group_target=sources["group_target"],
        )
        column = f'"{metric.name}"'
        cutoff = _Parameter("k")
        if metric.beyond:
            beyond = context["beyond"]
            (entry,) = beyond["metrics"]
            entry["column"] = column
            beyond["columns"] = [column]
            if self.has_cutoff:
                entry["k"] = cutoff
                if metric.uses_lists:
                    context["list_length"] = cutoff
                for key in ("list_length", "catalog_k", "diversity_k", "serendipity_k"):
                    if beyond[key] is not None:
                        beyond[key] = cutoff
            if self.against_baseline:
                beyond["rbo"]["ks"] = [cutoff]
                beyond["rbo"]["baseline"][0]["literal"] = "baseline"
            _name_inputs(beyond)
        else:
            (entry,) = context["metrics"]
            entry["column"] = column
            if self.has_cutoff:
                context["list_length"] = entry["k"] = cutoff
            if metric.name == "set_F":
                entry["param"] = _Parameter("beta")
        # the names the input checks' messages give
        context["recs"]["names"] = {"unit": _UNIT_NAMES, "item": "item", "key": "score"}
        if truth is not None:
            context["truth"]["names"] = {"unit": _UNIT_NAMES, "item": "item"}
            context["truth"]["relevance"]["column"] = _GRADE
        if subtopics is not None:
            context["subtopics"]["names"] = {"unit": _UNIT_NAMES, "item": "item", "weight": _INTENT_WEIGHT}
            context["subtopics"]["relevance"]["column"] = _GRADE
        wide = (
            metric.template in WIDE_TEMPLATES or metric.name in WIDE_METRICS or WIDE_INPUTS & set(self.inputs)
        )
        context["exact_sums"] = "wide" if wide else "fast"
        return render("evaluate.sql.j2", context).rstrip("\n")

    def sql(self) -> str:
        """The CREATE MACRO statement: the statement over every segment and unit column, and
        the plain variants over the unit's first column alone, with no segment or with the
        first segment column (the common calls), each under the condition that picks it;
        DuckDB folds the conditions of a call, and runs one of the branches (the stand-in
        columns of the first made it 1.15-1.26x evaluate(): docs/performance.md)."""
        if self.against_baseline:
            # (rbo's systems are a "by" column: no plain variant)
            return (
                f"CREATE OR REPLACE MACRO {self.name}({self.parameters()}) AS TABLE\n"
                f"SELECT COLUMNS(lambda c: NOT starts_with(c, 'sqlmetrics_none') "
                "AND NOT starts_with(c, 'sqlmetrics_unone')) FROM (\n"
                f"SELECT * FROM ({_names_query(self.per_user, self.metric.name)}) AS sqlmetrics_names\n"
                "UNION ALL\n"
                f"SELECT * FROM (\n{self.body(_GROUPS, _UNITS)}\n) AS sqlmetrics_result\n"
                ") AS sqlmetrics_columns\n"
                "ORDER BY ALL;\n"
            )
        # the segment's columns (and per unit the unit's), then users and the mean or the value
        columns = (
            "COLUMNS(lambda c: NOT starts_with(c, 'sqlmetrics_none') "
            "AND NOT starts_with(c, 'sqlmetrics_unone'))"
        )
        branches = "".join(
            "UNION ALL\n"
            f"SELECT {self._shown(segments)} FROM (\n{self.body(_GROUPS[:segments], _UNITS[:1])}\n)"
            f" AS sqlmetrics_plain{segments} WHERE {_plain(segments)}\n"
            for segments in range(PLAIN_SEGMENTS + 1)
        )
        general = " AND ".join(f"NOT {_plain(segments)}" for segments in range(PLAIN_SEGMENTS + 1))
        return (
            f"CREATE OR REPLACE MACRO {self.name}({self.parameters()}) AS TABLE\n"
            f"SELECT {columns} FROM (\n"
            f"SELECT * FROM ({_names_query(self.per_user, self.metric.name)}) AS sqlmetrics_names\n"
            "UNION ALL\n"
            f"SELECT * FROM (\n{self.body(_GROUPS, _UNITS)}\n) AS sqlmetrics_result WHERE {general}\n"
            f"{branches}"
            ") AS sqlmetrics_columns\n"
            "ORDER BY ALL;\n"
        )

    def _shown(self, segments: int) -> str:
        """The columns of a plain variant over `segments` segment columns and the unit's first,
        with the stand-ins of the other segment columns (and the unit's second) put back."""
        stand_ins = "".join(f"{g}, " for g in _GROUPS[:segments])
        stand_ins += "".join("NULL, " for _ in _GROUPS[segments:])
        if self.per_user:
            return f"{stand_ins}{_UNITS[0]}, 0 AS {_UNITS[1]}, \"{self.metric.name}\""
        kept = f" EXCLUDE ({', '.join(_GROUPS[:segments])})" if segments else ""
        return f"{stand_ins}*{kept}"


# The plain variants: one unit column and no segment, or the first PLAIN_SEGMENTS segment
# columns (a segment column per unit that is the unit's too is the NULL stand-in there, as in
# the statement over every column)
PLAIN_SEGMENTS = 1


def _plain(segments: int) -> str:
    """The condition of a call of the plain variant over `segments` segment columns."""
    return f'(len("by") = {segments} AND len("user") = 1)'


# how the input checks' messages name the unit's key columns
_UNIT_NAMES = ["user", "second key"]


def _name_inputs(beyond: dict[str, Any]) -> None:
    """The names the beyond-accuracy inputs' checks give in their messages."""
    if beyond["history"] is not None:
        beyond["history"]["names"] = {"unit": _UNIT_NAMES, "item": "item"}
    if beyond["catalog"] is not None:
        beyond["catalog"]["names"] = {"item": "item"}
    if beyond["features"] is not None:
        beyond["features"]["names"] = {"item": "item", "vector": "features"}
    if beyond["genres"] is not None:
        rows = beyond["genres"].get("kind") == "rows"
        beyond["genres"]["names"] = (
            {"item": "item", "genre": "genre", "weight": "genre_weight"} if rows
            else beyond["features"]["names"]
        )  # fmt: skip
    if beyond["target"] is not None:
        beyond["target"]["names"] = {"genre": "genre", "weight": "genre_weight"}


def macros(prefix: str = PREFIX, profile: str | None = None, **conventions: Any) -> list[Macro]:
    """Every macro, in the registry's order: each ranking metric (and its whole-list form),
    means and per unit; each beyond-accuracy metric with its cutoff, in each variant of its
    inputs, means and (where it has a value per unit) per unit.

    profile and conventions (evaluate()'s keywords: ties=, gain=, ...): the conventions of the
    macros, resolved per metric as evaluate() resolves them (truth_duplicates 'max' unless
    given); a metric that the conventions do not define (ties='average' for map) has no macro.
    prefix: the macros' names start with it (several sets of conventions side by side).

    >>> ranx = {m.name: m for m in macros("ranx_", profile="ranx")}
    >>> ranx["ranx_ndcg_per_user"].conventions.missing
    'zero'
    """
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise ConventionError(f"prefix={prefix!r}: the macros' names start with it, so it must be a SQL name")
    given = {name: value for name, value in conventions.items() if value is not None}
    explicit = {"truth_duplicates": MACRO_CONVENTIONS.truth_duplicates, **given}
    out = []
    for metric in METRICS.values():
        (chosen,) = conventions_by_metric(profile, explicit, [metric.name])
        if chosen.ties in ("average", "evidently") and not metric.tie_averaged:
            continue  # (plan.build_context refuses it: no position for the i-th hit)
        if metric.beyond:
            variants = _variants(metric)
            per_unit = (False, True)[: 1 + metric.per_user]
            forms = [(False, per_user, v) for v in variants for per_user in per_unit]
        else:
            # (the intent-aware measures of a cutoff need it: no whole-list form)
            whole_form = metric.needs_cutoff and "subtopics" not in metric.reads
            variants = ("", "weighted") if metric.name in WEIGHTED else ("",)
            wholes = (False, True)[: 1 + whole_form]
            forms = [(w, p, v) for v in variants for w in wholes for p in (False, True)]
        out += [Macro(metric, whole, per_user, variant, chosen, prefix) for whole, per_user, variant in forms]
    return out


_HEADER = """\
-- sqlmetrics: ranking and beyond-accuracy metrics as DuckDB table macros. GENERATED from sql/
-- (sqlmetrics/api/macros.py; regenerate with `python -m sqlmetrics.api.regenerate`): do not edit.
-- Load it in the DuckDB CLI with `.read sqlmetrics_macros.sql`, then for example
--   SELECT * FROM sqlmetrics_ndcg('recommendations', 'events', k := 10, "by" := ['model'],
--       relevance := 'event_type', grades := MAP {'purchase': 3, 'add_to_cart': 2, 'view': 1});
-- See docs/sql.md.
"""


def macro_definitions(prefix: str = PREFIX, profile: str | None = None, **conventions: Any) -> str:
    """The SQL file of every macro's CREATE OR REPLACE MACRO statement (with `profile` and
    `conventions`, named with `prefix`: see macros()).

    >>> text = macro_definitions()
    >>> text.count("CREATE OR REPLACE MACRO sqlmetrics_ndcg(")
    1
    """
    chosen = macros(prefix, profile, **conventions)
    header = _HEADER
    given = {"profile": profile, **conventions}
    if prefix != PREFIX or any(v is not None for v in given.values()):
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items() if v is not None)
        header += f"-- Conventions: {shown or 'the defaults'}; names: {prefix}<metric>.\n"
    return header + "".join("\n" + m.sql() for m in chosen)


def install_macros(con: Any, prefix: str = PREFIX, profile: str | None = None, **conventions: Any) -> None:
    """Create every sqlmetrics macro in the DuckDB connection `con` (CREATE OR REPLACE: run
    it again after upgrading sqlmetrics). Temporary macros are not used, so in a database file
    the macros stay for the next session too. profile, conventions (evaluate()'s: ties=,
    gain=, ...) and prefix: see macros(); e.g. install_macros(con, "ranx_", profile="ranx")
    adds ranx_ndcg, ... beside the default sqlmetrics_ndcg.

    >>> import duckdb, sqlmetrics
    >>> con = duckdb.connect()
    >>> sqlmetrics.install_macros(con)
    >>> _ = con.execute("CREATE TABLE recs AS SELECT 1 AS user_id, 'a' AS item_id, 0.5 AS score")
    >>> _ = con.execute("CREATE TABLE truth AS SELECT 1 AS user_id, 'a' AS item_id, 1 AS relevance")
    >>> con.sql("SELECT * FROM sqlmetrics_ndcg('recs', 'truth', k := 10)").fetchall()
    [(1, 1.0)]
    """
    con.execute(macro_definitions(prefix, profile, **conventions))


# The checked-in copies (relative to the repository's root), rewritten by
# `python -m sqlmetrics.api.regenerate`; tests/test_macros.py fails when one differs from what the
# templates give now.
DUCKDB_FILE = "duckdb_macros/sqlmetrics_macros.sql"


def generated_files() -> dict[str, str]:
    """Every generated file of the repository, by its path relative to the root: the text it
    must hold.

    >>> sorted(generated_files())  # doctest: +NORMALIZE_WHITESPACE
    ['dbt/macros/generated/registry.sql', 'dbt/macros/generated/render_statement.sql',
     'duckdb_macros/sqlmetrics_macros.sql']
    """
    from . import dbt_package

    return {DUCKDB_FILE: macro_definitions(), **dbt_package.generated_files()}


def regenerate(root: Path) -> list[str]:
    """Write every generated file under the repository's `root`; return those that changed."""
    changed = []
    for relative, text in generated_files().items():
        path = root / relative
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            changed.append(relative)
    return changed
