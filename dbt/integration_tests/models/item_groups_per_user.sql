-- per unit: the measures over item groups (each genre row weighing 1) and rbo against model B
select * from {{ sqlmetrics.evaluate(
    recs=ref('recommendations'),
    metrics=['calibration@5', 'group_ee_r@5', 'awrf@5', 'rbo@5'],
    truth=ref('purchases'), history=ref('history_views'), item_genres=ref('item_genres'),
    baseline='B', by='model', user=['user_id', 'day'], per_user=true, truth_duplicates='max') }}
