"""From the caller's arguments to the context the SQL template renders: validated, quoted
identifiers and literals only. Nothing here writes a formula."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from ..errors import ColumnTypeError, ConventionError, MissingColumnError
from ..inputs import columns as col
from ..inputs.identifiers import quote_identifier, quote_string
from ..inputs.sources import Source
from ..names.conventions import ANY_TRUTH_ROW, Conventions
from ..names.metric_names import MAX_CUTOFF, RequestedMetric
from .baselines import baseline_literal
from .dialects import get as get_dialect
from .exact_sums import SumTerms

# The largest list_length the top-k aggregates keep (sql/ranking/top_k.sql.j2 asks them for
# k + 3 entries); longer cutoffs rank the whole list.
WHOLE_LIST_FROM = 100_000


# For ties='item_asc' on DuckDB: each integer type's scores in a type that negates them all
# (VARINT, arbitrary precision, since DuckDB 1.2: only 128-bit scores pay for it).
_NEGATABLE = {
    **dict.fromkeys(("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER"), "BIGINT"),
    **dict.fromkeys(("BIGINT", "UBIGINT"), "HUGEINT"),
    **dict.fromkeys(("HUGEINT", "UHUGEINT"), "VARINT"),
}


@dataclass(frozen=True)
class ColumnNames:
    user: str | Sequence[str] = "user_id"  # the unit's key: one column, or several
    item: str = "item_id"
    score: str = "score"
    rank: str | None = None
    relevance: str | Mapping[str, float] | None = None  # None: "relevance" where present
    action: str | None = None
    features: str = "features"  # the vector column of item_features=
    genre: str = "genre"  # the genre (group) column of item_genres=
    genre_weight: str | None = None  # its weight column (None: each row weighs 1)

    @classmethod
    def of(cls, keywords: Mapping[str, Any]) -> ColumnNames:
        """The column names among a call's keywords (statement/keywords.py)."""
        return cls(**{name: keywords[name] for name in cls.__dataclass_fields__})


# the API's advice when nothing says what is relevant (the command line words it as options)
NO_RELEVANCE_HINT = (
    "and no truth= table was given; pass truth='<table of (user, item[, relevance])>', or "
    "relevance='<column>', or action='<column>' with relevance={'purchase': 3, 'view': 1}"
)

# ... and when an intent-aware measure has no subtopic judgements
SUBTOPICS_HINT = "pass subtopics='<table of (user, subtopic, item[, relevance])>'"


def _grades(mapping: Mapping[str, float], quote=quote_string) -> list[tuple[str, str]]:
    if not mapping:
        raise ConventionError("relevance={} grades no action; give e.g. {'purchase': 3, 'view': 1}")
    out = []
    for action, grade in mapping.items():
        if not isinstance(action, str):
            raise ConventionError(f"action names must be strings, got {action!r}")
        if isinstance(grade, bool) or not isinstance(grade, Real) or not math.isfinite(grade):
            raise ConventionError(
                f"the grade of action {action!r} must be a finite number, got {grade!r}"
            )
        out.append((quote(action), repr(float(grade))))
    return out


def _relevance(
    source: Source, names: ColumnNames, role: str, required: bool, dialect: str = "duckdb"
) -> dict[str, Any]:
    """How the relevance of each row of `source` is obtained."""
    sql_dialect = get_dialect(dialect)
    if names.action is not None:
        if not isinstance(names.relevance, Mapping):
            raise ConventionError(
                f"action={names.action!r} needs relevance= as a mapping of actions to grades, "
                "e.g. relevance={'purchase': 3, 'add_to_cart': 2, 'view': 1}"
            )
        column = col.find_column(source, names.action, role, "action")
        return {
            "kind": "action",
            "column": sql_dialect.quote_identifier(column),
            "grades": _grades(names.relevance, sql_dialect.quote_string),
            "is_float": False,
        }
    if isinstance(names.relevance, Mapping):
        raise ConventionError(
            "relevance= as a mapping of actions to grades needs action='<column>'"
        )
    wanted = names.relevance or "relevance"
    try:
        column = col.find_column(source, wanted, role, "relevance")
    except MissingColumnError:
        if names.relevance is None and not required:
            # A truth table of (user, item) pairs without grades: every row is relevant.
            return {"kind": "constant", "column": None, "grades": [], "is_float": False}
        raise
    duck_type = col.require_numeric(source, column, role, "relevance", allow_bool=True)
    return {
        "kind": "column",
        "column": sql_dialect.quote_identifier(column),
        "grades": [],
        "is_float": col.is_float(duck_type),
        "is_bool": duck_type == "BOOLEAN",
    }


