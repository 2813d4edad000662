{#- sqlmetrics.compare() as a dbt macro (docs/sql.md): the statement of compare() for the paired
    t-test (sql/compare/compare.sql.j2, generated into compare_template()), with the columns that
    SQL computes from its sufficient statistics (sql/compare/sql_columns.sql.j2). The p-value,
    the intervals and the adjusted p-values need the t distribution (compare() computes them in
    Python): they are not in dbt; std_error and t_statistic are given instead. The other tests
    and designs compute their p-values in Python too, and fail to compile, naming it.

    select * from {{ sqlmetrics.compare(recs=ref('recommendations'), metrics=['ndcg@10'],
        by='model', baseline='A', truth=ref('events'), user=['user_id', 'day'],
        action='event_type', relevance={'purchase': 3, 'add_to_cart': 2, 'view': 1}) }}
    compare()'s keywords; design='paired' is the only design (compare()'s default, 'auto',
    chooses in Python). -#}
{% macro compare(recs, metrics, by, baseline, test='t', confidence=0.95, correction='holm',
                 replicates=10000, seed=0, within=none, design='paired', covariate=none,
                 expected_split=none, partitions=1, progress=false, truth=none, user='user_id',
                 item='item_id', score='score', rank=none, relevance=none, action=none, ties=none,
                 threshold=none, gain=none, empty=none, missing=none, ap_denominator=none,
                 duplicates=none, truth_duplicates=none, short_lists=none, profile=none,
                 history=none, catalog=none, item_features=none, features='features', item_genres=none,
                 genre='genre', genre_weight=none, group_target=none, subtopics=none,
                 dialect=none, exact_sums='fast') -%}
{%- set comparison = {'by': by, 'baseline': baseline, 'test': test, 'confidence': confidence,
    'correction': correction, 'replicates': replicates, 'seed': seed, 'within': within,
    'design': design, 'covariate': covariate, 'expected_split': expected_split,
    'partitions': partitions, 'progress': progress} -%}
{%- set options = {'truth': truth, 'user': user, 'item': item, 'score': score, 'rank': rank,
    'relevance': relevance, 'action': action, 'ties': ties, 'threshold': threshold, 'gain': gain,
    'empty': empty, 'missing': missing, 'ap_denominator': ap_denominator, 'duplicates': duplicates,
    'truth_duplicates': truth_duplicates, 'short_lists': short_lists, 'profile': profile,
    'history': history, 'catalog': catalog, 'item_features': item_features, 'features': features,
    'item_genres': item_genres, 'genre': genre, 'genre_weight': genre_weight,
    'group_target': group_target, 'subtopics': subtopics, 'dialect': dialect,
    'exact_sums': exact_sums} -%}
{{ return('(\n' ~ adapter.dispatch('compare_sql', 'sqlmetrics')(recs, metrics, comparison, options) ~ ') AS sqlmetrics_compare') }}
{%- endmacro %}

{#- The statement itself: {{ sqlmetrics.compare_sql(ref('recs'), ['ndcg@10'], {'by': 'model',
    'baseline': 'A'}, {'truth': ref('purchases')}) }} -#}
{% macro compare_sql(recs, metrics, comparison, options={}) -%}
{{ return(adapter.dispatch('compare_sql', 'sqlmetrics')(recs, metrics, comparison, options)) }}
{%- endmacro %}

