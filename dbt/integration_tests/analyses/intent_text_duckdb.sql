{{ intent_text('duckdb') }}