def unit_columns(user: Any) -> list[str]:
    """The key columns of the unit of evaluation: user= as one name or a list of names.

    >>> unit_columns("user_id"), unit_columns(("user_id", "day"))
    (['user_id'], ['user_id', 'day'])
    """
    names = [user] if isinstance(user, str) else user
    if not isinstance(names, Sequence) or not names:
        raise ConventionError(
            f"user= names the unit's key: a column, or a list of columns, got {user!r}"
        )
    names = list(names)
    for name in names:
        if not isinstance(name, str) or not name:
            raise MissingColumnError(f"the user column names must be non-empty strings, got {name!r}")
    return names


def _keyed_input(
    recs: Source,
    unit: Sequence[str],
    item: str,
    source: Source,
    role: str,
    names: ColumnNames,
    quote,
    partial: bool = False,
) -> dict[str, Any]:
    """The context of an input keyed by (unit, item), like truth or history: its columns found,
    quoted with `quote`, and checked to compare with recs' unit and item columns. partial
    (history): the input may have only some of the unit's key columns, and is joined on those."""
    keys = unit_columns(names.user)
    found: list[tuple[int, str]] = []
    for i, (name, recs_column) in enumerate(zip(keys, unit, strict=True)):
        try:
            column = col.find_column(source, name, role, "user")
        except MissingColumnError:
            if partial:
                continue
            raise
        col.require_same_family(recs, recs_column, source, column, "user", role)
        found.append((i, column))
    if not found:  # (partial only: the others raised already)
        raise MissingColumnError(
            f"{role} ({source.label}) has none of the unit's key columns "
            f"({', '.join(map(repr, keys))}); its columns are: {', '.join(source.columns)}"
        )
    s_item = col.find_column(source, names.item, role, "item")
    col.require_same_family(recs, item, source, s_item, "item", role)
    return {
        "source": source.sql,
        "label": source.label,
        "unit": [{"alias": _unit_alias(i), "column": quote(column)} for i, column in found],
        "item": quote(s_item),
        "names": {"unit": [column for _, column in found], "item": s_item},
    }


def _unit_alias(i: int) -> str:
    """The name of the unit's i-th key column inside the statement: _user, then _u1, _u2..."""
    return "_user" if i == 0 else f"_u{i}"


