"""Multiple-testing corrections over all the p-values of one compare() call.

Undefined p-values (None) are not tests: they stay None and do not count in m.

>>> adjust([0.01, 0.04, 0.03, None], "holm")
[0.03, 0.06, 0.06, None]
>>> adjust([0.01, 0.04, 0.03], "bh")
[0.03, 0.04, 0.04]
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import ConventionError

METHODS = ("holm", "bonferroni", "bh", None)


def check(method: str | None) -> str | None:
    if method not in METHODS:
        raise ConventionError(
            f"correction={method!r} is not one of 'holm', 'bonferroni', 'bh' or None"
        )
    return method


def adjust(pvalues: Sequence[float | None], method: str | None) -> list[float | None]:
    """The adjusted p-values, in the order given (statsmodels' multipletests definitions)."""
    check(method)
    tested = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = list(pvalues)
    m = len(tested)
    if method is None or m == 0:
        return out
    if method == "bonferroni":
        for i in tested:
            out[i] = min(1.0, pvalues[i] * m)
        return out
    order = sorted(tested, key=lambda i: pvalues[i])  # ascending
    if method == "holm":
        # step-down: the running maximum of (m - j) * p_(j), j = 0, 1, ...
        running = 0.0
        for j, i in enumerate(order):
            running = max(running, min(1.0, (m - j) * pvalues[i]))
            out[i] = running
        return out
    # bh, step-up: the running minimum from the largest p of m / (j + 1) * p_(j)
    running = 1.0
    for j in range(m - 1, -1, -1):
        i = order[j]
        running = min(running, m / (j + 1) * pvalues[i])
        out[i] = running
    return out
