"""Build a realistic e-commerce warehouse in a DuckDB file: users in three countries, days, two
recommendation models in an A/B test, impressions with positions, and view / add_to_cart /
purchase events with a position bias, so that the two models' metrics really differ. Each user
is assigned one arm and shown the lists of that arm; the events follow what was shown. Both
models score every user's candidates (the one not served runs in shadow): `recommendations`
holds both models' lists of every user (a paired comparison, judged by the events of the lists
that were served, favours the served model: docs/compare.md), the view `served` only each
user's own arm's (the A/B test, compared unpaired), `shadow` both with the arm the user was
served (served_model), and `pre_period` each user's clicks of the week before the test (a CUPED
covariate: users differ in how active they are, before and during the test alike).

    python warehouse_examples/make_warehouse.py --users 5000 --days 7 --db warehouse.duckdb

Tables: users(user_id, model, country), items(item_id, popularity),
recommendations(day, model, user_id, country, item_id, score), impressions(day, model, user_id,
item_id, score, position), events(day, user_id, item_id, event_type), ratings(day, user_id,
item_id, rating: the 1 to 5 stars a user gave an item after buying it, once per user and item),
predictions(model, user_id, item_id, score: two models' predicted stars for the rated items),
item_features(item_id, features: a FLOAT[8] embedding). Views for the short examples of the
docs: recs (the last day's recommendations of both models), purchases (the last day's
purchases, one row per user and item), history (every event before the last day).

Everything is generated inside DuckDB (no Python loops), so --users 1000000 works too. The file
is replaced (results of earlier reports go with it: they described the old data).
"""

from __future__ import annotations

import argparse
import os
import time

import duckdb

