-- per unit, similarity from the history's co-occurrence (no item_features)
select * from {{ sqlmetrics.evaluate(
    recs=ref('recommendations'), metrics=['fcp', 'novelty@5', 'popularity@5', 'diversity@5', 'serendipity@5'],
    truth=ref('purchases'), history=ref('history_views'), by='model', user=['user_id', 'day'],
    per_user=true, truth_duplicates='max') }}
