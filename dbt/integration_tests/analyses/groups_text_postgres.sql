{{ groups_text('postgres') }}
