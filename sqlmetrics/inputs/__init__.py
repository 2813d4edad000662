"""What the user passes in: sources (tables, files, frames) and their columns, the quoting of every
name and literal, and the TREC run/qrels readers and trec_eval's text writer.
May import sqlmetrics.names and sqlmetrics.errors."""
