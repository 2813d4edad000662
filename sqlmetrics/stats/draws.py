"""The constants of the replicate draws (sql/compare/draws.sql.j2): rendered as integer
literals, so every engine draws the same replicates from the same seed."""

from __future__ import annotations

from decimal import Context, Decimal, localcontext
from math import floor

# the bootstrap resamples the units in this many hashed buckets (a power of two): each replicate
# costs this many rows at most, whatever the number of units (sql/compare/draws.sql.j2)
BOOTSTRAP_BUCKETS = 2**16
# the unpaired bootstrap's buckets per arm (sql/compare/unpaired_draws.sql.j2): half the paired
# design's, so that both arms together hold as many as its one set, and a replicate as many rows
UNPAIRED_BOOTSTRAP_BUCKETS = BOOTSTRAP_BUCKETS // 2
POISSON_MAX = 12  # weights 0..12; P(Poisson(1) > 11) is 1e-9, below the 2^-32 grid's reach


def poisson_thresholds() -> list[int]:
    """floor(F(j) * 2^32) for j = 0 .. POISSON_MAX - 1, F the Poisson(1) distribution function,
    computed in 50-digit decimals (no platform's floating point decides a threshold).

    >>> poisson_thresholds()[:3]
    [1580030168, 3160060337, 3950075421]
    """
    # a context of its own: the caller's thread keeps its precision, and theirs decides nothing
    with localcontext(Context(prec=50)):
        e_inv = Decimal(-1).exp()
        out, term, total = [], e_inv, Decimal(0)
        for j in range(POISSON_MAX):
            if j:
                term /= j
            total += term
            out.append(floor(total * 2**32))
    return out


def digit_places(replicates: int) -> int:
    """How many decimal digits number the replicates 1..replicates (0..10^p - 1, plus one)."""
    return max(1, len(str(replicates - 1)))
