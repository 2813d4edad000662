"""Short numpy references of the papers' formulas for the measures over item groups (issue 37,
item 4), written from the papers, not from the SQL: calibration (Steck 2018)."""

from __future__ import annotations

import numpy as np


def genre_distribution(items, genres: dict) -> np.ndarray | None:
    """Steck's p(g|i) averaged over `items` (each once, weight 1): p(g|i) = w_ig / sum_g w_ig
    for the item's genre weights w; items without a genre (no weights, or all 0) are left out.
    None when no item has a genre."""
    rows = [genres[i] / genres[i].sum() for i in items if i in genres and genres[i].sum() > 0]
    return np.mean(rows, axis=0) if rows else None


def calibration(history_items, top_items, genres: dict, alpha: float = 0.01) -> float | None:
    """Steck (RecSys 2018) eq. 5: C_KL(p || q~) = sum_g p(g|u) log(p(g|u) / q~(g|u)),
    q~ = (1 - alpha) q + alpha p; p from the distinct history items, q from the top-k list with
    uniform rank weights (q = 0 when no list item has a genre). None without p."""
    p = genre_distribution(set(history_items), genres)
    if p is None:
        return None
    q = genre_distribution(list(top_items), genres)
    if q is None:
        q = np.zeros_like(p)
    mixed = (1 - alpha) * q + alpha * p
    support = p > 0
    return float(np.sum(p[support] * np.log(p[support] / mixed[support])))
