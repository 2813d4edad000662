"""Run Evidently's legacy recsys metrics on JSON from stdin; print their numbers as JSON.

Run by tests/test_profiles.py in an interpreter that has `evidently` (0.7) and pandas < 3
(SQLMETRICS_EVIDENTLY_PYTHON). Input: a list of cases, each {"rows": [[user, item, score, target],
...], "ks": [k, ...]}, Evidently's single frame of recommendations with their targets; output:
the list of their {k: {metric: value}} (one run for every case: Evidently takes seconds to import).
"""

import json
import sys


def main() -> None:
    import pandas as pd

    json.dump([case(pd, data) for data in json.load(sys.stdin)], sys.stdout)


def case(pd, data: dict) -> dict:
    from evidently.legacy.metrics import MAPKMetric, NDCGKMetric, PrecisionTopKMetric, RecallTopKMetric
    from evidently.legacy.pipeline.column_mapping import ColumnMapping
    from evidently.legacy.report import Report

    frame = pd.DataFrame(data["rows"], columns=["user_id", "item_id", "prediction", "target"])
    names = {"PrecisionTopKMetric": "precision", "RecallTopKMetric": "recall", "MAPKMetric": "map",
             "NDCGKMetric": "ndcg"}  # fmt: skip
    mapping = ColumnMapping(
        recommendations_type="score", target="target", prediction="prediction", item_id="item_id",
        user_id="user_id",
    )  # fmt: skip
    out = {}
    for k in data["ks"]:
        metrics = [PrecisionTopKMetric(k=k), RecallTopKMetric(k=k), MAPKMetric(k=k), NDCGKMetric(k=k)]
        report = Report(metrics=metrics)
        report.run(reference_data=None, current_data=frame, column_mapping=mapping)
        results = report.as_dict()["metrics"]
        out[k] = {names[m["metric"]]: float(m["result"]["current_value"]) for m in results}
    return out


if __name__ == "__main__":
    main()
