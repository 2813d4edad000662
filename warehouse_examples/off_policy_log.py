"""A stochastic impression log with its propensities, and the true online values it was drawn
from, for off-policy evaluation (docs/off-policy.md, "The example").

Each user has candidates with a hidden affinity; model A (the server) and model B (the
challenger) score them as the example warehouse's models do (B tracks the affinity more
closely). The logging policy samples a slate of 3 by Plackett-Luce over A's scores (softmax
with temperature), and the log keeps its exact propensities: of the slate, of each item at
its position (the marginal, computed exactly), of each top-k prefix. Clicks follow a
position-based model: P(click at k) = theta_k * affinity^2. Because it is a simulation, it
also knows each policy's true value (expected clicks per slate).

    python warehouse_examples/off_policy_log.py --db warehouse.duckdb --users 20000

Tables (replaced): ope_impressions (user_id, item_id, position, pscore, pscore_item_position,
pscore_cascade), ope_clicks (user_id, item_id), ope_recs (model, user_id, item_id, score),
the view ope_target_b (model B's rows of ope_recs), and ope_true_values (policy, value). Then
print the table of docs/off-policy.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

THETA = np.array([1.0, 0.6, 0.4])  # examination probability of positions 1..3
SLATE = 3
TEMPERATURE = 5.0


def plackett_luce_marginals(w: np.ndarray) -> np.ndarray:
    """P(item i at position k), k = 1..3, of Plackett-Luce sampling without replacement with
    weights w (units x items), exactly: (units, items, 3)."""
    total = w.sum(axis=1, keepdims=True)
    p1 = w / total
    s = w / (total * (total - w))  # w_j / (W (W - w_j)): j first, then i second is w_i * s_j
    p2 = w * (s.sum(axis=1, keepdims=True) - s)
    # j first, l second, i third: w_j w_l w_i / (W (W - w_j) (W - w_j - w_l)), j != l
    first_second = (w / (total * (total - w)))[:, :, None] * w[:, None, :]
    rest = total[:, :, None] - w[:, :, None] - w[:, None, :]
    diagonal = np.eye(w.shape[1], dtype=bool)[None]
    n = np.where(diagonal, 0.0, first_second / np.where(rest > 0, rest, 1.0))
    without_i = n.sum(axis=(1, 2))[:, None] - n.sum(axis=2) - n.sum(axis=1)
    p3 = w * without_i
    return np.stack([p1, p2, p3], axis=2)


def simulate(users: int, candidates: int = 30, seed: int = 0) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    affinity = rng.random((users, candidates))
    items = np.stack([rng.choice(5000, candidates, replace=False) + 1 for _ in range(users)])
    score_a = np.round(0.35 * affinity + 0.65 * rng.random((users, candidates)), 4)
    score_b = np.round(0.75 * affinity + 0.25 * rng.random((users, candidates)), 4)
    attract = affinity**2
    w = np.exp(TEMPERATURE * (score_a - score_a.max(axis=1, keepdims=True)))
    marginals = plackett_luce_marginals(w)
    # Plackett-Luce sampling: the order of log w + Gumbel noise
    slate = np.argsort(-(np.log(w) + rng.gumbel(size=w.shape)), axis=1)[:, :SLATE]
    rows = np.arange(users)[:, None]
    w_shown = w[rows, slate]
    above = np.concatenate([np.zeros((users, 1)), np.cumsum(w_shown, axis=1)[:, :-1]], axis=1)
    left = w.sum(axis=1, keepdims=True) - above  # the weight not yet drawn at each step
    cascade = np.cumprod(w_shown / left, axis=1)
    item_position = marginals[rows, slate, np.arange(SLATE)[None, :]]
    clicks = rng.random((users, SLATE)) < THETA[None, :] * attract[rows, slate]

    def top3(score):  # a deterministic ranking: score descending, then item descending
        return np.lexsort((-items, -score), axis=1)[:, :SLATE]

    true = {
        "logging (Plackett-Luce over A)":
            float((marginals * THETA[None, None, :] * attract[:, :, None]).sum(axis=(1, 2)).mean()),
        "A (its top 3)": float((THETA[None, :] * attract[rows, top3(score_a)]).sum(axis=1).mean()),
        "B (its top 3)": float((THETA[None, :] * attract[rows, top3(score_b)]).sum(axis=1).mean()),
    }
    user_ids = np.repeat(np.arange(1, users + 1), SLATE)
    impressions = pa.table({
        "user_id": user_ids, "item_id": items[rows, slate].ravel(),
        "position": np.tile(np.arange(1, SLATE + 1), users),
        "pscore": np.repeat(cascade[:, -1], SLATE), "pscore_item_position": item_position.ravel(),
        "pscore_cascade": cascade.ravel(),
    })  # fmt: skip
    clicked = clicks.ravel()
    recs = pa.table({
        "model": np.repeat(["A", "B"], users * candidates),
        "user_id": np.tile(np.repeat(np.arange(1, users + 1), candidates), 2),
        "item_id": np.concatenate([items.ravel(), items.ravel()]),
        "score": np.concatenate([score_a.ravel(), score_b.ravel()]),
    })  # fmt: skip
    return {
        "ope_impressions": impressions,
        "ope_clicks": pa.table({"user_id": user_ids[clicked],
                                "item_id": items[rows, slate].ravel()[clicked]}),
        "ope_recs": recs,
        "ope_true_values": pa.table({"policy": list(true), "value": list(true.values())}),
    }


def write(db: str, tables: dict[str, pa.Table]) -> None:
    con = duckdb.connect(db)
    for name, table in tables.items():
        con.register("_frame", table)
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _frame")
        con.unregister("_frame")
    con.execute("CREATE OR REPLACE VIEW ope_target_b AS "
                "SELECT user_id, item_id, score FROM ope_recs WHERE model = 'B'")
    con.close()


def report(db: str) -> str:
    """The table of docs/off-policy.md: the naive offline number, each estimator with its
    interval, and the truth, for model B."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import sqlmetrics

    con = duckdb.connect(db)
    truth = dict(con.execute("SELECT policy, value FROM ope_true_values").fetchall())
    # the naive offline number: B's top 3 judged by the clicks that the logged slates got
    naive = con.execute("""
        WITH b AS (SELECT user_id, item_id FROM ope_recs WHERE model = 'B'
                   QUALIFY row_number() OVER (PARTITION BY user_id ORDER BY score DESC, item_id DESC) <= 3)
        SELECT count(c.item_id) / (SELECT count(DISTINCT user_id) FROM ope_impressions)
        FROM b JOIN ope_clicks c USING (user_id, item_id)
    """).fetchall()[0][0]
    rows = sqlmetrics.off_policy(
        con, "ope_impressions", ["sips", "iips", "rips", "snsips", "sniips", "snrips", "logging"],
        target="ope_target_b", rewards="ope_clicks",
    ).to_pylist()
    lines = ["| estimate of B's clicks per slate | value | 95% interval | ess | support |",
             "| --- | --- | --- | --- | --- |",
             f"| naive: B's top 3 judged by the logged clicks | {naive:.4f} | | | |"]
    for r in rows:
        if r["estimator"] == "logging":
            continue
        lines.append(f"| {r['estimator']} | {r['value']:.4f} | {r['ci_low']:.4f} to {r['ci_high']:.4f} | "
                     f"{r['ess']:.0f} | {r['support']:.4f} |")
    lines.append(f"| **true value of B** | **{truth['B (its top 3)']:.4f}** | | | |")
    logging = next(r for r in rows if r["estimator"] == "logging")
    lines.append(f"| (the logging policy: observed {logging['value']:.4f}, "
                 f"{logging['ci_low']:.4f} to {logging['ci_high']:.4f}; true "
                 f"{truth['logging (Plackett-Luce over A)']:.4f}) | | | | |")
    con.close()
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="warehouse.duckdb")
    parser.add_argument("--users", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    write(args.db, simulate(args.users, seed=args.seed))
    print(f"wrote the ope_ tables of {args.db} ({time.perf_counter() - started:.1f} s)")
    print(report(args.db))


if __name__ == "__main__":
    main()
