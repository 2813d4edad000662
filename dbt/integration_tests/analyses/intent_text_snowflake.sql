{{ intent_text('snowflake') }}
