-- the days of this run (vars first_day, last_day)
select * from {{ ref('recommendations') }}
where day between cast('{{ var("first_day") }}' as date) and cast('{{ var("last_day") }}' as date)
