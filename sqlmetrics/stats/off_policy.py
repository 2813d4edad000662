"""off_policy(): how a new ranker would do online, estimated from the impressions logged by the
one that served (slate off-policy evaluation: Open Bandit Pipeline's estimators), in SQL.

The formulas live in sql/off_policy/ (one statement: per-unit terms, then one row of sums per
segment); this module names the inputs, checks them (sql/off_policy/checks.sql.j2), and turns
the sums into estimates, t intervals and diagnostics. docs/off-policy.md has the formulas.
"""

from __future__ import annotations

import inspect
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from numbers import Real
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..engines import for_connection
from ..errors import ConventionError, InvalidDataError, MissingColumnError, SqlMetricsError, UnknownTableError
from ..inputs import columns as col
from ..inputs.sources import Input, Source
from ..statement.dialects import from_item
from ..statement.dialects import get as get_dialect
from ..statement.exact_sums import with_exact_sums
from ..statement.plan import ColumnNames, _relevance, unit_columns
from ..statement.templates import render
from . import draws, significance
from .compare import _table as compare_table
from .compare import check_options
from .draws import digit_places, poisson_thresholds
from .significance import t_interval, t_test

DEFAULT_ESTIMATORS = ("iips", "sniips", "rips", "snrips", "logging")
ESTIMATORS = ("sips", "iips", "rips", "snsips", "sniips", "snrips", "cascade-dr", "dm", "logging")
# the weight each estimator uses: of the slate, of the item at its position, of the prefix
KIND = {"sips": "s", "snsips": "s", "iips": "ip", "sniips": "ip", "rips": "c", "snrips": "c",
        "cascade-dr": "c", "dm": None, "logging": None}  # fmt: skip
PROPENSITY = {"s": "pscore", "ip": "pscore_item_position", "c": "pscore_cascade"}
OUTPUT = ("estimator", "value", "ci_low", "ci_high", "units", "ess", "max_weight", "mean_weight",
          "support", "clipped")  # fmt: skip
# with baseline=: each estimate against the baseline's on the same units (paired)
COMPARED = ("baseline", "baseline_value", "delta", "delta_ci_low", "delta_ci_high", "p_value")
# the mean weight is about 1 when the propensities are right: a warning beyond this far
MEAN_WEIGHT_TOLERANCE = 0.1



class OffPolicyWarning(UserWarning):
    """The weights' mean is far from 1: the logged propensities may be wrong."""


