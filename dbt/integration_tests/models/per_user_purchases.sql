-- one row per (model, user, day): purchases as a binary truth, an event log's repeats once
select * from {{ sqlmetrics.evaluate(
    recs=ref('recommendations'), metrics=['precision@10', 'hit_rate@10', 'ndcg@5'],
    truth=ref('purchases'), by='model', user=['user_id', 'day'], per_user=true,
    truth_duplicates='max') }}
