"""The metric catalogue and its names: the registry of metrics, parsing "ndcg@10", peers' names
(trec_eval, ranx, ir_measures), conventions and the profiles of other tools.
May import only sqlmetrics.errors."""
