"""Run Microsoft Recommenders' python_evaluation on JSON from stdin; print its numbers as JSON.

Run by tests/test_profiles.py in an interpreter that has `recommenders` and pandas < 3
(SQLMETRICS_RECOMMENDERS_PYTHON; Recommenders does not install beside pandas 3). Input: a list
of cases, output the list of their results (one run for every case: the import takes seconds).
A case is {"truth": [[user, item, rating], ...], "pred": [[user, item, score], ...], "k": k}; the
predictions come sorted by (user, score descending), as Recommenders' `map` expects them. Or,
for the beyond-accuracy metrics (tests/test_beyond_accuracy.py): {"train": [[user, item], ...],
"reco": [[user, item, relevance], ...]}.
"""

import json
import sys


def main() -> None:
    import pandas as pd
    from recommenders.evaluation import python_evaluation as pe

    cases = json.load(sys.stdin)
    results = [beyond(pd, pe, data) if "train" in data else ranking(pd, pe, data) for data in cases]
    json.dump(results, sys.stdout)


def ranking(pd, pe, data: dict) -> dict:
    truth = pd.DataFrame(data["truth"], columns=["userID", "itemID", "rating"])
    pred = pd.DataFrame(data["pred"], columns=["userID", "itemID", "prediction"])
    k = data["k"]
    out = {
        "precision": pe.precision_at_k(truth, pred, k=k),
        "recall": pe.recall_at_k(truth, pred, k=k),
        "map_at_k": pe.map_at_k(truth, pred, k=k),
        "map": pe.map(truth, pred),
        "ndcg_binary": pe.ndcg_at_k(truth, pred, k=k),
        "ndcg_raw": pe.ndcg_at_k(truth, pred, k=k, score_type="raw"),
        "ndcg_exp": pe.ndcg_at_k(truth, pred, k=k, score_type="exp"),
    }
    return {name: float(value) for name, value in out.items()}


def beyond(pd, pe, data: dict) -> dict:
    import warnings

    train = pd.DataFrame(data["train"], columns=["userID", "itemID"])
    reco = pd.DataFrame(data["reco"], columns=["userID", "itemID", "relevance"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {
            "catalog_coverage": pe.catalog_coverage(train, reco),
            "distributional_coverage": pe.distributional_coverage(train, reco),
            "novelty": pe.novelty(train, reco),
            "diversity": pe.diversity(train, reco[["userID", "itemID"]]),
            "serendipity": pe.serendipity(train, reco, col_relevance="relevance"),
        }
    return {name: None if value is None else float(value) for name, value in out.items()}


if __name__ == "__main__":
    main()
