-- The daily A/B report (warehouse_examples/daily_report.toml) as an incremental model: each
-- day's lists of each model against that day's events, graded by action; a run replaces the
-- days it computes (delete+insert on day and model).
{{ config(materialized='incremental', unique_key=['day', 'model'], incremental_strategy='delete+insert') }}

select * from {{ sqlmetrics.evaluate(
    recs=ref('report_recommendations'),
    metrics=['ndcg@10', 'map@10', 'recall@20', 'mrr@10', 'hit_rate@10'],
    truth=ref('report_events'),
    by=['day', 'model'],
    user=['user_id', 'day'],
    action='event_type',
    relevance={'purchase': 3, 'add_to_cart': 2, 'view': 1}) }}
