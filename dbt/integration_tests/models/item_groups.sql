-- the measures over item groups (the genres as rows, awrf's target) and against a baseline
-- system (rbo, rbo_sum: each model's lists against model A's)
select * from {{ sqlmetrics.evaluate(
    recs=ref('recommendations'),
    metrics=['calibration@10', 'group_ee_l@10', 'group_ee_d@10', 'group_ee_r@10', 'awrf@10',
             'rbo@10', 'rbo_sum@5', 'ndcg@10'],
    truth=ref('graded'), history=ref('history_views'), item_genres=ref('item_genres'),
    genre_weight='weight', group_target=ref('group_target'), baseline='A', by=['model'],
    user=['user_id', 'day']) }}
