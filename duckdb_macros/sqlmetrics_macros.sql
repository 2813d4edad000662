-- sqlmetrics: ranking metrics as DuckDB table macros. GENERATED from the templates of sql/
-- (sqlmetrics/api/macros.py; regenerate with `python -m sqlmetrics.api.regenerate`): do not edit.
-- Load it in the DuckDB CLI with `.read sqlmetrics_macros.sql`, then for example
--   SELECT * FROM sqlmetrics_ndcg('recommendations', 'events', k := 10, "by" := ['model'],
--       relevance := 'event_type', grades := MAP {'purchase': 3, 'add_to_cart': 2, 'view': 1});
-- See docs/sql.md.

CREATE OR REPLACE MACRO sqlmetrics_cg(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_cg: k must be an integer from 1 to 100000 (sqlmetrics_cg_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_cg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_cg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_cg: k must be an integer from 1 to 100000 (sqlmetrics_cg_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_cg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_cg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- cg@k = sum_{i<=k} gain_i
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "cg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "cg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("cg" AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_cg_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_cg_per_user: k must be an integer from 1 to 100000 (sqlmetrics_cg_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_cg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_cg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_cg_per_user: k must be an integer from 1 to 100000 (sqlmetrics_cg_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_cg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_cg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- cg@k = sum_{i<=k} gain_i
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "cg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("cg" AS DOUBLE) AS "cg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_cg_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_cg_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_cg_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- cg = sum_{i<=k} gain_i
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "cg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "cg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("cg" AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_cg_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_cg_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_cg_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- cg = sum_{i<=k} gain_i
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "cg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("cg" AS DOUBLE) AS "cg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_dcg(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_dcg: k must be an integer from 1 to 100000 (sqlmetrics_dcg_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_dcg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_dcg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_dcg: k must be an integer from 1 to 100000 (sqlmetrics_dcg_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_dcg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_dcg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- dcg@k = sum_{i<=k} gain_i / log2(i+1)
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "dcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) / log2(_p + 1) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "dcg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("dcg" AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_dcg_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_dcg_per_user: k must be an integer from 1 to 100000 (sqlmetrics_dcg_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_dcg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_dcg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_dcg_per_user: k must be an integer from 1 to 100000 (sqlmetrics_dcg_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_dcg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_dcg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- dcg@k = sum_{i<=k} gain_i / log2(i+1)
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "dcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) / log2(_p + 1) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("dcg" AS DOUBLE) AS "dcg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_dcg_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_dcg_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_dcg_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- dcg = sum_{i<=k} gain_i / log2(i+1)
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "dcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) / log2(_p + 1) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "dcg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("dcg" AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_dcg_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_dcg_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_dcg_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- dcg = sum_{i<=k} gain_i / log2(i+1)
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "dcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) / log2(_p + 1) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("dcg" AS DOUBLE) AS "dcg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_idcg(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_idcg: k must be an integer from 1 to 100000 (sqlmetrics_idcg_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_idcg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_idcg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_idcg: k must be an integer from 1 to 100000 (sqlmetrics_idcg_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_idcg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_idcg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- idcg@k = dcg@k of the ideal list (truth gains sorted descending)
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "idcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _ideal <= k THEN _gain * CAST(1 AS DOUBLE) / log2(_ideal + 1) END AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "idcg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("idcg" AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_idcg_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_idcg_per_user: k must be an integer from 1 to 100000 (sqlmetrics_idcg_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_idcg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_idcg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_idcg_per_user: k must be an integer from 1 to 100000 (sqlmetrics_idcg_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_idcg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_idcg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- idcg@k = dcg@k of the ideal list (truth gains sorted descending)
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "idcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _ideal <= k THEN _gain * CAST(1 AS DOUBLE) / log2(_ideal + 1) END AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("idcg" AS DOUBLE) AS "idcg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_idcg_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_idcg_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_idcg_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- idcg = dcg@k of the ideal list (truth gains sorted descending)
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "idcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _ideal IS NOT NULL THEN _gain * CAST(1 AS DOUBLE) / log2(_ideal + 1) END AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "idcg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("idcg" AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_idcg_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_idcg_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_idcg_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- idcg = dcg@k of the ideal list (truth gains sorted descending)
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) AS "idcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _ideal IS NOT NULL THEN _gain * CAST(1 AS DOUBLE) / log2(_ideal + 1) END AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("idcg" AS DOUBLE) AS "idcg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_ndcg(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_ndcg: k must be an integer from 1 to 100000 (sqlmetrics_ndcg_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_ndcg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_ndcg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_ndcg: k must be an integer from 1 to 100000 (sqlmetrics_ndcg_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_ndcg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_ndcg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- ndcg@k = dcg@k / idcg@k (0 when idcg@k = 0)
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif((coalesce((sign(sum(_s1)) * CAST(abs(sum(_s1)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)), 0), CAST(0 AS DOUBLE)) AS "ndcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            AND (CAST(abs(_s1) AS DOUBLE) = abs(_v1) OR _v1 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0,
        TRY_CAST(_v1 AS DECIMAL(26, 0)) AS _s1
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) / log2(_p + 1) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0,
        CAST(CASE WHEN _ideal <= k THEN _gain * CAST(1 AS DOUBLE) / log2(_ideal + 1) END AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v1
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "ndcg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("ndcg" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_ndcg_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_ndcg_per_user: k must be an integer from 1 to 100000 (sqlmetrics_ndcg_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_ndcg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_ndcg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_ndcg_per_user: k must be an integer from 1 to 100000 (sqlmetrics_ndcg_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_ndcg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_ndcg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- ndcg@k = dcg@k / idcg@k (0 when idcg@k = 0)
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif((coalesce((sign(sum(_s1)) * CAST(abs(sum(_s1)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)), 0), CAST(0 AS DOUBLE)) AS "ndcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            AND (CAST(abs(_s1) AS DOUBLE) = abs(_v1) OR _v1 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0,
        TRY_CAST(_v1 AS DECIMAL(26, 0)) AS _s1
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) / log2(_p + 1) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0,
        CAST(CASE WHEN _ideal <= k THEN _gain * CAST(1 AS DOUBLE) / log2(_ideal + 1) END AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v1
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("ndcg" AS DOUBLE) AS "ndcg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_ndcg_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_ndcg_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_ndcg_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- ndcg = dcg@k / idcg@k (0 when idcg@k = 0)
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif((coalesce((sign(sum(_s1)) * CAST(abs(sum(_s1)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)), 0), CAST(0 AS DOUBLE)) AS "ndcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            AND (CAST(abs(_s1) AS DOUBLE) = abs(_v1) OR _v1 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0,
        TRY_CAST(_v1 AS DECIMAL(26, 0)) AS _s1
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) / log2(_p + 1) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0,
        CAST(CASE WHEN _ideal IS NOT NULL THEN _gain * CAST(1 AS DOUBLE) / log2(_ideal + 1) END AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v1
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "ndcg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("ndcg" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_ndcg_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_ndcg_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_ndcg_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- ndcg = dcg@k / idcg@k (0 when idcg@k = 0)
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)) / nullif((coalesce((sign(sum(_s1)) * CAST(abs(sum(_s1)) AS DOUBLE)), 0) / CAST(1.1805916207174113e+21 AS DOUBLE) + coalesce(max(_e), 0)), 0), CAST(0 AS DOUBLE)) AS "ndcg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            AND (CAST(abs(_s1) AS DOUBLE) = abs(_v1) OR _v1 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0,
        TRY_CAST(_v1 AS DECIMAL(26, 0)) AS _s1
    FROM (SELECT *,
        CAST(_gain * (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) / log2(_p + 1) END) AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v0,
        CAST(CASE WHEN _ideal IS NOT NULL THEN _gain * CAST(1 AS DOUBLE) / log2(_ideal + 1) END AS DOUBLE) * CAST(1.1805916207174113e+21 AS DOUBLE) AS _v1
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("ndcg" AS DOUBLE) AS "ndcg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_precision(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_precision: k must be an integer from 1 to 100000 (sqlmetrics_precision_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_precision: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_precision: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_precision: k must be an integer from 1 to 100000 (sqlmetrics_precision_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_precision: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_precision: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- precision@k = hits@k / k
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / k AS "precision"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "precision"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("precision" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_precision_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_precision_per_user: k must be an integer from 1 to 100000 (sqlmetrics_precision_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_precision_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_precision_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_precision_per_user: k must be an integer from 1 to 100000 (sqlmetrics_precision_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_precision_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_precision_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- precision@k = hits@k / k
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / k AS "precision"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("precision" AS DOUBLE) AS "precision"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_precision_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_precision_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_precision_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- precision = hits@k / k
        coalesce(CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(max(_retrieved), 0), CAST(0 AS DOUBLE)) AS "precision"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "precision"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("precision" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_precision_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_precision_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_precision_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- precision = hits@k / k
        coalesce(CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(max(_retrieved), 0), CAST(0 AS DOUBLE)) AS "precision"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("precision" AS DOUBLE) AS "precision"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_recall(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_recall: k must be an integer from 1 to 100000 (sqlmetrics_recall_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_recall: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_recall: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_recall: k must be an integer from 1 to 100000 (sqlmetrics_recall_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_recall: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_recall: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- recall@k = hits@k / R
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "recall"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "recall"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("recall" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_recall_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_recall_per_user: k must be an integer from 1 to 100000 (sqlmetrics_recall_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_recall_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_recall_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_recall_per_user: k must be an integer from 1 to 100000 (sqlmetrics_recall_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_recall_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_recall_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- recall@k = hits@k / R
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "recall"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("recall" AS DOUBLE) AS "recall"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_recall_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_recall_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_recall_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- recall = hits@k / R
        coalesce(CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "recall"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "recall"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("recall" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_recall_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_recall_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_recall_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- recall = hits@k / R
        coalesce(CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "recall"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("recall" AS DOUBLE) AS "recall"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_f1(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_f1: k must be an integer from 1 to 100000 (sqlmetrics_f1_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_f1: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_f1: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_f1: k must be an integer from 1 to 100000 (sqlmetrics_f1_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_f1: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_f1: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- f1@k = 2 precision@k recall@k / (precision@k + recall@k); the whole list: set_F
        2 * (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / (k + _relevant_count) AS "f1"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "f1"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("f1" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_f1_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_f1_per_user: k must be an integer from 1 to 100000 (sqlmetrics_f1_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_f1_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_f1_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_f1_per_user: k must be an integer from 1 to 100000 (sqlmetrics_f1_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_f1_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_f1_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- f1@k = 2 precision@k recall@k / (precision@k + recall@k); the whole list: set_F
        2 * (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / (k + _relevant_count) AS "f1"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("f1" AS DOUBLE) AS "f1"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_f1_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_f1_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_f1_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- f1 = 2 precision@k recall@k / (precision@k + recall@k); the whole list: set_F
        coalesce(2 * CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(max(_retrieved) + _relevant_count, 0), CAST(0 AS DOUBLE)) AS "f1"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "f1"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("f1" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_f1_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_f1_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_f1_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- f1 = 2 precision@k recall@k / (precision@k + recall@k); the whole list: set_F
        coalesce(2 * CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(max(_retrieved) + _relevant_count, 0), CAST(0 AS DOUBLE)) AS "f1"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("f1" AS DOUBLE) AS "f1"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_hit_rate(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_hit_rate: k must be an integer from 1 to 100000 (sqlmetrics_hit_rate_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_hit_rate: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_hit_rate: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_hit_rate: k must be an integer from 1 to 100000 (sqlmetrics_hit_rate_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_hit_rate: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_hit_rate: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- hit_rate@k = 1 if hits@k > 0 else 0
        CASE WHEN max(CASE WHEN _relevant = 1 AND _p <= k THEN 1 ELSE 0 END) = 1 THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS "hit_rate"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "hit_rate"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("hit_rate" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_hit_rate_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_hit_rate_per_user: k must be an integer from 1 to 100000 (sqlmetrics_hit_rate_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_hit_rate_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_hit_rate_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_hit_rate_per_user: k must be an integer from 1 to 100000 (sqlmetrics_hit_rate_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_hit_rate_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_hit_rate_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- hit_rate@k = 1 if hits@k > 0 else 0
        CASE WHEN max(CASE WHEN _relevant = 1 AND _p <= k THEN 1 ELSE 0 END) = 1 THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS "hit_rate"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("hit_rate" AS DOUBLE) AS "hit_rate"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_hit_rate_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_hit_rate_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_hit_rate_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- hit_rate = 1 if hits@k > 0 else 0
        CASE WHEN max(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 ELSE 0 END) = 1 THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS "hit_rate"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "hit_rate"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("hit_rate" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_hit_rate_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_hit_rate_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_hit_rate_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- hit_rate = 1 if hits@k > 0 else 0
        CASE WHEN max(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 ELSE 0 END) = 1 THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS "hit_rate"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("hit_rate" AS DOUBLE) AS "hit_rate"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_mrr(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_mrr: k must be an integer from 1 to 100000 (sqlmetrics_mrr_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mrr: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mrr: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_mrr: k must be an integer from 1 to 100000 (sqlmetrics_mrr_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mrr: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mrr: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- mrr@k = 1 / position of the first hit (0 if none)
        coalesce(CAST(1 AS DOUBLE) / min(CASE WHEN _relevant = 1 AND _p <= k THEN _p END), CAST(0 AS DOUBLE)) AS "mrr"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "mrr"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("mrr" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_mrr_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_mrr_per_user: k must be an integer from 1 to 100000 (sqlmetrics_mrr_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mrr_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mrr_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_mrr_per_user: k must be an integer from 1 to 100000 (sqlmetrics_mrr_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mrr_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mrr_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- mrr@k = 1 / position of the first hit (0 if none)
        coalesce(CAST(1 AS DOUBLE) / min(CASE WHEN _relevant = 1 AND _p <= k THEN _p END), CAST(0 AS DOUBLE)) AS "mrr"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("mrr" AS DOUBLE) AS "mrr"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_mrr_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mrr_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mrr_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- mrr = 1 / position of the first hit (0 if none)
        coalesce(CAST(1 AS DOUBLE) / min(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN _p END), CAST(0 AS DOUBLE)) AS "mrr"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "mrr"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("mrr" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_mrr_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mrr_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mrr_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- mrr = 1 / position of the first hit (0 if none)
        coalesce(CAST(1 AS DOUBLE) / min(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN _p END), CAST(0 AS DOUBLE)) AS "mrr"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("mrr" AS DOUBLE) AS "mrr"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_arhr(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_arhr: k must be an integer from 1 to 100000 (sqlmetrics_arhr_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_arhr: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_arhr: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_arhr: k must be an integer from 1 to 100000 (sqlmetrics_arhr_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_arhr: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_arhr: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- arhr@k = sum over hits of 1 / position
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) AS "arhr"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) / _p END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.2089258196146292e+24 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "arhr"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("arhr" AS DOUBLE) * CAST(1.2089258196146292e+24 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_arhr_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_arhr_per_user: k must be an integer from 1 to 100000 (sqlmetrics_arhr_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_arhr_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_arhr_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_arhr_per_user: k must be an integer from 1 to 100000 (sqlmetrics_arhr_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_arhr_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_arhr_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- arhr@k = sum over hits of 1 / position
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) AS "arhr"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) / _p END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("arhr" AS DOUBLE) AS "arhr"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_arhr_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_arhr_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_arhr_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- arhr = sum over hits of 1 / position
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) AS "arhr"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) / _p END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(1.2089258196146292e+24 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "arhr"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("arhr" AS DOUBLE) * CAST(1.2089258196146292e+24 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_arhr_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_arhr_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_arhr_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- arhr = sum over hits of 1 / position
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) AS "arhr"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 THEN (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) / _p END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("arhr" AS DOUBLE) AS "arhr"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_map(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_map: k must be an integer from 1 to 100000 (sqlmetrics_map_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_map: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_map: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_map: k must be an integer from 1 to 100000 (sqlmetrics_map_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_map: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_map: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- map@k = (1/R) sum over hits at i of precision@i
        coalesce(((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0))) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "map"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p <= k THEN CAST(_hit_number AS DOUBLE) / _p END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "map"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("map" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_map_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_map_per_user: k must be an integer from 1 to 100000 (sqlmetrics_map_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_map_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_map_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_map_per_user: k must be an integer from 1 to 100000 (sqlmetrics_map_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_map_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_map_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- map@k = (1/R) sum over hits at i of precision@i
        coalesce(((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0))) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "map"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p <= k THEN CAST(_hit_number AS DOUBLE) / _p END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("map" AS DOUBLE) AS "map"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_map_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_map_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_map_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- map = (1/R) sum over hits at i of precision@i
        coalesce(((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0))) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "map"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN CAST(_hit_number AS DOUBLE) / _p END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "map"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("map" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_map_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_map_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_map_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- map = (1/R) sum over hits at i of precision@i
        coalesce(((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0))) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "map"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN CAST(_hit_number AS DOUBLE) / _p END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("map" AS DOUBLE) AS "map"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_mar(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_mar: k must be an integer from 1 to 100000 (sqlmetrics_mar_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mar: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mar: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_mar: k must be an integer from 1 to 100000 (sqlmetrics_mar_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mar: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mar: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- mar@k = (1/R) sum over hits at i of recall@i
        CASE WHEN _relevant_count > 0 THEN (CAST(count(CASE WHEN _relevant = 1 AND _p <= k THEN 1 END) AS DOUBLE) * (CAST(count(CASE WHEN _relevant = 1 AND _p <= k THEN 1 END) AS DOUBLE) + 1) / 2) / (CAST(_relevant_count AS DOUBLE) * _relevant_count) ELSE CAST(0 AS DOUBLE) END AS "mar"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "mar"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("mar" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_mar_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_mar_per_user: k must be an integer from 1 to 100000 (sqlmetrics_mar_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mar_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mar_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_mar_per_user: k must be an integer from 1 to 100000 (sqlmetrics_mar_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mar_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mar_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- mar@k = (1/R) sum over hits at i of recall@i
        CASE WHEN _relevant_count > 0 THEN (CAST(count(CASE WHEN _relevant = 1 AND _p <= k THEN 1 END) AS DOUBLE) * (CAST(count(CASE WHEN _relevant = 1 AND _p <= k THEN 1 END) AS DOUBLE) + 1) / 2) / (CAST(_relevant_count AS DOUBLE) * _relevant_count) ELSE CAST(0 AS DOUBLE) END AS "mar"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("mar" AS DOUBLE) AS "mar"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_mar_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mar_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mar_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- mar = (1/R) sum over hits at i of recall@i
        CASE WHEN _relevant_count > 0 THEN (CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) * (CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) + 1) / 2) / (CAST(_relevant_count AS DOUBLE) * _relevant_count) ELSE CAST(0 AS DOUBLE) END AS "mar"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "mar"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("mar" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_mar_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_mar_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_mar_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- mar = (1/R) sum over hits at i of recall@i
        CASE WHEN _relevant_count > 0 THEN (CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) * (CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) + 1) / 2) / (CAST(_relevant_count AS DOUBLE) * _relevant_count) ELSE CAST(0 AS DOUBLE) END AS "mar"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("mar" AS DOUBLE) AS "mar"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_r_precision(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_r_precision: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_r_precision: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- r_precision = hits in the top R / R
        CASE WHEN _relevant_count > 0 THEN CAST(count(CASE WHEN _relevant = 1 AND _p <= _relevant_count THEN 1 END) AS DOUBLE) / _relevant_count ELSE CAST(0 AS DOUBLE) END AS "r_precision"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "r_precision"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("r_precision" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_r_precision_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_r_precision_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_r_precision_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- r_precision = hits in the top R / R
        CASE WHEN _relevant_count > 0 THEN CAST(count(CASE WHEN _relevant = 1 AND _p <= _relevant_count THEN 1 END) AS DOUBLE) / _relevant_count ELSE CAST(0 AS DOUBLE) END AS "r_precision"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("r_precision" AS DOUBLE) AS "r_precision"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_success(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_success: k must be an integer from 1 to 100000 (sqlmetrics_success_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_success: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_success: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_success: k must be an integer from 1 to 100000 (sqlmetrics_success_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_success: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_success: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- success@k = hit_rate@k (trec_eval's name)
        CASE WHEN max(CASE WHEN _relevant = 1 AND _p <= k THEN 1 ELSE 0 END) = 1 THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS "success"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "success"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("success" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_success_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_success_per_user: k must be an integer from 1 to 100000 (sqlmetrics_success_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_success_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_success_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_success_per_user: k must be an integer from 1 to 100000 (sqlmetrics_success_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_success_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_success_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- success@k = hit_rate@k (trec_eval's name)
        CASE WHEN max(CASE WHEN _relevant = 1 AND _p <= k THEN 1 ELSE 0 END) = 1 THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS "success"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("success" AS DOUBLE) AS "success"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_success_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_success_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_success_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- success = hit_rate@k (trec_eval's name)
        CASE WHEN max(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 ELSE 0 END) = 1 THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS "success"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "success"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("success" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_success_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_success_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_success_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- success = hit_rate@k (trec_eval's name)
        CASE WHEN max(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 ELSE 0 END) = 1 THEN CAST(1 AS DOUBLE) ELSE CAST(0 AS DOUBLE) END AS "success"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("success" AS DOUBLE) AS "success"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_set_P(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_set_P: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_set_P: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- set_P = hits / N over the whole list
        coalesce(CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(max(_retrieved), 0), CAST(0 AS DOUBLE)) AS "set_P"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "set_P"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("set_P" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_set_P_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_set_P_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_set_P_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- set_P = hits / N over the whole list
        coalesce(CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(max(_retrieved), 0), CAST(0 AS DOUBLE)) AS "set_P"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("set_P" AS DOUBLE) AS "set_P"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_set_recall(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_set_recall: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_set_recall: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- set_recall = hits / R over the whole list
        coalesce(CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "set_recall"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "set_recall"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("set_recall" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_set_recall_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_set_recall_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_set_recall_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- set_recall = hits / R over the whole list
        coalesce(CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "set_recall"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("set_recall" AS DOUBLE) AS "set_recall"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_set_F(recs, truth, beta := 1.0, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_set_F: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_set_F: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- set_F = (beta + 1) set_P set_recall / (beta set_P + set_recall) = (beta + 1) hits / (beta R + N)
        coalesce((CAST(beta AS DOUBLE) + 1) * CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(CAST(beta AS DOUBLE) * _relevant_count + max(_retrieved), 0), CAST(0 AS DOUBLE)) AS "set_F"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "set_F"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("set_F" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_set_F_per_user(recs, truth, beta := 1.0, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_set_F_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_set_F_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- set_F = (beta + 1) set_P set_recall / (beta set_P + set_recall) = (beta + 1) hits / (beta R + N)
        coalesce((CAST(beta AS DOUBLE) + 1) * CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) / nullif(CAST(beta AS DOUBLE) * _relevant_count + max(_retrieved), 0), CAST(0 AS DOUBLE)) AS "set_F"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("set_F" AS DOUBLE) AS "set_F"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_gm_map(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_gm_map: k must be an integer from 1 to 100000 (sqlmetrics_gm_map_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_gm_map: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_gm_map: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_gm_map: k must be an integer from 1 to 100000 (sqlmetrics_gm_map_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_gm_map: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_gm_map: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- gm_map@k = map@k per user; over users exp(mean(ln(max(AP, 1e-5))))
        coalesce(((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0))) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "gm_map"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p <= k THEN CAST(_hit_number AS DOUBLE) / _p END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        exp((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(4.835703278458517e+24 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0)) AS "gm_map"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(ln(greatest("gm_map", CAST(0.00001 AS DOUBLE))) AS DOUBLE) * CAST(4.835703278458517e+24 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_gm_map_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_gm_map_per_user: k must be an integer from 1 to 100000 (sqlmetrics_gm_map_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_gm_map_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_gm_map_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_gm_map_per_user: k must be an integer from 1 to 100000 (sqlmetrics_gm_map_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_gm_map_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_gm_map_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- gm_map@k = map@k per user; over users exp(mean(ln(max(AP, 1e-5))))
        coalesce(((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0))) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "gm_map"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p <= k THEN CAST(_hit_number AS DOUBLE) / _p END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("gm_map" AS DOUBLE) AS "gm_map"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_gm_map_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_gm_map_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_gm_map_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- gm_map = map@k per user; over users exp(mean(ln(max(AP, 1e-5))))
        coalesce(((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0))) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "gm_map"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN CAST(_hit_number AS DOUBLE) / _p END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        exp((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(4.835703278458517e+24 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0)) AS "gm_map"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(ln(greatest("gm_map", CAST(0.00001 AS DOUBLE))) AS DOUBLE) * CAST(4.835703278458517e+24 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_gm_map_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_gm_map_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_gm_map_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- gm_map = map@k per user; over users exp(mean(ln(max(AP, 1e-5))))
        coalesce(((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0))) / nullif(_relevant_count, 0), CAST(0 AS DOUBLE)) AS "gm_map"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN CAST(_hit_number AS DOUBLE) / _p END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("gm_map" AS DOUBLE) AS "gm_map"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_bpref(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_bpref: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_bpref: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        -- any truth row (of any grade); judged non-relevant (trec_eval: 0 <= rel < threshold)
        CASE WHEN j._item IS NOT NULL THEN 1 ELSE 0 END AS _judged,
        CASE WHEN j._rel >= 0 AND j._rel < 1 THEN 1 ELSE 0 END AS _nonrelevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*,
        -- bpref: the judged non-relevant items retrieved above the row, and all of the user's
        sum(CASE WHEN _nonrelevant = 1 AND _p IS NOT NULL THEN 1 ELSE 0 END)
            OVER (PARTITION BY _g0, _user ORDER BY _p ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS _nonrelevant_above,
        sum(_nonrelevant) OVER (PARTITION BY _g0, _user) AS _nonrelevant_count
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- bpref = (1/R) sum over hits of 1 - min(n above, R) / min(N_n, R)
        CASE WHEN _relevant_count > 0 THEN (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / _relevant_count ELSE CAST(0 AS DOUBLE) END AS "bpref"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN CASE WHEN _nonrelevant_above > 0 THEN 1 - CAST(least(_nonrelevant_above, _relevant_count) AS DOUBLE) / least(_nonrelevant_count, _relevant_count) ELSE CAST(1 AS DOUBLE) END END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "bpref"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("bpref" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_bpref_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_bpref_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_bpref_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        -- any truth row (of any grade); judged non-relevant (trec_eval: 0 <= rel < threshold)
        CASE WHEN j._item IS NOT NULL THEN 1 ELSE 0 END AS _judged,
        CASE WHEN j._rel >= 0 AND j._rel < 1 THEN 1 ELSE 0 END AS _nonrelevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*,
        -- bpref: the judged non-relevant items retrieved above the row, and all of the user's
        sum(CASE WHEN _nonrelevant = 1 AND _p IS NOT NULL THEN 1 ELSE 0 END)
            OVER (PARTITION BY _g0, _user ORDER BY _p ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS _nonrelevant_above,
        sum(_nonrelevant) OVER (PARTITION BY _g0, _user) AS _nonrelevant_count
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- bpref = (1/R) sum over hits of 1 - min(n above, R) / min(N_n, R)
        CASE WHEN _relevant_count > 0 THEN (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / _relevant_count ELSE CAST(0 AS DOUBLE) END AS "bpref"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN CASE WHEN _nonrelevant_above > 0 THEN 1 - CAST(least(_nonrelevant_above, _relevant_count) AS DOUBLE) / least(_nonrelevant_count, _relevant_count) ELSE CAST(1 AS DOUBLE) END END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("bpref" AS DOUBLE) AS "bpref"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_00(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_00: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_00: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.00 = max over hits i >= max(1, lround(0.0 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.0 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.00"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.00"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.00" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_00_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_00_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_00_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.00 = max over hits i >= max(1, lround(0.0 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.0 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.00"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.00" AS DOUBLE) AS "iprec_at_recall_0.00"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_10(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_10: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_10: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.10 = max over hits i >= max(1, lround(0.1 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.1 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.10"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.10"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.10" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_10_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_10_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_10_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.10 = max over hits i >= max(1, lround(0.1 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.1 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.10"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.10" AS DOUBLE) AS "iprec_at_recall_0.10"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_20(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_20: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_20: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.20 = max over hits i >= max(1, lround(0.2 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.2 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.20"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.20"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.20" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_20_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_20_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_20_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.20 = max over hits i >= max(1, lround(0.2 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.2 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.20"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.20" AS DOUBLE) AS "iprec_at_recall_0.20"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_30(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_30: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_30: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.30 = max over hits i >= max(1, lround(0.3 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.3 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.30"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.30"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.30" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_30_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_30_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_30_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.30 = max over hits i >= max(1, lround(0.3 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.3 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.30"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.30" AS DOUBLE) AS "iprec_at_recall_0.30"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_40(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_40: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_40: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.40 = max over hits i >= max(1, lround(0.4 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.4 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.40"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.40"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.40" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_40_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_40_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_40_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.40 = max over hits i >= max(1, lround(0.4 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.4 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.40"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.40" AS DOUBLE) AS "iprec_at_recall_0.40"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_50(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_50: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_50: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.50 = max over hits i >= max(1, lround(0.5 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.5 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.50"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.50"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.50" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_50_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_50_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_50_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.50 = max over hits i >= max(1, lround(0.5 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.5 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.50"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.50" AS DOUBLE) AS "iprec_at_recall_0.50"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_60(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_60: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_60: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.60 = max over hits i >= max(1, lround(0.6 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.6 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.60"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.60"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.60" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_60_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_60_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_60_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.60 = max over hits i >= max(1, lround(0.6 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.6 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.60"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.60" AS DOUBLE) AS "iprec_at_recall_0.60"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_70(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_70: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_70: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.70 = max over hits i >= max(1, lround(0.7 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.7 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.70"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.70"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.70" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_70_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_70_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_70_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.70 = max over hits i >= max(1, lround(0.7 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.7 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.70"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.70" AS DOUBLE) AS "iprec_at_recall_0.70"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_80(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_80: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_80: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.80 = max over hits i >= max(1, lround(0.8 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.8 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.80"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.80"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.80" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_80_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_80_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_80_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.80 = max over hits i >= max(1, lround(0.8 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.8 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.80"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.80" AS DOUBLE) AS "iprec_at_recall_0.80"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_90(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_90: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_90: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.90 = max over hits i >= max(1, lround(0.9 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.9 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.90"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_0.90"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_0.90" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_0_90_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_0_90_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_0_90_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_0.90 = max over hits i >= max(1, lround(0.9 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.9 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_0.90"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_0.90" AS DOUBLE) AS "iprec_at_recall_0.90"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_1_00(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_1_00: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_1_00: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_1.00 = max over hits i >= max(1, lround(1.0 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(1.0 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_1.00"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "iprec_at_recall_1.00"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("iprec_at_recall_1.00" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_iprec_at_recall_1_00_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_iprec_at_recall_1_00_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_iprec_at_recall_1_00_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- iprec_at_recall_1.00 = max over hits i >= max(1, lround(1.0 R)) of i / position of hit i
        coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(1.0 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) AS "iprec_at_recall_1.00"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("iprec_at_recall_1.00" AS DOUBLE) AS "iprec_at_recall_1.00"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_11pt_avg(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_11pt_avg: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_11pt_avg: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- 11pt_avg = mean of the 11 iprec_at_recall values
        (coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.0 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.1 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.2 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.3 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.4 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.5 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.6 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.7 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.8 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.9 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(1.0 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE))) / 11 AS "11pt_avg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "11pt_avg"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("11pt_avg" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_11pt_avg_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_11pt_avg_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_11pt_avg_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- 11pt_avg = mean of the 11 iprec_at_recall values
        (coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.0 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.1 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.2 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.3 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.4 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.5 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.6 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.7 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.8 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(0.9 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE)) + coalesce(max(CASE WHEN _relevant = 1 AND _p IS NOT NULL AND _hit_number >= greatest(floor(CAST(1.0 AS DOUBLE) * _relevant_count + CAST(0.5 AS DOUBLE)), 1) THEN CAST(_hit_number AS DOUBLE) / _p END), CAST(0 AS DOUBLE))) / 11 AS "11pt_avg"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("11pt_avg" AS DOUBLE) AS "11pt_avg"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_num_q(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_num_q: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_num_q: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- num_q = 1 per user; summed
        CAST(1 AS DOUBLE) AS "num_q"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(67108864.0 AS DOUBLE) + coalesce(max(_e), 0)) AS "num_q"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("num_q" AS DOUBLE) * CAST(67108864.0 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_num_q_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_num_q_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_num_q_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- num_q = 1 per user; summed
        CAST(1 AS DOUBLE) AS "num_q"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("num_q" AS DOUBLE) AS "num_q"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_num_ret(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_num_ret: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_num_ret: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- num_ret = N, the items retrieved; summed
        CAST(max(_retrieved) AS DOUBLE) AS "num_ret"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(67108864.0 AS DOUBLE) + coalesce(max(_e), 0)) AS "num_ret"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("num_ret" AS DOUBLE) * CAST(67108864.0 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_num_ret_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_num_ret_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_num_ret_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- num_ret = N, the items retrieved; summed
        CAST(max(_retrieved) AS DOUBLE) AS "num_ret"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("num_ret" AS DOUBLE) AS "num_ret"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_num_rel(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_num_rel: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_num_rel: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- num_rel = R; summed
        CAST(_relevant_count AS DOUBLE) AS "num_rel"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(67108864.0 AS DOUBLE) + coalesce(max(_e), 0)) AS "num_rel"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("num_rel" AS DOUBLE) * CAST(67108864.0 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_num_rel_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_num_rel_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_num_rel_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- num_rel = R; summed
        CAST(_relevant_count AS DOUBLE) AS "num_rel"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("num_rel" AS DOUBLE) AS "num_rel"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_num_rel_ret(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_num_rel_ret: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_num_rel_ret: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- num_rel_ret = hits in the whole list; summed
        CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) AS "num_rel_ret"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(67108864.0 AS DOUBLE) + coalesce(max(_e), 0)) AS "num_rel_ret"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("num_rel_ret" AS DOUBLE) * CAST(67108864.0 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_num_rel_ret_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_num_rel_ret_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_num_rel_ret_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            WHERE _rel > 0
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- num_rel_ret = hits in the whole list; summed
        CAST(count(CASE WHEN _relevant = 1 AND _p IS NOT NULL THEN 1 END) AS DOUBLE) AS "num_rel_ret"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *
    FROM judged) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("num_rel_ret" AS DOUBLE) AS "num_rel_ret"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_judged(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_judged: k must be an integer from 1 to 100000 (sqlmetrics_judged_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_judged: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_judged: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_judged: k must be an integer from 1 to 100000 (sqlmetrics_judged_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_judged: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_judged: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        -- any truth row (of any grade); judged non-relevant (trec_eval: 0 <= rel < threshold)
        CASE WHEN j._item IS NOT NULL THEN 1 ELSE 0 END AS _judged,
        CASE WHEN j._rel >= 0 AND j._rel < 1 THEN 1 ELSE 0 END AS _nonrelevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- judged@k = items of the top k with a truth row of any grade / min(k, N)
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(least(k, max(_retrieved)), 0), CAST(0 AS DOUBLE)) AS "judged"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _judged = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "judged"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("judged" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_judged_per_user(recs, truth, k := 10, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_candidates AS MATERIALIZED (
    -- kept per user: the candidates' top list and whether it is exact, not the candidates
    -- (their 25 values per user were 250 MB of the memory at 100M rows)
    SELECT * EXCLUDE (_cand_items, _cand_keys),
        CASE WHEN list_bool_or(list_transform(list_slice(_cand_keys, 1, k), lambda x, i: x = _cand_keys[i + 1]))
        THEN list_transform(list_slice(list_reverse_sort(list_transform(list_zip(list_slice(_cand_keys, 1, len(_cand_items)), _cand_items), lambda p: {'k': p[1], 'i': p[2]})), 1, k), lambda x: x.i)
        ELSE list_slice(_cand_items, 1, k)
    END AS _cand_top,
        (len(_cand_keys) <= (k + 2) OR _cand_keys[((k + 2) + 1)] < _cand_keys[k]) AS _exact
    FROM (
    SELECT
        _g0, _user,
        arg_max(_item, _key, (k + 2)) AS _cand_items,
        max(_key, ((k + 2) + 1)) AS _cand_keys,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_judged_per_user: k must be an integer from 1 to 100000 (sqlmetrics_judged_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_judged_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_judged_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_tie_fallback AS MATERIALIZED (
    -- the rare users whose k-th best score is tied beyond the candidates: their rows once more
    SELECT _g0, _user, list_transform(max({'k': _key, 'i': _item}, k), lambda x: x.i) AS _top
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE CASE WHEN k >= 1 AND k <= 100000 AND k = floor(k) THEN TRUE ELSE error('sqlmetrics: sqlmetrics_judged_per_user: k must be an integer from 1 to 100000 (sqlmetrics_judged_per_user_whole ranks the whole list), got ' || coalesce(CAST(k AS VARCHAR), 'NULL')) END AND (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_judged_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_judged_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    ) AS r
    SEMI JOIN (SELECT _g0, _user FROM recs_candidates WHERE NOT _exact) AS f
        ON r._user = f._user AND r._g0 IS NOT DISTINCT FROM f._g0
    GROUP BY _g0, _user
),
recs_lists AS NOT MATERIALIZED (
    -- not stored a second time: each reading joins the stored candidates to the few fallback
    -- lists (another 120 MB at 100M rows; no slower at 10M)
    SELECT * EXCLUDE (_cand_top, _exact, _bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
        SELECT c.*, coalesce(f._top, _cand_top) AS _top
        FROM recs_candidates AS c
        LEFT JOIN recs_tie_fallback AS f
            ON c._user = f._user AND c._g0 IS NOT DISTINCT FROM f._g0
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        -- any truth row (of any grade); judged non-relevant (trec_eval: 0 <= rel < threshold)
        CASE WHEN j._item IS NOT NULL THEN 1 ELSE 0 END AS _judged,
        CASE WHEN j._rel >= 0 AND j._rel < 1 THEN 1 ELSE 0 END AS _nonrelevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- judged@k = items of the top k with a truth row of any grade / min(k, N)
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(least(k, max(_retrieved)), 0), CAST(0 AS DOUBLE)) AS "judged"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _judged = 1 THEN (CASE WHEN _p <= k THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("judged" AS DOUBLE) AS "judged"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_judged_whole(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), * EXCLUDE (sqlmetrics_segment) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_judged_whole: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_judged_whole: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        -- any truth row (of any grade); judged non-relevant (trec_eval: 0 <= rel < threshold)
        CASE WHEN j._item IS NOT NULL THEN 1 ELSE 0 END AS _judged,
        CASE WHEN j._rel >= 0 AND j._rel < 1 THEN 1 ELSE 0 END AS _nonrelevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- judged = items of the top k with a truth row of any grade / min(k, N)
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(max(_retrieved), 0), CAST(0 AS DOUBLE)) AS "judged"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _judged = 1 THEN (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        CAST(count(*) AS BIGINT) AS users,
        (coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(count(*), 0) AS "judged"
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST("judged" AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM per_user) AS _scaled) AS _integers) AS per_user
    GROUP BY _g0
    UNION ALL
    SELECT NULL, CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;

CREATE OR REPLACE MACRO sqlmetrics_judged_whole_per_user(recs, truth, "by" := [], "user" := ['user_id'], item := 'item_id', score := 'score', relevance := 'relevance', grades := NULL) AS TABLE
SELECT * EXCLUDE (sqlmetrics_all) FROM (
SELECT unnest(sqlmetrics_segment), unnest(sqlmetrics_user), * EXCLUDE (sqlmetrics_segment, sqlmetrics_user) FROM (
WITH
recs_lists AS MATERIALIZED (
    SELECT * EXCLUDE (_bad_row), CASE
        WHEN _user IS NULL THEN 'recs (the recs table) has a NULL user'
        WHEN _bad_row = 3 THEN 'recs (the recs table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 2 THEN 'recs (the recs table) has a NULL score for user = ' || CAST(_user AS VARCHAR)
        WHEN _bad_row = 1 THEN 'recs (the recs table) has a NaN or infinite score for user = ' || CAST(_user AS VARCHAR)
        WHEN CASE WHEN len(_top) <= 32
        THEN list_bool_or(list_transform(_top, lambda x, i: list_position(_top, x) < i))
        ELSE len(list_distinct(_top)) < len(_top)
    END
            THEN 'recs (the recs table) has a duplicate (user, item) for user = ' || CAST(_user AS VARCHAR)
    END AS _problem
    FROM (
    SELECT
        _g0, _user,
        list_transform(list_reverse_sort(list({'k': _key, 'i': _item})), lambda x: x.i) AS _top,
        count(*) AS _retrieved,
        max(CASE WHEN _item IS NULL THEN 3 WHEN _key IS NULL THEN 2 WHEN NOT isfinite(_key) THEN 1 ELSE 0 END) AS _bad_row
    FROM (
        SELECT
            "sqlmetrics_segment" AS _g0,
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            "sqlmetrics_score" AS _key
        FROM (SELECT struct_pack(*COLUMNS(lambda c: (list_contains(CAST("by" AS VARCHAR[]), c) AND NOT list_contains(CAST("user" AS VARCHAR[]), c)) OR c = 'sqlmetrics_all')) AS sqlmetrics_segment, struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = score) AS sqlmetrics_score FROM (SELECT *, NULL AS sqlmetrics_all FROM query_table(recs) WHERE (SELECT CASE WHEN len(_recs_missing) = 0 AND len(_truth_missing) = 0 THEN TRUE WHEN len(_recs_missing) > 0 THEN error('sqlmetrics: sqlmetrics_judged_whole_per_user: recs has no column ' || array_to_string(_recs_missing, ', ')) ELSE error('sqlmetrics: sqlmetrics_judged_whole_per_user: truth has no column ' || array_to_string(_truth_missing, ', ')) END FROM (SELECT (SELECT list_filter(list_concat(CAST("by" AS VARCHAR[]), CAST("user" AS VARCHAR[])), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(recs) LIMIT 1) AS recs_names) AS _recs_missing, (SELECT list_filter(CAST("user" AS VARCHAR[]), lambda x: NOT list_contains(_columns, x)) FROM (SELECT struct_keys(struct_pack(*COLUMNS(*))) AS _columns FROM query_table(truth) LIMIT 1) AS truth_names) AS _truth_missing) AS sqlmetrics_missing)) AS recs_columns)
    )
    GROUP BY _g0, _user
    )
),
recs_top AS (
    SELECT _g0, _user, unnest(_top) AS _item, generate_subscripts(_top, 1) AS _pos
    FROM recs_lists
),
recs_users AS (
    SELECT _g0, _user, _retrieved FROM recs_lists
),
recs_problems AS (
    SELECT _problem FROM recs_lists
),
truth_items AS (
    -- a second row for a (user, item) is a duplicate, except with an action column, where
    -- several actions on one item keep the highest grade, or with truth_duplicates 'max' (the
    -- highest grade) or 'sum' (the grades added up)
    SELECT _user, _item, max(_rel) AS _rel, count(*) AS _copies
    FROM (
        SELECT
            "sqlmetrics_user" AS _user,
            "sqlmetrics_item" AS _item,
            coalesce(CAST(CASE WHEN grades IS NULL THEN CAST("sqlmetrics_relevance" AS DOUBLE) ELSE coalesce(CAST(map_extract_value(grades, "sqlmetrics_relevance") AS DOUBLE), 0) END AS DOUBLE), 0) AS _rel
        FROM (SELECT struct_pack(*COLUMNS(lambda c: list_contains("user", c))) AS sqlmetrics_user, COLUMNS(lambda c: c = item) AS sqlmetrics_item, COLUMNS(lambda c: c = coalesce(relevance, 'sqlmetrics_one')) AS sqlmetrics_relevance FROM (SELECT *, 1 AS sqlmetrics_one FROM query_table(truth)) AS truth_columns)
    ) AS truth_rows
    GROUP BY _user, _item
),
truth_users AS (
    SELECT
        _user,
        count(CASE WHEN _rel >= 1 THEN 1 END) AS _relevant_count,
        CASE
            WHEN _user IS NULL THEN 'truth (the truth table) has a NULL user'
            WHEN max(CASE WHEN _item IS NULL THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NULL item for user = ' || CAST(_user AS VARCHAR)
            WHEN max(CASE WHEN NOT (isfinite(_rel)) THEN 1 ELSE 0 END) = 1 THEN 'truth (the truth table) has a NaN or infinite relevance for user = ' || CAST(_user AS VARCHAR)
        END AS _problem
    FROM truth_items
    GROUP BY _user
),
input_check AS (
    SELECT CASE WHEN problem IS NULL THEN TRUE ELSE error('sqlmetrics: ' || problem) END AS ok
    FROM (
        SELECT min(_problem) AS problem
        FROM (
            SELECT _problem FROM recs_problems
            UNION ALL
            SELECT _problem FROM truth_users
        ) AS problems
    ) AS first_problem
),
users AS (
    -- users of recs with no truth row are not evaluated, truth users absent from recs are skipped
    SELECT r._g0, r._user, t._relevant_count, r._retrieved
    FROM recs_users AS r
    JOIN truth_users AS t ON r._user = t._user
),
judged_items AS (
    SELECT
        u._g0, u._user,
        u._relevant_count,
        u._retrieved,
        CASE WHEN j._rel > 0 THEN j._rel ELSE CAST(0 AS DOUBLE) END AS _gain,
        CASE WHEN j._rel >= 1 THEN 1 ELSE 0 END AS _relevant,
        -- any truth row (of any grade); judged non-relevant (trec_eval: 0 <= rel < threshold)
        CASE WHEN j._item IS NOT NULL THEN 1 ELSE 0 END AS _judged,
        CASE WHEN j._rel >= 0 AND j._rel < 1 THEN 1 ELSE 0 END AS _nonrelevant,
        u._p AS _p,
        u._ideal,
        u._hit_number
    FROM (
        SELECT *,
            CASE WHEN j._rel >= 1 AND _p IS NOT NULL THEN list_position(_hits, _p) END AS _hit_number
        FROM (
            SELECT _g0, _user, _relevant_count, _retrieved, _hits,
                unnest(_judged) AS j, unnest(_positions) AS _p, generate_subscripts(_judged, 1) AS _ideal
            FROM (
                SELECT *,
                    list_sort(list_filter(list_transform(_judged, lambda x, i: CASE WHEN x._rel >= 1 THEN _positions[i] END), lambda p: p IS NOT NULL)) AS _hits
                FROM (
                    SELECT *, list_transform(_judged, lambda x: list_position(_top, x._item)) AS _positions
                    FROM (
                        SELECT u._g0, u._user, u._relevant_count, u._retrieved, r._top,
                            coalesce(t._judged, [NULL]) AS _judged
                        FROM users AS u
                        LEFT JOIN (
                            -- sorted by grade, descending: the ideal order, as a gain never falls as
                            -- the grade rises (ties by item)
                            SELECT _user, list_reverse_sort(list({'_rel': _rel, '_item': _item})) AS _judged
                            FROM truth_items
                            GROUP BY _user
                        ) AS t ON t._user = u._user
                        LEFT JOIN recs_lists AS r ON r._user = u._user AND r._g0 IS NOT DISTINCT FROM u._g0
                    ) AS u
                ) AS u
            ) AS u
        ) AS u
    ) AS u
    -- no row goes on past a failed check (a NaN grade would stop the sums before it is named)
    CROSS JOIN input_check
    WHERE input_check.ok
),
judged AS (
    SELECT judged_items.*
    FROM judged_items
),
per_user AS (
    SELECT
        _g0, _user,
        -- judged = items of the top k with a truth row of any grade / min(k, N)
        coalesce((coalesce((sign(sum(_s0)) * CAST(abs(sum(_s0)) AS DOUBLE)), 0) / CAST(3.8685626227668134e+25 AS DOUBLE) + coalesce(max(_e), 0)) / nullif(max(_retrieved), 0), CAST(0 AS DOUBLE)) AS "judged"
    -- the terms of the exact sums above, once per row (sql/exact_sum.sql.j2)
    FROM (SELECT *,
        CASE WHEN (CAST(abs(_s0) AS DOUBLE) = abs(_v0) OR _v0 IS NULL)
            THEN CAST(0 AS DOUBLE) ELSE CAST('NaN' AS DOUBLE) END AS _e
    FROM (SELECT *,
        TRY_CAST(_v0 AS DECIMAL(26, 0)) AS _s0
    FROM (SELECT *,
        CAST(CASE WHEN _judged = 1 THEN (CASE WHEN _p IS NOT NULL THEN CAST(1 AS DOUBLE) END) END AS DOUBLE) * CAST(3.8685626227668134e+25 AS DOUBLE) AS _v0
    FROM judged) AS _scaled) AS _integers) AS judged
    GROUP BY _g0, _user, _relevant_count
)
SELECT * FROM (
    SELECT
        _g0 AS "sqlmetrics_segment",
        _user AS "sqlmetrics_user",
        CAST("judged" AS DOUBLE) AS "judged"
    FROM per_user
    UNION ALL
    SELECT NULL, NULL, CAST(NULL AS DOUBLE)
    FROM input_check
    WHERE NOT ok
) AS result
ORDER BY "sqlmetrics_segment" NULLS LAST, "sqlmetrics_user" NULLS LAST
) AS sqlmetrics_result
) AS sqlmetrics_columns;
