{{ intent_text('postgres') }}
