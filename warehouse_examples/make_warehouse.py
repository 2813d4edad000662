"""Build a realistic e-commerce warehouse in a DuckDB file: users in three countries, days, two
recommendation models in an A/B test, impressions logged by a stochastic policy with their
propensities, and view / add_to_cart / purchase events with a position bias, so that the two
models' metrics really differ. It is a simulation: each candidate has a hidden affinity and
each user a hidden activity, so it also knows each policy's true online value. Both models
score every user's candidates (the one not served runs in shadow), so that they can be compared
user by user (sqlmetrics.compare pairs the users); each user is shown, and acts on, slates of
their own arm only. The view `served` holds each user's own arm's lists only (the A/B
test, compared unpaired), `shadow` both models' lists with the arm the user was served
(served_model): a paired comparison judged by the events of the served lists favours the served
model (docs/compare.md).

    python warehouse_examples/make_warehouse.py --users 5000 --days 7 --db warehouse.duckdb

Tables:
- users(user_id, model: the arm the user is served, country), items(item_id, popularity);
- recommendations(day, model, user_id, country, item_id, score): both models' scores of the
  user's 60 candidates of the day (model B's score tracks the hidden affinity more closely);
- assignment(day, user_id, arm): the arm whose slate the user was shown that day (users.model);
- views served (recommendations of the user's own arm) and shadow (both arms', with served_model);
- impressions(day, model, user_id, item_id, score, position, rank, pscore,
  pscore_item_position, pscore_cascade, click, purchase): the slate of 10 the user was shown,
  drawn by the logging policy from the served model's candidates. rank: the served model's
  rank of the item among the 60 (score, then item id descending); the propensities, exact:
  pscore the probability of the whole logged slate, pscore_item_position the marginal
  probability of this item at this position, pscore_cascade the probability of the logged
  slate's top `position` items (pscore at position 10); click, purchase (0/1): the rewards the
  slate caused (the click model below);
- logging_marginals(rank, position, probability): the logging policy's probability of putting
  the item ranked `rank` at `position` (what pscore_item_position reads);
- events(day, user_id, item_id, event_type): view, add_to_cart, purchase: the slates' clicks
  and organic actions (search, browsing) on any candidate, shown or not;
- ratings(day, user_id, item_id, rating: the 1 to 5 stars a user gave an item after buying it,
  once per user and item), predictions(model, user_id, item_id, score: two models' predicted
  stars for the rated items), item_features(item_id, features: a FLOAT[8] embedding);
- pre_period(user_id, pre_views): the user's views in the 7 days before the test (a covariate
  for CUPED: it shares the hidden activity with the test's events); users who joined during
  the test (1 in 20) have no row;
- policy_values(policy, served, metric, value, slates): the true value of each policy (below);
- ope_impressions(user_id, item_id, position, pscore, pscore_item_position, pscore_cascade),
  ope_clicks(user_id, item_id), ope_recs(model, user_id, item_id, score), the views
  ope_target_a and ope_target_b (each model's rows of ope_recs), ope_true_values(policy,
  value): a second, small log for off-policy evaluation where every estimator has support
  (docs/off-policy.md, "The example"; --ope-users, 20,000 by default, 0 for none): 30
  candidates per user, scored by model A (the server) and model B as the models above score
  theirs; slates of 3 drawn by Plackett-Luce over A's scores (softmax, temperature 5) with
  their exact propensities; clicks with P(click at k) = theta_k affinity^2, theta = (1, 0.6,
  0.4); the true values of the logging policy and of each model's top 3 (expected clicks
  per slate), drawn with numpy (seed 0);
- with --keep-hidden only: hidden_affinity(day, user_id, item_id, affinity),
  hidden_activity(user_id, activity).
Views for the short examples of the docs: recs (the last day's recommendations of both
models), purchases (the last day's purchases, one row per user and item), history (every event
before the last day).

The simulation. The logging policy is Plackett-Luce over the served model's ranking: the
candidate ranked r has weight r^(-1/TEMPERATURE) (TEMPERATURE = 1: the served model's top item
is drawn first with probability 0.21, its 60th with 0.0036), and the 10 positions are filled
by drawing without replacement, each draw with probability weight / weight left (drawn as the
Gumbel top-k). pscore is the product
of the 10 draws' probabilities, pscore_cascade the product of the first `position`; the
marginals are computed once for the 60 ranks, as the integral over the Gumbel level t of w_r
exp(-w_r t) times the Poisson-binomial probability that position - 1 other items come before
t, by the trapezoid rule in log t (error below 1e-10; tests/test_example_warehouse.py checks
them against enumeration and closed forms). The click model is position-based: the user
examines position k with probability k^-0.7 and clicks an examined item with probability
activity * 0.5 * affinity^2 (activity uniform on [0.2, 1.8] per user, affinity uniform on
[0, 1] per candidate); a click is followed by an add to cart with probability 0.4 * affinity
and by a purchase with 0.15 * affinity. Organic actions come on any candidate with probability
activity * 0.08 * affinity^4.

The true values. policy_values holds, for the policies "A" and "B" (each model's top 10 in its
order, deterministic) and "logging" (the logging policy over the served model: what was run),
the expectation per slate (day, user) under the click model, averaged over the slates of all
users (served = 'all') or of the users served arm A or B: metric "clicks", the expected clicks
on the slate, sum over k of P(click at k) = k^-0.7 * activity * 0.5 * affinity^2 of the item at
k; "clicks_dcg", the same with each position's term divided by log2(k + 1); "purchases", each
term times 0.15 * affinity. For the logging policy, each candidate's terms are weighted by its
probability of each position (logging_marginals): the exact expectation over its slates, not a
mean of the draws.

Everything but the small ope_* log (numpy, seed 0) is generated inside DuckDB (no Python
loops), so --users 1000000 works too, and every random number is a hash of what it belongs
to, so that two builds with one version of DuckDB are the same, whatever the threads. The file
is replaced (results of earlier reports go with it: they described the old data).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

SLATE = 10  # positions of a logged slate
TEMPERATURE = 1.0  # of the logging policy: the item ranked r has weight r^(-1/TEMPERATURE)
# the trapezoid rule of the marginals, in log t: from LOG_T_LOW, every STEP (error below 1e-10)
LOG_T_LOW, STEP = -30.0, 0.2
PRE_RATE = 0.09  # pre-period: 140 chances, each a view with probability PRE_RATE * activity

GENERATE = """
-- every random number is a hash of what it belongs to (hashed again: DuckDB's hash of several
-- values is not mixed enough to be uniform), so that the warehouse is the same on every build,
-- whatever the threads: uniform on (0, 1)
CREATE OR REPLACE TEMP MACRO uniform(h) AS ((hash(h) >> 11)::DOUBLE + 0.5) / 9007199254740992.0;

