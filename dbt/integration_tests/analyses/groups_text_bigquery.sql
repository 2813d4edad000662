{{ groups_text('bigquery') }}
