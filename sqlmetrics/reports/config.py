"""A report's configuration, read from TOML and checked before anything runs.

name = "daily_ab"                        # the report's name in the results table
warehouse = "warehouse.duckdb"           # DuckDB file: sources are read and results kept here
recommendations = "recommendations"      # a table or view, or a Parquet/CSV path or glob
truth = "events"                         # optional, same kinds
time_column = "day"                      # DATE or TIMESTAMP, in both sources
period = "1 day"                         # or "1 week", "1 month"
timezone = "UTC"                         # the zone whose calendar days make the periods
metrics = ["ndcg@10", "map@10"]
by = ["model"]                           # the segments
results_table = "sqlmetrics_results"

[columns]       # user, item, score, rank, relevance, action (as in sqlmetrics.evaluate);
                # user = ["user_id", "session_id"]: one ranked list per (user, session)
[grades]        # action -> grade, with columns.action: purchase = 3, view = 1
[conventions]   # profile, ties, threshold, gain, empty, missing, ap_denominator, short_lists,
                # duplicates, truth_duplicates
history = "history"                      # optional inputs of the beyond-accuracy metrics, read whole
catalog = "items"                        #   (not cut to the period), as evaluate()'s history=,
item_features = "item_features"          #   catalog=, item_features= (features = its column),
item_genres = "genres"                   #   item_genres= (genre, genre_weight = its columns),
group_target = "targets"                 #   group_target= (awrf's target distribution)
subtopics = "judgements"                 # the intent-aware measures' subtopic judgements, read
                                         #   whole, as evaluate()'s subtopics= (not with truth)
baseline = "A"                           # rbo@k's reference system: a value of the by column(s)

[compare]       # baseline = "A" (a value of the by column(s) not in `within`), test, confidence,
                # correction, replicates, seed, within, results_table, design, covariate,
                # expected_split = {A = 0.5, B = 0.5}: see CompareSection
[off_policy]    # impressions = "impressions" (required), target, target_by, baseline, estimators,
                # rewards, reward, action, grades, relevance, user, by, confidence, test,
                # replicates, seed, position_weights, clip, time_column, results_table, and
                # [off_policy.columns] (item, position, pscore, ..., and a stochastic
                # target's target_pscore, ...): see OffPolicySection
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from ..errors import SqlMetricsError
from ..inputs.identifiers import quote_table_name
from ..names.conventions import Conventions
from ..names.metric_names import parse_metrics, require_means
from ..names.profiles import DEFAULT_PROFILE, KEYWORDS, conventions_by_metric
from ..stats.compare import check_options
from ..stats.off_policy import (
    DEFAULT_ESTIMATORS,
    ESTIMATORS,
    TARGET_KEYWORDS,
    _check_options,
    _estimators,
    _position_weights,
)
from ..stats.unpaired import check_design, check_split
from .periods import parse_unit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ReportConfigError(SqlMetricsError):
    """The report configuration is missing a key, has an unknown one, or a bad value."""


_TOP = {
    "name", "warehouse", "recommendations", "truth", "time_column", "truth_time_column",
    "period", "timezone", "metrics", "by", "results_table", "columns", "grades", "conventions",
    "compare", "off_policy", "history", "catalog", "item_features", "features", "item_genres",
    "genre", "genre_weight", "group_target", "baseline", "subtopics",
}  # fmt: skip
# evaluate()'s inputs of the beyond-accuracy metrics and the intent-aware measures a report names
# at the top level: tables or views of the warehouse, or Parquet/CSV paths or globs, read whole
# each period (another input keyword of evaluate() is one more name here)
INPUT_KEYS = ("history", "catalog", "item_features", "item_genres", "group_target", "subtopics")
# the column names of those inputs, each with its input
INPUT_COLUMNS = {"features": "item_features", "genre": "item_genres", "genre_weight": "item_genres"}
_COMPARE = {
    "baseline", "test", "confidence", "correction", "replicates", "seed", "within", "results_table",
    "design", "covariate", "expected_split",
}  # fmt: skip
# [compare] keys added after reports existed, with their defaults: in the hash only when set
_LATER_COMPARE = {"design": "auto", "covariate": None, "expected_split": None}
_COLUMNS = {"user", "item", "score", "rank", "relevance", "action"}
_CONVENTIONS = set(KEYWORDS)  # ties, threshold, gain, ...
# conventions added after reports existed, with their defaults: they enter the hash only when
# set otherwise, so that the periods of older configs are not all redone
_LATER = {"truth_duplicates": "error", "short_lists": "pad"}
_PROFILE = "profile"  # [conventions] profile = "recommenders": another tool's conventions
DEFAULT_RESULTS_TABLE = "sqlmetrics_results"
DEFAULT_COMPARISONS_TABLE = "sqlmetrics_comparisons"
DEFAULT_OFF_POLICY_TABLE = "sqlmetrics_off_policy"
_OFF_POLICY = {
    "impressions", "target", "target_by", "baseline", "estimators", "rewards", "reward", "action",
    "grades", "relevance", "user", "by", "confidence", "test", "replicates", "seed",
    "position_weights", "clip", "time_column", "results_table", "columns",
}  # fmt: skip
# [off_policy.columns]: off_policy()'s column keywords other than the unit's key and the reward
_OFF_POLICY_COLUMNS = {
    "item", "position", "pscore", "pscore_item_position", "pscore_cascade", "score", "rank",
    "predicted_reward", *TARGET_KEYWORDS,
}  # fmt: skip
DEFAULT_TIMEZONE = "UTC"
_MACHINE_ZONES = {"localtime", "posixrules", "Factory"}  # files that depend on the machine


@dataclass(frozen=True)
class CompareSection:
    """A report's [compare] section: every system (a value of the report's `by` columns that
    are not `within`) against `baseline`, each period, with sqlmetrics.compare().

    >>> config = config_from_dict({"name": "r", "warehouse": "w.duckdb", "recommendations": "recs",
    ...     "time_column": "day", "metrics": ["ndcg@10"], "by": ["country", "model"],
    ...     "compare": {"baseline": "A", "within": "country", "correction": "none"}})
    >>> config.compare.systems, config.compare.options()["baseline"], config.compare.correction
    (('model',), 'A', None)
    """

    baseline: tuple[Any, ...]
    systems: tuple[str, ...]
    within: tuple[str, ...] = ()
    test: str = "t"
    confidence: float = 0.95
    correction: str | None = "holm"
    replicates: int = 10_000
    seed: int = 0
    results_table: str = DEFAULT_COMPARISONS_TABLE
    design: str = "auto"
    covariate: str | None = None  # a table or view of the warehouse, or a Parquet/CSV path
    expected_split: dict[str, float] | None = None

    def options(self) -> dict[str, Any]:
        """sqlmetrics.stats.compare's keywords of the section (by, baseline, test, ...)."""
        return {
            "by": list(self.systems),
            "baseline": self.baseline[0] if len(self.baseline) == 1 else self.baseline,
            "within": list(self.within) or None,
            "test": self.test,
            "confidence": self.confidence,
            "correction": self.correction,
            "replicates": self.replicates,
            "seed": self.seed,
            "design": self.design,
            "covariate": self.covariate,
            "expected_split": self.expected_split,
        }

    def decisive(self) -> dict[str, Any]:
        """What decides the numbers: all but the results table (the keys added later only when
        set otherwise than their defaults, so that older configs keep their hash)."""
        return {
            k: v
            for k, v in self.options().items()
            if k != "baseline" and (k not in _LATER_COMPARE or v != _LATER_COMPARE[k])
        } | {"baseline": list(self.baseline)}


