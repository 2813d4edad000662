{#- The calls of the analyses intent_text_<dialect>.sql and groups_text_<dialect>.sql: one
    statement written for each dialect, compiled on any adapter (tests/test_dbt_package.py
    compares each with sqlmetrics.sql(..., dialect=<dialect>)). -#}

{#- the intent-aware measures (alpha_ndcg past 100 positions: a fold or a recursive CTE) -#}
{% macro intent_text(dialect) -%}
{{ return(sqlmetrics.sql(ref('recommendations'), ['alpha_ndcg@150', 'p_ia@10', 'ap_ia', 'err_ia@10', 'nrbp', 'ndcg@10'], {
    'subtopics': ref('subtopic_judgements'), 'by': ['model'], 'user': ['user_id', 'day'],
    'dialect': dialect})) }}
{%- endmacro %}

{#- the measures over item groups (the genres as rows, awrf's target) and against a baseline system -#}
{% macro groups_text(dialect) -%}
{{ return(sqlmetrics.sql(ref('recommendations'), ['calibration@10', 'group_ee_l@10', 'awrf@10', 'rbo@10', 'rbo_sum@5'], {
    'truth': ref('graded'), 'history': ref('history_views'), 'item_genres': ref('item_genres'),
    'genre_weight': 'weight', 'group_target': ref('group_target'), 'baseline': 'A',
    'by': ['model'], 'user': ['user_id', 'day'], 'dialect': dialect})) }}
{%- endmacro %}
