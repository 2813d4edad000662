"""p-values and intervals from the sufficient statistics that the comparison SQL returns.

The SQL sums over units (sql/compare/); this module only applies distribution functions to
those sums, and they come from scipy (the optional extra `sqlmetrics[stats]`): nothing here
loops over units.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal, localcontext
from typing import Any

from ..errors import MissingExtraError

SMALL_SAMPLE = 50  # scipy.stats.wilcoxon's method='auto' is exact (or a permutation) up to here


def scipy_stats(what: str) -> Any:
    """scipy.stats, or a MissingExtraError naming the extra that installs it."""
    try:
        from scipy import stats
    except ImportError:
        raise MissingExtraError.scipy(what) from None
    return stats


def t_interval(n: int, mean: float, ss: float, confidence: float) -> tuple[float | None, float | None]:
    """Student's t interval of a mean from n values whose squared deviations sum to ss.

    >>> lo, hi = t_interval(3, 2.0, 2.0, 0.95)   # the values 1, 2, 3
    >>> round(lo, 6), round(hi, 6)
    (-0.484138, 4.484138)
    """
    if n < 2:
        return None, None
    sd = math.sqrt(ss / (n - 1))
    if sd == 0:
        return mean, mean
    half = float(scipy_stats("confidence intervals").t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return mean - half, mean + half


def t_test(n: int, mean: float, ss: float) -> float | None:
    """Two-sided p of the paired t-test (scipy.stats.ttest_rel). When every difference is the
    same, scipy's t is 0/0 or +-inf: here p = 1 when they are all 0 and 0 otherwise."""
    if n < 2:
        return None
    sd = math.sqrt(ss / (n - 1))
    if sd == 0:
        return 1.0 if mean == 0 else 0.0
    t = mean / (sd / math.sqrt(n))
    return min(1.0, float(2 * scipy_stats("test='t'").t.sf(abs(t), n - 1)))


def wilcoxon(n: int, nonzero: int, r_plus2: float, tie_term: float, details: list[float]) -> float | None:
    """Two-sided p of the Wilcoxon signed-rank test with scipy's defaults (zero_method='wilcox',
    correction=False, method='auto'). Above SMALL_SAMPLE units: the normal approximation with
    the tie correction, from the rank sums of the SQL; up to it, scipy's own exact or
    permutation distribution over the differences (`details`, at most 50 of them).
    Every difference 0: p = 1 (scipy gives NaN)."""
    if n == 0:
        return None
    if nonzero == 0:
        return 1.0
    stats = scipy_stats("test='wilcoxon'")
    if n <= SMALL_SAMPLE:
        return float(stats.wilcoxon(details).pvalue)
    mean = nonzero * (nonzero + 1) / 4
    se = math.sqrt((nonzero * (nonzero + 1) * (2 * nonzero + 1) - tie_term / 2) / 24)
    z = (r_plus2 / 2 - mean) / se
    return min(1.0, float(2 * stats.norm.sf(abs(z))))


def randomization(replicates: int | None, extreme: int | None) -> float | None:
    """(1 + replicates at least as extreme as the observed sum) / (1 + replicates)."""
    if not replicates:
        return None
    return (1 + extreme) / (1 + replicates)


def bootstrap(replicates: int | None, at_most_0: int | None, at_least_0: int | None) -> float | None:
    """Two-sided percentile-bootstrap p: twice the smaller share of replicate deltas on either
    side of 0 (0 itself on both), each count plus one over replicates plus one, at most 1."""
    if not replicates:
        return None
    return min(1.0, 2 * (1 + min(at_most_0, at_least_0)) / (1 + replicates))


def percentile(replicates: int, q: float, below: float | None, above: float | None) -> float | None:
    """numpy.quantile's 'linear' percentile from the two order statistics around it."""
    if not replicates or below is None:
        return None
    # the position as the SQL computes it: q's literal times an integer, in exact decimals
    # (exact in a context of its own, whatever precision the caller's thread has set)
    with localcontext(Context(prec=50)):
        h = (replicates - 1) * Decimal(repr(q))
        fraction = float(h - math.floor(h))
    if above is None or fraction == 0:
        return below
    return below + fraction * (above - below)
