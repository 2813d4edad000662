-- a history without the day: each (user, day) list meets the user's views of every day
select user_id, item_id from {{ ref('events') }} where event_type = 'view'
