"""The one SQL statement: the keywords turned into a plan, the Jinja2 templates of sql/ rendered for a
dialect, exact sums, partitions, and running it with its checks (run.py).
May import sqlmetrics.inputs, sqlmetrics.names and sqlmetrics.errors."""