def build_context(
    recs: Source,
    truth: Source | None,
    metrics: Sequence[RequestedMetric],
    names: ColumnNames,
    conventions: Conventions,
    by: Sequence[str],
    per_user: bool,
    history: Source | None = None,
    catalog: Source | None = None,
    item_features: Source | None = None,
    subtopics: Source | None = None,
    dialect: str = "duckdb",
    baseline: Any = None,
    item_genres: Source | None = None,
    group_target: Source | None = None,
) -> dict[str, Any]:
    sql_dialect = get_dialect(dialect)
    quote_identifier = sql_dialect.quote_identifier  # this dialect's quoting, in this function
    unit = [col.find_column(recs, name, "recs", "user") for name in unit_columns(names.user)]
    item = col.find_column(recs, names.item, "recs", "item")
    if names.rank is not None:
        key = col.find_column(recs, names.rank, "recs", "rank")
        key_type = col.require_numeric(recs, key, "recs", "rank")
        order_by = "rank"
        if conventions.ties == "average":
            raise ConventionError("ties='average' needs scores; ranks cannot tie (rank= was given)")
    else:
        key = col.find_column(recs, names.score, "recs", "score")
        key_type = col.require_numeric(recs, key, "recs", "score")
        order_by = "score"
    # _key is "larger is better" throughout the templates: a rank is negated
    key_sql = quote_identifier(key)
    if order_by == "rank":
        # (the portable SQL keeps the rank's own type: BigQuery counts no DISTINCT FLOAT64)
        key_sql = f"-CAST({key_sql} AS DOUBLE)" if dialect == "duckdb" else f"-{key_sql}"
    elif conventions.ties == "item_asc" and key_type in _NEGATABLE and dialect == "duckdb":
        # item_asc negates the score (sql/ranking/top_k.sql.j2): in a wider type, where the
        # negation of every value (the smallest too, and any unsigned one) is exact
        key_sql = f"CAST({key_sql} AS {_NEGATABLE[key_type]})"

    # ties='average' and 'evidently' leave no i-th hit (map, mrr, ...) and no order within a
    # list (the beyond-accuracy list metrics): the metrics they take read positions only
    tie_rule = {
        "average": "the expectation over all orders of tied items",
        "evidently": "a tie group shares one position",
    }.get(conventions.ties)
    refused = [m.label for m in metrics if not m.definition.tie_averaged] if tie_rule else []
    if refused:
        raise ConventionError(
            f"ties={conventions.ties!r} ({tie_rule}) is not defined here for {', '.join(refused)}; "
            "use ties='item_desc' (trec_eval) or drop those metrics"
        )

    _require_distinct_unit(unit, item, key)
    groups = []
    # a by column may be one of several key columns (a (user, day) unit, by day): each unit
    # is then in one group only
    taken = {item, key, *unit} if len(unit) == 1 else {item, key}
    for i, name in enumerate(by):
        column = col.find_column(recs, name, "recs", "by")
        if column in taken:
            raise ConventionError(
                f"by={name!r} names a column that is already the user, item or score"
            )
        taken.add(column)
        groups.append(
            {
                "alias": f"_g{i}",
                "column": quote_identifier(column),
                "name": quote_identifier(column),
                "is_text": col.type_family(recs.type_of(column)) == "text",
                "found": column,
                # the unit's key column it is, if any (missing='zero' pairs them)
                "unit": _unit_alias(unit.index(column)) if column in unit else None,
            }
        )
    by_columns = [g["found"] for g in groups]
    # the unit's columns in the result (per_user=True), except those already there as by columns
    shown = [column for column in unit if column not in by_columns]
    _require_distinct_output(
        by, by_columns, shown if per_user else ["users"],
        [sql_dialect.result_name(m.label) for m in metrics],
    )

    recs_ctx: dict[str, Any] = {
        "source": recs.sql,
        "label": recs.label,
        "unit": [quote_identifier(column) for column in unit],
        "item": quote_identifier(item),
        "key": key_sql,
        "key_is_float": col.is_float(key_type),
        "item_is_text": col.type_family(recs.type_of(item)) == "text",
        "names": {"unit": unit, "item": item, "key": key},
        "relevance": None,
    }
    # (first: an intent-aware measure without subtopics= is told so, not that truth= is missing)
    subtopics_ctx = _subtopics_context(recs, unit, item, subtopics, metrics, names, quote_identifier, dialect)
    ranking = [m for m in metrics if not m.definition.beyond]
    needs_relevance = bool(ranking) or any("relevance" in m.definition.needs for m in metrics)
    truth_ctx = None
    if truth is None and not needs_relevance and not _has_relevance(recs, names):
        # Only beyond-accuracy metrics that need no relevance: nothing is judged (every row 0).
        recs_ctx["relevance"] = {"kind": "column", "column": "NULL", "grades": [], "is_float": False}
    elif truth is None:
        if conventions.threshold == ANY_TRUTH_ROW:
            raise ConventionError(
                "threshold='any' makes every truth row relevant, so it needs truth=; with the "
                "relevance in recs, give a number (the grade from which a row is relevant)"
            )
        if (
            names.action is None
            and names.relevance is None
            and "relevance" not in {c.lower() for c in recs.columns}
        ):
            raise MissingColumnError(
                f"recs ({recs.label}) has no relevance column " + NO_RELEVANCE_HINT
            )
        recs_ctx["relevance"] = _relevance(recs, names, "recs", required=True, dialect=dialect)
    else:
        truth_ctx = {
            **_keyed_input(recs, unit, item, truth, "truth", names, quote_identifier),
            "relevance": _relevance(truth, names, "truth", required=False, dialect=dialect),
        }
        _require_unambiguous_segments(by, groups, unit, truth)
        if conventions.threshold == ANY_TRUTH_ROW:
            # every truth row is relevant with grade 1: its grade is not read (Recommenders)
            truth_ctx["relevance"] = {"kind": "constant", "column": None, "grades": [], "is_float": False}

    cutoffs = [m.k for m in metrics if not m.definition.beyond or m.definition.uses_lists]
    if not cutoffs:
        list_length = 1  # fcp alone: the lists are only read for the input checks
    else:
        list_length = None if any(k is None for k in cutoffs) else max(cutoffs)
        tie_groups = conventions.ties in ("average", "evidently")
        if list_length is not None and list_length > WHOLE_LIST_FROM and not tie_groups:
            # DuckDB's top-n aggregates take n < 1,000,000: past this the whole sorted list
            # is cheaper anyway (the metrics slice their own k from it); ties='average' and
            # 'evidently' keep every item placed before list_length, with no top-n aggregate
            list_length = None
        if list_length is None and tie_groups:
            list_length = MAX_CUTOFF  # the whole list: every tie group is placed
    beyond_ctx = _beyond_context(
        recs, unit, item, truth, metrics, names, per_user, history, catalog, item_features,
        quote_identifier, sql_dialect.result_name, item_genres, group_target,
    )
    rbo = [m.label for m in metrics if "baseline" in m.definition.needs]
    if baseline is not None and not rbo:
        raise ConventionError(
            f"baseline={baseline!r} names the reference system of rbo@k, and no rbo metric is "
            "requested (compare() takes its own baseline=)"
        )
    if rbo:
        beyond_ctx["rbo"] = _rbo_context(recs, by, baseline, rbo, metrics, sql_dialect, groups)
    if beyond_ctx is not None:
        # the order asked (result_name: BigQuery's column for a label with a ".")
        beyond_ctx["columns"] = [quote_identifier(sql_dialect.result_name(m.label)) for m in metrics]
    return {
        "dialect": sql_dialect.name,  # the portable templates import sql/dialects/<dialect>.sql.j2
        "sum_terms": SumTerms(),  # per_user's exact sums' terms, once per row (exact_sums.py)
        # DuckDB's input_check reports a problem through this function; evaluate() puts its
        # own there (engines/duckdb.py), so that no error aborts the caller's transaction
        "fail_function": "error",
        "literal": sql_dialect.quote_string,  # text as a string literal of the dialect
        "recs": recs_ctx,
        "truth": truth_ctx,
        "groups": groups,
        # the unit's key columns: _user, _u1, ... in the statement; `shown` in the result
        # (per_user=True) unless a by column shows it already; hash_cast: partitions=N hashes
        # integers of any width alike in every input
        "unit": [
            {
                "alias": _unit_alias(i),
                "name": quote_identifier(column),
                "found": column,
                "is_text": col.type_family(recs.type_of(column)) == "text",
                "hash_cast": "HUGEINT" if col.type_family(recs.type_of(column)) == "integer" else None,
                "shown": column in shown,
            }
            for i, column in enumerate(unit)
        ],
        "order_by": order_by,
        "ties": "item_desc" if order_by == "rank" else conventions.ties,  # ranks cannot tie
        "list_length": list_length,
        "threshold": conventions.threshold_literal,
        "gain_kind": conventions.gain,
        "gain_from_threshold": conventions.gain_from_threshold,  # a peer's name asks for it
        "empty": conventions.empty,
        "missing": conventions.missing,
        "ap_denominator": conventions.ap_denominator,
        "short_lists": conventions.short_lists,
        "duplicates": conventions.duplicates,
        # several truth rows of one (user, item): refused, the highest grade, or their sum;
        # subtopics= as the truth: its highest grade over the subtopics
        "truth_duplicates": "max" if subtopics_ctx is not None else conventions.truth_duplicates,
        "subtopics": subtopics_ctx,
        "per_user": per_user,
        # partitions=N (partitions.py) fills "partition" per statement
        "partition": None,
        "metrics": [
            {
                "template": m.definition.template,
                "name": m.name,  # the registry's name, shown in sql()
                "macro": m.definition.macro,
                "k": m.k,  # None: the whole list
                # its number (set_F's beta): a finite float, validated, as a SQL literal
                "param": None if m.param is None else repr(float(m.param)),
                "column": quote_identifier(sql_dialect.result_name(m.label)),
                "formula": m.definition.formula,  # shown beside the column in sql()
                "aggregate": m.definition.aggregate,  # mean, sum or geometric (registry.py)
                "bound": m.definition.bound,  # the fast exact sum's (registry.py)
            }
            for m in ranking
        ],
        # what the requested metrics read beyond the judged rows (registry.py's `reads`)
        "reads": sorted(
            {r for m in ranking for r in m.definition.reads}
            | {r for m in ranking if m.k is None for r in m.definition.whole_list_reads}
            | {
                r
                for m in ranking
                if m.k is not None and conventions.short_lists != "pad"
                for r in m.definition.short_list_reads
            }
        ),
        "beyond": beyond_ctx,
    }


