-- the items' genres as rows (item_genres=), weighted: most items one genre, every third a
-- second one, those whose id is a multiple of 11 none
select item_id, 'g' || cast(item_id % 4 as varchar) as genre, cast(1 + item_id % 3 as double precision) as weight
from (select distinct item_id from {{ ref('recommendations') }}) as items
where item_id % 11 <> 0
union all
select item_id, 'g' || cast((item_id + 1) % 4 as varchar), cast(0.5 as double precision)
from (select distinct item_id from {{ ref('recommendations') }}) as items
where item_id % 3 = 0
