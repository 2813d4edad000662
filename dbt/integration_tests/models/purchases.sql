select day, user_id, item_id from {{ ref('events') }} where event_type = 'purchase'
