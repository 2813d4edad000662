{{ intent_text('spark') }}