@dataclass(frozen=True)
class OffPolicySection:
    """A report's [off_policy] section: each period, sqlmetrics.off_policy() over the period's
    impressions, of the target ranking (each value of `target_by` a target of its own), its rows
    kept in `results_table`; or a stochastic target (target None), whose propensities are
    columns of the impressions ([off_policy.columns] target_pscore, ...: off_policy()'s
    target_* keywords). `time_column` (the report's by default) slices the impressions,
    the target and the rewards to the period. baseline: an estimator's name (e.g. "logging"),
    or a table of `target_by` values (another target: each target against it); with a
    stochastic target, a table of target_* columns (another stochastic target).

    >>> config = config_from_dict({"name": "r", "warehouse": "w.duckdb", "recommendations": "recs",
    ...     "time_column": "day", "metrics": ["ndcg@10"],
    ...     "off_policy": {"impressions": "impressions", "target_by": "model", "reward": "click",
    ...                    "baseline": {"model": "A"}, "user": ["user_id", "day"]}})
    >>> section = config.off_policy
    >>> section.target, section.baseline_target, section.options()["user"]
    ('recs', ('A',), ['user_id', 'day'])
    """

    impressions: str
    target: str | None  # None: a stochastic target (keywords' target_* columns of the impressions)
    time_column: str
    target_by: tuple[str, ...] = ()
    baseline: str | None = None  # an estimator's name
    baseline_target: tuple[str, ...] | None = None  # values of target_by: another target
    # a stochastic target's baseline: another stochastic target (its target_* columns)
    baseline_columns: dict[str, str] | None = None
    estimators: tuple[str, ...] = ()
    rewards: str | None = None
    keywords: dict[str, Any] = field(default_factory=dict)  # off_policy()'s other keywords
    results_table: str = DEFAULT_OFF_POLICY_TABLE

    def options(self) -> dict[str, Any]:
        """sqlmetrics.off_policy()'s keywords of the section, but the inputs and the baseline."""
        return dict(self.keywords)

    def decisive(self) -> dict[str, Any]:
        """What decides the numbers: all but the results table."""
        return {
            "impressions": self.impressions, "target": self.target, "time_column": self.time_column,
            "target_by": list(self.target_by), "baseline": self.baseline,
            "baseline_target": None if self.baseline_target is None else list(self.baseline_target),
            "estimators": list(self.estimators), "rewards": self.rewards,
            "keywords": dict(sorted(self.keywords.items())),
            # (only when set: the hashes of the sections without it are unchanged)
            **({"baseline_columns": dict(sorted(self.baseline_columns.items()))}
               if self.baseline_columns is not None else {}),
        }  # fmt: skip


