{#- the statement for postgres, compiled on any adapter (tests/test_dbt_package.py compares it with
    sqlmetrics.sql(..., dialect='postgres')) -#}
{{ sqlmetrics.sql(ref('recommendations'), ['ndcg@10', 'map@10', 'recall@20', 'mrr', 'iprec_at_recall_0.50'], {
    'truth': ref('events'), 'by': ['day', 'model'], 'user': ['user_id', 'day'], 'action': 'event_type',
    'relevance': {'purchase': 3, 'add_to_cart': 2, 'view': 1}, 'dialect': 'postgres'}) }}