GENERATE = """
SELECT setseed(0.42);

CREATE OR REPLACE TABLE items AS
SELECT item_id, 1.0 / pow(item_id + 10, 0.6) AS popularity
FROM range(1, $n_items + 1) t(item_id);

-- each user is assigned to one arm of the A/B test, and engages more or less with what is
-- shown to them (activity 0.1 .. 2.1)
CREATE OR REPLACE TABLE users AS
SELECT user_id, CASE WHEN hash(user_id) % 2 = 0 THEN 'A' ELSE 'B' END AS model,
       ['DE', 'FR', 'US'][CAST(hash(user_id, 'country') % 3 AS INTEGER) + 1] AS country,
       0.1 + (hash(user_id, 'activity') % 2001) / 1000.0 AS activity
FROM range(1, $n_users + 1) t(user_id);

-- candidate items per user and day with a hidden true affinity
CREATE OR REPLACE TABLE candidates AS
SELECT DATE '2026-11-01' + CAST(d AS INTEGER) AS day, u.user_id,
       (hash(u.user_id, d, c) % $n_items) + 1 AS item_id,
       random() AS affinity
FROM users u, range($days) t(d), range($candidates) s(c);

-- both models score every candidate; model B's score tracks the true affinity more closely
CREATE OR REPLACE TABLE recommendations AS
SELECT day, m.model, user_id, u.country, item_id,
       round(CASE m.model WHEN 'A' THEN 0.35 * affinity + 0.65 * random()
                          ELSE 0.75 * affinity + 0.25 * random() END, 4) AS score
FROM (SELECT DISTINCT ON (day, user_id, item_id) * FROM candidates)
JOIN users u USING (user_id)
CROSS JOIN (VALUES ('A'), ('B')) AS m(model);

-- impressions: the top 20 of the user's own arm shown, with their screen position
CREATE OR REPLACE TABLE impressions AS
SELECT r.day, r.model, r.user_id, r.item_id, r.score,
       row_number() OVER (PARTITION BY r.day, r.user_id ORDER BY r.score DESC, r.item_id DESC) AS position
FROM recommendations r JOIN users u ON u.user_id = r.user_id AND u.model = r.model
QUALIFY position <= 20;

-- actions: on shown items, more likely for high affinity, near the top (position bias) and
-- for active users; plus organic actions (search, browsing) on any candidate the user likes,
-- shown or not
CREATE OR REPLACE TEMP TABLE engaged AS
WITH shown AS (
    SELECT i.day, i.user_id, i.item_id, i.position, c.affinity, u.activity
    FROM impressions i JOIN candidates c USING (day, user_id, item_id) JOIN users u USING (user_id)
)
SELECT day, user_id, item_id, affinity, random() AS r FROM shown
WHERE random() < 0.5 * activity * pow(affinity, 2) / pow(position, 0.7)
UNION
SELECT day, user_id, item_id, affinity, random() AS r FROM candidates
WHERE random() < 0.08 * pow(affinity, 4);

CREATE OR REPLACE TABLE events AS
SELECT day, user_id, item_id, 'view' AS event_type FROM engaged
UNION ALL
SELECT day, user_id, item_id, 'add_to_cart' FROM engaged WHERE r < 0.4 * affinity
UNION ALL
SELECT day, user_id, item_id, 'purchase' FROM engaged WHERE r < 0.15 * affinity;

-- stars given after a purchase, higher for a higher affinity; once per user and item (the first)
CREATE OR REPLACE TABLE ratings AS
SELECT day, user_id, item_id,
       CAST(least(5, greatest(1, round(0.5 + 4 * pow(affinity, 3) + random()))) AS INTEGER) AS rating
FROM engaged WHERE r < 0.15 * affinity
QUALIFY row_number() OVER (PARTITION BY user_id, item_id ORDER BY day) = 1;

-- two rating models' predicted stars for every rated item (fcp: do they order the ratings?)
CREATE OR REPLACE TABLE predictions AS
SELECT m.model, user_id, item_id,
       round(rating + CASE m.model WHEN 'A' THEN 3.0 ELSE 1.5 END * (random() - 0.5), 2) AS score
FROM ratings CROSS JOIN (VALUES ('A'), ('B')) AS m(model);

-- an 8-dimensional embedding per item (item_features= of diversity and serendipity)
CREATE OR REPLACE TABLE item_features AS
SELECT item_id, list_transform(range(8), lambda d: CAST(sin(item_id * (d + 1) * 0.7) AS FLOAT)) AS features
FROM items;

DROP TABLE candidates;
DROP TABLE engaged;

-- the short examples of the docs read one day: the last
CREATE OR REPLACE VIEW recs AS
SELECT * FROM recommendations WHERE day = DATE '2026-11-01' + $days - 1;
CREATE OR REPLACE VIEW purchases AS
SELECT DISTINCT user_id, item_id FROM events
WHERE event_type = 'purchase' AND day = DATE '2026-11-01' + $days - 1;
CREATE OR REPLACE VIEW history AS
SELECT user_id, item_id, event_type FROM events WHERE day < DATE '2026-11-01' + $days - 1;

-- each user's clicks on recommendations in the week before the test (a covariate for CUPED):
-- as active then as during it
CREATE OR REPLACE TABLE pre_period AS
SELECT user_id, CAST(floor(activity * (10 + 4 * random())) AS INTEGER) AS pre_clicks FROM users;

-- what each user was served: their own arm's lists (the A/B test, compared unpaired)
CREATE OR REPLACE VIEW served AS
SELECT r.* FROM recommendations r JOIN users u ON u.user_id = r.user_id AND u.model = r.model;

-- both models' lists of every user, with the arm the user was served
CREATE OR REPLACE VIEW shadow AS
SELECT r.*, u.model AS served_model FROM recommendations r JOIN users u ON u.user_id = r.user_id;
"""


def build(db: str, users: int, days: int, candidates: int = 60, items: int = 5000) -> None:
    for path in (db, db + ".wal"):
        if os.path.exists(path):
            os.remove(path)
    # in a storage format the DuckDB command-line client of PyPI (duckdb-cli 1.5) reads too, so
    # that docs/sql.md's macros run on it with no Python (a file is kept in the format it was
    # created in, whichever DuckDB writes it later)
    con = duckdb.connect(db, config={"storage_compatibility_version": "v1.4.0"})
    started = time.perf_counter()
    script = (
        GENERATE.replace("$n_items", str(items))
        .replace("$n_users", str(users))
        .replace("$days", str(days))
        .replace("$candidates", str(candidates))
    )
    for statement in con.extract_statements(script):
        con.execute(statement).fetchall()
    counts = {
        t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
        for t in ("recommendations", "impressions", "events", "ratings", "pre_period")
    }
    con.close()
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
    args = parser.parse_args()
    build(args.db, args.users, args.days)


if __name__ == "__main__":
    main()
