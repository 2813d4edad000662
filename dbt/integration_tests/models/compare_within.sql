-- ... inside each day (within=), graded by action, an event log's repeats once
select * from {{ sqlmetrics.compare(
    recs=ref('recommendations'), metrics=['ndcg@10', 'precision@5'], by='model', baseline='A',
    within='day', truth=ref('events'), user=['user_id', 'day'], action='event_type',
    relevance={'purchase': 3, 'add_to_cart': 2, 'view': 1}, truth_duplicates='max') }}
