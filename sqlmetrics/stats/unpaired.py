"""The statistics of compare()'s designs from the sums the SQL returns (sql/compare/
unpaired.sql.j2 for the unpaired design): Welch's t and interval, Mann-Whitney's U, Hedges'
g, the delta-method interval of the relative difference, the sample-ratio check, and which
design a call uses. Distribution functions come from scipy (sqlmetrics[stats]); nothing here
loops over units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from statistics import NormalDist
from typing import Any

from ..errors import ConventionError
from .significance import scipy_stats

DESIGNS = ("auto", "paired", "unpaired")
PAIRED_TESTS = ("t", "wilcoxon", "randomization", "bootstrap")
UNPAIRED_TESTS = ("t", "mannwhitney", "randomization", "bootstrap")
SRM_ALPHA = 0.001  # reports warn of a sample-ratio mismatch below this srm_p_value
EXACT_MANN_WHITNEY = 8  # scipy's method='auto' is exact when a side has at most 8 and no ties


def check_design(design: str, test: str) -> None:
    """Refuse a design that is not one of DESIGNS, or a test the design does not have.

    >>> check_design("unpaired", "wilcoxon")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sqlmetrics.errors.ConventionError: test='wilcoxon' is a paired test (...); design='unpaired' ...
    """
    if design not in DESIGNS:
        raise ConventionError(f"design={design!r} is not one of {', '.join(map(repr, DESIGNS))}")
    if design == "unpaired" and test not in UNPAIRED_TESTS:
        raise ConventionError(
            f"test={test!r} is a paired test (signed ranks of each unit's difference); "
            "design='unpaired' compares two independent samples: use test='mannwhitney', 't', "
            "'randomization' or 'bootstrap'"
        )
    if design == "paired" and test not in PAIRED_TESTS:
        raise ConventionError(
            f"test={test!r} is an unpaired test (ranks of two independent samples); "
            "design='paired' compares each unit's two values: use test='wilcoxon', 't', "
            "'randomization' or 'bootstrap'"
        )


def resolve(design: str, test: str, paired: int, one_sided: int) -> str:
    """The design a call uses: `paired` values are on both sides of a comparison, `one_sided`
    on one side only (summed over the comparisons and metrics of the call).

    >>> resolve("auto", "t", 0, 400), resolve("auto", "t", 400, 0)
    ('unpaired', 'paired')
    """
    if design == "auto":
        if paired and one_sided:
            raise ConventionError(
                f"design='auto' found {paired} unit values on both sides of a comparison and "
                f"{one_sided} on one side only (summed over the comparisons and metrics): choose "
                "design='paired' (the units on both sides, the others counted in "
                "unpaired_system/unpaired_baseline) or design='unpaired' (each side's units as "
                "an independent sample, as in an A/B test)"
            )
        design = "paired" if paired else "unpaired"
    elif design == "paired" and not paired:
        raise ConventionError(
            f"design='paired': no unit has values on both sides of any comparison ({one_sided} "
            "unit values on one side only: each unit saw one arm?); use design='unpaired'"
        )
    if design == "unpaired" and test not in UNPAIRED_TESTS:
        raise ConventionError(
            f"test={test!r} pairs units, and no unit has values on both sides (the design is "
            "unpaired): use test='mannwhitney', 't', 'randomization' or 'bootstrap'"
        )
    if design == "paired" and test not in PAIRED_TESTS:
        raise ConventionError(
            f"test={test!r} compares independent samples, and the units are paired (every unit "
            "has values on both sides): use test='wilcoxon', 't', 'randomization' or 'bootstrap', "
            "or design='unpaired'"
        )
    return design


def welch(n1: int, mean1: float, ss1: float, n0: int, mean0: float, ss0: float,
          confidence: float) -> tuple[float | None, float | None, float | None]:  # fmt: skip
    """Welch's two-sided p (scipy.stats.ttest_ind(equal_var=False)) and the Welch-Satterthwaite
    interval of mean1 - mean0, from each side's count, mean and squared deviations. Both sides'
    values all equal: p = 1 and [0, 0] when the means are equal, else p = 0 and [d, d].

    >>> p, lo, hi = welch(3, 2.0, 2.0, 3, 1.0, 2.0, 0.95)
    >>> round(p, 6), round(lo, 6), round(hi, 6)
    (0.287864, -1.266958, 3.266958)
    """
    if n1 < 2 or n0 < 2:
        return None, None, None
    delta = mean1 - mean0
    a, b = ss1 / (n1 - 1) / n1, ss0 / (n0 - 1) / n0
    se = math.sqrt(a + b)
    if se == 0:
        return (1.0 if delta == 0 else 0.0), delta, delta
    df = (a + b) ** 2 / (a * a / (n1 - 1) + b * b / (n0 - 1))
    t = scipy_stats("test='t'").t
    p = min(1.0, float(2 * t.sf(abs(delta) / se, df)))
    half = float(t.ppf((1 + confidence) / 2, df)) * se
    return p, delta - half, delta + half


def mann_whitney(n1: int, n0: int, r1x2: float, tie_term: float) -> float | None:
    """Two-sided p of scipy.stats.mannwhitneyu(x, y) (use_continuity=True, method='auto') from
    twice the rank sum of x (the n1 values of side 1, ranked with the n0 of side 0, ties
    averaged) and sum over tie groups of t^3 - t. Exact (scipy's own distribution) when a side
    has at most 8 values and nothing is tied; else the normal approximation with the tie
    correction. Every value tied: p = 1 (scipy's z is -inf)."""
    if n1 == 0 or n0 == 0:
        return None
    stats = scipy_stats("test='mannwhitney'")
    u1 = r1x2 / 2 - n1 * (n1 + 1) / 2
    if min(n1, n0) <= EXACT_MANN_WHITNEY and tie_term == 0:
        x, y = _samples_with_u(n1, n0, round(u1))
        return float(stats.mannwhitneyu(x, y, method="exact").pvalue)
    n = n1 + n0
    u = max(u1, n1 * n0 - u1)
    s = math.sqrt(n1 * n0 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
    if s == 0:
        return 1.0
    z = (u - n1 * n0 / 2 - 0.5) / s
    return min(1.0, max(0.0, float(2 * stats.norm.sf(z))))


def _samples_with_u(n1: int, n0: int, u1: int) -> tuple[list[int], list[int]]:
    """Two samples without ties whose U of the first is u1 (the exact distribution depends on
    n1, n0 and U only): the first takes ranks 1..n1, each then moved up as far as needed."""
    ranks, left = list(range(1, n1 + 1)), u1
    for i in range(n1 - 1, -1, -1):
        step = min(left, n0)
        ranks[i] += step
        left -= step
    taken = set(ranks)
    return ranks, [r for r in range(1, n1 + n0 + 1) if r not in taken]


def hedges_g(n1: int, n0: int, delta: float, ss1: float, ss0: float) -> float | None:
    """Hedges' g: delta over the pooled standard deviation sqrt((ss1 + ss0) / (n1 + n0 - 2)),
    times J = 1 - 3 / (4 (n1 + n0) - 9); 0 when every value and delta are 0-spread and 0.

    >>> round(hedges_g(3, 3, 1.0, 2.0, 2.0), 6)
    0.8
    """
    if n1 + n0 < 3:
        return None
    sd = math.sqrt((ss1 + ss0) / (n1 + n0 - 2))
    if sd == 0:
        return 0.0 if delta == 0 else None
    return (1 - 3 / (4 * (n1 + n0) - 9)) * delta / sd


def relative_interval(mean1: float, var_mean1: float, mean0: float, var_mean0: float,
                      cov_means: float, confidence: float) -> tuple[float | None, float | None]:  # fmt: skip
    """The delta-method interval of mean1 / mean0 - 1: R = mean1 / mean0, Var(R) ~ (var_mean1 -
    2 R cov_means + R^2 var_mean0) / mean0^2, R - 1 +- z se (z the normal quantile); None when
    mean0 is 0.

    >>> lo, hi = relative_interval(1.1, 0.01, 1.0, 0.01, 0.0, 0.95)
    >>> round(lo, 6), round(hi, 6)
    (-0.19137, 0.39137)
    """
    if mean0 == 0 or any(v is None for v in (var_mean1, var_mean0, cov_means)):
        return None, None
    r = mean1 / mean0
    var = (var_mean1 - 2 * r * cov_means + r * r * var_mean0) / (mean0 * mean0)
    half = NormalDist().inv_cdf((1 + confidence) / 2) * math.sqrt(max(var, 0.0))
    return r - 1 - half, r - 1 + half


def check_split(expected_split: Mapping[Any, float] | None, systems: int) -> dict[tuple, float] | None:
    """expected_split= as {(by values as text): share}, checked (positive finite shares).

    >>> check_split({"A": 1, 2: 3}, 1)
    {('A',): 1.0, ('2',): 3.0}
    """
    if expected_split is None:
        return None
    if not isinstance(expected_split, Mapping) or not expected_split:
        raise ConventionError(
            "expected_split= maps each arm (a value of by; a tuple for several columns) to its "
            "expected share of the units, e.g. {'A': 0.5, 'B': 0.5}"
        )
    out: dict[tuple, float] = {}
    for key, share in expected_split.items():
        # (matched as text: a report's TOML or the command line gives a numeric arm as text)
        arm = tuple(str(v) for v in key) if isinstance(key, tuple) else (str(key),)
        if len(arm) != systems:
            raise ConventionError(
                f"expected_split: {key!r} gives {len(arm)} value(s) for {systems} by column(s)"
            )
        if isinstance(share, bool) or not isinstance(share, Real) or not math.isfinite(share) or share <= 0:
            raise ConventionError(
                f"expected_split: the share of {key!r} must be a positive number, got {share!r}"
            )
        out[arm] = float(share)
    return out


def srm_p_value(sizes: Mapping[tuple, int], expected: Mapping[tuple, float] | None) -> float | None:
    """The chi-square goodness-of-fit p (scipy.stats.chisquare) of the units per arm against the
    expected shares (default: equal shares of the arms present); an arm named in `expected`
    without units counts 0; an arm with units not named there is an error.

    >>> round(srm_p_value({("A",): 510, ("B",): 490}, None), 6)  # scipy.stats.chisquare([510, 490])
    0.527089
    """
    if expected is None:
        expected = {arm: 1.0 for arm in sizes}
    unnamed = [arm for arm in sizes if arm not in expected]
    if unnamed:
        shown = unnamed[0][0] if len(unnamed[0]) == 1 else unnamed[0]
        raise ConventionError(
            f"expected_split does not name the arm {shown!r}, which has {sizes[unnamed[0]]} units; "
            "give every arm's share"
        )
    arms = list(expected)
    if len(arms) < 2:
        return None
    total, weight = sum(sizes.values()), sum(expected.values())
    if total == 0:
        return None
    stat = sum(
        (sizes.get(a, 0) - total * expected[a] / weight) ** 2 / (total * expected[a] / weight) for a in arms
    )
    return float(scipy_stats("srm_p_value").chi2.sf(stat, len(arms) - 1))


def arm_sizes(
    rows: Sequence[dict], keys: Sequence[str], segments: int, baseline: tuple
) -> dict[tuple, dict[tuple, int]]:
    """Per segment (the within values), the units of each arm (system rows and the baseline)."""
    out: dict[tuple, dict[tuple, int]] = {}
    for r in rows:
        if r.get("_u_size1") is None:
            continue
        segment = tuple(r[k] for k in keys[:segments])
        arms = out.setdefault(segment, {})
        arms[tuple(str(r[k]) for k in keys[segments:])] = r["_u_size1"]
        arms[tuple(str(v) for v in baseline)] = r["_u_size0"] or 0
    return out


def srm_warnings(table: Any, columns: Sequence[str]) -> list[str]:
    """What a report says of a compare() table whose sample-ratio check fails (srm_p_value
    below SRM_ALPHA): one line per segment, naming its arms' units (columns: the segment
    columns). The arms' units are not in the expected split, so the assignment, not the
    systems, may explain the differences.

    >>> import pyarrow as pa
    >>> srm_warnings(pa.table({"model": ["B"], "users": [300], "baseline_users": [500],
    ...                        "srm_p_value": [1e-19]}), [])  # doctest: +ELLIPSIS
    ['sample-ratio mismatch: srm_p_value 1e-19 < 0.001 (B: 300 units, baseline: 500): check ...']
    """
    out: dict[tuple, str] = {}
    for r in table.to_pylist():
        p = r.get("srm_p_value")
        if p is None or p >= SRM_ALPHA:
            continue
        segment = tuple(r[c] for c in columns)
        where = ", ".join(f"{c}={v}" for c, v in zip(columns, segment, strict=True))
        system = next(v for k, v in r.items() if k not in columns)  # the first by column's value
        if segment not in out:
            out[segment] = (
                f"sample-ratio mismatch{' in ' + where if where else ''}: srm_p_value {p:.2g} < "
                f"{SRM_ALPHA:g} ({system}: {r['users']} units, baseline: {r['baseline_users']}): "
                "check the assignment before reading the comparison"
            )
    return list(out.values())