def _rbo_context(recs, by, baseline, labels, metrics, sql_dialect, groups) -> dict[str, Any]:
    """rbo@k's reference lists: the group whose by values are `baseline` (one value per by
    column, a tuple for several, as compare() takes it), as SQL literals of the columns' types."""
    if not by:
        raise ConventionError(
            f"{', '.join(labels)} compares each system's lists with a baseline system's: pass "
            "by='<the system column>' and baseline=<its value for the reference system> (on the "
            "command line --by and --baseline)"
        )
    baselines = tuple(baseline) if isinstance(baseline, tuple) else (baseline,)
    if baseline is None or len(baselines) != len(by):
        given = "no baseline=" if baseline is None else f"baseline={baseline!r}"
        raise ConventionError(
            f"{', '.join(labels)}: {given} for the {len(by)} by column(s) {', '.join(by)}; give the "
            "reference system's value (a tuple with one value per by column; on the command line "
            "--baseline)"
        )
    return {
        "baseline": [
            {"alias": g["alias"], "literal": baseline_literal(sql_dialect, recs, name, value, i)}
            for i, (g, name, value) in enumerate(zip(groups, by, baselines, strict=True))
        ],
        "ks": sorted({m.k for m in metrics if "baseline" in m.definition.needs}),
    }


def _subtopics_context(
    recs: Source,
    unit: Sequence[str],
    item: str,
    subtopics: Source | None,
    metrics: Sequence[RequestedMetric],
    names: ColumnNames,
    quote,
    dialect: str,
) -> dict[str, Any] | None:
    """subtopics= (unit, subtopic, item, grade) for the intent-aware measures
    (sql/metrics/subtopics.sql.j2), their cutoffs and parameters checked."""
    wanting = [m for m in metrics if "subtopics" in m.definition.reads]
    if wanting and subtopics is None:
        raise ConventionError(
            f"{', '.join(m.label for m in wanting)} needs subtopic judgements: {SUBTOPICS_HINT}"
        )
    for m in wanting:
        if m.definition.needs_cutoff and m.k is None:
            raise ConventionError(f"{m.label} needs a cutoff, for example '{m.name}@10'")
        if m.param is not None and not 0 <= m.param <= 1:
            raise ConventionError(
                f"{m.label}: its {m.definition.parameter} is between 0 and 1, got {m.param!r}"
            )
    if subtopics is None:
        return None
    keyed = _keyed_input(recs, unit, item, subtopics, "subtopics", names, quote)
    # an optional `weight` column: the intent weights of p_ia, ap_ia and err_ia (normalized
    # per unit over its subtopics with a relevant item; uniform without)
    weight = [c for c in subtopics.columns if c.lower() == "weight"]
    if weight:
        col.require_numeric(subtopics, weight[0], "subtopics", "weight")
        keyed["names"]["weight"] = weight[0]
    return {
        **keyed,
        "subtopic": quote(col.find_column(subtopics, "subtopic", "subtopics", "subtopic")),
        "relevance": _relevance(subtopics, names, "subtopics", required=False, dialect=dialect),
        "weight": quote(weight[0]) if weight else None,
    }


