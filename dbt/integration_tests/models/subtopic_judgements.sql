-- subtopic judgements of the (user, day) units for the intent-aware measures: each event type
-- a subtopic, graded purchase 2, add_to_cart and view 1 (another type: 0, not relevant)
select day, user_id, event_type as subtopic, item_id,
       case event_type when 'purchase' then 2 when 'add_to_cart' then 1 when 'view' then 1 else 0 end as relevance
from {{ ref('events') }}
