"""An independent numpy implementation of the unpaired design's replicate draws (docs/compare.md,
"Unpaired tests"), for tests/test_compare_unpaired.py: the hash functions are
tests/compare_reference.py's."""

from __future__ import annotations

import numpy as np

from tests.compare_reference import exponent, fmix32, poisson_weights, quantize, unit_hash


def scaled(x, y) -> tuple[np.ndarray, np.ndarray, int]:
    """Both sides' values as the integers q = v * 2^e rounded, e from the largest finite |v| of
    the two sides (the scale of the comparison: docs/compare.md), and e."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    both = np.concatenate([x, y])
    return quantize(x, over=both), quantize(y, over=both), exponent(both)


def permutation_p(units1, x, units0, y, seed: int, replicates: int) -> float:
    """The two-sample permutation: in replicate r the n1 pooled units with the smallest
    (h(u, r), q) are labelled the system's; p = min(1, 2 (1 + min(#S1_r <= S1, #S1_r >= S1)) /
    (1 + R)), S1 the sum of the system's q."""
    q = np.concatenate(scaled(x, y)[:2])
    a = unit_hash(list(units1) + list(units0), seed)
    n1 = len(x)
    observed = int(q[:n1].sum())
    at_most = at_least = 0
    for r in range(1, replicates + 1):
        h = fmix32(a ^ fmix32(np.array([r], dtype=np.uint64))[0])
        order = np.lexsort((q.astype(float), h))  # by h, then q (|q| < 2^62: exact enough to order ties of h)
        s1 = int(q[order[:n1]].sum())
        at_most += s1 <= observed
        at_least += s1 >= observed
    return min(1.0, 2 * (1 + min(at_most, at_least)) / (1 + replicates))


# the documented number of buckets per arm (docs/compare.md: 2^15, half the paired design's)
BUCKETS_PER_ARM = 2**15


def bootstrap(units1, x, units0, y, seed: int, replicates: int, confidence: float, *, buckets: int):
    """Independent bucketed Poisson bootstraps of the two sides: side s's units in B = buckets
    buckets g = a(u) mod B (BUCKETS_PER_ARM as documented), bucket g with the hash
    c = mix((g + B s) xor seed); delta*_r = T1 / W1 - T0 / W0 (in units of 2^-e, e the
    comparison's: scaled())."""
    q1, q0, e = scaled(x, y)
    totals = []
    for side, (units, q) in ((1, (units1, q1)), (0, (units0, q0))):
        g = unit_hash(units, seed) & np.uint64(buckets - 1)
        ids, which = np.unique(g, return_inverse=True)
        sums = np.zeros(len(ids), dtype=object)
        for i, v in zip(which.tolist(), q.tolist(), strict=True):
            sums[i] += v
        sizes = np.bincount(which, minlength=len(ids)).astype(np.int64)
        c = fmix32((ids + np.uint64(buckets * side)) ^ np.uint64(seed))
        h = fmix32(fmix32(np.arange(1, replicates + 1, dtype=np.uint64))[:, None] ^ c[None, :])
        w = poisson_weights(h).astype(np.int64)
        totals.append(((w.astype(object) * sums[None, :]).sum(axis=1), (w * sizes[None, :]).sum(axis=1)))
    (t1, w1), (t0, w0) = totals
    keep = (w1 > 0) & (w0 > 0)
    t1, w1, t0, w0 = t1[keep], w1[keep], t0[keep], w0[keep]
    scale = (2.0 ** (e // 2), 2.0 ** (e - e // 2))  # (2^e in two factors, as the SQL divides)
    delta = np.array([float(a) / float(b) / scale[0] / scale[1] - float(c) / float(d) / scale[0] / scale[1]
                      for a, b, c, d in zip(t1, w1, t0, w0, strict=True)])  # fmt: skip
    cross = [int(a) * int(b) - int(c) * int(d) for a, b, c, d in zip(t1, w0, t0, w1, strict=True)]
    at_most, at_least = sum(v <= 0 for v in cross), sum(v >= 0 for v in cross)
    p = min(1.0, 2 * (1 + min(at_most, at_least)) / (1 + len(cross)))
    lo, hi = np.quantile(delta, [(1 - confidence) / 2, (1 + confidence) / 2])
    return p, lo, hi


def cuped(x_by_side, y_by_side):
    """The documented CUPED: theta = sum (y - ybar)(x - xbar) / sum (x - xbar)^2 over the units of
    both sides with a covariate (x None: X = xbar, so Y' = Y); returns theta and Y' per side."""
    xs = np.array([v for side in x_by_side for v in side if v is not None], float)
    ys_all = np.concatenate([np.asarray(s, float) for s in y_by_side])
    ys = np.array([y for xside, yside in zip(x_by_side, y_by_side, strict=True)
                   for x, y in zip(xside, yside, strict=True) if x is not None], float)  # fmt: skip
    xbar, ybar = xs.mean(), ys_all.mean()
    sxx = ((xs - xbar) ** 2).sum()
    theta = ((ys - ybar) * (xs - xbar)).sum() / sxx if sxx > 0 else 0.0
    adjusted = [
        np.array([y if x is None else y - theta * (x - xbar) for x, y in zip(xside, yside, strict=True)])
        for xside, yside in zip(x_by_side, y_by_side, strict=True)
    ]
    return theta, adjusted
