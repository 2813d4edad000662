{{ groups_text('snowflake') }}