def _require_distinct_unit(unit: Sequence[str], item: str, key: str) -> None:
    """The unit's key columns are distinct columns, none of them the item or the score."""
    seen: set[str] = set()
    for column in unit:
        if column.lower() in seen:
            raise ConventionError(f"user= names the column {column!r} twice")
        if column in (item, key):
            raise ConventionError(
                f"user= names {column!r}, which is already the item or the score column"
            )
        seen.add(column.lower())


def _require_unambiguous_segments(
    by: Sequence[str], groups: Sequence[dict[str, Any]], unit: Sequence[str], truth: Source
) -> None:
    """A by column that truth has too, outside the unit's key, would be silently crossed: truth
    is joined on the unit alone, so each segment's lists would be judged against the truth of
    every segment (a (user, day) list against all the user's days). Refused, with both fixes."""
    for name, group in zip(by, groups, strict=True):
        if group["unit"] is not None:
            continue
        column = group["found"]
        in_truth = [c for c in truth.columns if c == column] or [
            c for c in truth.columns if c.lower() == column.lower()
        ]
        if in_truth:
            keys = list(unit) if len(unit) > 1 else unit[0]
            wider = [*unit, column]
            raise ConventionError(
                f"by={name!r}: truth ({truth.label}) has a {in_truth[0]!r} column too, but truth is "
                f"joined on the unit (user={keys!r}) alone, so each {column} segment would be "
                f"judged against the truth of every {column}; add it to the unit "
                f"(user={wider!r}) or leave it out of truth"
            )


