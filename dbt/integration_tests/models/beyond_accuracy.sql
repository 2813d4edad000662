-- every beyond-accuracy metric beside a ranking one; the cosines of item_features are never
-- held by the fast exact sum: exact_sums='wide' (evaluate() runs the wide form on its own)
select * from {{ sqlmetrics.evaluate(
    recs=ref('recommendations'),
    metrics=['fcp', 'catalog_coverage@10', 'distributional_coverage@10', 'gini@10', 'novelty@10',
             'popularity@10', 'diversity@10', 'serendipity@10', 'personalization@10', 'ndcg@10'],
    truth=ref('graded'), history=ref('history_views'), catalog=ref('catalog'),
    item_features=ref('item_vectors'), by=['model'], user=['user_id', 'day'], exact_sums='wide') }}
