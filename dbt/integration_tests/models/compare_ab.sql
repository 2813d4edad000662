-- model B against model A, paired per (user, day): compare()'s paired t-test, the columns SQL computes
select * from {{ sqlmetrics.compare(
    recs=ref('recommendations'), metrics=['ndcg@10', 'map@10', 'recall@20', 'mrr@10'],
    by='model', baseline='A', truth=ref('graded'), user=['user_id', 'day']) }}
