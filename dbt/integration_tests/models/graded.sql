-- one grade per (day, user, item): the highest of its events
select day, user_id, item_id,
       max(case event_type when 'purchase' then 3 when 'add_to_cart' then 2 when 'view' then 1 else 0 end) as relevance
from {{ ref('events') }}
group by day, user_id, item_id
