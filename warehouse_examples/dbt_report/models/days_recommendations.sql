-- the recommendations of the days this run computes (vars first_day, last_day)
select * from {{ source('warehouse', 'recommendations') }}
where day between cast('{{ var("first_day") }}' as date) and cast('{{ var("last_day") }}' as date)
