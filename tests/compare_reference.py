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


def quantize(d: np.ndarray) -> np.ndarray:
    # round half away from zero, as the engines' round() does
    return (np.sign(d) * np.floor(np.abs(d) * 2.0**32 + 0.5)).astype(np.int64)


def sign_bits(units, seed: int, replicates: int) -> np.ndarray:
    """Bit j of h(u, b) is the sign bit of replicate 32 (b - 1) + j + 1."""
    blocks = draws(units, seed, (replicates + 31) // 32)  # h(u, b), b = 1 .. blocks
    bits = (blocks[:, None, :] >> np.arange(32, dtype=np.uint64)[None, :, None]) & np.uint64(1)
    return bits.reshape(-1, len(units))[:replicates]


def randomization_p(units, d, seed: int, replicates: int) -> float:
    q = quantize(np.asarray(d, dtype=float))
    signs = np.where(sign_bits(units, seed, replicates) == 0, 1, -1)
    t = (signs * q[None, :]).sum(axis=1)
    return (1 + np.count_nonzero(np.abs(t) >= abs(q.sum()))) / (1 + replicates)


def bootstrap(units, d, seed: int, replicates: int, confidence: float, buckets: int = 2**16):
    """The bucketed Poisson bootstrap: units in buckets a(u) mod `buckets`, each bucket's sum of
    the quantized differences and its size weighted by Poisson(1) of h(g, r) = mix(c(g) xor
    mix(r)), c(g) = mix(g xor seed)."""
    q = quantize(np.asarray(d, dtype=float))
    g = unit_hash(units, seed) & np.uint64(buckets - 1)
    ids, which = np.unique(g, return_inverse=True)
    sums = np.zeros(len(ids), dtype=np.int64)
    np.add.at(sums, which, q)
    sizes = np.bincount(which, minlength=len(ids)).astype(np.int64)
    c = fmix32(ids ^ np.uint64(seed))
    h = fmix32(fmix32(np.arange(1, replicates + 1, dtype=np.uint64))[:, None] ^ c[None, :])
    w = poisson_weights(h).astype(np.int64)
    s, n = (w * sums[None, :]).sum(axis=1), (w * sizes[None, :]).sum(axis=1)
    keep = n > 0
    s, n = s[keep], n[keep]
    delta = s.astype(float) / n.astype(float) / 2.0**32
    p = min(1.0, 2 * (1 + min(np.count_nonzero(s <= 0), np.count_nonzero(s >= 0))) / (1 + len(s)))
    lo, hi = np.quantile(delta, [(1 - confidence) / 2, (1 + confidence) / 2])
    return p, lo, hi
