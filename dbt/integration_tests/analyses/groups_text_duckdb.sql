{{ groups_text('duckdb') }}
