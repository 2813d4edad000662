{{ intent_text('bigquery') }}