{% macro default__compare_sql(recs, metrics, comparison, options) -%}
{{ return(sqlmetrics._compare_statement(recs, metrics, comparison, options, 'duckdb')) }}
{%- endmacro %}
{% macro duckdb__compare_sql(recs, metrics, comparison, options) -%}
{{ return(sqlmetrics._compare_statement(recs, metrics, comparison, options, 'duckdb')) }}
{%- endmacro %}
{% macro postgres__compare_sql(recs, metrics, comparison, options) -%}
{{ return(sqlmetrics._compare_statement(recs, metrics, comparison, options, 'postgres')) }}
{%- endmacro %}
{% macro spark__compare_sql(recs, metrics, comparison, options) -%}
{{ return(sqlmetrics._compare_statement(recs, metrics, comparison, options, 'spark')) }}
{%- endmacro %}
{% macro databricks__compare_sql(recs, metrics, comparison, options) -%}
{{ return(sqlmetrics._compare_statement(recs, metrics, comparison, options, 'spark')) }}
{%- endmacro %}
{% macro bigquery__compare_sql(recs, metrics, comparison, options) -%}
{{ return(sqlmetrics._compare_statement(recs, metrics, comparison, options, 'bigquery')) }}
{%- endmacro %}
{% macro snowflake__compare_sql(recs, metrics, comparison, options) -%}
{{ return(sqlmetrics._compare_statement(recs, metrics, comparison, options, 'snowflake')) }}
{%- endmacro %}

{#- compare.py's compare(), for test='t' and design='paired': the units' values (the statement
    of evaluate(per_user=True), by within + by), then compare_context -#}
{% macro _compare_statement(recs, metrics, comparison, options, engine_dialect) -%}
{%- if not execute -%}{{ return('SELECT 1 AS sqlmetrics_parsing') }}{%- endif -%}
{%- set c = {'test': 't', 'confidence': 0.95, 'correction': 'holm', 'replicates': 10000, 'seed': 0,
    'within': none, 'design': 'paired', 'covariate': none, 'expected_split': none, 'partitions': 1,
    'progress': false} -%}
{%- for key in comparison if key not in c and key not in ('by', 'baseline') -%}{{ sqlmetrics._fail('unknown option ' ~ key) }}{%- endfor -%}
{%- do c.update(comparison) -%}
{%- if c.test != 't' -%}
{{ sqlmetrics._fail('compare(test=' ~ c.test ~ '): its p-value is computed in Python (sqlmetrics.compare()); the dbt package compares with the paired t-test only, test=t') }}
{%- endif -%}
{%- if c.design != 'paired' -%}
{{ sqlmetrics._fail('compare(design=' ~ c.design ~ "): the dbt package has the paired design only, design='paired' (the unpaired design's tests, and design='auto''s choice, are computed in Python)") }}
{%- endif -%}
{%- for key in ['covariate', 'expected_split'] if c[key] is not none -%}
{{ sqlmetrics._fail('compare(' ~ key ~ '=): the unpaired design only, not in the dbt package') }}
{%- endfor -%}
{%- if c.partitions != 1 -%}{{ sqlmetrics._fail('compare(partitions=): DuckDB in Python only') }}{%- endif -%}
{%- if c.confidence is not number or c.confidence <= 0 or c.confidence >= 1 -%}
{{ sqlmetrics._fail('confidence must be a number between 0 and 1, got ' ~ c.confidence) }}
{%- endif -%}
{%- set systems = [c.by] if c.by is string else (c.by or []) -%}
{%- set segments = [] if c.within is none else ([c.within] if c.within is string else c.within) -%}
{%- if not systems -%}{{ sqlmetrics._fail('by= names the column(s) whose values are the systems compared') }}{%- endif -%}
{%- for name in segments if name in systems -%}{{ sqlmetrics._fail('within=' ~ name ~ ' is a by column too') }}{%- endfor -%}
{%- set baselines = c.baseline if (c.baseline is iterable and c.baseline is not string and c.baseline is not mapping) else [c.baseline] -%}
{%- if baselines | length != systems | length -%}
{{ sqlmetrics._fail('baseline=' ~ c.baseline ~ ' gives ' ~ (baselines | length) ~ ' value(s) for the ' ~ (systems | length) ~ ' by column(s); give a list with one value per column') }}
{%- endif -%}
{%- set o = {} -%}
{%- do o.update(options) -%}
{%- do o.update({'by': segments + systems, 'per_user': true}) -%}
{%- set prepared = sqlmetrics._prepare(recs, metrics, o, engine_dialect) -%}
{%- set reg, dialect, recs_source = prepared.reg, prepared.dialect, prepared.recs -%}
{%- for m in prepared.requested if m.definition.aggregate != 'mean' -%}
{{ sqlmetrics._fail('compare() is about means over units, and ' ~ m.label ~ ' is not one (num_* are sums, gm_map a geometric mean)') }}
{%- endfor -%}
{%- set groups = prepared.context.groups -%}
{%- set within_ctx = [] -%}
{%- for g in groups[:segments | length] -%}
{%- do within_ctx.append({'alias': '_w' ~ loop.index0, 'name': g.name, 'is_text': g.is_text}) -%}
{%- endfor -%}
{%- set systems_ctx = [] -%}
{%- for g in groups[segments | length:] -%}
{%- do systems_ctx.append({'alias': '_s' ~ loop.index0, 'name': g.name, 'is_text': g.is_text,
    'baseline': sqlmetrics._baseline_literal(recs_source, g.found, baselines[loop.index0], dialect, reg)}) -%}
{%- endfor -%}
{%- set units_ctx = [] -%}
{%- for u in prepared.context.unit if u.shown -%}
{%- do units_ctx.append({'alias': '_unit' if units_ctx | length == 0 else '_unit' ~ (units_ctx | length), 'name': u.name}) -%}
{%- endfor -%}
{%- set metrics_ctx = [] -%}
{%- for m in prepared.requested -%}
{%- do metrics_ctx.append({'column': sqlmetrics.quote_identifier(m.label, dialect), 'bound': m.definition.bound, 'label': m.label}) -%}
{%- endfor -%}
{%- set per_user_sql = sqlmetrics._render(prepared.context, sqlmetrics.statement_template()) -%}
{%- set context = {'dialect': dialect, 'within': within_ctx, 'systems': systems_ctx, 'units': units_ctx,
    'metrics': metrics_ctx, 'test': 't', 'unpaired_test': none, 'design_gate': false, 'covariate': none,
    'replicates': c.replicates, 'seed': c.seed, 'quantiles': [['lo', '%r' % ((1 - c.confidence) / 2)], ['hi', '%r' % ((1 + c.confidence) / 2)]],
    'exact_sums': prepared.options.exact_sums, 'per_user_sql': per_user_sql.rstrip('\n')} -%}
{{ return(sqlmetrics._render(context, sqlmetrics.compare_template())) }}
{%- endmacro %}

