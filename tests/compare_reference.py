"""An independent numpy implementation of compare()'s replicate draws and statistics (the
definitions of the README's "Comparing models"), for tests/test_compare.py."""

from __future__ import annotations

import hashlib
import math

import numpy as np

M32 = np.uint64(0xFFFFFFFF)


def fmix32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.uint64) & M32
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x85EBCA6B)) & M32
    x ^= x >> np.uint64(13)
    x = (x * np.uint64(0xC2B2AE35)) & M32
    x ^= x >> np.uint64(16)
    return x


def unit_hash(units, seed: int) -> np.ndarray:
    keys = np.array([int(hashlib.md5(str(u).encode()).hexdigest()[:8], 16) for u in units], dtype=np.uint64)
    return fmix32(keys ^ np.uint64(seed))


def draws(units, seed: int, replicates: int) -> np.ndarray:
    """h(u, r) for r = 1..replicates (rows) and the units (columns)."""
    a = unit_hash(units, seed)
    g = fmix32(np.arange(1, replicates + 1, dtype=np.uint64))
    return fmix32(g[:, None] ^ a[None, :])


def poisson_weights(h: np.ndarray) -> np.ndarray:
    cdf, term = [], 0.0
    for j in range(12):
        term += math.exp(-1) / math.factorial(j)
        cdf.append(math.floor(term * 2**32))
    return np.searchsorted(np.array(cdf, dtype=np.uint64), h, side="right")


def exponent(d: np.ndarray) -> int:
    """e of the scale 2^e: 61 - floor(log2 m), m the largest finite |d| (exactly, by frexp);
    1000 when m is below 2^-938 (or 0)."""
    finite = np.abs(d[np.isfinite(d)])
    m = float(finite.max()) if len(finite) else 0.0
    return 61 - (math.frexp(m)[1] - 1) if m >= 2.0**-938 else 1000


def quantize(d: np.ndarray, over: np.ndarray | None = None) -> np.ndarray:
    """d * 2^e rounded half away from zero, as Python ints (sums of them are exact), e and the
    least |d| taken from the values `over` (default: d itself; the unpaired design: both
    sides); a |d| below 2^-64 of the largest is 0; a non-finite difference adds 0 (it has no q
    in the SQL, and bootstrap() leaves it out of the sizes)."""
    over = d if over is None else over
    e = exponent(over)
    finite = np.abs(over[np.isfinite(over)])
    m = float(finite.max()) if len(finite) else 0.0
    least = m * 2.0**-64 if m >= 2.0**-900 else 0.0
    out = []
    for x in d.tolist():
        x = x if math.isfinite(x) and abs(x) >= least else 0.0
        out.append(int(math.copysign(math.floor(abs(math.ldexp(x, e)) + 0.5), x)))
    return np.array(out, dtype=object)


def sign_bits(units, seed: int, replicates: int) -> np.ndarray:
    """Bit j of h(u, b) is the sign bit of replicate 32 (b - 1) + j + 1."""
    blocks = draws(units, seed, (replicates + 31) // 32)  # h(u, b), b = 1 .. blocks
    bits = (blocks[:, None, :] >> np.arange(32, dtype=np.uint64)[None, :, None]) & np.uint64(1)
    return bits.reshape(-1, len(units))[:replicates]


def randomization_p(units, d, seed: int, replicates: int) -> float:
    q = quantize(np.asarray(d, dtype=float))
    signs = np.where(sign_bits(units, seed, replicates) == 0, 1, -1)
    t = (signs.astype(object) * q[None, :]).sum(axis=1)
    return (1 + sum(abs(x) >= abs(q.sum()) for x in t)) / (1 + replicates)


def bootstrap(units, d, seed: int, replicates: int, confidence: float, buckets: int = 2**16):
    """The bucketed Poisson bootstrap: units in buckets a(u) mod `buckets`, each bucket's sum of
    the quantized differences and its size weighted by Poisson(1) of h(g, r) = mix(c(g) xor
    mix(r)), c(g) = mix(g xor seed)."""
    d = np.asarray(d, dtype=float)
    e = exponent(d)
    q = quantize(d)
    g = unit_hash(units, seed) & np.uint64(buckets - 1)
    ids, which = np.unique(g, return_inverse=True)
    sums = np.zeros(len(ids), dtype=object)
    for i, x in zip(which.tolist(), q.tolist(), strict=True):
        sums[i] += x
    sizes = np.bincount(which, weights=np.isfinite(d), minlength=len(ids)).astype(np.int64)
    c = fmix32(ids ^ np.uint64(seed))
    h = fmix32(fmix32(np.arange(1, replicates + 1, dtype=np.uint64))[:, None] ^ c[None, :])
    w = poisson_weights(h).astype(np.int64)
    s, n = (w.astype(object) * sums[None, :]).sum(axis=1), (w * sizes[None, :]).sum(axis=1)
    keep = n > 0
    s, n = s[keep], n[keep]
    scale = (2.0 ** (e // 2), 2.0 ** (e - e // 2))  # (2^e in two factors, as the SQL divides)
    delta = np.array([float(x) / float(y) / scale[0] / scale[1] for x, y in zip(s, n, strict=True)])
    p = min(1.0, 2 * (1 + min(np.count_nonzero(s <= 0), np.count_nonzero(s >= 0))) / (1 + len(s)))
    lo, hi = np.quantile(delta, [(1 - confidence) / 2, (1 + confidence) / 2])
    return p, lo, hi
