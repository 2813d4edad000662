-- rbp's terms (powers of p) are not always held by the fast exact sum: exact_sums='wide'
select * from {{ sqlmetrics.evaluate(
    recs=ref('recommendations'), metrics=['rbp', 'rbp_resid', 'ndcg@10', 'err@10'],
    truth=ref('graded'), by=['model'], user=['user_id', 'day'], exact_sums='wide') }}