{#- compare._literal: the baseline value of one by column as a SQL literal of its type (none:
    IS NULL). A DATE column takes its baseline as text of the date ('2026-11-03'). -#}
{% macro _baseline_literal(recs_source, column, value, dialect, reg) -%}
{%- if value is none -%}{{ return(none) }}{%- endif -%}
{%- set column_type = recs_source.columns[column] -%}
{%- set family = sqlmetrics._family(column_type, reg) -%}
{%- if value is string and family == 'text' -%}{{ return(sqlmetrics.quote_string(value, dialect)) }}
{%- elif value is string and column_type == 'DATE' -%}{{ return('DATE ' ~ sqlmetrics.quote_string(value, dialect)) }}
{%- elif value is string -%}
{{ sqlmetrics._fail('baseline=' ~ value ~ ' is text, but the by column ' ~ column ~ ' is ' ~ column_type ~ '; give the baseline as a value of that type') }}
{%- elif value is boolean or column_type == 'BOOLEAN' -%}
{%- if value is not boolean or column_type != 'BOOLEAN' -%}
{{ sqlmetrics._fail('baseline=' ~ value ~ ': the by column ' ~ column ~ ' is ' ~ column_type ~ '; a boolean baseline needs a BOOLEAN by column') }}
{%- endif -%}
{{ return('TRUE' if value else 'FALSE') }}
{%- elif value is number and (modules.re.match(reg.patterns.integer, column_type) or modules.re.match(reg.patterns.float, column_type) or modules.re.match(reg.patterns.decimal, column_type)) -%}
{{ return((value | string) if value is integer else ('%r' % (value | float))) }}
{%- endif -%}
{{ sqlmetrics._fail('baseline=' ~ value ~ ': give a string, a number, a boolean or none for the by column ' ~ column ~ ' (' ~ column_type ~ ')') }}
{%- endmacro %}
