-- One row per (day, model): each user's list of the day against that day's events, graded
-- purchase 3, add_to_cart 2, view 1 (daily_report.toml). Incremental: a run replaces the days
-- it computes and keeps the others.
{{ config(materialized='incremental', unique_key=['day', 'model'], incremental_strategy='delete+insert') }}

select * from {{ sqlmetrics.evaluate(
    recs=ref('days_recommendations'),
    metrics=['ndcg@10', 'map@10', 'recall@20', 'mrr@10', 'hit_rate@10'],
    truth=ref('days_events'),
    by=['day', 'model'],
    user=['user_id', 'day'],
    action='event_type',
    relevance={'purchase': 3, 'add_to_cart': 2, 'view': 1}) }}
