select * from {{ ref('events') }}
where day between cast('{{ var("first_day") }}' as date) and cast('{{ var("last_day") }}' as date)
