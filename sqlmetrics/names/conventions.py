"""The conventions that decide between defensible definitions. Defaults reproduce trec_eval."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from ..errors import ConventionError

CHOICES = {
    "ties": ("item_desc", "trec_eval", "item_asc", "average", "evidently"),
    "gain": ("linear", "exponential", "binary"),
    "empty": ("zero", "skip", "no_gain"),
    "missing": ("skip", "zero"),
    "ap_denominator": ("relevant", "min_k"),
    "short_lists": ("pad", "evidently"),
    "duplicates": ("top_k", "all"),
    "truth_duplicates": ("error", "max", "sum"),
}

# threshold="any": every truth row is relevant, whatever its grade (its grade is not read)
ANY_TRUTH_ROW = "any"


@dataclass(frozen=True)
class Conventions:
    """ties: order of items with equal scores (item_desc = trec_eval's order for text ids);
      "average" the expectation over their orders; "evidently" one shared position per tie
      group, the floor of its mean position (pandas' average rank cut to an integer).
    threshold: the grade from which an item counts as relevant for binary metrics; "any": every
      truth row is relevant with grade 1, its grade not read (Microsoft Recommenders).
    gain: linear (rel), exponential (2^rel - 1) or binary (1 if relevant, else 0: Spark's
      labels), for cg, dcg, idcg, ndcg.
    empty: users with truth rows but no relevant one are scored 0 ("zero") or left out ("skip");
      "no_gain" leaves out the users with no positive gain (ideal DCG 0, ndcg's 0/0).
    missing: truth users absent from the recommendations are left out ("skip") or scored 0.
    ap_denominator: map@k divides by R ("relevant") or by min(R, k) ("min_k").
    short_lists: a list shorter than k: "pad" counts it as padded with non-relevant items
      (precision@k divides by k; trec_eval and the others), "evidently" as Evidently's legacy
      metrics do (precision@k and f1@k use min(k, N) for k; map@k and mar@k count the list's
      last item again at each position from N + 1 to k).
    duplicates: which (user, item) pairs of the recommendations are checked for duplicates:
      "top_k" those that reach a user's evaluated list (the only ones that can change a number;
      free), "all" every row (one more hash aggregation over the whole input).
    truth_duplicates: several truth rows for one (user, item), as in an event log: "error"
      (trec_eval refuses them; action grades keep the highest), "max" (the highest grade
      counts) or "sum" (the grades add up, then meet the threshold).
    gain_from_threshold: grades below the threshold gain nothing either: never a keyword, only
      a peer's metric name asks for it (ranx's "ndcg@10-l2"; metric_names.py)."""

    ties: str = "item_desc"
    threshold: float | str = 1
    gain: str = "linear"
    empty: str = "zero"
    missing: str = "skip"
    ap_denominator: str = "relevant"
    short_lists: str = "pad"
    duplicates: str = "top_k"
    truth_duplicates: str = "error"
    gain_from_threshold: bool = False

    def __post_init__(self) -> None:
        for field, allowed in CHOICES.items():
            value = getattr(self, field)
            if value not in allowed:
                options = ", ".join(repr(a) for a in allowed)
                raise ConventionError(f"{field}={value!r} is not one of {options}")
        t = self.threshold
        if t == ANY_TRUTH_ROW:
            return
        if isinstance(t, bool) or not isinstance(t, Real) or not math.isfinite(t) or t <= 0:
            raise ConventionError(
                f"threshold must be a positive number (relevance <= 0 is never relevant) or "
                f"{ANY_TRUTH_ROW!r} (every truth row is relevant), got {t!r}"
            )

    @property
    def threshold_literal(self) -> str:
        """The threshold as a SQL numeric literal (validated above, so safe to inline). Under
        "any" every truth row has grade 1 (plan.py), so 1 is relevant."""
        if self.threshold == ANY_TRUTH_ROW:
            return "1"
        return (
            repr(float(self.threshold))
            if not float(self.threshold).is_integer()
            else str(int(self.threshold))
        )