def off_policy(
    con: Any,
    impressions: Input,
    estimators: str | Sequence[str] = DEFAULT_ESTIMATORS,
    *,
    target: Input | None = None,
    rewards: Input | None = None,
    by: str | Sequence[str] | None = None,
    within: str | Sequence[str] | None = None,
    confidence: float = 0.95,
    baseline: str | Input | Mapping[str, str] | None = None,
    test: str = "t",
    replicates: int = 10_000,
    seed: int = 0,
    position_weights: str | Sequence[float] = "none",
    clip: float | None = None,
    user: str | Sequence[str] = "user_id",
    item: str = "item_id",
    position: str = "position",
    pscore: str = "pscore",
    pscore_item_position: str = "pscore_item_position",
    pscore_cascade: str = "pscore_cascade",
    reward: str = "reward",
    predicted_reward: str | None = None,
    score: str = "score",
    rank: str | None = None,
    ties: str = "item_desc",
    relevance: str | Mapping[str, float] | None = None,
    action: str | None = None,
    truth_duplicates: str = "error",
    target_pscore: str | None = None,
    target_pscore_item_position: str | None = None,
    target_pscore_cascade: str | None = None,
    target_predicted_reward: str | None = None,
) -> pa.Table:
    """Estimate a target policy's online value from logged impressions (docs/off-policy.md).

    impressions: one row per shown item: the unit's key (user=, one column or several: a slate),
    item=, position= (1, 2, ... without gaps) and the logging policy's propensities that the
    estimators read: pscore= (of the whole slate; sips, snsips), pscore_item_position= (of this
    item at this position; iips, sniips), pscore_cascade= (of the top-`position` prefix; rips,
    snrips, cascade-dr). rewards: events joined on the unit's key and the item, graded as truth
    is everywhere (relevance=, action=, truth_duplicates=); without it, the impressions' reward=
    column. target: the new policy as a ranking (a table of unit, item and score=, or rank=,
    with evaluate()'s tie order `ties`): its propensity of a shown item at a position is 1 when
    it ranks it there, of a prefix or a slate 1 when it ranks all of it so; or, for a stochastic
    target, its own propensities as columns of the impressions (target_pscore=, ...).
    predicted_reward: a column of predicted rewards (of the shown item at its position on the
    impressions, of each item at its rank on the target): the direct method (dm) and
    cascade-dr; a stochastic target gives target_predicted_reward= (its expected predicted
    reward at the position given the shown items above) for cascade-dr.
    estimators: any of sips, iips, rips, snsips, sniips, snrips, cascade-dr, dm, logging (the
    mean logged reward: the serving policy's own value). position_weights: "none", "dcg"
    (1 / log2(position + 1)) or a list (position 1 first; 0 beyond it): the value is the sum
    of weighted rewards. clip: cap every importance weight at this value.
    by: columns of the impressions whose values are segments (constant within a unit).
    within: compare()'s name for the segments a comparison runs inside; off_policy() has no
    systems to compare, so these are segments too (their columns first, then by's).
    baseline: an estimator (e.g. "logging") every other row is compared with on the same units,
    or another target, in the forms target= takes (a ranking: a table or view name, a file,
    a relation, a DataFrame, an Arrow table; a stochastic target: a mapping of the target_*
    keywords to its columns of the impressions), whose estimate by each estimator each row is
    compared with: adds baseline, baseline_value, delta, delta_ci_low, delta_ci_high and
    p_value (the paired comparison of the per-unit terms, compare()'s t or bootstrap).
    test: "t" (the default) or "bootstrap": the intervals (and p) from compare()'s bucketed
    Poisson bootstrap of the units, `replicates` draws from `seed`.

    Returns one row per (segment, estimator): the within and by columns, estimator, value, ci_low, ci_high
    (Student's t interval of the per-unit terms at `confidence`; the delta method's for the
    self-normalized forms), units, ess ((sum u)^2 / sum u^2 of the clipped weights, scaled to
    units), max_weight and mean_weight (unclipped; about 1 for valid propensities), support
    (share of units with a nonzero weight) and clipped (share of weights clipped).

    >>> import duckdb, pyarrow as pa, sqlmetrics
    >>> log = pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "b", "a"],
    ...                 "position": [1, 2, 1, 2], "pscore_item_position": [0.5, 0.5, 0.5, 0.5],
    ...                 "reward": [1, 0, 0, 1]})
    >>> target = pa.table({"user_id": [1, 1, 2, 2], "item_id": ["a", "b", "a", "b"],
    ...                    "score": [2, 1, 2, 1]})
    >>> rows = sqlmetrics.off_policy(duckdb.connect(), log, ["iips", "logging"], target=target)
    >>> [(r["estimator"], r["value"], r["units"]) for r in rows.to_pylist()]
    [('iips', 1.0, 2), ('logging', 1.0, 2)]
    """
    options = {k: v for k, v in locals().items() if k not in ("con", "impressions", "estimators")}
    estimator, other, label = _baseline(baseline)
    options["baseline"] = estimator
    engine = for_connection(con, describe_only=False)
    try:
        context, keys, imp_position, wanted, segments = _context(
            engine, engine.dialect, impressions, estimators, options
        )
        other_context = None
        if other is not None:  # the baseline target's own statement context, checked the same way
            try:
                other_context = _context(engine, engine.dialect, impressions, wanted,
                                         {**options, **other, "target_role": "baseline"})[0]  # fmt: skip
            except UnknownTableError as exc:
                if not isinstance(baseline, str):
                    raise
                raise UnknownTableError(
                    f"baseline={baseline!r} is neither an estimator ({', '.join(ESTIMATORS)}) nor "
                    f"a target ranking: {exc}"
                ) from None
        for checked in (context, other_context):
            if checked is not None:
                _check(engine, checked, keys, imp_position, "target" if checked is context else "baseline")
        result = with_exact_sums(
            lambda form: engine.run(render("off_policy/off_policy.sql.j2", {**context, "exact_sums": form}))
        )
        table = _table(result, wanted, segments, confidence, estimator)
        if test == "bootstrap":
            table = _bootstrap(engine, context, table, segments, estimator, confidence, replicates, seed)
        if other_context is not None:
            table = _against_target(engine, context, other_context, table, segments, label,
                                    test, confidence, replicates, seed)  # fmt: skip
    finally:
        engine.release()
    return table


