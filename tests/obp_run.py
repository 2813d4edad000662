"""Run Open Bandit Pipeline's slate estimators (obp 0.5.7, in its own Python 3.10 venv: it
requires Python < 3.11) for tests/test_off_policy_obp.py: a JSON list of cases on stdin, a JSON
list of results on stdout.

A case is either {"log": {...arrays...}} (OBP's estimators on that log) or {"synthetic":
{...}} (OBP's SyntheticSlateBanditDataset: the log it draws, an evaluation policy's
propensities from OBP's own obtain_pscore_given_evaluation_policy_logit, and the estimates).
torch (which only OBP's policy learners use) is replaced by a stand-in so that obp imports
without it."""

from __future__ import annotations

import json
import sys
import types


class _Stand_in(types.ModuleType):
    """Any attribute is a class (capitalised) or another stand-in; calling one is the identity
    decorator."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {}) if name[:1].isupper() else _Stand_in(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value

    def __call__(self, *args, **kwargs):
        return args[0] if args and callable(args[0]) else (lambda f: f)


for _name in ("torch", "torch.nn", "torch.nn.functional", "torch.optim", "torch.utils",
              "torch.utils.data", "pingouin", "pyieoe", "pyieoe.evaluator"):
    sys.modules.setdefault(_name, _Stand_in(_name))

import numpy as np  # noqa: E402
from obp.ope import (  # noqa: E402
    SelfNormalizedSlateIndependentIPS,
    SelfNormalizedSlateRewardInteractionIPS,
    SelfNormalizedSlateStandardIPS,
    SlateCascadeDoublyRobust,
    SlateIndependentIPS,
    SlateRewardInteractionIPS,
    SlateStandardIPS,
)


def estimates(log: dict) -> dict:
    a = {k: np.asarray(v) for k, v in log.items() if isinstance(v, list)}
    L = int(log["len_list"])
    common = {"slate_id": a["slate_id"], "reward": a["reward"].astype(float), "position": a["position"]}
    out = {}
    for cls in (SlateStandardIPS, SelfNormalizedSlateStandardIPS):
        out[cls(len_list=L).estimator_name] = cls(len_list=L).estimate_policy_value(
            **common, pscore=a["pscore"], evaluation_policy_pscore=a["e_pscore"])
    for cls in (SlateIndependentIPS, SelfNormalizedSlateIndependentIPS):
        out[cls(len_list=L).estimator_name] = cls(len_list=L).estimate_policy_value(
            **common, pscore_item_position=a["pscore_item_position"],
            evaluation_policy_pscore_item_position=a["e_pscore_item_position"])
    for cls in (SlateRewardInteractionIPS, SelfNormalizedSlateRewardInteractionIPS):
        out[cls(len_list=L).estimator_name] = cls(len_list=L).estimate_policy_value(
            **common, pscore_cascade=a["pscore_cascade"],
            evaluation_policy_pscore_cascade=a["e_pscore_cascade"])
    if "q_hat" in a:
        dr = SlateCascadeDoublyRobust(len_list=L, n_unique_action=int(log["n_unique_action"]))
        out["cascade-dr"] = dr.estimate_policy_value(
            **common, action=a["action"], pscore_cascade=a["pscore_cascade"],
            evaluation_policy_pscore_cascade=a["e_pscore_cascade"], q_hat=a["q_hat"],
            evaluation_policy_action_dist=a["action_dist"])
    return {k: float(v) for k, v in out.items()}


def synthetic(spec: dict) -> dict:
    from obp.dataset import SyntheticSlateBanditDataset, logistic_reward_function

    dataset = SyntheticSlateBanditDataset(
        n_unique_action=spec["n_unique_action"], len_list=spec["len_list"], dim_context=2,
        reward_type="binary", reward_structure=spec["reward_structure"],
        base_reward_function=logistic_reward_function, random_state=spec["seed"],
    )
    feedback = dataset.obtain_batch_bandit_feedback(n_rounds=spec["n_rounds"])
    rng = np.random.default_rng(spec["seed"])
    logit = rng.normal(size=(spec["n_rounds"], spec["n_unique_action"]))
    e_pscore, e_item_position, e_cascade = dataset.obtain_pscore_given_evaluation_policy_logit(
        action=feedback["action"], evaluation_policy_logit_=logit)
    log = {
        "slate_id": feedback["slate_id"].tolist(), "action": feedback["action"].tolist(),
        "reward": feedback["reward"].tolist(), "position": feedback["position"].tolist(),
        "pscore": feedback["pscore"].tolist(),
        "pscore_item_position": feedback["pscore_item_position"].tolist(),
        "pscore_cascade": feedback["pscore_cascade"].tolist(), "e_pscore": e_pscore.tolist(),
        "e_pscore_item_position": e_item_position.tolist(), "e_pscore_cascade": e_cascade.tolist(),
        "len_list": spec["len_list"],
    }
    return {"log": log, "estimates": estimates(log)}


def main() -> None:
    cases = json.load(sys.stdin)
    results = [synthetic(c["synthetic"]) if "synthetic" in c else {"estimates": estimates(c["log"])}
               for c in cases]
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
