{#- sqlmetrics' public functions as dbt macros (docs/sql.md). What they render is the statement of
    sqlmetrics.sql() for the same call: the templates of sql/ (generated/render_statement.sql,
    a generated copy), with the context that sqlmetrics/plan.py builds, here built from the
    relations' columns as dbt's adapter describes them. No formula is written here: these
    macros name the inputs (columns found, types checked, names quoted), as plan.py does. -#}

{#- select * from {{ sqlmetrics.evaluate(recs=ref('recommendations'), metrics=['ndcg@10'],
    truth=ref('events'), by=['model'], user=['user_id', 'day'], action='event_type',
    relevance={'purchase': 3, 'add_to_cart': 2, 'view': 1}) }}
    The same keywords as sqlmetrics.evaluate(); dialect= writes another engine's SQL;
    exact_sums='wide': the exact sums' wide form, for metrics whose terms the fast form cannot
    hold (rbp: NaN in the fast form, which evaluate() runs again wide; see docs/sql.md). -#}
{% macro evaluate(recs, metrics, truth=none, by=none, per_user=false, user='user_id', item='item_id',
                  score='score', rank=none, relevance=none, action=none, ties=none, threshold=none,
                  gain=none, empty=none, missing=none, ap_denominator=none, duplicates=none,
                  truth_duplicates=none, short_lists=none, profile=none, history=none, catalog=none,
                  item_features=none, features='features', item_genres=none, genre='genre',
                  genre_weight=none, group_target=none, subtopics=none, baseline=none, dialect=none,
                  exact_sums='fast') -%}
{%- set options = {'truth': truth, 'by': by, 'per_user': per_user, 'user': user, 'item': item,
    'score': score, 'rank': rank, 'relevance': relevance, 'action': action, 'ties': ties,
    'threshold': threshold, 'gain': gain, 'empty': empty, 'missing': missing,
    'ap_denominator': ap_denominator, 'duplicates': duplicates, 'truth_duplicates': truth_duplicates,
    'short_lists': short_lists, 'profile': profile, 'history': history, 'catalog': catalog,
    'item_features': item_features, 'features': features, 'item_genres': item_genres,
    'genre': genre, 'genre_weight': genre_weight, 'group_target': group_target, 'subtopics': subtopics,
    'baseline': baseline, 'dialect': dialect,
    'exact_sums': exact_sums} -%}
{{ return('(\n' ~ adapter.dispatch('sql', 'sqlmetrics')(recs, metrics, options) ~ ') AS sqlmetrics_evaluate') }}
{%- endmacro %}