def _require_distinct_output(
    by: Sequence[str], by_columns: Sequence[str], counts_or_unit: Sequence[str], labels: Sequence[str]
) -> None:
    """The result's columns (the by columns, `users` or the unit's columns, the metrics) must
    have distinct names, compared as the engines compare them (without case), or the result
    would hold two columns of one name."""
    what = "the count of users" if list(counts_or_unit) == ["users"] else "the user column"
    metrics = {label.lower(): f"the metric {label!r}" for label in labels}
    for name in counts_or_unit:
        if what == "the user column" and name.lower() in metrics:
            # per_user=True: the unit's column would take the metric's name (and compare()
            # would average the user ids as the metric)
            raise ConventionError(
                f"user={name!r}: the result would have two columns named {name!r} (this user "
                f"column and {metrics[name.lower()]}); give the user column another name, e.g. "
                "in a view"
            )
    fixed = {name.lower(): f"{what}, {name!r}" for name in counts_or_unit}
    fixed.update(metrics)
    seen: dict[str, str] = {}
    for name, column in zip(by, by_columns, strict=True):
        clash = fixed.get(column.lower()) or seen.get(column.lower())
        if clash:
            raise ConventionError(
                f"by={name!r}: the result would have two columns named {column!r} (this by column "
                f"and {clash}); give the by column another name, e.g. in a view"
            )
        seen[column.lower()] = f"the by column {column!r}"