@dataclass(frozen=True)
class ReportConfig:
    """Everything a report run needs. `options()` gives sqlmetrics.evaluate's keywords."""

    name: str
    warehouse: str
    recommendations: str
    metrics: tuple[str, ...]
    time_column: str
    truth: str | None = None
    truth_time_column: str | None = None
    period: str = "day"
    timezone: str = DEFAULT_TIMEZONE
    by: tuple[str, ...] = ()
    results_table: str = DEFAULT_RESULTS_TABLE
    columns: dict[str, str | list[str]] = field(default_factory=dict)
    grades: dict[str, float] = field(default_factory=dict)
    conventions: Conventions = field(default_factory=Conventions)  # trec_eval's, then the keys
    profile: str | None = None  # [conventions] profile; then `explicit` are the keys given
    explicit: dict[str, Any] = field(default_factory=dict)
    compare: CompareSection | None = None
    off_policy: OffPolicySection | None = None
    inputs: dict[str, str] = field(default_factory=dict)  # INPUT_KEYS given, and features
    baseline: tuple[Any, ...] | None = None  # rbo@k's reference system: a value per by column
    source: str = "<dict>"  # where it was read from, for messages

    @property
    def truth_time(self) -> str:
        return self.truth_time_column or self.time_column

    def options(self) -> dict[str, Any]:
        """Keyword arguments of sqlmetrics.evaluate (columns, grades, conventions, by)."""
        options: dict[str, Any] = {**self.columns, **self.inputs, "by": list(self.by)}
        if self.baseline is not None:
            options["baseline"] = self.baseline[0] if len(self.baseline) == 1 else self.baseline
        if self.grades:
            options["relevance"] = dict(self.grades)
        if self.profile is None:
            options.update(
                {k: v for k, v in dataclasses.asdict(self.conventions).items() if k in KEYWORDS}
            )
        else:  # the profile's conventions, overridden by the keys given
            options.update(self.explicit, profile=self.profile)
        return options

    @property
    def hash(self) -> str:
        """sha256 of what decides the numbers: sources, time columns, period, time zone, metrics,
        segments, columns, grades and conventions (defaults filled in). Not the name, the
        warehouse path or the results table, so moving the warehouse does not redo finished
        periods. The time zone enters only when it is not the default UTC, truth_duplicates
        only when it is not "error", and the [compare] section only when there is one (it adds
        the intervals of the means), so the configs of before they existed keep their hash
        (their periods are not all redone).

        >>> a = config_from_dict({"name": "r", "warehouse": "w.duckdb", "recommendations": "recs",
        ...                       "time_column": "day", "metrics": ["ndcg@10"]})
        >>> b = config_from_dict({"name": "r", "warehouse": "w.duckdb", "recommendations": "recs",
        ...                       "time_column": "day", "metrics": ["ndcg@10"],
        ...                       "conventions": {"ties": "item_desc"}})
        >>> a.hash == b.hash, len(a.hash)
        (True, 64)
        """
        decisive = {
            "recommendations": self.recommendations,
            "truth": self.truth,
            "time_column": self.time_column,
            "truth_time_column": self.truth_time,
            "period": self.period,
            **({"timezone": self.timezone} if self.timezone != DEFAULT_TIMEZONE else {}),
            "metrics": list(self.metrics),
            "by": list(self.by),
            "columns": dict(sorted(self.columns.items())),
            "grades": dict(sorted(self.grades.items())),
            "conventions": {
                name: getattr(self.conventions, name)
                for name in sorted(_CONVENTIONS)
                if name not in _LATER or getattr(self.conventions, name) != _LATER[name]
            },
            **({"compare": self.compare.decisive()} if self.compare else {}),
            **({"off_policy": self.off_policy.decisive()} if self.off_policy else {}),
            **({"inputs": dict(sorted(self.inputs.items()))} if self.inputs else {}),
            **({"baseline": list(self.baseline)} if self.baseline is not None else {}),
        }
        if self.profile is not None:  # (so configs without a profile keep their hash)
            decisive["profile"] = self.profile
        text = json.dumps(decisive, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()


def load_config(path: str | Path) -> ReportConfig:
    """Read and check a report configuration file (TOML).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "r.toml")
    >>> _ = open(p, "w").write('''name = "daily"
    ... warehouse = "w.duckdb"
    ... recommendations = "recs"
    ... truth = "events"
    ... time_column = "day"
    ... metrics = ["ndcg@10", "map@10"]
    ... by = "model"
    ... [columns]
    ... action = "event_type"
    ... [grades]
    ... purchase = 3
    ... view = 1
    ... ''')
    >>> config = load_config(p)
    >>> config.by, config.options()["relevance"], config.period
    (('model',), {'purchase': 3, 'view': 1}, 'day')
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportConfigError(f"no report configuration file {str(path)!r}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportConfigError(f"cannot read {str(path)!r}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ReportConfigError(f"{path}: not valid TOML: {exc}") from None
    return config_from_dict(data, source=str(path))


def _unknown_keys(data: dict[str, Any], allowed: set[str], where: str, source: str) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(allowed))})"
            raise ReportConfigError(f"{source}: unknown key {where}{key!r}{hint}")


def _text(data: dict[str, Any], key: str, source: str, required: bool, where: str = "") -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            raise ReportConfigError(f"{source}: missing key {where}{key!r}")
        return None
    if not isinstance(value, str) or not value.strip():
        raise ReportConfigError(f"{source}: {where}{key} must be a non-empty string, got {value!r}")
    return value


def _names(value: Any, key: str, source: str) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
        raise ReportConfigError(f"{source}: {key} must be a string or a list of strings, got {value!r}")
    return tuple(values)


def _require_one_set_of_means(parsed, profile: str | None, explicit: dict, source: str) -> None:
    """[compare] stores every mean's interval, which needs means (no num_* sums, no gm_map) over
    one set of users (no profile that gives a metric conventions of its own)."""
    try:
        require_means(parsed, "[compare] (the intervals of the means)")
    except SqlMetricsError as exc:
        raise ReportConfigError(f"{source}: metrics: {exc}") from None
    if len(set(conventions_by_metric(profile, explicit, [m.name for m in parsed]))) > 1:
        raise ReportConfigError(
            f"{source}: [compare] pairs the metrics over one set of users, and profile {profile!r} "
            "gives these metrics different conventions; compare them in reports of their own"
        )


def config_from_dict(data: dict[str, Any], source: str = "<dict>") -> ReportConfig:
    """Check a configuration given as a dict (the parsed TOML); see load_config."""
    if not isinstance(data, dict):
        raise ReportConfigError(f"{source}: a report configuration is a table of keys")
    _no_nul(data, source, "")
    _unknown_keys(data, _TOP, "", source)
    name = _text(data, "name", source, True)
    warehouse = _text(data, "warehouse", source, True)
    recommendations = _text(data, "recommendations", source, True)
    time_column = _text(data, "time_column", source, True)
    metrics = _names(data.get("metrics"), "metrics", source)
    try:
        parsed = parse_metrics(list(metrics))
    except SqlMetricsError as exc:
        raise ReportConfigError(f"{source}: metrics: {exc}") from None
    texts = [m.label for m in parsed if m.definition.aggregate == "none"]
    if texts:  # relstring: a text per user, no value of a period
        raise ReportConfigError(
            f"{source}: metrics: {', '.join(texts)} is a text per user with no value of a group; "
            "a report stores numbers"
        )
    own = [m.label for m in parsed if m.overrides]
    if own:  # the results table keys a value by (metric, k): one set of conventions per report
        raise ReportConfigError(
            f"{source}: metrics: {', '.join(own)} carry their own conventions; a report has one "
            "set, in [conventions] (e.g. threshold = 2)"
        )
    results_table = _text(data, "results_table", source, False) or DEFAULT_RESULTS_TABLE
    try:
        quote_table_name(results_table)
        period = parse_unit(data.get("period", "1 day"))
    except SqlMetricsError as exc:
        raise ReportConfigError(f"{source}: {exc}") from None
    timezone = check_timezone(_text(data, "timezone", source, False) or DEFAULT_TIMEZONE, source)

    columns = _table(data, "columns", source)
    _unknown_keys(columns, _COLUMNS, "columns.", source)
    for key in columns:
        if key == "user" and isinstance(columns[key], list):
            # the unit's key, several columns; one in a list is that column (the same hash)
            unit = _names(columns[key], "columns.user", source)
            if not unit:
                raise ReportConfigError(f"{source}: columns.user must name at least one column")
            columns = {**columns, "user": unit[0] if len(unit) == 1 else list(unit)}
            continue
        _text(columns, key, source, True, "columns.")
    grades = _table(data, "grades", source)
    for action, grade in grades.items():
        if isinstance(grade, bool) or not isinstance(grade, (int, float)):
            raise ReportConfigError(f"{source}: grades.{action} must be a number, got {grade!r}")
    if grades and "action" not in columns:
        raise ReportConfigError(f"{source}: [grades] needs columns.action (the column they grade)")
    if grades and "relevance" in columns:
        raise ReportConfigError(f"{source}: give either columns.relevance or [grades], not both")
    if "action" in columns and not grades:
        raise ReportConfigError(f"{source}: columns.action needs [grades], e.g. purchase = 3")

    raw_conventions = _table(data, "conventions", source)
    _unknown_keys(raw_conventions, _CONVENTIONS | {_PROFILE}, "conventions.", source)
    explicit = {k: v for k, v in raw_conventions.items() if k != _PROFILE}
    profile = raw_conventions.get(_PROFILE)
    try:
        if profile is None or profile == DEFAULT_PROFILE:
            profile = None
            conventions = Conventions(**explicit)
        else:
            # the profile's conventions before the metrics' own (what the hash records)
            [conventions] = conventions_by_metric(profile, explicit, [""])
    except SqlMetricsError as exc:
        raise ReportConfigError(f"{source}: conventions: {exc}") from None

    by = _names(data.get("by", []), "by", source)
    compare = _compare_section(data, by, results_table, source)
    if compare is not None:  # (it stores each mean's interval: evaluate(confidence=) per period)
        _require_one_set_of_means(parsed, profile, explicit, source)
    inputs = {key: data[key] for key in (*INPUT_KEYS, *INPUT_COLUMNS) if key in data}
    for key in inputs:
        _text(inputs, key, source, True)
    for key, of in INPUT_COLUMNS.items():
        if key in inputs and of not in inputs:
            raise ReportConfigError(f"{source}: {key} names a column of {of}; give {of}")
    if "subtopics" in inputs and data.get("truth") is not None:
        raise ReportConfigError(
            f"{source}: subtopics is the truth of the report's metrics too (an item's grade: its "
            "highest over the unit's subtopics); give subtopics or truth, not both"
        )
    baseline = _baseline(data, by, parsed, compare, source)
    return ReportConfig(
        name=name,
        warehouse=warehouse,
        recommendations=recommendations,
        metrics=metrics,
        time_column=time_column,
        truth=_text(data, "truth", source, False),
        truth_time_column=_text(data, "truth_time_column", source, False),
        period=period,
        timezone=timezone,
        by=by,
        results_table=results_table,
        columns=dict(columns),
        grades=dict(grades),
        conventions=conventions,
        profile=profile,
        explicit=explicit,
        compare=compare,
        off_policy=_off_policy_section(data, recommendations, time_column, results_table,
                                       compare.results_table if compare else None, source),
        inputs=inputs,
        baseline=baseline,
        source=source,
    )


def _baseline(data: dict[str, Any], by: tuple[str, ...], parsed: list, compare: CompareSection | None,
              source: str) -> tuple[Any, ...] | None:
    """rbo@k's reference system: one value (a string or a number) per by column, given exactly
    when an rbo metric is (evaluate()'s baseline=; [compare] has its own baseline)."""
    rbo = [m.label for m in parsed if "baseline" in m.definition.needs]
    raw = data.get("baseline")
    if raw is None:
        if rbo:
            raise ReportConfigError(
                f"{source}: {', '.join(rbo)} compares each system's lists with a reference "
                "system's: give baseline = <its value of the by column>, e.g. by = [\"model\"] "
                "and baseline = \"A\""
            )
        return None
    if not rbo:
        raise ReportConfigError(
            f"{source}: baseline names the reference system of rbo@k, and no rbo metric is in "
            "metrics ([compare] takes its own baseline)"
        )
    values = tuple(raw) if isinstance(raw, list) else (raw,)
    if not by or len(values) != len(by) or not all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values
    ):
        raise ReportConfigError(
            f"{source}: baseline must give one value (a string or a number) for each of the "
            f"report's by columns ({', '.join(by) or 'none: set by'}), got {raw!r}"
        )
    if compare is not None:
        raise ReportConfigError(
            f"{source}: [compare] cannot compare {', '.join(rbo)} (each system's value is "
            "already against the baseline's lists); report them without [compare]"
        )
    return values


def _compare_section(
    data: dict[str, Any], by: tuple[str, ...], results_table: str, source: str
) -> CompareSection | None:
    """The [compare] section, checked: `within` among `by`, the other by columns the systems,
    one baseline value for each; correction = "none" for no correction (TOML has no null)."""
    if "compare" not in data:
        return None
    section = _table(data, "compare", source)
    _unknown_keys(section, _COMPARE, "compare.", source)
    within = _names(section.get("within", []), "compare.within", source)
    outside = [w for w in within if w not in by]
    if outside:
        raise ReportConfigError(
            f"{source}: compare.within {outside[0]!r} is not one of the report's by columns "
            f"({', '.join(by) or 'none'})"
        )
    systems = tuple(b for b in by if b not in within)
    if not systems:
        raise ReportConfigError(
            f"{source}: [compare] compares the values of the report's by columns (the systems): "
            "set by, e.g. by = [\"model\"], with columns that are not compare.within"
        )
    if "baseline" not in section:
        raise ReportConfigError(f"{source}: missing key compare.baseline (a value of {', '.join(systems)})")
    raw = section["baseline"]
    baseline = tuple(raw) if isinstance(raw, list) else (raw,)
    if len(baseline) != len(systems) or not all(
        isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in baseline
    ):
        raise ReportConfigError(
            f"{source}: compare.baseline must give one value (a string or a number) for each of "
            f"the systems' column(s) {', '.join(systems)}, got {raw!r}"
        )
    correction = section.get("correction", "holm")
    if correction not in ("holm", "bonferroni", "bh", "none"):
        raise ReportConfigError(
            f"{source}: compare.correction = {correction!r} is not one of \"holm\", \"bonferroni\", "
            "\"bh\" or \"none\""
        )
    options = {
        "test": section.get("test", "t"),
        "confidence": section.get("confidence", 0.95),
        "correction": None if correction == "none" else correction,
        "replicates": section.get("replicates", 10_000),
        "seed": section.get("seed", 0),
    }
    table = _text(section, "results_table", source, False, "compare.") or DEFAULT_COMPARISONS_TABLE
    design = section.get("design", "auto")
    covariate = _text(section, "covariate", source, False, "compare.") or None
    split = section.get("expected_split")
    try:
        check_options(**options)
        check_design(design, options["test"])
        if split is not None and not isinstance(split, dict):
            raise ReportConfigError(
                "expected_split is a table of shares, e.g. expected_split = {A = 0.5, B = 0.5}"
            )
        check_split(split, len(systems))
        if quote_table_name(table) == quote_table_name(results_table):
            raise ReportConfigError("compare.results_table must differ from results_table")
    except SqlMetricsError as exc:
        raise ReportConfigError(f"{source}: compare: {exc}") from None
    return CompareSection(
        baseline=baseline, systems=systems, within=within, results_table=table, design=design,
        covariate=covariate, expected_split=split, **options,
    )  # fmt: skip


def _off_policy_section(
    data: dict[str, Any], recommendations: str, time_column: str, results_table: str,
    comparisons_table: str | None, source: str,
) -> OffPolicySection | None:  # fmt: skip
    """The [off_policy] section, checked as off_policy() checks its options (its inputs are
    checked when the report runs, as the report's own sources are)."""
    if "off_policy" not in data:
        return None
    section = _table(data, "off_policy", source)
    _unknown_keys(section, _OFF_POLICY, "off_policy.", source)
    where = "off_policy."
    impressions = _text(section, "impressions", source, True, where)
    target: str | None = _text(section, "target", source, False, where) or recommendations
    target_by = _names(section.get("target_by", []), "off_policy.target_by", source)
    columns = _table(section, "columns", source)
    _unknown_keys(columns, _OFF_POLICY_COLUMNS, "off_policy.columns.", source)
    for key in columns:
        _text(columns, key, source, True, "off_policy.columns.")
    stochastic = sorted(set(columns) & set(TARGET_KEYWORDS))
    baseline_columns = None
    if stochastic:  # a stochastic target: its own propensities, columns of the impressions
        given = [k for k in ("target", "target_by") if k in section]
        raw = section.get("baseline")
        if isinstance(raw, dict) and raw and set(raw) <= set(TARGET_KEYWORDS):
            # another stochastic target: its target_* columns of the impressions
            for key in raw:
                _text(raw, key, source, True, "off_policy.baseline.")
            baseline_columns = dict(raw)
        elif isinstance(raw, dict):
            given.append("baseline as a table of target_by values")
        if given:
            raise ReportConfigError(
                f"{source}: off_policy.columns.{stochastic[0]} gives a stochastic target (its "
                f"propensities in the impressions), but the section also gives {', '.join(given)} "
                "(a target ranking): give one or the other"
            )
        target = None
    keywords: dict[str, Any] = dict(columns)
    for key in ("reward", "action", "relevance"):
        if key in section:
            keywords[key] = _text(section, key, source, True, where)
    grades = section.get("grades")
    if grades is not None:
        if not isinstance(grades, dict) or not grades or not all(
            isinstance(g, (int, float)) and not isinstance(g, bool) for g in grades.values()
        ):
            raise ReportConfigError(
                f"{source}: off_policy.grades must be a table of numbers, e.g. {{click = 1}}"
            )
        if "relevance" in keywords or "action" not in keywords:
            raise ReportConfigError(f"{source}: off_policy.grades needs off_policy.action and no relevance")
        keywords["relevance"] = dict(grades)
    rewards = _text(section, "rewards", source, False, where)
    if rewards is None and ("action" in keywords or "relevance" in keywords):
        raise ReportConfigError(
            f"{source}: off_policy.action and relevance grade off_policy.rewards; give it"
        )
    if "user" in section:
        user = _names(section["user"], "off_policy.user", source)
        keywords["user"] = user[0] if len(user) == 1 else list(user)
    by = _names(section.get("by", []), "off_policy.by", source)
    if by:
        keywords["by"] = list(by)
    raw = section.get("baseline")
    baseline, baseline_target = None, None
    if baseline_columns is not None:
        pass
    elif isinstance(raw, dict):
        if sorted(raw) != sorted(target_by) or not all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in raw.values()
        ):
            raise ReportConfigError(
                f"{source}: off_policy.baseline as a table gives a value of each off_policy.target_by "
                f"column ({', '.join(target_by) or 'none: set target_by'}), got {raw!r}"
            )
        baseline_target = tuple(str(raw[c]) for c in target_by)
    elif raw is not None:
        if raw not in ESTIMATORS:
            raise ReportConfigError(
                f"{source}: off_policy.baseline = {raw!r}: give an estimator ({', '.join(ESTIMATORS)}) "
                "or a table of off_policy.target_by values (another target), e.g. {model = \"A\"}"
            )
        baseline = raw
    options = {
        "confidence": section.get("confidence", 0.95), "test": section.get("test", "t"),
        "replicates": section.get("replicates", 10_000), "seed": section.get("seed", 0),
    }  # fmt: skip
    table = _text(section, "results_table", source, False, where) or DEFAULT_OFF_POLICY_TABLE
    try:
        estimators = tuple(_estimators(section.get("estimators", list(DEFAULT_ESTIMATORS))))
        if options["test"] not in ("t", "bootstrap"):
            raise ReportConfigError(f"test = {options['test']!r}: 't' or 'bootstrap'")
        check_options(options["test"], options["confidence"], None, options["replicates"], options["seed"])
        position_weights = section.get("position_weights", "none")
        _position_weights(position_weights)
        clip = section.get("clip")
        _check_options(options["confidence"], clip, "item_desc", "error")
        if quote_table_name(table) in {quote_table_name(t) for t in (results_table, comparisons_table) if t}:
            raise ReportConfigError("off_policy.results_table must differ from the report's other tables")
    except SqlMetricsError as exc:
        raise ReportConfigError(f"{source}: off_policy: {exc}") from None
    keywords.update(options, position_weights=position_weights, clip=clip)
    return OffPolicySection(
        impressions=impressions, target=target,
        time_column=_text(section, "time_column", source, False, where) or time_column,
        target_by=target_by, baseline=baseline, baseline_target=baseline_target,
        baseline_columns=baseline_columns,
        estimators=estimators, rewards=rewards, keywords=keywords, results_table=table,
    )  # fmt: skip


def check_timezone(name: str, where: str = "--timezone") -> str:
    """An IANA time zone name ('UTC', 'Europe/Paris'), as given; anything else is refused.

    >>> check_timezone("America/New_York")
    'America/New_York'
    """
    try:
        if name in _MACHINE_ZONES:
            raise ValueError(name)
        ZoneInfo(name)
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        raise ReportConfigError(
            f"{where}: timezone {name!r} is not a time zone name like 'UTC' or 'Europe/Paris'"
        ) from None
    return name


def _no_nul(value: Any, source: str, where: str) -> None:
    """Refuse a NUL character in any key or text: no SQL literal or name can hold one."""
    if isinstance(value, dict):
        for key, item in value.items():
            _no_nul(key, source, where)
            _no_nul(item, source, f"{where}{key}.")
    elif isinstance(value, list):
        for item in value:
            _no_nul(item, source, where)
    elif isinstance(value, str) and "\x00" in value:
        raise ReportConfigError(f"{source}: {where}{value!r} holds a NUL character, which SQL cannot")


def _table(data: dict[str, Any], key: str, source: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ReportConfigError(f"{source}: [{key}] must be a table of keys, got {value!r}")
    return value