{#- The statement itself, as sqlmetrics.sql() prints it: {{ sqlmetrics.sql(ref('recs'), ['ndcg@10'],
    {'truth': ref('purchases')}) }} (options: evaluate()'s keywords, as a mapping). -#}
{% macro sql(recs, metrics, options={}) -%}
{{ return(adapter.dispatch('sql', 'sqlmetrics')(recs, metrics, options)) }}
{%- endmacro %}

{#- One body per engine, as the templates' dialects: each names its dialect. -#}
{% macro default__sql(recs, metrics, options) -%}
{{ return(sqlmetrics._statement(recs, metrics, options, 'duckdb')) }}
{%- endmacro %}
{% macro duckdb__sql(recs, metrics, options) -%}
{{ return(sqlmetrics._statement(recs, metrics, options, 'duckdb')) }}
{%- endmacro %}
{% macro postgres__sql(recs, metrics, options) -%}
{{ return(sqlmetrics._statement(recs, metrics, options, 'postgres')) }}
{%- endmacro %}
{% macro spark__sql(recs, metrics, options) -%}
{{ return(sqlmetrics._statement(recs, metrics, options, 'spark')) }}
{%- endmacro %}
{% macro databricks__sql(recs, metrics, options) -%}
{{ return(sqlmetrics._statement(recs, metrics, options, 'spark')) }}
{%- endmacro %}
{% macro bigquery__sql(recs, metrics, options) -%}
{{ return(sqlmetrics._statement(recs, metrics, options, 'bigquery')) }}
{%- endmacro %}
{% macro snowflake__sql(recs, metrics, options) -%}
{{ return(sqlmetrics._statement(recs, metrics, options, 'snowflake')) }}
{%- endmacro %}

{#- ---- the plan (sqlmetrics/plan.py's build_context, for the ranking metrics) ------------- -#}

{% macro _fail(message) -%}
{{ exceptions.raise_compiler_error('sqlmetrics: ' ~ message) }}
{%- endmacro %}

{% macro _statement(recs, metrics, options, engine_dialect) -%}
{%- if not execute -%}{{ return('SELECT 1 AS sqlmetrics_parsing') }}{%- endif -%}
{%- set prepared = sqlmetrics._prepare(recs, metrics, options, engine_dialect) -%}
{#- dbt reads no template files: the templates are one template, rendered by dbt's render() -#}
{{ return(sqlmetrics._render(prepared.context, sqlmetrics.statement_template())) }}
{%- endmacro %}

{#- The context of the templates (and what it was built from), as prepare() gives it -#}
{% macro _prepare(recs, metrics, options, engine_dialect) -%}
{%- set known = ['truth', 'by', 'per_user', 'user', 'item', 'score', 'rank', 'relevance', 'action',
    'ties', 'threshold', 'gain', 'empty', 'missing', 'ap_denominator', 'duplicates', 'truth_duplicates',
    'short_lists', 'profile', 'history', 'catalog', 'item_features', 'features', 'item_genres',
    'genre', 'genre_weight', 'group_target', 'subtopics', 'baseline', 'dialect', 'exact_sums'] -%}
{%- for key in options if key not in known -%}{{ sqlmetrics._fail('unknown option ' ~ key) }}{%- endfor -%}
{%- set o = {'by': none, 'per_user': false, 'user': 'user_id', 'item': 'item_id', 'score': 'score',
    'features': 'features', 'genre': 'genre', 'exact_sums': 'fast'} -%}
{%- for key in known if key not in o -%}{%- do o.update({key: none}) -%}{%- endfor -%}
{%- do o.update(options) -%}
{%- set reg = sqlmetrics._registry() -%}
{%- set dialect = (o.dialect or engine_dialect) | lower -%}
{%- if dialect not in reg.dialects -%}
{{ sqlmetrics._fail('dialect=' ~ dialect ~ ' is not one of ' ~ (reg.dialects | list | join(', '))) }}
{%- endif -%}
{%- set requested = sqlmetrics._parse_metrics(metrics, reg) -%}
{%- set conventions = sqlmetrics._conventions(o, reg) -%}
{%- set recs_source = sqlmetrics._source(recs, 'recs', dialect, reg) -%}
{%- set truth_source = none if o.truth is none else sqlmetrics._source(o.truth, 'truth', dialect, reg) -%}
{#- the beyond-accuracy inputs, and subtopics= (prepare.subtopic_truth: the call's truth too) -#}
{%- set extra = {} -%}
{%- if o.subtopics is not none and o.truth is not none -%}
{{ sqlmetrics._fail("subtopics= is the truth of the call too (an item's grade: its highest over the unit's subtopics); give subtopics= or truth=, not both") }}
{%- endif -%}
{%- for key in ['history', 'catalog', 'item_features', 'item_genres', 'group_target', 'subtopics'] -%}
{%- do extra.update({key: none if o[key] is none else sqlmetrics._source(o[key], key, dialect, reg)}) -%}
{%- endfor -%}
{%- if extra.subtopics is not none -%}{%- set truth_source = extra.subtopics -%}{%- endif -%}
{%- if o.exact_sums not in ('fast', 'wide') -%}{{ sqlmetrics._fail("exact_sums= is 'fast' or 'wide'") }}{%- endif -%}
{%- set context = sqlmetrics._context(recs_source, truth_source, requested, o, conventions, dialect, reg, extra) -%}
{%- do context.update({'exact_sums': o.exact_sums}) -%}
{{ return({'context': context, 'requested': requested, 'recs': recs_source, 'options': o, 'dialect': dialect, 'reg': reg}) }}
{%- endmacro %}

{#- A generated template (statement_template(), compare_template()) rendered with `context`,
    tidied as templates.render() tidies: no blank line -#}
{% macro _render(context, template) -%}
{%- set text = render(sqlmetrics.context_prefix(tojson(context)) ~ template) -%}
{%- set lines = [] -%}
{%- for line in (text | string).split('\n') if line.strip(' \t') -%}{%- do lines.append(line) -%}{%- endfor -%}
{{ return(lines | join('\n') ~ '\n') }}
{%- endmacro %}

{#- metric_names.parse_metric, for sqlmetrics' own names -#}
{% macro _parse_metrics(metrics, reg) -%}
{%- set labels = [metrics] if metrics is string else metrics -%}
{%- if not labels -%}{{ sqlmetrics._fail("no metric requested: pass names like ['ndcg@10', 'map@10']") }}{%- endif -%}
{%- set by_name = {} -%}
{%- for name, m in reg.metrics.items() -%}{%- do by_name.update({name | lower: m}) -%}{%- endfor -%}
{%- set out = [] -%}
{%- set seen = [] -%}
{%- for label in labels -%}
{%- set match = modules.re.match(reg.patterns.name, label if label is string else '') -%}
{%- if match is none -%}{{ sqlmetrics._fail('unknown metric ' ~ label) }}{%- endif -%}
{%- set name = match.group(1) | lower -%}
{%- set cutoff = match.group(2) -%}
{%- if name not in by_name -%}
{{ sqlmetrics._fail("unknown metric '" ~ name ~ "' (the dbt package knows sqlmetrics' own names: " ~ (reg.metrics | list | join(', ')) ~ ')') }}
{%- endif -%}
{%- set d = by_name[name] -%}
{%- set k = none -%}
{%- if not d.needs_cutoff and cutoff is not none -%}
{{ sqlmetrics._fail(d.name ~ " takes no cutoff: write '" ~ d.name ~ "'") }}
{%- elif cutoff is not none -%}
{%- if not modules.re.fullmatch('[0-9]+', cutoff) or (cutoff | int) < 1 or (cutoff | int) > reg.max_cutoff -%}
{{ sqlmetrics._fail('the cutoff in ' ~ label ~ ' must be an integer from 1 to ' ~ reg.max_cutoff) }}
{%- endif -%}
{%- set k = cutoff | int -%}
{%- endif -%}
{%- if (d.name, k) in seen -%}{{ sqlmetrics._fail(label ~ ' is requested twice') }}{%- endif -%}
{%- do seen.append((d.name, k)) -%}
{%- do out.append({'label': label, 'definition': d, 'k': k}) -%}
{%- endfor -%}
{{ return(out) }}
{%- endmacro %}

{#- conventions.Conventions: the defaults, a profile's (one that is the same for every metric),
    the keywords given -#}
{% macro _conventions(o, reg) -%}
{%- if o.profile is not none and o.profile not in reg.profiles -%}
{{ sqlmetrics._fail('profile=' ~ o.profile ~ ' is not in the dbt package (it has: ' ~ (reg.profiles | list | join(', ')) ~ ')') }}
{%- endif -%}
{%- set c = {} -%}
{%- do c.update(reg.defaults) -%}
{%- do c.update(reg.profiles[o.profile] if o.profile is not none else {}) -%}
{%- for key in reg.choices.keys() | list + ['threshold'] if o[key] is not none -%}{%- do c.update({key: o[key]}) -%}{%- endfor -%}
{%- for key, allowed in reg.choices.items() if c[key] not in allowed -%}
{{ sqlmetrics._fail(key ~ '=' ~ c[key] ~ ' is not one of ' ~ (allowed | join(', '))) }}
{%- endfor -%}
{%- set t = c.threshold -%}
{%- if t == reg.any_truth_row -%}
{%- do c.update({'threshold_literal': '1'}) -%}
{%- elif t is number and t is not boolean and t > 0 -%}
{%- do c.update({'threshold_literal': (t | int | string) if (t | float) == (t | int) else ('%r' % (t | float))}) -%}
{%- else -%}
{{ sqlmetrics._fail('threshold must be a positive number or ' ~ reg.any_truth_row ~ ', got ' ~ t) }}
{%- endif -%}
{{ return(c) }}
{%- endmacro %}

{#- sources.Source: the FROM item (the relation's parts, quoted in the dialect), how messages
    name it (database.schema.identifier), its columns in DuckDB's type names -#}
{% macro _source(relation, role, dialect, reg) -%}
{%- if relation is string -%}
{%- set parts = relation.split('.') -%}
{%- set relation = api.Relation.create(database=(parts[-3] if parts | length > 2 else none),
    schema=(parts[-2] if parts | length > 1 else none), identifier=parts[-1]) -%}
{%- endif -%}
{%- set parts = [relation.database, relation.schema, relation.identifier] | reject('none') | list -%}
{%- set quoted = [] -%}
{%- for p in parts -%}{%- do quoted.append(sqlmetrics.quote_identifier(p, dialect)) -%}{%- endfor -%}
{%- set columns = {} -%}
{%- for column in adapter.get_columns_in_relation(relation) -%}
{%- do columns.update({column.name: sqlmetrics._normalize_type(column.dtype, reg)}) -%}
{%- endfor -%}
{%- if not columns -%}{{ sqlmetrics._fail(role ~ ' (' ~ (parts | join('.')) ~ ') has no columns, or does not exist') }}{%- endif -%}
{{ return({'sql': quoted | join('.'), 'label': parts | join('.'), 'columns': columns}) }}
{%- endmacro %}

{#- dialects.normalize_type -#}
{% macro _normalize_type(type_name, reg) -%}
{%- set text = (type_name | lower).split() | join(' ') -%}
{%- set decimal = modules.re.match(reg.patterns.type_decimal, text) -%}
{%- if decimal -%}{{ return('DECIMAL(' ~ decimal.group(1) ~ ',' ~ decimal.group(2) ~ ')') }}
{%- elif modules.re.match(reg.patterns.sized_text, text) -%}{{ return('VARCHAR') }}
{%- elif text in reg.types -%}{{ return(reg.types[text]) }}
{%- else -%}{{ return(type_name | trim | upper) }}
{%- endif -%}
{%- endmacro %}

{#- columns.py -#}
{% macro _find_column(source, name, role, what) -%}
{%- if name is not string or not name -%}{{ sqlmetrics._fail('the ' ~ what ~ ' column name must be a non-empty string') }}{%- endif -%}
{%- if name in source.columns -%}{{ return(name) }}{%- endif -%}
{%- set folded = [] -%}
{%- for c in source.columns if c | lower == name | lower -%}{%- do folded.append(c) -%}{%- endfor -%}
{%- if folded | length == 1 -%}{{ return(folded[0]) }}{%- endif -%}
{{ sqlmetrics._fail(role ~ ' (' ~ source.label ~ ') has no ' ~ what ~ ' column ' ~ name ~ '; its columns are: ' ~ (source.columns | list | join(', '))) }}
{%- endmacro %}

{% macro _family(t, reg) -%}
{%- if modules.re.match(reg.patterns.integer, t) -%}{{ return('integer') }}
{%- elif t.startswith('VARCHAR') or t == 'STRING' -%}{{ return('text') }}
{%- else -%}{{ return(t) }}{%- endif -%}
{%- endmacro %}

{% macro _is_float(t, reg) -%}
{{ return(modules.re.match(reg.patterns.float, t) is not none) }}
{%- endmacro %}

{% macro _require_numeric(source, column, role, what, reg, allow_bool=false) -%}
{%- set t = source.columns[column] -%}
{%- set p = reg.patterns -%}
{%- if modules.re.match(p.integer, t) or modules.re.match(p.float, t) or modules.re.match(p.decimal, t) or (allow_bool and t == 'BOOLEAN') -%}
{{ return(t) }}
{%- endif -%}
{{ sqlmetrics._fail(role ~ ' (' ~ source.label ~ '): the ' ~ what ~ ' column ' ~ column ~ ' must be numeric, but it is ' ~ t) }}
{%- endmacro %}

{% macro _require_same_family(a, a_col, b, b_col, what, role, reg) -%}
{%- if sqlmetrics._family(a.columns[a_col], reg) != sqlmetrics._family(b.columns[b_col], reg) -%}
{{ sqlmetrics._fail('the ' ~ what ~ ' columns do not compare: recs ' ~ a_col ~ ' is ' ~ a.columns[a_col] ~ ' but ' ~ role ~ ' ' ~ b_col ~ ' is ' ~ b.columns[b_col]) }}
{%- endif -%}
{%- endmacro %}

{#- plan._relevance -#}
{% macro _relevance(source, o, role, required, dialect, reg) -%}
{%- if o.action is not none -%}
{%- if o.relevance is not mapping -%}{{ sqlmetrics._fail('action= needs relevance= as a mapping of actions to grades') }}{%- endif -%}
{%- if not o.relevance -%}{{ sqlmetrics._fail("relevance={} grades no action") }}{%- endif -%}
{%- set column = sqlmetrics._find_column(source, o.action, role, 'action') -%}
{%- set grades = [] -%}
{%- for action, grade in o.relevance.items() -%}
{%- if grade is not number or grade is boolean -%}{{ sqlmetrics._fail('the grade of action ' ~ action ~ ' must be a finite number') }}{%- endif -%}
{%- do grades.append((sqlmetrics.quote_string(action, dialect), '%r' % (grade | float))) -%}
{%- endfor -%}
{{ return({'kind': 'action', 'column': sqlmetrics.quote_identifier(column, dialect), 'grades': grades, 'is_float': false}) }}
{%- endif -%}
{%- if o.relevance is mapping -%}{{ sqlmetrics._fail('relevance= as a mapping of actions to grades needs action=') }}{%- endif -%}
{%- set wanted = o.relevance or 'relevance' -%}
{%- set found = [] -%}
{%- for c in source.columns if c == wanted or c | lower == wanted | lower -%}{%- do found.append(c) -%}{%- endfor -%}
{%- if not found and o.relevance is none and not required -%}
{{ return({'kind': 'constant', 'column': none, 'grades': [], 'is_float': false}) }}
{%- endif -%}
{%- set column = sqlmetrics._find_column(source, wanted, role, 'relevance') -%}
{%- set t = sqlmetrics._require_numeric(source, column, role, 'relevance', reg, allow_bool=true) -%}
{{ return({'kind': 'column', 'column': sqlmetrics.quote_identifier(column, dialect), 'grades': [],
           'is_float': sqlmetrics._is_float(t, reg), 'is_bool': t == 'BOOLEAN'}) }}
{%- endmacro %}

{% macro _unit_alias(i) -%}{{ return('_user' if i == 0 else '_u' ~ i) }}{%- endmacro %}

{#- plan.build_context -#}
{% macro _context(recs, truth, requested, o, c, dialect, reg, extra) -%}
{%- set q = [] -%}
{%- set keys = [o.user] if o.user is string else o.user -%}
{%- if not keys -%}{{ sqlmetrics._fail('user= names the unit: a column, or a list of columns') }}{%- endif -%}
{%- set unit = [] -%}
{%- for name in keys -%}{%- do unit.append(sqlmetrics._find_column(recs, name, 'recs', 'user')) -%}{%- endfor -%}
{%- set item = sqlmetrics._find_column(recs, o.item, 'recs', 'item') -%}
{%- if o.rank is not none -%}
{%- set key = sqlmetrics._find_column(recs, o.rank, 'recs', 'rank') -%}
{%- set key_type = sqlmetrics._require_numeric(recs, key, 'recs', 'rank', reg) -%}
{%- set order_by = 'rank' -%}
{%- if c.ties == 'average' -%}{{ sqlmetrics._fail("ties='average' needs scores; ranks cannot tie (rank= was given)") }}{%- endif -%}
{%- else -%}
{%- set key = sqlmetrics._find_column(recs, o.score, 'recs', 'score') -%}
{%- set key_type = sqlmetrics._require_numeric(recs, key, 'recs', 'score', reg) -%}
{%- set order_by = 'score' -%}
{%- endif -%}
{%- set key_sql = sqlmetrics.quote_identifier(key, dialect) -%}
{%- if order_by == 'rank' -%}
{%- set key_sql = ('-CAST(' ~ key_sql ~ ' AS DOUBLE)') if dialect == 'duckdb' else ('-' ~ key_sql) -%}
{%- elif c.ties == 'item_asc' and key_type in reg.negatable and dialect == 'duckdb' -%}
{%- set key_sql = 'CAST(' ~ key_sql ~ ' AS ' ~ reg.negatable[key_type] ~ ')' -%}
{%- endif -%}
{%- if c.ties in ('average', 'evidently') -%}
{%- for m in requested if not m.definition.tie_averaged -%}
{{ sqlmetrics._fail('ties=' ~ c.ties ~ ' is not defined for ' ~ m.label) }}
{%- endfor -%}
{%- endif -%}
{%- for column in unit -%}
{%- if column in (item, key) or (unit | map('lower') | select('equalto', column | lower) | list | length) > 1 -%}
{{ sqlmetrics._fail('user= names ' ~ column ~ ' twice, or the item or the score column') }}
{%- endif -%}
{%- endfor -%}
{%- set by = [] if o.by is none else ([o.by] if o.by is string else o.by) -%}
{%- set taken = [item, key] + (unit if unit | length == 1 else []) -%}
{%- set groups = [] -%}
{%- for name in by -%}
{%- set column = sqlmetrics._find_column(recs, name, 'recs', 'by') -%}
{%- if column in taken -%}{{ sqlmetrics._fail('by=' ~ name ~ ' names a column that is already the user, item or score') }}{%- endif -%}
{%- do taken.append(column) -%}
{%- do groups.append({'alias': '_g' ~ loop.index0, 'column': sqlmetrics.quote_identifier(column, dialect),
    'name': sqlmetrics.quote_identifier(column, dialect),
    'is_text': sqlmetrics._family(recs.columns[column], reg) == 'text', 'found': column,
    'unit': sqlmetrics._unit_alias(unit.index(column)) if column in unit else none}) -%}
{%- endfor -%}
{%- set by_columns = groups | map(attribute='found') | list -%}
{%- set shown = [] -%}
{%- for column in unit if column not in by_columns -%}{%- do shown.append(column) -%}{%- endfor -%}
{%- set labels = [] -%}
{%- for m in requested -%}
{%- do labels.append(m.label if reg.dialects[dialect].dotted_names else m.label.replace('.', '_')) -%}
{%- endfor -%}
{%- set fixed = (shown if o.per_user else ['users']) + labels -%}
{%- for column in by_columns -%}
{%- if column | lower in (fixed | map('lower') | list) or (by_columns | map('lower') | select('equalto', column | lower) | list | length) > 1 -%}
{{ sqlmetrics._fail('by=' ~ column ~ ': the result would have two columns named ' ~ column) }}
{%- endif -%}
{%- endfor -%}
{%- set unit_quoted = [] -%}
{%- for column in unit -%}{%- do unit_quoted.append(sqlmetrics.quote_identifier(column, dialect)) -%}{%- endfor -%}
{%- set recs_ctx = {'source': recs.sql, 'label': recs.label, 'unit': unit_quoted,
    'item': sqlmetrics.quote_identifier(item, dialect), 'key': key_sql,
    'key_is_float': sqlmetrics._is_float(key_type, reg),
    'item_is_text': sqlmetrics._family(recs.columns[item], reg) == 'text',
    'names': {'unit': unit, 'item': item, 'key': key}, 'relevance': none} -%}
{%- set truth_ctx = none -%}
{%- set ranking = [] -%}
{%- set relevance_needs = [] -%}
{%- for m in requested -%}
{%- if not m.definition.beyond -%}{%- do ranking.append(m) -%}{%- endif -%}
{%- if not m.definition.beyond or 'relevance' in m.definition.needs -%}{%- do relevance_needs.append(m.label) -%}{%- endif -%}
{%- endfor -%}
{%- set has_relevance = o.action is not none or o.relevance is not none or 'relevance' in (recs.columns | map('lower') | list) -%}
{%- if truth is none and not relevance_needs and not has_relevance -%}
{#- only beyond-accuracy metrics that need no relevance: nothing is judged (every row 0) -#}
{%- do recs_ctx.update({'relevance': {'kind': 'column', 'column': 'NULL', 'grades': [], 'is_float': false}}) -%}
{%- elif truth is none -%}
{%- if c.threshold == reg.any_truth_row -%}{{ sqlmetrics._fail("threshold='any' makes every truth row relevant, so it needs truth=") }}{%- endif -%}
{%- if o.action is none and o.relevance is none and 'relevance' not in (recs.columns | map('lower') | list) -%}
{{ sqlmetrics._fail('recs (' ~ recs.label ~ ') has no relevance column and no truth= was given') }}
{%- endif -%}
{%- do recs_ctx.update({'relevance': sqlmetrics._relevance(recs, o, 'recs', true, dialect, reg)}) -%}
{%- else -%}
{%- set truth_unit = [] -%}
{%- for name in keys -%}
{%- set column = sqlmetrics._find_column(truth, name, 'truth', 'user') -%}
{%- do sqlmetrics._require_same_family(recs, unit[loop.index0], truth, column, 'user', 'truth', reg) -%}
{%- do truth_unit.append({'alias': sqlmetrics._unit_alias(loop.index0), 'column': sqlmetrics.quote_identifier(column, dialect), 'found': column}) -%}
{%- endfor -%}
{%- set t_item = sqlmetrics._find_column(truth, o.item, 'truth', 'item') -%}
{%- do sqlmetrics._require_same_family(recs, item, truth, t_item, 'item', 'truth', reg) -%}
{%- set truth_relevance = sqlmetrics._relevance(truth, o, 'truth', false, dialect, reg) -%}
{%- if c.threshold == reg.any_truth_row -%}
{%- set truth_relevance = {'kind': 'constant', 'column': none, 'grades': [], 'is_float': false} -%}
{%- endif -%}
{%- set truth_ctx = {'source': truth.sql, 'label': truth.label,
    'unit': [],
    'item': sqlmetrics.quote_identifier(t_item, dialect),
    'names': {'unit': truth_unit | map(attribute='found') | list, 'item': t_item},
    'relevance': truth_relevance} -%}
{%- set units = [] -%}
{%- for u in truth_unit -%}{%- do units.append({'alias': u.alias, 'column': u.column}) -%}{%- endfor -%}
{%- do truth_ctx.update({'unit': units}) -%}
{%- for g in groups if g.unit is none -%}
{%- if g.found | lower in (truth.columns | map('lower') | list) -%}
{{ sqlmetrics._fail('by=' ~ g.found ~ ': truth (' ~ truth.label ~ ') has a ' ~ g.found ~ ' column too, but truth is joined on the unit alone; add it to the unit (user=) or leave it out of truth') }}
{%- endif -%}
{%- endfor -%}
{%- endif -%}
{%- set subtopics_ctx = sqlmetrics._subtopics_context(recs, unit, item, extra.subtopics, requested, o, dialect, reg) -%}
{%- set cutoffs = [] -%}
{%- for m in requested if not m.definition.beyond or m.definition.uses_lists -%}{%- do cutoffs.append(m.k) -%}{%- endfor -%}
{%- set tie_groups = c.ties in ('average', 'evidently') -%}
{%- if not cutoffs -%}
{%- set list_length = 1 -%}{#- fcp alone: the lists are only read for the input checks -#}
{%- else -%}
{%- set list_length = none if none in cutoffs else (cutoffs | max) -%}
{%- if list_length is not none and list_length > reg.whole_list_from and not tie_groups -%}{%- set list_length = none -%}{%- endif -%}
{%- if list_length is none and tie_groups -%}{%- set list_length = reg.max_cutoff -%}{%- endif -%}
{%- endif -%}
{%- set column_of = {} -%}
{%- for m in requested -%}{%- do column_of.update({m.label: sqlmetrics.quote_identifier(labels[loop.index0], dialect)}) -%}{%- endfor -%}
{%- set metrics_ctx = [] -%}
{%- set reads = [] -%}
{%- for m in ranking -%}
{%- set d = m.definition -%}
{%- do metrics_ctx.append({'template': d.template, 'name': d.name, 'macro': d.macro, 'k': m.k, 'param': none,
    'column': column_of[m.label], 'formula': d.formula,
    'aggregate': d.aggregate, 'bound': d.bound}) -%}
{%- set wants = d.reads + (d.whole_list_reads if m.k is none else []) + (d.short_list_reads if m.k is not none and c.short_lists != 'pad' else []) -%}
{%- for r in wants if r not in reads -%}{%- do reads.append(r) -%}{%- endfor -%}
{%- endfor -%}
{%- set unit_ctx = [] -%}
{%- for column in unit -%}
{%- set family = sqlmetrics._family(recs.columns[column], reg) -%}
{%- do unit_ctx.append({'alias': sqlmetrics._unit_alias(loop.index0), 'name': sqlmetrics.quote_identifier(column, dialect),
    'found': column, 'is_text': family == 'text', 'hash_cast': 'HUGEINT' if family == 'integer' else none,
    'shown': column in shown}) -%}
{%- endfor -%}
{%- set beyond_ctx = sqlmetrics._beyond_context(recs, unit, item, requested, o, extra, column_of, dialect, reg, truth is not none) -%}
{%- set rbo = [] -%}
{%- for m in requested if 'baseline' in m.definition.needs -%}{%- do rbo.append(m) -%}{%- endfor -%}
{%- if o.baseline is not none and not rbo -%}
{{ sqlmetrics._fail('baseline=' ~ o.baseline ~ ' names the reference system of rbo@k, and no rbo metric is requested (compare() takes its own baseline=)') }}
{%- endif -%}
{%- if rbo -%}{%- do beyond_ctx.update({'rbo': sqlmetrics._rbo_context(recs, by, groups, rbo, o, dialect, reg)}) -%}{%- endif -%}
{{ return({'dialect': dialect, 'fail_function': 'error', 'recs': recs_ctx, 'truth': truth_ctx,
    'groups': groups, 'unit': unit_ctx, 'order_by': order_by,
    'ties': 'item_desc' if order_by == 'rank' else c.ties, 'list_length': list_length,
    'threshold': c.threshold_literal, 'gain_kind': c.gain, 'gain_from_threshold': false,
    'empty': c.empty, 'missing': c.missing, 'ap_denominator': c.ap_denominator,
    'short_lists': c.short_lists, 'duplicates': c.duplicates,
    'truth_duplicates': 'max' if subtopics_ctx is not none else c.truth_duplicates,
    'per_user': o.per_user, 'partition': none, 'metrics': metrics_ctx, 'reads': reads | sort,
    'beyond': beyond_ctx, 'subtopics': subtopics_ctx, 'exact_sums': 'fast'}) }}
{%- endmacro %}

{#- plan._subtopics_context: subtopics= (unit, subtopic, item, grade) for the intent-aware
    measures (sql/metrics/subtopics.sql.j2), their cutoffs checked -#}
{% macro _subtopics_context(recs, unit, item, subtopics, requested, o, dialect, reg) -%}
{%- set wanting = [] -%}
{%- for m in requested if 'subtopics' in m.definition.reads -%}{%- do wanting.append(m) -%}{%- endfor -%}
{%- if wanting and subtopics is none -%}
{{ sqlmetrics._fail((wanting | map(attribute='label') | join(', ')) ~ ' needs subtopic judgements: pass subtopics=<a relation of (user, subtopic, item[, relevance])>') }}
{%- endif -%}
{%- for m in wanting -%}
{%- if m.definition.needs_cutoff and m.k is none -%}{{ sqlmetrics._fail(m.label ~ " needs a cutoff, for example '" ~ m.definition.name ~ "@10'") }}{%- endif -%}
{%- endfor -%}
{%- if subtopics is none -%}{{ return(none) }}{%- endif -%}
{%- set ctx = sqlmetrics._keyed_input(recs, unit, item, subtopics, 'subtopics', o, dialect, reg, partial=false) -%}
{#- an optional `weight` column: the intent weights of p_ia, ap_ia and err_ia -#}
{%- set weight = [] -%}
{%- for c in subtopics.columns if c | lower == 'weight' -%}{%- do weight.append(c) -%}{%- endfor -%}
{%- if weight -%}
{%- do sqlmetrics._require_numeric(subtopics, weight[0], 'subtopics', 'weight', reg) -%}
{%- do ctx.names.update({'weight': weight[0]}) -%}
{%- endif -%}
{%- do ctx.update({
    'subtopic': sqlmetrics.quote_identifier(sqlmetrics._find_column(subtopics, 'subtopic', 'subtopics', 'subtopic'), dialect),
    'relevance': sqlmetrics._relevance(subtopics, o, 'subtopics', false, dialect, reg),
    'weight': sqlmetrics.quote_identifier(weight[0], dialect) if weight else none}) -%}
{{ return(ctx) }}
{%- endmacro %}

{#- plan._rbo_context: rbo@k's reference lists, the group whose by values are baseline= (one
    value per by column) -#}
{% macro _rbo_context(recs, by, groups, rbo, o, dialect, reg) -%}
{%- set labels = rbo | map(attribute='label') | join(', ') -%}
{%- if not by -%}
{{ sqlmetrics._fail(labels ~ " compares each system's lists with a baseline system's: pass by=<the system column> and baseline=<its value for the reference system>") }}
{%- endif -%}
{%- set baselines = o.baseline if (o.baseline is iterable and o.baseline is not string and o.baseline is not mapping) else [o.baseline] -%}
{%- if o.baseline is none or baselines | length != by | length -%}
{{ sqlmetrics._fail(labels ~ ': ' ~ ('no baseline=' if o.baseline is none else 'baseline=' ~ o.baseline) ~ ' for the ' ~ (by | length) ~ ' by column(s) ' ~ (by | join(', ')) ~ "; give the reference system's value (a list with one value per by column)") }}
{%- endif -%}
{%- set literals = [] -%}
{%- for g in groups -%}
{%- do literals.append({'alias': g.alias, 'literal': sqlmetrics._baseline_literal(recs, g.found, baselines[loop.index0], dialect, reg)}) -%}
{%- endfor -%}
{{ return({'baseline': literals, 'ks': rbo | map(attribute='k') | unique | sort | list}) }}
{%- endmacro %}

{#- plan._keyed_input, for subtopics and history (partial: joined on the unit's key columns
    it has) -#}
{% macro _keyed_input(recs, unit, item, source, role, o, dialect, reg, partial=true) -%}
{%- set keys = [o.user] if o.user is string else o.user -%}
{%- set found = [] -%}
{%- for name in keys -%}
{%- set matches = [] -%}
{%- for c in source.columns if c == name or c | lower == name | lower -%}{%- do matches.append(c) -%}{%- endfor -%}
{%- if matches or not partial -%}
{%- set column = sqlmetrics._find_column(source, name, role, 'user') -%}
{%- do sqlmetrics._require_same_family(recs, unit[loop.index0], source, column, 'user', role, reg) -%}
{%- do found.append({'alias': sqlmetrics._unit_alias(loop.index0), 'column': sqlmetrics.quote_identifier(column, dialect), 'found': column}) -%}
{%- endif -%}
{%- endfor -%}
{%- if not found -%}
{{ sqlmetrics._fail(role ~ ' (' ~ source.label ~ ') has none of the unit\'s key columns (' ~ (keys | join(', ')) ~ '); its columns are: ' ~ (source.columns | list | join(', '))) }}
{%- endif -%}
{%- set s_item = sqlmetrics._find_column(source, o.item, role, 'item') -%}
{%- do sqlmetrics._require_same_family(recs, item, source, s_item, 'item', role, reg) -%}
{%- set units = [] -%}
{%- for u in found -%}{%- do units.append({'alias': u.alias, 'column': u.column}) -%}{%- endfor -%}
{{ return({'source': source.sql, 'label': source.label, 'unit': units,
    'item': sqlmetrics.quote_identifier(s_item, dialect),
    'names': {'unit': found | map(attribute='found') | list, 'item': s_item}}) }}
{%- endmacro %}

{#- plan._beyond_context: what the beyond-accuracy templates (sql/beyond/) need -#}
{% macro _beyond_context(recs, unit, item, requested, o, extra, column_of, dialect, reg, has_truth) -%}
{%- set beyond = [] -%}
{%- for m in requested if m.definition.beyond -%}{%- do beyond.append(m) -%}{%- endfor -%}
{%- if not beyond -%}{{ return(none) }}{%- endif -%}
{%- if o.per_user -%}
{%- for m in beyond if not m.definition.per_user -%}
{{ sqlmetrics._fail('per_user=True: ' ~ m.label ~ ' has no per-user value (it describes all the lists together); request it without per_user=True') }}
{%- endfor -%}
{%- endif -%}
{%- set needs = [] -%}
{%- for m in beyond -%}{%- for need in m.definition.needs if need not in needs -%}{%- do needs.append(need) -%}{%- endfor -%}{%- endfor -%}
{%- set history, catalog, features = extra.history, extra.catalog, extra.item_features -%}
{%- set similarity = none -%}
{%- if 'similarity' in needs -%}{%- set similarity = 'features' if features is not none else 'cooccurrence' -%}{%- endif -%}
{%- set uses_history = 'history' in needs or similarity == 'cooccurrence' or ('catalog' in needs and catalog is none) -%}
{%- if uses_history and history is none -%}
{%- set wants = [] -%}
{%- for m in beyond if m.definition.needs | select('in', ['history', 'similarity', 'catalog']) | list -%}{%- do wants.append(m.label) -%}{%- endfor -%}
{{ sqlmetrics._fail((wants | join(', ')) ~ " needs the users' history: pass history=<a relation of (user, item) interactions>" ~ (" (or catalog=<a relation of items>)" if 'catalog' in needs else '') ~ (" (or item_features=<a relation of item, vector>)" if 'similarity' in needs else '')) }}
{%- endif -%}
{%- set history_ctx = none -%}
{%- if uses_history -%}
{%- set history_ctx = sqlmetrics._keyed_input(recs, unit, item, history, 'history', o, dialect, reg) -%}
{%- endif -%}
{%- set catalog_ctx = none -%}
{%- if 'catalog' in needs and catalog is not none -%}
{%- set c_item = sqlmetrics._find_column(catalog, o.item, 'catalog', 'item') -%}
{%- do sqlmetrics._require_same_family(recs, item, catalog, c_item, 'item', 'catalog', reg) -%}
{%- set catalog_ctx = {'source': catalog.sql, 'label': catalog.label, 'item': sqlmetrics.quote_identifier(c_item, dialect), 'names': {'item': c_item}} -%}
{%- endif -%}
{%- set names_of = {} -%}
{%- for need in ['truth', 'genres'] -%}
{%- set labels = [] -%}
{%- for m in beyond if need in m.definition.needs -%}{%- do labels.append(m.label) -%}{%- endfor -%}
{%- do names_of.update({need: labels | join(', ')}) -%}
{%- endfor -%}
{%- if 'truth' in needs and not has_truth -%}
{{ sqlmetrics._fail(names_of.truth ~ ' needs the relevant items of each user: pass truth=<a relation of (user, item[, relevance])>') }}
{%- endif -%}
{%- if 'genres' in needs and features is none and extra.item_genres is none -%}
{{ sqlmetrics._fail(names_of.genres ~ " needs the items' genres: pass item_genres=<a relation of (item, genre[, weight])> or item_features=<a relation of item, vector of genre weights> (a multi-hot genre vector per item)") }}
{%- endif -%}
{%- set genres_in_features = 'genres' in needs and extra.item_genres is none -%}
{%- set features_ctx = none -%}
{%- if (similarity == 'features' or genres_in_features) and features is not none -%}
{%- set f_item = sqlmetrics._find_column(features, o.item, 'item_features', 'item') -%}
{%- set f_vec = sqlmetrics._find_column(features, o.features, 'item_features', 'features') -%}
{%- do sqlmetrics._require_same_family(recs, item, features, f_item, 'item', 'item_features', reg) -%}
{%- set vector_type = features.columns[f_vec] -%}
{#- (PostgreSQL's information_schema names every array type ARRAY, without its element type) -#}
{%- set element = modules.re.match(reg.patterns.vector, vector_type) -%}
{%- if vector_type != 'ARRAY' and (element is none or not (modules.re.match(reg.patterns.integer, element.group(1)) or modules.re.match(reg.patterns.float, element.group(1)) or modules.re.match(reg.patterns.decimal, element.group(1)))) -%}
{{ sqlmetrics._fail('item_features (' ~ features.label ~ '): the features column ' ~ f_vec ~ ' must be a list or array of numbers (e.g. FLOAT[]), but it is ' ~ vector_type) }}
{%- endif -%}
{%- set features_ctx = {'source': features.sql, 'label': features.label, 'item': sqlmetrics.quote_identifier(f_item, dialect),
    'vector': sqlmetrics.quote_identifier(f_vec, dialect), 'names': {'item': f_item, 'vector': f_vec}} -%}
{%- endif -%}
{%- set genres_ctx = none -%}
{%- if 'genres' in needs and extra.item_genres is not none -%}
{#- the long form: one row per (item, genre), weighing genre_weight (1 without) -#}
{%- set genres = extra.item_genres -%}
{%- set g_item = sqlmetrics._find_column(genres, o.item, 'item_genres', 'item') -%}
{%- set g_genre = sqlmetrics._find_column(genres, o.genre, 'item_genres', 'genre') -%}
{%- do sqlmetrics._require_same_family(recs, item, genres, g_item, 'item', 'item_genres', reg) -%}
{%- set g_weight = none -%}
{%- if o.genre_weight is not none -%}
{%- set g_weight = sqlmetrics._find_column(genres, o.genre_weight, 'item_genres', 'genre_weight') -%}
{%- do sqlmetrics._require_numeric(genres, g_weight, 'item_genres', 'genre_weight', reg) -%}
{%- endif -%}
{%- set genres_ctx = {'source': genres.sql, 'label': genres.label, 'item': sqlmetrics.quote_identifier(g_item, dialect),
    'genre': sqlmetrics.quote_identifier(g_genre, dialect),
    'weight': none if g_weight is none else sqlmetrics.quote_identifier(g_weight, dialect),
    'names': {'item': g_item, 'genre': g_genre, 'weight': g_weight}, 'kind': 'rows'} -%}
{%- elif 'genres' in needs and features_ctx is not none -%}
{%- set genres_ctx = {'kind': 'features', 'label': features_ctx.label, 'names': features_ctx.names} -%}
{%- endif -%}
{%- set target_ctx = none -%}
{%- set awrf = [] -%}
{%- for m in beyond if m.definition.name == 'awrf' -%}{%- do awrf.append(m.label) -%}{%- endfor -%}
{%- if extra.group_target is not none and not awrf -%}
{{ sqlmetrics._fail("group_target= is awrf@k's target distribution, and no awrf metric is requested") }}
{%- endif -%}
{%- if extra.group_target is not none -%}
{#- awrf's target: one row per group, (genre=, genre_weight= or "weight"), normalized -#}
{%- set target = extra.group_target -%}
{%- set t_genre = sqlmetrics._find_column(target, o.genre, 'group_target', 'genre') -%}
{%- set t_weight = sqlmetrics._find_column(target, o.genre_weight or 'weight', 'group_target', 'weight') -%}
{%- do sqlmetrics._require_numeric(target, t_weight, 'group_target', 'weight', reg) -%}
{%- set target_ctx = {'source': target.sql, 'label': target.label, 'genre': sqlmetrics.quote_identifier(t_genre, dialect),
    'weight': sqlmetrics.quote_identifier(t_weight, dialect), 'names': {'genre': t_genre, 'weight': t_weight}} -%}
{%- endif -%}
{%- set families = [] -%}
{%- for m in beyond -%}
{%- set family = m.definition.template.split('/')[-1].split('.')[0] -%}
{%- if family not in families -%}{%- do families.append(family) -%}{%- endif -%}
{%- endfor -%}
{%- set metrics_ctx = [] -%}
{%- set columns = [] -%}
{%- set ks = {'lists': [], 'catalog': [], 'diversity': [], 'serendipity': []} -%}
{%- for m in beyond -%}
{%- do metrics_ctx.append({'name': m.definition.name, 'k': m.k, 'column': sqlmetrics.quote_identifier(m.label, dialect), 'per_user': m.definition.per_user, 'param': none}) -%}
{%- if m.k is not none -%}
{%- if m.definition.uses_lists -%}{%- do ks.lists.append(m.k) -%}{%- endif -%}
{%- if m.definition.name in ('catalog_coverage', 'gini') -%}{%- do ks.catalog.append(m.k) -%}{%- endif -%}
{%- if m.definition.name in ('diversity', 'serendipity') -%}{%- do ks[m.definition.name].append(m.k) -%}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- for m in requested -%}{%- do columns.append(column_of[m.label]) -%}{%- endfor -%}
{%- set relevance = [] -%}
{%- for m in beyond if m.definition.uses_lists and 'relevance' in m.definition.needs -%}{%- do relevance.append(m.label) -%}{%- endfor -%}
{{ return({'metrics': metrics_ctx, 'families': families,
    'list_length': (ks.lists | max) if ks.lists else none,
    'history': history_ctx, 'catalog': catalog_ctx, 'features': features_ctx, 'genres': genres_ctx,
    'target': target_ctx, 'similarity': similarity,
    'relevance': relevance | length > 0,
    'catalog_k': (ks.catalog | max) if ks.catalog and catalog_ctx is not none else none,
    'diversity_k': (ks.diversity | max) if ks.diversity else none,
    'serendipity_k': (ks.serendipity | max) if ks.serendipity else none,
    'columns': columns}) }}
{%- endmacro %}
