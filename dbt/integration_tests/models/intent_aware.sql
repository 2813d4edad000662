-- the intent-aware measures over subtopic judgements (subtopics=: the call's truth too);
-- alpha_ndcg's ideal list sums are held by the wide form only (evaluate() runs it on its own)
select * from {{ sqlmetrics.evaluate(
    recs=ref('recommendations'),
    metrics=['alpha_ndcg@10', 'p_ia@10', 'ap_ia', 'err_ia@10', 'nrbp', 'ndcg@10'],
    subtopics=ref('subtopic_judgements'), by=['model'], user=['user_id', 'day'], exact_sums='wide') }}