def _has_relevance(recs: Source, names: ColumnNames) -> bool:
    return (
        names.action is not None
        or names.relevance is not None
        or "relevance" in {c.lower() for c in recs.columns}
    )


_VECTOR = re.compile(r"^(.+)\[\d*\]$")


def _input_context(source: Source, columns: dict[str, str | None], quote_identifier) -> dict[str, Any]:
    """A beyond-accuracy input for the templates: its FROM item, its label for messages, each
    column quoted (None stays None) and, under "names", as the user spells it."""
    quoted = {key: None if name is None else quote_identifier(name) for key, name in columns.items()}
    return {"source": source.sql, "label": source.label, **quoted, "names": dict(columns)}


def _beyond_context(
    recs: Source,
    unit: Sequence[str],
    item: str,
    truth: Source | None,
    metrics: Sequence[RequestedMetric],
    names: ColumnNames,
    per_user: bool,
    history: Source | None,
    catalog: Source | None,
    item_features: Source | None,
    quote_identifier=quote_identifier,  # the dialect's quoting
    result_name=lambda label: label,  # the dialect's column for a label (BigQuery: no ".")
    item_genres: Source | None = None,
    group_target: Source | None = None,
) -> dict[str, Any] | None:
    """What the beyond-accuracy templates (sql/beyond/) need: which inputs, cutoffs and families."""
    beyond = [m for m in metrics if m.definition.beyond]
    if not beyond:
        return None
    if per_user:
        refused = [m.label for m in beyond if not m.definition.per_user]
        if refused:
            raise ConventionError(
                f"per_user=True: {', '.join(refused)} has no per-user value (it describes all the "
                "lists together); request it without per_user=True"
            )
    needs = {need for m in beyond for need in m.definition.needs}
    names_of = {need: [m.label for m in beyond if need in m.definition.needs] for need in needs}
    # (relevance: without truth= and a relevance column, build_context has refused already)
    similarity = None
    if "similarity" in needs:
        similarity = "features" if item_features is not None else "cooccurrence"
    uses_history = (
        "history" in needs
        or similarity == "cooccurrence"
        or ("catalog" in needs and catalog is None)
    )
    if uses_history and history is None:
        wants = sorted(
            {m.label for m in beyond if "history" in m.definition.needs}
            | set(names_of.get("similarity", []))
            | set(names_of.get("catalog", []))
        )
        alternatives = {
            "catalog": " (or catalog='<table of items>')",
            "similarity": " (or item_features='<table of item, vector>')",
        }
        hint = "".join(v for k, v in alternatives.items() if k in needs and "history" not in needs)
        raise ConventionError(
            f"{', '.join(wants)} needs the users' history: pass history='<table of (user, item) "
            f"interactions>'{hint}"
        )

    history_ctx = None
    if uses_history and history is not None:
        # joined on the unit's key columns it has: a (user, day) list meets the user's whole
        # history when history has no day
        history_ctx = _keyed_input(
            recs, unit, item, history, "history", names, quote_identifier, partial=True
        )
    catalog_ctx = None
    if "catalog" in needs and catalog is not None:
        c_item = col.find_column(catalog, names.item, "catalog", "item")
        col.require_same_family(recs, item, catalog, c_item, "item", "catalog")
        catalog_ctx = {
            "source": catalog.sql,
            "label": catalog.label,
            "item": quote_identifier(c_item),
            "names": {"item": c_item},
        }
    if "truth" in needs and truth is None:
        raise ConventionError(
            f"{', '.join(names_of['truth'])} needs the relevant items of each user: pass "
            "truth='<table of (user, item[, relevance])>'"
        )
    if "genres" in needs and item_features is None and item_genres is None:
        raise ConventionError(
            f"{', '.join(names_of['genres'])} needs the items' genres: pass "
            "item_genres='<table of (item, genre[, weight])>' or "
            "item_features='<table of item, vector of genre weights>' (a multi-hot genre vector "
            "per item)"
        )
    features_ctx = None
    genres_in_features = "genres" in needs and item_genres is None
    if (similarity == "features" or genres_in_features) and item_features is not None:
        f_item = col.find_column(item_features, names.item, "item_features", "item")
        f_vec = col.find_column(item_features, names.features, "item_features", "features")
        col.require_same_family(recs, item, item_features, f_item, "item", "item_features")
        vector_type = item_features.type_of(f_vec)
        element = _VECTOR.match(vector_type)
        if element is None or not col.is_numeric(element.group(1)):
            raise ColumnTypeError(
                f"item_features ({item_features.label}): the features column {f_vec!r} must be a list "
                f"or array of numbers (e.g. FLOAT[]), but it is {vector_type}"
            )
        features_ctx = _input_context(item_features, {"item": f_item, "vector": f_vec}, quote_identifier)
    genres_ctx = None
    if "genres" in needs and item_genres is not None:
        # the long form: one row per (item, genre), weighing genre_weight (1 without)
        g_item = col.find_column(item_genres, names.item, "item_genres", "item")
        g_genre = col.find_column(item_genres, names.genre, "item_genres", "genre")
        col.require_same_family(recs, item, item_genres, g_item, "item", "item_genres")
        g_weight = None
        if names.genre_weight is not None:
            g_weight = col.find_column(item_genres, names.genre_weight, "item_genres", "genre_weight")
            col.require_numeric(item_genres, g_weight, "item_genres", "genre_weight")
        genres_ctx = _input_context(
            item_genres, {"item": g_item, "genre": g_genre, "weight": g_weight}, quote_identifier
        ) | {"kind": "rows"}
    elif "genres" in needs and features_ctx is not None:  # the vector form
        genres_ctx = {"kind": "features", "label": features_ctx["label"], "names": features_ctx["names"]}

    target_ctx = None
    awrf = [m.label for m in beyond if m.name == "awrf"]
    if group_target is not None and not awrf:
        raise ConventionError(
            "group_target= is awrf@k's target distribution, and no awrf metric is requested"
        )
    if group_target is not None:
        # awrf's target: one row per group, (genre=, genre_weight= or "weight"), normalized
        t_genre = col.find_column(group_target, names.genre, "group_target", "genre")
        t_weight = col.find_column(group_target, names.genre_weight or "weight", "group_target", "weight")
        col.require_numeric(group_target, t_weight, "group_target", "weight")
        target_ctx = _input_context(group_target, {"genre": t_genre, "weight": t_weight}, quote_identifier)

    def max_k(*wanted: str) -> int | None:
        ks = [m.k for m in beyond if m.name in wanted and m.k is not None]
        return max(ks) if ks else None

    families: list[str] = []
    for m in beyond:
        family = m.definition.template.rsplit("/", 1)[-1].split(".", 1)[0]
        if family not in families:
            families.append(family)
    return {
        "metrics": [
            {
                "name": m.name,
                "k": m.k,
                "column": quote_identifier(result_name(m.label)),
                "per_user": m.definition.per_user,
                # its number from the name (calibration's alpha): a finite float, a SQL literal
                "param": None if m.param is None else repr(float(m.param)),
            }
            for m in beyond
        ],
        "families": families,
        "list_length": max_k(*[m.name for m in beyond if m.definition.uses_lists]),
        "history": history_ctx,
        "catalog": catalog_ctx,
        "features": features_ctx,
        "genres": genres_ctx,
        "target": target_ctx,
        "similarity": similarity,
        "relevance": any(
            m.definition.uses_lists and "relevance" in m.definition.needs for m in beyond
        ),
        "catalog_k": max_k("catalog_coverage", "gini") if catalog_ctx else None,
        "diversity_k": max_k("diversity"),
        "serendipity_k": max_k("serendipity"),
    }
