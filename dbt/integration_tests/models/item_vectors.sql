-- a vector for most items (those whose id is a multiple of 7 have none: no similarity)
select item_id,
{%- if target.type == 'postgres' %}
    array[(item_id % 5)::double precision, (item_id % 3)::double precision - 1, 0.5] as features
{%- else %}
    [cast(item_id % 5 as double), cast(item_id % 3 as double) - 1, 0.5] as features
{%- endif %}
from (select distinct item_id from {{ ref('recommendations') }}) as items
where item_id % 7 <> 0