CREATE OR REPLACE TABLE items AS
SELECT item_id, 1.0 / pow(item_id + 10, 0.6) AS popularity
FROM range(1, $n_items + 1) t(item_id);

-- each user is assigned to one arm of the A/B test
CREATE OR REPLACE TABLE users AS
SELECT user_id, CASE WHEN hash(user_id) % 2 = 0 THEN 'A' ELSE 'B' END AS model,
       ['DE', 'FR', 'US'][CAST(hash(user_id, 'country') % 3 AS INTEGER) + 1] AS country
FROM range(1, $n_users + 1) t(user_id);

-- hidden: how active each user is, a factor of every click and organic action before and
-- during the test (what makes the pre-period a covariate of the test's metrics)
CREATE OR REPLACE TEMP TABLE activity AS
SELECT user_id, 0.2 + 1.6 * uniform(hash(user_id, 'activity')) AS activity FROM users;

-- $candidates distinct candidate items per user and day (one from each of $candidates blocks of
-- the catalogue), each with a hidden true affinity, scored by both models (model B's score
-- tracks the affinity more closely), and the served model's rank of it: score descending,
-- then item id descending (sqlmetrics' default order)
CREATE OR REPLACE TEMP TABLE candidates AS
SELECT *, row_number() OVER (PARTITION BY day, user_id ORDER BY served_score DESC, item_id DESC) AS rank
FROM (
    SELECT *, CASE served WHEN 'A' THEN score_a ELSE score_b END AS served_score
    FROM (
        SELECT * EXCLUDE (noise_a, noise_b), round(0.35 * affinity + 0.65 * noise_a, 4) AS score_a,
               round(0.75 * affinity + 0.25 * noise_b, 4) AS score_b
        FROM (
            SELECT DATE '2026-11-01' + CAST(d AS INTEGER) AS day, u.user_id, u.model AS served, u.country,
                   CAST(c * $block + hash(u.user_id, d, c) % $block + 1 AS BIGINT) AS item_id, a.activity,
                   uniform(hash(u.user_id, d, c, 'affinity')) AS affinity,
                   uniform(hash(u.user_id, d, c, 'A')) AS noise_a,
                   uniform(hash(u.user_id, d, c, 'B')) AS noise_b
            FROM users u JOIN activity a USING (user_id), range($days) t(d), range($candidates) s(c)
        )
    )
);

-- both models score every candidate (the model a user is not served runs in shadow)
CREATE OR REPLACE TABLE recommendations AS
SELECT day, 'A' AS model, user_id, country, item_id, score_a AS score FROM candidates
UNION ALL
SELECT day, 'B', user_id, country, item_id, score_b FROM candidates;

-- The logging policy: Plackett-Luce over the served model's ranking, the item ranked r having
-- weight w_r = r^(-1/$temperature). logging_marginals(rank, position, probability): the
-- probability that the item ranked r is drawn at the position. With the Gumbel form of
-- Plackett-Luce (item j drawn before level t with probability p_j(t) = 1 - exp(-w_j t)), it is
-- the integral over t of w_r exp(-w_r t) times the probability that exactly position - 1 of the
-- others are drawn before t (a Poisson-binomial probability, from the products of
-- (1 - p_j + p_j z) over the ranks before r and after r), by the trapezoid rule in log t
-- (error below 1e-10). A polynomial is the list of its coefficients of degree 0 .. $slate - 1.
CREATE OR REPLACE TEMP MACRO constant_one() AS
    list_transform(range($slate), lambda m: CASE WHEN m = 0 THEN 1.0 ELSE 0.0 END::DOUBLE);
CREATE OR REPLACE TEMP MACRO times_factor(poly, p) AS  -- poly * (1 - p + p z)
    list_transform(range($slate), lambda m:
        poly[m + 1] * (1 - p) + CASE WHEN m > 0 THEN poly[m] * p ELSE 0.0 END);
CREATE OR REPLACE TABLE logging_marginals AS
WITH RECURSIVE
nodes AS (SELECT q, exp($log_t_low + $step * q) AS t FROM range(0, $nodes) r(q)),
weight AS (SELECT r, pow(r, -1.0 / $temperature) AS w FROM range(1, $candidates + 1) s(r)),
prefix(q, j, poly) AS (  -- the product over the ranks 1..j
    SELECT q, 0, constant_one() FROM nodes
    UNION ALL
    SELECT f.q, f.j + 1, times_factor(f.poly, 1 - exp(-w.w * nodes.t))
    FROM prefix f JOIN nodes USING (q) JOIN weight w ON w.r = f.j + 1
    WHERE f.j + 1 < $candidates
),
suffix(q, j, poly) AS (  -- the product over the ranks j..$candidates
    SELECT q, $candidates + 1, constant_one() FROM nodes
    UNION ALL
    SELECT s.q, s.j - 1, times_factor(s.poly, 1 - exp(-w.w * nodes.t))
    FROM suffix s JOIN nodes USING (q) JOIN weight w ON w.r = s.j - 1
    WHERE s.j - 1 > 1
),
others AS (  -- the items other than the one ranked r: the probability that m of them come first
    SELECT s.q, s.j - 1 AS r,
           list_transform(range($slate), lambda m:
               list_sum(list_transform(range(m + 1), lambda a: f.poly[a + 1] * s.poly[m - a + 1]))) AS poly
    FROM suffix s JOIN prefix f ON f.q = s.q AND f.j = s.j - 2
)
SELECT o.r AS rank, k + 1 AS position,
       sum(w.w * exp(-w.w * nodes.t) * nodes.t * $step * o.poly[k + 1]) AS probability
FROM others o JOIN nodes USING (q) JOIN weight w USING (r), range($slate) p(k)
GROUP BY ALL;

-- What each user was shown: a slate of $slate drawn from the served model's candidates by the
-- logging policy (Gumbel top-k: the $slate largest log w_rank + Gumbel noise, in order), with
-- the propensities, and the clicks of the click model: the user examines position k with
-- probability k^-0.7 and clicks an examined item with probability activity * 0.5 * affinity^2;
-- a click is followed by an add to cart with probability 0.4 * affinity and a purchase with
-- 0.15 * affinity
CREATE OR REPLACE TEMP TABLE shown AS
WITH drawn AS (
    SELECT day, user_id, any_value(served) AS model,
           max_by({'item_id': item_id, 'score': served_score, 'rank': rank, 'affinity': affinity,
                   'activity': activity},
                  -ln(rank) / $temperature - ln(-ln(uniform(hash(day, user_id, item_id, 'draw')))),
                  $slate) AS slate
    FROM candidates
    GROUP BY day, user_id
),
weighted AS (  -- each drawn item's weight, and the probability of drawing it at its position
               -- given the items drawn before it
    SELECT *, list_transform(w, lambda x, k: x / (total - coalesce(list_sum(w[1:k - 1]), 0))) AS choices
    FROM (SELECT *, list_transform(slate, lambda x: pow(x.rank, -1.0 / $temperature)) AS w FROM drawn),
         (SELECT sum(pow(r, -1.0 / $temperature)) AS total FROM range(1, $candidates + 1) s(r))
),
chosen AS (
    SELECT day, user_id, model, unnest(slate, recursive := true), generate_subscripts(slate, 1) AS position,
           choices, list_aggregate(choices, 'product') AS pscore
    FROM weighted
)
SELECT * EXCLUDE (choices), list_aggregate(choices[1:position], 'product') AS pscore_cascade,
       uniform(hash(day, user_id, item_id, 'click')) < pow(position, -0.7) * activity * 0.5 * pow(affinity, 2)
           AS click,
       uniform(hash(day, user_id, item_id, 'after click')) AS r
FROM chosen;

CREATE OR REPLACE TABLE impressions AS
SELECT day, model, user_id, item_id, score, position, rank, pscore,
       m.probability AS pscore_item_position, pscore_cascade, CAST(click AS INTEGER) AS click,
       CAST(click AND r < 0.15 * affinity AS INTEGER) AS purchase
FROM shown JOIN logging_marginals m USING (rank, position)
ORDER BY day, user_id, position;

-- actions: the clicks on the slates, and organic actions (search, browsing) on any candidate
-- the user likes, shown or not
CREATE OR REPLACE TEMP TABLE engaged AS
SELECT day, user_id, item_id, affinity, r FROM shown WHERE click
UNION ALL
SELECT day, user_id, item_id, affinity, uniform(hash(day, user_id, item_id, 'after organic')) AS r
FROM candidates WHERE uniform(hash(day, user_id, item_id, 'organic')) < activity * 0.08 * pow(affinity, 4);

CREATE OR REPLACE TABLE events AS
SELECT day, user_id, item_id, 'view' AS event_type FROM engaged
UNION ALL
SELECT day, user_id, item_id, 'add_to_cart' FROM engaged WHERE r < 0.4 * affinity
UNION ALL
SELECT day, user_id, item_id, 'purchase' FROM engaged WHERE r < 0.15 * affinity;

-- stars given after a purchase, higher for a higher affinity; once per user and item (the first)
CREATE OR REPLACE TABLE ratings AS
SELECT day, user_id, item_id,
       CAST(least(5, greatest(1, round(0.5 + 4 * pow(affinity, 3) + uniform(hash(day, user_id, item_id, r)))))
            AS INTEGER) AS rating
FROM engaged WHERE r < 0.15 * affinity
QUALIFY row_number() OVER (PARTITION BY user_id, item_id ORDER BY day, r) = 1;

-- two rating models' predicted stars for every rated item (fcp: do they order the ratings?)
CREATE OR REPLACE TABLE predictions AS
SELECT m.model, user_id, item_id,
       round(rating + CASE m.model WHEN 'A' THEN 3.0 ELSE 1.5 END
                      * (uniform(hash(user_id, item_id, m.model)) - 0.5), 2) AS score
FROM ratings CROSS JOIN (VALUES ('A'), ('B')) AS m(model);

-- an 8-dimensional embedding per item (item_features= of diversity and serendipity)
CREATE OR REPLACE TABLE item_features AS
SELECT item_id, list_transform(range(8), lambda d: CAST(sin(item_id * (d + 1) * 0.7) AS FLOAT)) AS features
FROM items;

-- the arm each user was served each day: users see the slates of their own arm only
CREATE OR REPLACE TABLE assignment AS
SELECT DISTINCT day, user_id, model AS arm FROM impressions ORDER BY day, user_id;

-- a covariate for CUPED: each user's views in the 7 days before the test (2026-10-25 to
-- 2026-10-31), of the same hidden activity; users who joined during the test (1 in 20) have
-- no row
CREATE OR REPLACE TABLE pre_period AS
SELECT user_id,
       count(*) FILTER (WHERE uniform(hash(user_id, chance, 'pre')) < $pre_rate * activity) AS pre_views
FROM activity, range(140) t(chance)
WHERE hash(user_id, 'joined') % 20 <> 0
GROUP BY user_id ORDER BY user_id;

-- The truth of the simulation: each policy's expected reward per slate under the click model,
-- from the hidden affinities and activities (see the module's docstring): the deterministic
-- top $slate of model A and of model B, and the logging policy (each candidate weighted by its
-- probability of each position)
CREATE OR REPLACE TABLE policy_values AS
WITH logging_examined AS (  -- the item ranked r: its expected examination, and DCG-weighted
    SELECT rank, sum(probability * pow(position, -0.7)) AS examination,
           sum(probability * pow(position, -0.7) / log2(position + 1)) AS dcg_examination
    FROM logging_marginals GROUP BY rank
),
slates AS (
    SELECT day, user_id, any_value(served) AS served,
           -- the top $slate: score, then item id descending (distinct keys: the items are < 1e6)
           max_by(gains, round(score_a * 10000) * 1e6 + item_id, $slate) AS top_a,
           max_by(gains, round(score_b * 10000) * 1e6 + item_id, $slate) AS top_b,
           sum(attraction * examination) AS logging_clicks,
           sum(attraction * dcg_examination) AS logging_clicks_dcg,
           sum(attraction * examination * buys) AS logging_purchases
    FROM (SELECT *, activity * 0.5 * pow(affinity, 2) AS attraction, 0.15 * affinity AS buys,
                 {'attraction': attraction, 'buys': buys} AS gains
          FROM candidates)
    JOIN logging_examined USING (rank)
    GROUP BY day, user_id
),
ranked AS (
    SELECT day, user_id, served, policy, top FROM slates
    CROSS JOIN LATERAL (VALUES ('A', top_a), ('B', top_b)) v(policy, top)
),
values AS (
    SELECT served, policy,
           list_sum(list_transform(top, lambda x, k: x.attraction * pow(k, -0.7))) AS clicks,
           list_sum(list_transform(top, lambda x, k: x.attraction * pow(k, -0.7) / log2(k + 1)))
               AS clicks_dcg,
           list_sum(list_transform(top, lambda x, k: x.attraction * pow(k, -0.7) * x.buys)) AS purchases
    FROM ranked
    UNION ALL
    SELECT served, 'logging', logging_clicks, logging_clicks_dcg, logging_purchases FROM slates
)
SELECT policy, coalesce(served, 'all') AS served, metric, avg(value) AS value, count(*) AS slates
FROM (UNPIVOT values ON clicks, clicks_dcg, purchases INTO NAME metric VALUE value)
GROUP BY GROUPING SETS ((policy, metric), (policy, served, metric))
ORDER BY policy, served, metric;

-- the short examples of the docs read one day: the last
CREATE OR REPLACE VIEW recs AS
SELECT * FROM recommendations WHERE day = DATE '2026-11-01' + $days - 1;
CREATE OR REPLACE VIEW purchases AS
SELECT DISTINCT user_id, item_id FROM events
WHERE event_type = 'purchase' AND day = DATE '2026-11-01' + $days - 1;
CREATE OR REPLACE VIEW history AS
SELECT user_id, item_id, event_type FROM events WHERE day < DATE '2026-11-01' + $days - 1;

-- what each user was served: their own arm's lists (the A/B test, compared unpaired)
CREATE OR REPLACE VIEW served AS
SELECT r.* FROM recommendations r JOIN users u ON u.user_id = r.user_id AND u.model = r.model;

-- both models' lists of every user, with the arm the user was served
CREATE OR REPLACE VIEW shadow AS
SELECT r.*, u.model AS served_model FROM recommendations r JOIN users u ON u.user_id = r.user_id;
"""

# the simulation's hidden quantities, kept only for tests (build(..., keep_hidden=True))
HIDDEN = """
CREATE OR REPLACE TABLE hidden_affinity AS SELECT day, user_id, item_id, affinity FROM candidates;
CREATE OR REPLACE TABLE hidden_activity AS SELECT user_id, activity FROM activity;
"""


# --- the ope_* log: slates of 3, every estimator with support (docs/off-policy.md) -------------

OPE_THETA = np.array([1.0, 0.6, 0.4])  # examination probability of positions 1..3
OPE_SLATE = 3
OPE_TEMPERATURE = 5.0
OPE_USERS = 20_000  # of the ope_* log (the table of docs/off-policy.md)


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


def simulate_ope(users: int, candidates: int = 30, seed: int = 0) -> dict[str, pa.Table]:
    """The ope_* tables of a second, small log (see the docstring): slates of 3 by Plackett-Luce
    over model A's scores, with exact propensities, the clicks, both models' scores and the true
    values."""
    rng = np.random.default_rng(seed)
    affinity = rng.random((users, candidates))
    items = np.stack([rng.choice(5000, candidates, replace=False) + 1 for _ in range(users)])
    score_a = np.round(0.35 * affinity + 0.65 * rng.random((users, candidates)), 4)
    score_b = np.round(0.75 * affinity + 0.25 * rng.random((users, candidates)), 4)
    attract = affinity**2
    w = np.exp(OPE_TEMPERATURE * (score_a - score_a.max(axis=1, keepdims=True)))
    marginals = plackett_luce_marginals(w)
    # Plackett-Luce sampling: the order of log w + Gumbel noise
    slate = np.argsort(-(np.log(w) + rng.gumbel(size=w.shape)), axis=1)[:, :OPE_SLATE]
    rows = np.arange(users)[:, None]
    w_shown = w[rows, slate]
    above = np.concatenate([np.zeros((users, 1)), np.cumsum(w_shown, axis=1)[:, :-1]], axis=1)
    left = w.sum(axis=1, keepdims=True) - above  # the weight not yet drawn at each step
    cascade = np.cumprod(w_shown / left, axis=1)
    item_position = marginals[rows, slate, np.arange(OPE_SLATE)[None, :]]
    clicks = rng.random((users, OPE_SLATE)) < OPE_THETA[None, :] * attract[rows, slate]

    def top3(score):  # a deterministic ranking: score descending, then item descending
        return np.lexsort((-items, -score), axis=1)[:, :OPE_SLATE]

    true = {
        "logging (Plackett-Luce over A)":
            float((marginals * OPE_THETA[None, None, :] * attract[:, :, None]).sum(axis=(1, 2)).mean()),
        "A (its top 3)": float((OPE_THETA[None, :] * attract[rows, top3(score_a)]).sum(axis=1).mean()),
        "B (its top 3)": float((OPE_THETA[None, :] * attract[rows, top3(score_b)]).sum(axis=1).mean()),
    }
    user_ids = np.repeat(np.arange(1, users + 1), OPE_SLATE)
    impressions = pa.table({
        "user_id": user_ids, "item_id": items[rows, slate].ravel(),
        "position": np.tile(np.arange(1, OPE_SLATE + 1), users),
        "pscore": np.repeat(cascade[:, -1], OPE_SLATE), "pscore_item_position": item_position.ravel(),
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


def write_ope(db: str, tables: dict[str, pa.Table]) -> None:
    """Write the ope_* tables (simulate_ope) to the DuckDB file `db`, and the views of each
    model's ranking (ope_target_a, ope_target_b)."""
    con = duckdb.connect(db)
    for name, table in tables.items():
        con.register("_frame", table)
        con.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM _frame")
        con.unregister("_frame")
    for model in ("a", "b"):
        con.execute(f"CREATE OR REPLACE VIEW ope_target_{model} AS "
                    f"SELECT user_id, item_id, score FROM ope_recs WHERE model = '{model.upper()}'")
    con.close()


def ope_report(db: str) -> str:
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


def script(
    users: int,
    days: int,
    candidates: int = 60,
    items: int = 5000,
    slate: int = SLATE,
    temperature: float = TEMPERATURE,
) -> str:
    """The SQL script that generates the warehouse."""
    if not 0 < slate <= candidates <= items < 10**6:
        raise ValueError("need 0 < slate <= candidates <= items < 1,000,000")
    log_t_high = 8 + math.log(candidates) / temperature
    values = {
        "n_items": items,
        "n_users": users,
        "days": days,
        "candidates": candidates,
        "block": items // candidates,
        "slate": slate,
        "temperature": repr(float(temperature)),
        "log_t_low": LOG_T_LOW,
        "step": STEP,
        "nodes": math.ceil((log_t_high - LOG_T_LOW) / STEP) + 1,
        "pre_rate": PRE_RATE,
    }
    return re.sub(r"\$(\w+)", lambda m: str(values[m.group(1)]), GENERATE)


def build(
    db: str,
    users: int,
    days: int,
    candidates: int = 60,
    items: int = 5000,
    slate: int = SLATE,
    temperature: float = TEMPERATURE,
    keep_hidden: bool = False,
    ope_users: int = OPE_USERS,
) -> None:
    """Write the warehouse to the DuckDB file `db` (replaced); `keep_hidden` also keeps the
    simulation's hidden quantities (tables hidden_affinity and hidden_activity), for tests;
    ope_users: the users of the ope_* log (0: none)."""
    for path in (db, db + ".wal"):
        if os.path.exists(path):
            os.remove(path)
    # in a storage format the DuckDB command-line client of PyPI (duckdb-cli 1.5) reads too, so
    # that docs/sql.md's macros run on it with no Python (a file is kept in the format it was
    # created in, whichever DuckDB writes it later)
    con = duckdb.connect(db, config={"storage_compatibility_version": "v1.4.0"})
    started = time.perf_counter()
    sql = script(users, days, candidates, items, slate, temperature) + (HIDDEN if keep_hidden else "")
    for statement in con.extract_statements(sql):
        con.execute(statement).fetchall()
    counts = {
        t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
        for t in ("recommendations", "impressions", "events", "ratings", "pre_period")
    }
    con.close()
    if ope_users:
        write_ope(db, simulate_ope(ope_users))
        counts["ope_impressions"] = ope_users * OPE_SLATE
    took = time.perf_counter() - started
    print(
        f"built {db}: {users:,} users x {days} days; "
        + ", ".join(f"{t} {n:,}" for t, n in counts.items())
        + f" ({took:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="warehouse.duckdb")
    parser.add_argument("--users", type=int, default=5000)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument(
        "--keep-hidden", action="store_true",
        help="also keep the simulation's hidden affinities and activities (hidden_affinity, hidden_activity)",
    )  # fmt: skip
    parser.add_argument("--ope-users", type=int, default=OPE_USERS,
                        help="users of the ope_* log of off-policy evaluation (0: none) [20000]")
    args = parser.parse_args()
    build(args.db, args.users, args.days, keep_hidden=args.keep_hidden, ope_users=args.ope_users)


if __name__ == "__main__":
    main()
