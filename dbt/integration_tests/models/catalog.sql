-- every item recommended or interacted with
select item_id from {{ ref('recommendations') }}
union
select item_id from {{ ref('events') }}
