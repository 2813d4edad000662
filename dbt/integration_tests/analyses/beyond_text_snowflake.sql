{#- the beyond-accuracy metrics' statement for snowflake, compiled on any adapter (tests/test_dbt_package.py
    compares it with sqlmetrics.sql(..., dialect='snowflake')) -#}
{{ sqlmetrics.sql(ref('recommendations'), ['fcp', 'catalog_coverage@10', 'distributional_coverage@10', 'gini@10', 'novelty@10', 'popularity@10', 'diversity@10', 'serendipity@10', 'personalization@10', 'ndcg@10'], {
    'truth': ref('events'), 'by': ['model'], 'user': ['user_id', 'day'], 'action': 'event_type',
    'relevance': {'purchase': 3, 'add_to_cart': 2, 'view': 1}, 'history': ref('history_views'),
    'catalog': ref('catalog'), 'item_features': ref('item_vectors'), 'dialect': 'snowflake'}) }}
