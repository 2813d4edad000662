"""Run in the interpreter that SQLMETRICS_RBO_PYTHON names, which has the `rbo` package
(changyaochen/rbo, PyPI `rbo`; it pins numpy < 2, so it cannot share the test venv): a JSON list
of cases {"S": [...], "T": [...], "p": p} on stdin, a JSON list of [rbo_ext(p), rbo(p)] out."""

import json
import sys

from rbo import RankingSimilarity

results = []
for case in json.load(sys.stdin):
    similarity = RankingSimilarity(case["S"], case["T"])
    results.append([similarity.rbo_ext(p=case["p"]), similarity.rbo(p=case["p"])])
json.dump(results, sys.stdout)