def off_policy_sql(
    con: Any,
    impressions: Input,
    estimators: str | Sequence[str] = DEFAULT_ESTIMATORS,
    *,
    dialect: str | None = None,
    exact_sums: str = "fast",
    **options: Any,
) -> str:
    """The statement off_policy() runs with the same arguments (its keywords), in `dialect`
    ("duckdb", "spark", "postgres", "bigquery", "snowflake"; by default the connection's):
    one row per segment of sums (columns _n, _s<i> the sum of estimator i's per-unit terms,
    _ss<i> their squared deviations, and the weights' diagnostics; docs/off-policy.md). As for
    sql(), inputs must be tables (or, where the dialect reads them, files), and con=None
    takes each input as a (table name, columns) pair. exact_sums: "fast" (the default), whose
    sums give NaN for a group whose terms they cannot hold (off_policy() then runs the "wide"
    form, exact for any term), or "wide".

    With baseline= another target, the one statement holds the estimates and compare()'s
    comparison of both targets' per-unit terms (t): one row per (segment, estimator) of the
    segment's sums beside compare()'s row, its columns prefixed _cmp (docs/off-policy.md).

    >>> import sqlmetrics
    >>> log = ("logs.impressions", {"user_id": "INT64", "item_id": "STRING", "position": "INT64",
    ...        "pscore_item_position": "FLOAT64", "reward": "FLOAT64"})
    >>> recs = ("logs.recs_b", {"user_id": "INT64", "item_id": "STRING", "score": "FLOAT64"})
    >>> text = sqlmetrics.off_policy_sql(None, log, ["iips"], target=recs, dialect="bigquery")
    >>> "FROM `logs`.`impressions`" in text
    True
    """
    defaults = {
        name: p.default for name, p in inspect.signature(off_policy).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    if exact_sums not in ("fast", "wide"):
        raise ConventionError(f"exact_sums={exact_sums!r}: the sums' form is 'fast' or 'wide'")
    estimator, other, _ = _baseline(options.get("baseline"))
    options = {**defaults, **options, "baseline": estimator}
    if other is not None and options["test"] != "t":
        raise ConventionError(
            f"off_policy_sql(baseline=<another target>, test={options['test']!r}): the one statement "
            "compares the two targets with the t interval only; run off_policy() for the bootstrap"
        )
    engine = for_connection(con)
    try:
        name = get_dialect(dialect or engine.dialect or "duckdb").name
        context, _, _, wanted, _ = _context(engine, name, impressions, estimators, options)
        estimates = render("off_policy/off_policy.sql.j2", {**context, "exact_sums": exact_sums})
        if other is None:
            return estimates
        # baseline= another target: the estimates and compare()'s comparison of both targets'
        # per-unit terms (computed inline) in one statement (against_target.sql.j2)
        other_context = _context(engine, name, impressions, wanted,
                                 {**options, **other, "target_role": "baseline"})[0]  # fmt: skip
        sides = {f"{side}_sql": render("off_policy/off_policy.sql.j2", {**c, "exact_sums": exact_sums,
                                                                         "per_unit": True}).rstrip("\n")
                 for side, c in (("target", context), ("baseline", other_context))}  # fmt: skip
        compared = _comparison_sql(context, sides, exact_sums, "t", options["confidence"],
                                   options["replicates"], options["seed"]).rstrip("\n")  # fmt: skip
        within = [f"_w{i}" for i in range(len(context["segments"]) + 1)]
        return render("off_policy/against_target.sql.j2", {
            **context, "estimates_sql": estimates.rstrip("\n"), "compare_sql": compared,
            "within_aliases": within,
        })  # fmt: skip
    finally:
        engine.release()


def _table_against_target(result: pa.Table, wanted: list[str], segments: list[str], confidence: float,
                          label: str | None) -> pa.Table:
    """off_policy()'s rows from the rows of off_policy_sql(baseline=<another target>)'s
    statement (against_target.sql.j2): the segments' sums, once per segment, give the
    estimates; the columns prefixed _cmp, compare()'s rows, the comparison (t)."""
    ours = [name for name in result.column_names if not name.startswith("_cmp")]
    theirs = [name for name in result.column_names if name.startswith("_cmp")]
    seen: set[tuple] = set()
    first = []
    for i, key in enumerate(zip(*(result.column(f"_g{j}").to_pylist() for j in range(len(segments))),
                                result.column("_n").to_pylist(), strict=True)):  # fmt: skip
        if key not in seen:
            seen.add(key)
            first.append(i)
    table = _table(result.select(ours).take(pa.array(first, pa.int64())), wanted, segments, confidence)
    compared = result.select(theirs).rename_columns([name[len("_cmp"):] for name in theirs])
    compared = compared.filter(pc.is_valid(compared.column("_row_kind")))
    return _with_comparison(table, compared, segments, label, "t", confidence)


def _context(engine: Any, dialect_name: str, impressions: Input, estimators: str | Sequence[str],
             options: dict[str, Any]) -> tuple[dict[str, Any], list[str], str, list[str], list[str]]:
    """The statements' context from off_policy()'s arguments, checked: (context, the unit's key
    columns, the position column, the estimators, the by columns)."""
    o = SimpleNamespace(**options)
    wanted = _estimators(estimators)
    if o.test not in ("t", "bootstrap"):
        raise ConventionError(f"test={o.test!r}: the intervals are 't' (the default) or 'bootstrap'")
    check_options(o.test, o.confidence, None, o.replicates, o.seed)
    if o.baseline is not None and o.baseline not in wanted:
        wanted.append(o.baseline)
    _check_options(o.confidence, o.clip, o.ties, o.truth_duplicates)
    if o.target is None and o.target_pscore is None and o.target_pscore_item_position is None\
            and o.target_pscore_cascade is None and any(KIND[e] for e in wanted):
        raise ConventionError(
            "give the target policy: target= a ranking (unit, item, score), or its propensities "
            "as columns of the impressions (target_pscore=, target_pscore_item_position=, "
            "target_pscore_cascade=)"
        )
    dialect = get_dialect(dialect_name)

    def resolve(obj: Input, role: str) -> Source:
        source = engine.resolve(obj, role)
        if dialect_name != engine.dialect:  # off_policy_sql(dialect=...): named in that dialect
            source.sql = from_item(source, dialect_name)
        return source

    q = dialect.quote_identifier
    names = ColumnNames(user=o.user, item=o.item, relevance=o.relevance, action=o.action)
    imp = resolve(impressions, "impressions")
    keys = [col.find_column(imp, name, "impressions", "user") for name in unit_columns(o.user)]
    imp_item = col.find_column(imp, o.item, "impressions", "item")
    imp_position = col.find_column(imp, o.position, "impressions", "position")
    if col.type_family(imp.type_of(imp_position)) != "integer":
        raise SqlMetricsError(
            f"impressions: the position column {imp_position!r} must be a whole number "
            f"(1 at the top), but it is {imp.type_of(imp_position)}"
        )
    within = [o.within] if isinstance(o.within, str) else list(o.within or [])
    segments = within + ([o.by] if isinstance(o.by, str) else list(o.by or []))
    resolved = [col.find_column(imp, name, "impressions", "within" if i < len(within) else "by")
                for i, name in enumerate(segments)]  # fmt: skip
    for i, name in enumerate(resolved):  # (as the input spells them: "DEV" is "dev")
        if name in resolved[:i]:
            raise ConventionError(
                f"within={o.within!r} and by={o.by!r} name the column {name!r} twice: each "
                "gives segments"
            )
    columns: list[tuple[str, str]] = []  # (alias in the statement, quoted column)
    logging: list[tuple[str, str, str]] = []  # (alias, quoted column, role) checked in (0, 1]
    stochastic: list[tuple[str, str, str]] = []
    per_slate: list[tuple[str, str]] = []
    values: list[tuple[str, str]] = []  # (alias, role): float rewards and predictions, checked finite
    kinds = sorted({KIND[e] for e in wanted if KIND[e]}, key=["s", "ip", "c"].index)

    def keyed(obj: Input, role: str) -> tuple[Source, list[str], str]:
        """An input joined to the impressions on the unit's key and the item: (source, its key
        columns, its item column), their types checked to compare."""
        source = resolve(obj, role)
        found = [col.find_column(source, name, role, "user") for name in unit_columns(o.user)]
        for a, b in zip(keys, found, strict=True):
            col.require_same_family(imp, a, source, b, "user", role, "impressions")
        found_item = col.find_column(source, o.item, role, "item")
        col.require_same_family(imp, imp_item, source, found_item, "item", role, "impressions")
        return source, found, found_item

    def numeric(source, name: str, role: str, what: str) -> str:
        column = col.find_column(source, name, role, what)
        col.require_numeric(source, column, role, what, allow_bool=what == "reward")
        return q(column)

    def floating(source, name: str | None, role: str, what: str) -> bool:
        """Whether the column can hold a NaN or an infinity (the checks read only those)."""
        return name is not None and col.is_float(source.type_of(col.find_column(source, name, role, what)))

    for kind in kinds:
        given = {"s": o.pscore, "ip": o.pscore_item_position, "c": o.pscore_cascade}[kind]
        users = [e for e in wanted if KIND[e] == kind]
        try:
            column = numeric(imp, given, "impressions", PROPENSITY[kind])
        except MissingColumnError:
            raise MissingColumnError(
                f"{', '.join(users)} need{'s' if len(users) == 1 else ''} the logging "
                f"policy's {PROPENSITY[kind]} (the propensity of "
                f"{_WHAT[kind]}): impressions ({imp.label}) has no column {given!r}; its "
                f"columns are: {', '.join(imp.columns)}"
            ) from None
        columns.append((f"_b_{kind}", column))
        logging.append((f"_b_{kind}", column, PROPENSITY[kind]))
        if kind == "s":
            per_slate.append(("_b_s", "pscore"))
    target_context = None
    own = {"s": o.target_pscore, "ip": o.target_pscore_item_position, "c": o.target_pscore_cascade}
    if o.target is not None:
        if any(v is not None for v in own.values()) or o.target_predicted_reward is not None:
            raise ConventionError(
                "target= is a ranking; target_pscore=, target_pscore_item_position=, "
                "target_pscore_cascade= and target_predicted_reward= give a stochastic "
                "target's own propensities instead: give one or the other"
            )
        if o.ties not in ("item_desc", "item_asc", "trec_eval"):
            raise ConventionError(
                f"ties={o.ties!r}: a target ranking must be deterministic; ties= orders equal "
                "scores by the item: 'item_desc', 'item_asc' or 'trec_eval'"
            )
        tgt, t_keys, t_item = keyed(o.target, getattr(o, "target_role", "target"))
        if o.rank is not None:
            key_sql = f"-{numeric(tgt, o.rank, 'target', 'rank')}"
        else:
            key_sql = numeric(tgt, o.score, "target", "score")
        predicted = o.predicted_reward if {"dm", "cascade-dr"} & set(wanted) else None
        predicted_sql = None if predicted is None else numeric(tgt, predicted, "target", "predicted_reward")
        key_name, key_what = (o.rank, "rank") if o.rank is not None else (o.score, "score")
        target_context = {
            "source": tgt.sql, "unit": [q(c) for c in t_keys], "item": q(t_item),
            "key": key_sql, "predicted": predicted_sql,
            # the columns that can hold a NaN or an infinity, which the checks refuse
            "floats": [sql for sql, name, what in ((key_sql, key_name, key_what),
                                                  (predicted_sql, predicted, "predicted_reward"))
                       if floating(tgt, name, "target", what)],
        }  # fmt: skip
    else:
        for kind in kinds:
            if own[kind] is None:
                users = [e for e in wanted if KIND[e] == kind]
                raise MissingColumnError(
                    f"{', '.join(users)} need{'s' if len(users) == 1 else ''} the target's "
                    f"propensity of {_WHAT[kind]}: give target_{PROPENSITY[kind]}= (a column of "
                    "the impressions) or target= a ranking"
                )
            column = numeric(imp, own[kind], "impressions", f"target_{PROPENSITY[kind]}")
            columns.append((f"_e_{kind}", column))
            stochastic.append((f"_e_{kind}", column, f"target_{PROPENSITY[kind]}"))
            if kind == "s":
                per_slate.append(("_e_s", "target_pscore"))
    if "dm" in wanted and (target_context is None or target_context["predicted"] is None):
        raise ConventionError(
            "dm needs target= a ranking with a predicted_reward= column (the predicted "
            "reward of each item it ranks)"
        )
    if "cascade-dr" in wanted:
        if o.predicted_reward is None:
            raise ConventionError(
                "cascade-dr needs predicted_reward= (a column of the impressions, and of "
                "target= when it is a ranking)"
            )
        columns.append(("_q", numeric(imp, o.predicted_reward, "impressions", "predicted_reward")))
        if floating(imp, o.predicted_reward, "impressions", "predicted_reward"):
            values.append(("_q", "predicted_reward"))
        if target_context is None:
            if o.target_predicted_reward is None:
                raise ConventionError(
                    "cascade-dr with a stochastic target needs target_predicted_reward= (its "
                    "expected predicted reward at each position given the items shown above)"
                )
            columns.append(("_q_e", numeric(imp, o.target_predicted_reward, "impressions",
                                            "target_predicted_reward")))
            if floating(imp, o.target_predicted_reward, "impressions", "target_predicted_reward"):
                values.append(("_q_e", "target_predicted_reward"))
    rewards_context = None
    if o.rewards is not None:
        rew, r_keys, r_item = keyed(o.rewards, "rewards")
        spec = _relevance(rew, names, "rewards", required=False, dialect=dialect.name)
        rewards_context = {
            "source": rew.sql, "unit": [q(c) for c in r_keys], "item": q(r_item),
            "relevance": spec,
            "unique": o.truth_duplicates == "error" and spec["kind"] != "action",
        }  # fmt: skip
    else:
        if o.action is not None or o.relevance is not None:
            raise ConventionError("action= and relevance= grade rewards=; give rewards= too")
        columns.append(("_r0", numeric(imp, o.reward, "impressions", "reward")))
        if floating(imp, o.reward, "impressions", "reward"):
            values.append(("_r0", "reward"))
    context = {
        "dialect": dialect.name,
        "unit": [{"alias": "_user" if i == 0 else f"_u{i}"} for i in range(len(keys))],
        "segments": [
            {"alias": f"_g{i}", "column": q(name)} for i, name in enumerate(resolved)
        ],
        "impressions": {
            "source": imp.sql, "unit": [q(c) for c in keys], "item": q(imp_item),
            "position": q(imp_position), "columns": columns, "logging": logging,
            "target": stochastic, "per_slate": per_slate, "values": values,
        },  # fmt: skip
        "rewards": rewards_context,
        "target": target_context,
        # a ranking target's weights from its hits (sql/off_policy/hits.sql.j2); dm and
        # cascade-dr read every position's predicted reward: the rows of every shown item
        "sparse": target_context is not None and not {"dm", "cascade-dr"} & set(wanted),
        "truth_duplicates": "max" if o.truth_duplicates == "error" else o.truth_duplicates,
        "ties": o.ties,
        "estimators": [{"name": e} for e in wanted],
        "per_unit": False,
        "baseline": None if o.baseline is None else wanted.index(o.baseline),
        "kinds": kinds,
        "position_weights": _position_weights(o.position_weights),
        "clip": None if o.clip is None else repr(float(o.clip)),
    }
    return context, keys, imp_position, wanted, segments


TARGET_KEYWORDS = ("target_pscore", "target_pscore_item_position", "target_pscore_cascade",
                   "target_predicted_reward")  # fmt: skip


def _baseline(baseline: Any) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """baseline= split: (an estimator's name, or None; another target as the keywords of
    off_policy() that give it, or None; the name the output's baseline column gives it).
    A string is an estimator's name when it is one, else a table, view or file of a ranking."""
    if baseline is None:
        return None, None, None
    if isinstance(baseline, str) and baseline in ESTIMATORS:
        return baseline, None, baseline
    cleared = {"target": None, **dict.fromkeys(TARGET_KEYWORDS)}
    if isinstance(baseline, Mapping):
        unknown = sorted(set(baseline) - set(TARGET_KEYWORDS))
        if unknown or not baseline:
            raise ConventionError(
                f"baseline= as a mapping gives a stochastic target's columns: its keys are "
                f"{', '.join(TARGET_KEYWORDS)}; got {sorted(baseline)!r}"
            )
        return None, {**cleared, **baseline}, "baseline"
    if isinstance(baseline, str | os.PathLike):
        return None, {**cleared, "target": baseline}, str(baseline)
    return None, {**cleared, "target": baseline}, "baseline"


_WHAT = {"s": "the whole shown slate", "ip": "the item at its position",
         "c": "the items from the top down to the position"}  # fmt: skip


def _estimators(estimators: str | Sequence[str]) -> list[str]:
    wanted = [estimators] if isinstance(estimators, str) else list(estimators)
    if not wanted:
        raise ConventionError(f"estimators= names at least one of {', '.join(ESTIMATORS)}")
    for e in wanted:
        if e not in ESTIMATORS:
            raise ConventionError(f"unknown estimator {e!r}; the estimators are {', '.join(ESTIMATORS)}")
    if len(set(wanted)) != len(wanted):
        raise ConventionError(f"estimators= names an estimator twice: {wanted!r}")
    return wanted


def _check_options(confidence: float, clip: float | None, ties: str, truth_duplicates: str) -> None:
    if isinstance(confidence, bool) or not isinstance(confidence, Real) or not 0 < confidence < 1:
        raise ConventionError(f"confidence must be a number between 0 and 1, got {confidence!r}")
    if clip is not None and (
        isinstance(clip, bool) or not isinstance(clip, Real) or not math.isfinite(clip) or clip <= 0
    ):
        raise ConventionError(f"clip= caps the importance weights: a number above 0, got {clip!r}")
    if truth_duplicates not in ("error", "max", "sum"):
        raise ConventionError(
            f"truth_duplicates={truth_duplicates!r} is not one of 'error', 'max', 'sum'"
        )


def _position_weights(position_weights: str | Sequence[float]) -> dict[str, Any]:
    if isinstance(position_weights, str):
        if position_weights not in ("none", "dcg"):
            raise ConventionError(
                f"position_weights={position_weights!r}: give 'none', 'dcg' or a list of numbers "
                "(position 1 first)"
            )
        return {"kind": position_weights, "values": []}
    values = list(position_weights)
    if not values or any(
        isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(v) for v in values
    ):
        raise ConventionError(
            f"position_weights= as a list needs finite numbers (position 1 first), got {position_weights!r}"
        )
    return {"kind": "list", "values": [repr(float(v)) for v in values]}


def _check(engine: Any, context: dict[str, Any], keys: list[str], position: str, role: str) -> None:
    """The input checks: the cheap screen (sql/off_policy/screen.sql.j2), and where it suspects
    a problem, the statement that finds the first one (checks.sql.j2), worded as an error."""
    suspect = engine.run(render("off_policy/screen.sql.j2", context)).column(0)[0].as_py()
    if suspect:
        _raise_problem(engine.run(render("off_policy/checks.sql.j2", context)), keys, position, role)


def _raise_problem(found: pa.Table, keys: list[str], position: str, role: str = "target") -> None:
    """A one-line error for the first problem the checks found (sql/off_policy/checks.sql.j2);
    role: how the target's problems name it ("baseline" for baseline= another target)."""
    if found.num_rows == 0:
        return
    row = found.to_pylist()[0]
    kind = row["_kind"]
    unit = ", ".join(f"{k} = {row[f'_k{i}']}" for i, k in enumerate(keys))
    at = f"{unit}, {position} = {row['_pos']}"
    if kind.startswith("b:"):
        name = kind[2:]
        users = [e for e in ESTIMATORS if KIND[e] and PROPENSITY[KIND[e]] == name]
        raise InvalidDataError(
            f"impressions: {name} = {row['_value']} for {at}: a logging propensity must be in "
            f"(0, 1] ({', '.join(users)} divide by it)"
        )
    if kind.startswith("e:"):
        whose = "a baseline target" if role == "baseline" else "a target"
        raise InvalidDataError(
            f"impressions: {kind[2:]} = {row['_value']} for {at}: {whose} propensity must be in [0, 1]"
        )
    messages = {
        "position": f"impressions: position {row['_pos']} for {unit}: positions start at 1",
        "positions": f"impressions: the positions of {unit} are not 1, 2, ... up to its number "
        "of rows (a gap or a repeated position)",
        "item": f"impressions: an item is shown twice in the slate of {unit}",
        "rewards": f"rewards: two rows for one item of {unit} (an event log? "
        "truth_duplicates='max' counts the highest grade, 'sum' adds the grades up)",
        "target": f"{role}: an item of {unit} has two rows, or a NULL, NaN or infinite score "
        "(or predicted reward)",
        "rewards:value": f"rewards: a NaN or infinite grade for an item of {unit}",
    }
    if kind.startswith("value:"):
        whose = "the baseline's " if role == "baseline" and kind[6:].startswith("target_") else ""
        raise InvalidDataError(
            f"impressions: {whose}{kind[6:]} = {row['_value']} for {at}: not a finite number"
        )
    if kind.startswith("slate:"):
        raise InvalidDataError(
            f"impressions: {kind[6:]} differs between the rows of {unit}: the propensity of the "
            "whole slate is one number per slate"
        )
    raise InvalidDataError(messages[kind])


def _table(
    result: pa.Table, wanted: list[str], segments: list[str], confidence: float, baseline: str | None = None
) -> pa.Table:
    if segments:  # the segments in their values' order, NULL first, in every engine
        values = list(zip(*(result.column(f"_g{j}").to_pylist() for j in range(len(segments))), strict=True))
        order = sorted(range(len(values)), key=lambda i: [(v is not None, v) for v in values[i]])
        result = result.take(pa.array(order, pa.int64()))
    out: dict[str, list] = {name: [] for name in OUTPUT + COMPARED}
    for r in result.to_pylist():
        n = int(r["_n"])
        if not n:
            continue
        for i, e in enumerate(wanted):
            value = r[f"_s{i}"] / n
            lo, hi = t_interval(n, value, r[f"_ss{i}"], confidence)
            out["estimator"].append(e)
            out["value"].append(value)
            out["ci_low"].append(lo)
            out["ci_high"].append(hi)
            out["units"].append(n)
            _compare(out, r, n, wanted, i, baseline, value, confidence)
            k = KIND[e]
            if k is None:
                for name in ("ess", "max_weight", "mean_weight", "support", "clipped"):
                    out[name].append(None)
                continue
            m = int(r[f"_m_{k}"])
            su, su2 = r[f"_su_{k}"], r[f"_su2_{k}"]
            mean_weight = r[f"_sw_{k}"] / m
            out["ess"].append(su * su / su2 * n / m if su2 > 0 else 0.0)
            out["max_weight"].append(r[f"_mw_{k}"])
            out["mean_weight"].append(mean_weight)
            out["support"].append(int(r[f"_sup_{k}"]) / n)
            out["clipped"].append(int(r[f"_cl_{k}"]) / m)
            if abs(mean_weight - 1) > MEAN_WEIGHT_TOLERANCE:
                segment = ", ".join(f"{s} = {r[f'_g{j}']}" for j, s in enumerate(segments))
                warnings.warn(
                    f"{e}: the mean importance weight is {mean_weight:.3g}"
                    f"{f' ({segment})' if segment else ''}, not about 1: the logged "
                    f"{PROPENSITY[k]} may be wrong, or too few units carry the weight (support "
                    f"{int(r[f'_sup_{k}']) / n:.3g}, ess {out['ess'][-1]:.3g})",
                    OffPolicyWarning,
                    stacklevel=3,
                )
    types = {"estimator": pa.string(), "units": pa.int64()}
    columns = {name: result.column(f"_g{j}").take(_rows_of(result, len(wanted)))
               for j, name in enumerate(segments)}  # fmt: skip
    types["baseline"] = pa.string()
    for name in OUTPUT + (COMPARED if baseline is not None else ()):
        columns[name] = pa.array(out[name], type=types.get(name, pa.float64()))
    return pa.table(columns)


def _bootstrap(engine: Any, context: dict[str, Any], table: pa.Table, segments: list[str],
               baseline: str | None, confidence: float, replicates: int, seed: int) -> pa.Table:
    """test='bootstrap': the intervals (and the baseline comparisons' p) from compare()'s
    bucketed Poisson bootstrap over the units (sql/compare/), whose systems are the estimators
    and whose one metric is the per-unit term: each value against a system of zeros, each delta
    against the baseline estimator."""
    dialect = get_dialect(context["dialect"])
    base = _compare_context(dialect, context, "bootstrap", confidence, replicates, seed)

    per_unit = _per_unit_terms(engine, context)

    def against(system: str) -> dict[tuple, dict]:
        literal = dialect.quote_string(system)
        systems = [{"alias": "_s0", "name": "_est", "is_text": True, "baseline": literal}]

        def run(form: str) -> pa.Table:
            statement = {**base, "exact_sums": form, "systems": systems, "per_user_sql": per_unit}
            return engine.run(render("compare/compare.sql.j2", statement))

        result = with_exact_sums(run)
        rows = compare_table(result, [SimpleNamespace(label="value")], segments, ["_est"], (system,),
                             "bootstrap", confidence, None)
        return {(*[r[s] for s in segments], r["_est"]): r for r in rows.to_pylist()}

    values = against("_zero")
    deltas = against(baseline) if baseline is not None else {}
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    for j, row in enumerate(table.to_pylist()):
        key = (*[row[s] for s in segments], row["estimator"])
        found = values.get(key)
        columns["ci_low"][j] = None if found is None else found["ci_low"]
        columns["ci_high"][j] = None if found is None else found["ci_high"]
        if baseline is not None and row["estimator"] != baseline:
            compared = deltas.get(key)
            pairs = (("delta_ci_low", "ci_low"), ("delta_ci_high", "ci_high"), ("p_value", "p_value"))
            for name, source in pairs:
                columns[name][j] = None if compared is None else compared[source]
    return pa.table({name: pa.array(v, type=table.schema.field(name).type) for name, v in columns.items()})


def _per_unit_terms(engine: Any, context: dict[str, Any]) -> str:
    """A query of the per-unit terms of every estimator (off_policy.sql.j2 with per_unit: one
    row per segment, estimator and unit), computed by a statement of their own and registered
    back as an input of the engine: compare()'s statement then reads a table, not the whole
    per-unit statement at each of its references (Spark inlines every reference to a CTE: the
    plan of the bootstrap over the inlined statement outgrew a 1 GB driver's heap)."""
    values = with_exact_sums(
        lambda form: engine.run(render("off_policy/off_policy.sql.j2", {**context, "exact_sums": form,
                                                                         "per_unit": True}))
    )  # fmt: skip
    source = engine.resolve(values, "terms")
    return render("off_policy/terms_of.sql.j2", {"source": source.sql}).rstrip("\n")


def _compare_context(dialect: Any, context: dict[str, Any], test: str, confidence: float,
                     replicates: int, seed: int, within: Sequence[str] = ()) -> dict[str, Any]:
    """compare()'s statement context (sql/compare/, its paired design) over off_policy()'s
    per-unit terms (the one metric _t): within the segments and the `within` columns of the
    per-unit rows, the units the log's."""
    names = [g["alias"] for g in context["segments"]] + list(within)
    return {
        "dialect": dialect.name,
        "within": [{"alias": f"_w{i}", "name": name, "is_text": name in within}
                   for i, name in enumerate(names)],
        "units": [{"alias": "_unit" if i == 0 else f"_unit{i}", "name": u["alias"]}
                  for i, u in enumerate(context["unit"])],
        "metrics": [{"column": "_t", "bound": 20}],
        "test": test, "replicates": replicates, "seed": seed,
        "unpaired_test": None, "design_gate": False, "covariate": None,  # (compare()'s paired design)
        "digit_places": digit_places(replicates), "poisson_thresholds": poisson_thresholds(),
        "bootstrap_buckets": draws.BOOTSTRAP_BUCKETS,
        "quantiles": [("lo", repr((1 - confidence) / 2)), ("hi", repr((1 + confidence) / 2))],
        "small_sample": significance.SMALL_SAMPLE,
    }  # fmt: skip


def _against_target(engine: Any, context: dict[str, Any], other: dict[str, Any], table: pa.Table,
                    segments: list[str], label: str | None, test: str, confidence: float,
                    replicates: int, seed: int) -> pa.Table:
    """baseline= another target: each estimate against the same estimator's estimate of the
    baseline target on the same units, by compare()'s paired comparison (sql/compare/) of the
    two targets' per-unit terms (sql/off_policy/two_targets.sql.j2): the difference of the
    values, the t interval of the per-unit differences (for the self-normalized forms, of
    their linearised terms: the delta method) or the bootstrap's, and p."""
    if not table.num_rows:
        return _with_comparison(table, None, segments, label, test, confidence)
    sides = {"target_sql": _per_unit_terms(engine, context),
             "baseline_sql": _per_unit_terms(engine, other)}  # fmt: skip
    compared = with_exact_sums(
        lambda form: engine.run(_comparison_sql(context, sides, form, test, confidence, replicates, seed))
    )
    return _with_comparison(table, compared, segments, label, test, confidence)


def _comparison_sql(context: dict[str, Any], sides: dict[str, str], form: str, test: str,
                    confidence: float, replicates: int, seed: int) -> str:
    """compare()'s statement (sql/compare/compare.sql.j2) pairing the two targets' per-unit
    terms, `sides` the queries of each (target_sql, baseline_sql): one row per (segment,
    estimator), the system _pol ('target') against 'baseline' within each estimator _est."""
    dialect = get_dialect(context["dialect"])
    base = _compare_context(dialect, context, test, confidence, replicates, seed, ["_est"])
    systems = [{"alias": "_s0", "name": "_pol", "is_text": True,
                "baseline": dialect.quote_string("baseline")}]  # fmt: skip
    per_unit = render("off_policy/two_targets.sql.j2", sides).rstrip("\n")
    statement = {**base, "exact_sums": form, "systems": systems, "per_user_sql": per_unit}
    return render("compare/compare.sql.j2", statement)


def _with_comparison(table: pa.Table, compared: pa.Table | None, segments: list[str], label: str | None,
                     test: str, confidence: float) -> pa.Table:
    """The estimates' table with the comparison's columns (COMPARED) from compare()'s rows of
    the two targets' per-unit terms (_comparison_sql's)."""
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    for name in COMPARED:
        columns[name] = [None] * table.num_rows
    if table.num_rows:
        rows = compare_table(compared, [SimpleNamespace(label="value")], [*segments, "_est"],
                             ["_pol"], ("baseline",), test, confidence, None)  # fmt: skip
        found = {(*[r[s] for s in segments], r["_est"]): r for r in rows.to_pylist()}
        for j, row in enumerate(table.to_pylist()):
            compared_row = found[(*[row[s] for s in segments], row["estimator"])]
            columns["baseline"][j] = label
            columns["baseline_value"][j] = compared_row["baseline_mean"]
            columns["delta"][j] = compared_row["delta"]
            columns["delta_ci_low"][j] = compared_row["ci_low"]
            columns["delta_ci_high"][j] = compared_row["ci_high"]
            columns["p_value"][j] = compared_row["p_value"]
    types = {"baseline": pa.string()}
    return pa.table({name: pa.array(values, type=table.schema.field(name).type if name in table.column_names
                                    else types.get(name, pa.float64()))
                     for name, values in columns.items()})  # fmt: skip


def _compare(out: dict[str, list], r: dict, n: int, wanted: list[str], i: int, baseline: str | None,
             value: float, confidence: float) -> None:
    """The paired comparison of estimate i with the baseline estimate on the same units: the
    difference of their means, its t interval and the paired t-test's p (compare()'s)."""
    if baseline is None or wanted[i] == baseline:
        for name in COMPARED:
            out[name].append(baseline if name == "baseline" else None)
        return
    b = wanted.index(baseline)
    delta = value - r[f"_s{b}"] / n
    lo, hi = t_interval(n, delta, r[f"_sd{i}"], confidence)
    out["baseline"].append(baseline)
    out["baseline_value"].append(r[f"_s{b}"] / n)
    out["delta"].append(delta)
    out["delta_ci_low"].append(lo)
    out["delta_ci_high"].append(hi)
    out["p_value"].append(t_test(n, delta, r[f"_sd{i}"]))


def _rows_of(result: pa.Table, per_row: int) -> pa.Array:
    """The result's row of each output row (segments with units, each repeated per estimator)."""
    n = result.column("_n").to_pylist()
    return pa.array([i for i, units in enumerate(n) if units for _ in range(per_row)], pa.int64())
