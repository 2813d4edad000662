{{ groups_text('spark') }}
