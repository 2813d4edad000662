-- trec_eval's whole-list measures, exponential gains, ties in trec_eval's text order
select * from {{ sqlmetrics.evaluate(
    recs=ref('recommendations'), metrics=['map', 'ndcg', 'r_precision', 'bpref', 'mrr', 'num_rel_ret'],
    truth=ref('graded'), by=['model'], user=['user_id', 'day'], gain='exponential', ties='trec_eval') }}
