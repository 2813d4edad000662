"""compare(): every system (a value of `by`) against a baseline, paired per unit or as two
independent samples (design=), with a confidence interval of the difference and a
significance test, in one SQL statement.

The per-unit values are evaluate(per_user=True)'s own statement, embedded unchanged as the
first CTE of sql/compare/compare.sql.j2; the rest of the SQL pairs, sums, ranks and draws
replicates; sqlmetrics/stats/significance.py turns the sums into p-values.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import Any

import duckdb
import pyarrow as pa

from ..engines import for_connection
from ..errors import ConventionError, DuplicateRowError, OutOfMemoryError, SqlMetricsError
from ..inputs import columns as col
from ..inputs.sources import Input
from ..names.metric_names import parse_metrics, require_means
from ..statement.baselines import baseline_literal
from ..statement.convention_groups import GROUPED_TEMPLATE, grouped_labels
from ..statement.dialects import get as get_dialect
from ..statement.duplicates import explained
from ..statement.exact_sums import has_nan, with_exact_sums
from ..statement.keywords import takes_inputs
from ..statement.partitions import check as check_partitions
from ..statement.partitions import combining_sql
from ..statement.plan import ColumnNames
from ..statement.prepare import prepare
from ..statement.templates import render
from . import corrections, draws, significance
from . import unpaired as designs
from .draws import digit_places, poisson_thresholds
from .replicate_stage import compare_in_batches

TESTS = ("t", "wilcoxon", "mannwhitney", "randomization", "bootstrap")
# each replicate is a pass over the units (randomization) or the 65,536 buckets (bootstrap; the
# unpaired design's two arms 32,768 each) of every comparison: 10,000 take about 40 s at 1M
# users (docs/compare.md), 100,000 ten times that
MAX_REPLICATES = 100_000
REPLICATES_COST = (
    " (each replicate is one more pass over the units or buckets of every comparison: 10,000 "
    "take about 40 s at 1M users; 100,000 resolve p-values down to 1e-5)"
)
OUTPUT = (
    "metric", "design", "users", "baseline_users", "baseline_mean", "mean", "delta",
    "relative_delta", "relative_ci_low", "relative_ci_high", "ci_low", "ci_high",
    "p_value", "p_adjusted", "effect_size", "wins", "ties", "losses",
    "unpaired_system", "unpaired_baseline", "srm_p_value", "theta", "variance_reduction",
)  # fmt: skip
COUNTS = ("users", "baseline_users", "wins", "ties", "losses", "unpaired_system", "unpaired_baseline")
COVARIATE_BOUND = 40  # the covariate's exact sums take the fast form for values below 2^40


@takes_inputs(last=("partitions", "progress"))
def compare(
    con: Any,
    recs: Input,
    metrics: str | Sequence[str],
    *,
    by: str | Sequence[str],
    baseline: Any,
    test: str = "t",
    confidence: float = 0.95,
    correction: str | None = "holm",
    replicates: int = 10_000,
    seed: int = 0,
    within: str | Sequence[str] | None = None,
    design: str = "auto",
    covariate: Input | None = None,
    expected_split: Mapping[Any, float] | None = None,
    partitions: int = 1,
    progress: bool = False,
    **inputs: Any,
) -> pa.Table:
    """Compare every system (each value of `by`) with `baseline`: paired per unit (user), or
    as two independent samples where each unit saw one arm (an A/B test).

    baseline: the baseline's value of `by`, of the column's type (a string, a number, a bool,
    a datetime.date or a datetime.datetime; None for NULL), a tuple of them for several by
    columns; a `within` column cannot also be a `by` column.
    design: "auto" (paired when the systems share their units, unpaired when no unit has
    values on both sides; a mix is a ConventionError), "paired" or "unpaired". Paired: the
    units of a system and of the baseline are paired where both have a value of a metric
    (evaluate(per_user=True)'s values; with missing="zero" a truth unit absent from a system's
    lists is paired with 0). test: "t" (paired Student t or Welch's t, and their intervals),
    "wilcoxon" (paired: signed ranks, t interval), "mannwhitney" (unpaired: Mann-Whitney U,
    Welch interval), "randomization" (paired sign flips, or a two-sample permutation of the
    arm labels; t/Welch interval) or "bootstrap" (a Poisson bootstrap of the units, paired in
    2^16 hashed buckets or independent per arm in 2^15 each: percentile interval and p); the
    last two draw `replicates` replicates in SQL from a hash of (seed, replicate, unit or bucket).
    correction ("holm", "bonferroni", "bh", None) adjusts the p-values of all rows together.
    within: further columns to compare inside each of their segments separately.
    covariate (unpaired): an input with the unit's key columns and one numeric column, for
    CUPED (the tests run on Y - theta (X - mean X)). expected_split (unpaired): the expected
    share of the units of each arm ({"A": 0.5, "B": 0.5}; default equal) for srm_p_value.
    partitions: evaluate the units in this many hash partitions, one statement each (DuckDB),
    as evaluate(partitions=N) does; their per-unit values, the same to the last bit, are then
    compared in one statement, so every number is the same as without partitions (progress: a
    line per partition on stderr). Every other keyword is evaluate()'s. docs/compare.md gives
    every formula.

    Returns one row per (segment, system, metric): the within and by columns, metric, design,
    users, baseline_users (paired units, or each arm's), baseline_mean, mean, delta,
    relative_delta, relative_ci_low, relative_ci_high, ci_low, ci_high, p_value, p_adjusted,
    effect_size (paired: mean(d) / sd(d); unpaired: Hedges' g), wins, ties, losses (paired),
    unpaired_system, unpaired_baseline, srm_p_value (unpaired), theta, variance_reduction
    (covariate=).

    >>> import duckdb, pyarrow as pa, sqlmetrics
    >>> recs = pa.table({"model": ["A", "A", "B", "B", "A", "B"], "user_id": [1, 1, 1, 1, 2, 2],
    ...                  "item_id": ["a", "b", "a", "b", "c", "c"], "score": [2, 1, 1, 2, 1, 1]})
    >>> truth = pa.table({"user_id": [1, 2], "item_id": ["a", "c"]})
    >>> row = sqlmetrics.compare(duckdb.connect(), recs, "mrr@2", truth=truth, by="model",
    ...                          baseline="A").to_pylist()[0]
    >>> [row[c] for c in ("model", "users", "baseline_mean", "mean", "delta", "wins", "ties", "losses")]
    ['B', 2, 1.0, 0.75, -0.25, 0, 1, 1]
    """
    check_options(test, confidence, correction, replicates, seed)
    # (numpy's numbers too: their repr is no SQL literal)
    confidence, replicates, seed = float(confidence), int(replicates), int(seed)
    designs.check_design(design, test)
    if covariate is not None and design == "paired":
        raise ConventionError(
            "covariate= (CUPED) adjusts the values of the unpaired design; a paired difference "
            "already removes what a covariate of the unit explains: use design='unpaired' or 'auto'"
        )
    systems = [by] if isinstance(by, str) else list(by or [])
    segments = [within] if isinstance(within, str) else list(within or [])
    if not systems:
        raise ConventionError("by= names the column(s) whose values are the systems compared")
    _require_distinct_columns(segments, systems)
    _require_distinct_output(systems, segments)
    baselines = tuple(baseline) if isinstance(baseline, tuple) else (baseline,)
    if len(baselines) != len(systems):
        raise ConventionError(
            f"baseline={baseline!r} gives {len(baselines)} value(s) for the {len(systems)} by "
            "column(s); give a tuple with one value per column"
        )
    split = designs.check_split(expected_split, len(systems))
    if test != "bootstrap" or design != "paired":  # t, normal (ranks), chi-square (srm_p_value)
        significance.scipy_stats(f"test={test!r}" if test != "bootstrap" else "srm_p_value")
    # the paired CTEs always (their counts decide design='auto'; test='t' renders only the
    # moments), the unpaired ones unless the design is paired
    paired_test = test if design != "unpaired" and test in designs.PAIRED_TESTS else "t"
    unpaired_test = test if design != "paired" and test in designs.UNPAIRED_TESTS else None
    if covariate is not None and unpaired_test is None:
        raise ConventionError(f"covariate= adjusts the unpaired design, and test={test!r} is paired")
    requested = parse_metrics(metrics)
    require_means(requested, "compare()")

    engine = for_connection(con, describe_only=False)
    try:
        template, context, recs_source, truth_source, _ = prepare(
            engine, recs, metrics, by=segments + systems, per_user=True, **inputs
        )
        if hasattr(engine, "report_problems_to_python"):
            # DuckDB: the input checks hand their problem to Python rather than fail the
            # statement, which would abort the caller's open transaction (as evaluate() does)
            context["fail_function"] = engine.report_problems_to_python()
        if template == GROUPED_TEMPLATE and partitions != 1:
            raise ConventionError(
                f"partitions=N splits the units of one set of conventions, and these metrics need "
                f"several ({grouped_labels(context)}); compare each set in its own call"
            )
        partitions = check_partitions(partitions, engine.dialect, context)
        dialect = get_dialect(context["dialect"])
        groups = context["groups"]
        quantiles = [("lo", repr((1 - confidence) / 2)), ("hi", repr((1 + confidence) / 2))]
        shown_units = [u for u in context["unit"] if u["shown"]]
        compare_context = {
            "dialect": dialect.name,
            "within": [
                {"alias": f"_w{i}", "name": g["name"], "is_text": g["is_text"]}
                for i, g in enumerate(groups[: len(segments)])
            ],
            "systems": [
                {
                    "alias": f"_s{i}",
                    "name": g["name"],
                    "is_text": g["is_text"],
                    "baseline": baseline_literal(dialect, recs_source, name, value, i),
                }
                for i, (g, name, value) in enumerate(
                    zip(groups[len(segments) :], systems, baselines, strict=True)
                )
            ],
            # the unit's columns of the per-unit rows (those that are not also by/within columns)
            "units": [
                {"alias": "_unit" if i == 0 else f"_unit{i}", "name": u["name"]}
                for i, u in enumerate(shown_units)
            ],
            "metrics": [
                {"column": dialect.quote_identifier(m.label), "bound": m.definition.bound}
                for m in requested
            ],
            "test": paired_test,
            "unpaired_test": unpaired_test,
            "design_gate": design == "auto",
            "covariate": None
            if covariate is None
            else _covariate(engine.resolve(covariate, "covariate"), shown_units, dialect),
            "replicates": replicates,
            "seed": seed,
            "digit_places": digit_places(replicates),
            "poisson_thresholds": poisson_thresholds(),
            "bootstrap_buckets": draws.BOOTSTRAP_BUCKETS,
            "unpaired_bootstrap_buckets": draws.UNPAIRED_BOOTSTRAP_BUCKETS,
            "quantiles": quantiles,
            "small_sample": significance.SMALL_SAMPLE,
        }

        def per_user_sql(form: str) -> str:
            forms = {**context, "exact_sums": form}
            if partitions == 1:
                return render(template, forms).rstrip("\n")
            # the per-unit values of each partition, combined where the statement stood
            return combining_sql(engine, template, forms, partitions, progress).rstrip("\n")

        def statement(form: str, per_user: str) -> str:
            text = {**compare_context, "exact_sums": form, "per_user_sql": per_user}
            return render("compare/compare.sql.j2", text)

        staged: dict[str, str] = {}

        def on_staged_values(form: str) -> pa.Table:
            # Spark: the per-unit values computed once per form and kept, the comparison
            # reading them (Spark inlines every reference to a CTE: the statement's plan held
            # the whole evaluation once per reference, hundreds of times)
            if form not in staged:
                staged[form] = engine.stage(per_user_sql(form), "per_user")
            return engine.run(statement(form, f"SELECT * FROM {staged[form]}"))

        values_in: dict[str, pa.Table] = {}

        def in_two_stages(form: str) -> pa.Table:
            # the per-unit values, then their replicates in batches on a private connection,
            # both in `form`: the call runs in the fast form, and once more in the wide one
            # if either stage gives a NaN, reusing the per-unit values if they were exact
            exact = values_in.get("fast")
            values = exact if exact is not None and not has_nan(exact) else engine.run(per_user_sql(form))
            values_in[form] = values
            if form == "fast" and has_nan(values):
                return values  # (the wide form follows)
            return compare_in_batches(con, values, compare_context, lambda attempt: attempt(form), statement)

        def run() -> pa.Table:
            replicates_paired = compare_context["test"] in ("randomization", "bootstrap")
            if replicates_paired and not compare_context.get("unpaired_test") and engine.dialect == "duckdb":
                return with_exact_sums(in_two_stages)
            if hasattr(engine, "stage"):
                return with_exact_sums(on_staged_values)
            return with_exact_sums(lambda form: engine.run(statement(form, per_user_sql(form))))

        try:
            # design='auto' with a replicate test: the paired statement alone first (the two
            # designs' replicates in one statement would double the plan), then, when no unit
            # has values on both sides, the unpaired one
            two_steps = design == "auto" and test in ("randomization", "bootstrap")
            if two_steps:
                compare_context.update(unpaired_test=None, design_gate=False)
            result = run()
            if two_steps and not any(result.column("_n").to_pylist()):
                compare_context.update(test="t", unpaired_test=test)
                result = run()
        except OutOfMemoryError:  # (the replicates' own advice)
            raise
        except duckdb.OutOfMemoryException as exc:
            raise OutOfMemoryError.hint(exc, partitions) from None
        except DuplicateRowError as exc:
            names = ColumnNames.of(inputs)
            raise explained(engine, exc, recs_source, truth_source, names, segments + systems) from None
    finally:
        engine.release()
    return _table(result, requested, segments, systems, baselines, test, confidence, correction,
                  design, split)  # fmt: skip


def check_options(test: str, confidence: float, correction: str | None, replicates: int, seed: int) -> None:
    """Refuse a test, confidence, correction, replicates or seed that compare() cannot take
    (a ConventionError); also what a report's [compare] section is checked with.

    >>> check_options("t", 0.95, "holm", 10_000, 0)
    >>> check_options("z", 0.95, "holm", 10_000, 0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sqlmetrics.errors.ConventionError: test='z' is not one of 't', 'wilcoxon', 'mannwhitney', ...
    """
    if test not in TESTS:
        raise ConventionError(f"test={test!r} is not one of {', '.join(map(repr, TESTS))}")
    corrections.check(correction)
    if isinstance(confidence, bool) or not isinstance(confidence, Real) or not 0 < confidence < 1:
        raise ConventionError(
            f"confidence must be a number between 0 and 1, got {confidence!r}"
        )
    bounds = (("replicates", replicates, 1, MAX_REPLICATES), ("seed", seed, 0, 2**32 - 1))
    for name, value, low, high in bounds:
        whole = isinstance(value, Integral) and not isinstance(value, bool)
        if not whole or not low <= value <= high:
            cost = REPLICATES_COST if name == "replicates" and whole and value > high else ""
            raise ConventionError(
                f"{name} must be a whole number from {low} to {high:,}, got {value!r}{cost}"
            )


def _require_distinct_output(systems: list[str], segments: list[str]) -> None:
    """A by or within column named like one of the result's own columns (compared without
    case, as the engines compare names) would overwrite it: refused, as evaluate() refuses a by
    column named `users`."""
    own = {name.lower() for name in OUTPUT}
    for option, names in (("by", systems), ("within", segments)):
        for name in names:
            if isinstance(name, str) and name.lower() in own:
                raise ConventionError(
                    f"{option}={name!r}: the result would have two columns named {name!r} (this "
                    f"{option} column and compare()'s own); give the {option} column another name, "
                    "e.g. in a view"
                )


def _require_distinct_columns(segments: list[str], systems: list[str]) -> None:
    """Each by and within column is named once (compared without case, as the engines do):
    a column cannot be both the systems and the segments they are compared within."""
    seen: dict[str, str] = {}
    for role, names in (("by", systems), ("within", segments)):
        for name in names:
            if not isinstance(name, str):
                continue  # find_column names the mistake
            other = seen.get(name.lower())
            if other == role:
                raise ConventionError(f"{role}= names the column {name!r} twice")
            if other:
                raise ConventionError(
                    f"within={name!r} is also a by column: by= names the systems compared, "
                    "within= the segments inside which they are compared; leave it out of one"
                )
            seen[name.lower()] = role


def baseline_from_text(text: str, column_type: str) -> Any:
    """The value of a by column of type `column_type` that `text` spells, for compare()'s
    baseline= (a number, a boolean, a date or a timestamp in ISO form); ConventionError if
    `text` is not one.

    >>> baseline_from_text("7", "BIGINT"), baseline_from_text("true", "BOOLEAN")
    (7, True)
    >>> baseline_from_text("2024-05-01", "DATE")
    datetime.date(2024, 5, 1)
    """
    spelled = text.strip()
    try:
        if column_type == "BOOLEAN":
            return {"true": True, "false": False}[spelled.lower()]
        if column_type == "DATE":
            return datetime.date.fromisoformat(spelled)
        if col.is_time(column_type):
            return datetime.datetime.fromisoformat(spelled)
        if col.is_numeric(column_type):
            number = float(spelled)
            return int(spelled) if spelled.lstrip("+-").isdigit() else number
    except (KeyError, ValueError):
        pass
    spelling = {"BOOLEAN": "true or false", "DATE": "a date, YYYY-MM-DD"}.get(
        column_type, "a date and time, YYYY-MM-DD HH:MM:SS" if col.is_time(column_type) else "a number"
    )
    raise ConventionError(f"--baseline {text!r}: the by column is {column_type}, give {spelling}")


def _covariate(source, units: list[dict], dialect) -> dict[str, Any]:
    """covariate=: its key columns (the unit's shown ones, by name) and its one other column,
    numeric, for sql/compare/unpaired.sql.j2."""
    keys = [col.find_column(source, u["found"], "covariate", "user") for u in units]
    others = [c for c in source.columns if c not in keys]
    if len(others) != 1 or not col.is_numeric(source.type_of(others[0])):
        found = ", ".join(f"{c} {source.type_of(c)}" for c in others) or "none"
        raise ConventionError(
            f"covariate ({source.label}) must have the unit's key column(s) "
            f"({', '.join(keys)}) and one numeric column; its other columns: {found}"
        )
    return {
        "source": source.sql,
        "key_columns": [dialect.quote_identifier(k) for k in keys],
        "column": dialect.quote_identifier(others[0]),
        "bound": COVARIATE_BOUND,
    }


def _table(
    result: pa.Table,
    requested,
    segments: list[str],
    systems: list[str],
    baselines: tuple,
    test: str,
    confidence: float,
    correction: str | None,
    design: str = "paired",
    split: dict[tuple, float] | None = None,
) -> pa.Table:
    kind = result.column("_row_kind").to_pylist()
    rows = result.filter(pa.array([k == 0 for k in kind], pa.bool_())).to_pylist()
    details: dict[tuple, list[float]] = {}
    keys = [f"_w{i}" for i in range(len(segments))] + [f"_s{i}" for i in range(len(systems))]
    for r in result.filter(pa.array([k == 1 for k in kind], pa.bool_())).to_pylist():
        details.setdefault((*[r[k] for k in keys], r["_k"]), []).append(r["_detail"])
    if not rows:
        raise SqlMetricsError(
            f"no system to compare with baseline={_show(baselines)}: the by column(s) "
            f"{', '.join(systems)} have no other value among the evaluated units"
        )
    if all(r["_baseline_units"] == 0 for r in rows):
        raise SqlMetricsError(
            f"baseline={_show(baselines)} is not a value of {', '.join(systems)} among the "
            "evaluated units (of any segment)"
        )
    paired = sum(r["_n"] for r in rows)
    one_sided = sum(r["_system_units"] + r["_baseline_units"] - 2 * r["_n"] for r in rows)
    design = designs.resolve(design, test, paired, one_sided)
    if any(r.get("_u_covariate_duplicates") for r in rows):
        raise DuplicateRowError(
            f"covariate: {rows[0]['_u_covariate_duplicates']} unit(s) have several rows; give one "
            "value per unit"
        )
    _require_units(rows, keys, requested, segments, systems, design)
    sizes = designs.arm_sizes(rows, keys, len(segments), baselines) if design == "unpaired" else {}
    out: dict[str, list] = {name: [] for name in OUTPUT}
    for r in rows:
        if design == "paired":
            stats = _paired_row(r, test, confidence, details.get((*[r[c] for c in keys], r["_k"]), []))
        else:
            stats = _unpaired_row(r, test, confidence)
            segment = tuple(r[k] for k in keys[: len(segments)])
            stats["srm_p_value"] = designs.srm_p_value(sizes[segment], split)
        stats["metric"] = requested[r["_k"]].label
        stats["design"] = design
        for name in OUTPUT:
            if name != "p_adjusted":
                out[name].append(stats.get(name))
    out["p_adjusted"] = corrections.adjust(out["p_value"], correction)
    stats_rows = pa.array([k == 0 for k in kind], pa.bool_())
    columns = {
        name: result.column(key).filter(stats_rows)
        for name, key in zip(segments + systems, keys, strict=True)
    }
    types = {name: pa.int64() for name in COUNTS}
    types["metric"] = types["design"] = pa.string()
    for name in OUTPUT:
        columns[name] = pa.array(out[name], type=types.get(name, pa.float64()))
    return pa.table(columns)


def _require_units(rows, keys, requested, segments, systems, design) -> None:
    """No row of NULLs for lack of units: every comparison needs a unit on each side."""
    for r in rows:
        empty = not r["_n"] if design == "paired" else not (r.get("_u_n1") and r.get("_u_n0"))
        if empty:
            where = ", ".join(f"{name}={r[k]!r}" for name, k in zip(segments + systems, keys, strict=True))
            what = "has no unit on one of its sides"
            if design == "paired":
                what = "has no unit with values on both sides"
            raise ConventionError(
                f"the comparison {where} with the baseline {what} for {requested[r['_k']].label} "
                f"(design={design!r}: {r['_system_units']} unit(s) of the system and "
                f"{r['_baseline_units']} of the baseline have a value); compare segments and "
                "systems that have units on both sides"
            )


def _paired_row(r: dict, test: str, confidence: float, details: list[float]) -> dict[str, Any]:
    """One paired comparison's columns from its sums (the units are paired: n > 0)."""
    n = r["_n"]
    mean_d = r["_sum_d"] / n
    ss = r["_ss"] or 0.0
    ci: tuple[float | None, float | None] = (None, None)
    if test == "bootstrap" and n < 2:  # one unit's replicates all equal it: no evidence
        p = None
    elif test == "bootstrap":
        reps = r["_replicates"] or 0
        p = significance.bootstrap(reps, r["_at_most_0"], r["_at_least_0"])
        ci = (
            significance.percentile(reps, float(_q(confidence, "lo")), r["_lo_a"], r["_lo_b"]),
            significance.percentile(reps, float(_q(confidence, "hi")), r["_hi_a"], r["_hi_b"]),
        )
    else:
        ci = significance.t_interval(n, mean_d, ss, confidence)
        if test == "t":
            p = significance.t_test(n, mean_d, ss)
        elif test == "wilcoxon":
            p = significance.wilcoxon(n, r["_nonzero"], r["_r_plus2"] or 0.0, r["_tie_term"] or 0.0, details)
        else:
            p = significance.randomization(r["_replicates"], r["_extreme"])
    base, mean = r["_sum_y"] / n, r["_sum_x"] / n
    sd = math.sqrt(ss / (n - 1)) if n > 1 else None
    effect = None
    if sd:
        effect = mean_d / sd
    elif sd == 0 and mean_d == 0:
        effect = 0.0
    relative = (None, None)
    if n > 1 and r["_ss_x"] is not None:
        # the covariance of x and y from the spreads of x, y and d = x - y
        cov = (r["_ss_x"] + r["_ss_y"] - ss) / 2 / (n - 1) / n
        relative = designs.relative_interval(
            mean, r["_ss_x"] / (n - 1) / n, base, r["_ss_y"] / (n - 1) / n, cov, confidence
        )
    return {
        "users": n, "baseline_users": n, "baseline_mean": base, "mean": mean, "delta": mean_d,
        "relative_delta": mean_d / base if base else None,
        "relative_ci_low": relative[0], "relative_ci_high": relative[1],
        "ci_low": ci[0], "ci_high": ci[1], "p_value": p, "effect_size": effect,
        "wins": r["_wins"] or 0, "ties": r["_ties"] or 0, "losses": r["_losses"] or 0,
        "unpaired_system": r["_system_units"] - n, "unpaired_baseline": r["_baseline_units"] - n,
    }  # fmt: skip


def _unpaired_row(r: dict, test: str, confidence: float) -> dict[str, Any]:
    """One unpaired comparison's columns from each side's sums (of Y', with covariate=)."""
    n1, n0 = r["_u_n1"], r["_u_n0"]
    mean1, mean0 = r["_u_sum1"] / n1, r["_u_sum0"] / n0
    ss1, ss0 = r["_u_ss1"] or 0.0, r["_u_ss0"] or 0.0
    delta = mean1 - mean0
    p, low, high = designs.welch(n1, mean1, ss1, n0, mean0, ss0, confidence)
    if test == "mannwhitney":
        p = designs.mann_whitney(n1, n0, r["_u_r1x2"], r["_u_tie_term"] or 0.0)
    elif test in ("randomization", "bootstrap"):
        p = significance.bootstrap(r["_u_replicates"] or 0, r["_u_at_most"], r["_u_at_least"])
    if test == "bootstrap":
        reps = r["_u_replicates"] or 0
        low = significance.percentile(reps, float(_q(confidence, "lo")), r["_u_lo_a"], r["_u_lo_b"])
        high = significance.percentile(reps, float(_q(confidence, "hi")), r["_u_hi_a"], r["_u_hi_b"])
    relative = (None, None)
    if n1 > 1 and n0 > 1:
        relative = designs.relative_interval(
            mean1, ss1 / (n1 - 1) / n1, mean0, ss0 / (n0 - 1) / n0, 0.0, confidence
        )
    cuped = "_u_theta" in r
    # Hedges' g: the difference over the pooled spread of the values themselves (Y, not Y')
    spread1, spread0 = (r["_u_ss_y1"] or 0.0, r["_u_ss_y0"] or 0.0) if cuped else (ss1, ss0)
    out = {
        "users": n1, "baseline_users": n0, "baseline_mean": mean0, "mean": mean1, "delta": delta,
        "relative_delta": delta / mean0 if mean0 else None,
        "relative_ci_low": relative[0], "relative_ci_high": relative[1],
        "ci_low": low, "ci_high": high, "p_value": p,
        "effect_size": designs.hedges_g(n1, n0, delta, spread1, spread0),
        "unpaired_system": r["_system_units"] - r["_n"],
        "unpaired_baseline": r["_baseline_units"] - r["_n"],
    }  # fmt: skip
    if cuped:
        out["theta"] = r["_u_theta"] if r["_u_theta"] is not None else 0.0
        raw = spread1 + spread0
        out["variance_reduction"] = 1 - (ss1 + ss0) / raw if raw else None
    return out


def _q(confidence: float, which: str) -> float:
    return (1 - confidence) / 2 if which == "lo" else (1 + confidence) / 2


def _show(baselines: tuple) -> str:
    return repr(baselines[0]) if len(baselines) == 1 else repr(baselines)
