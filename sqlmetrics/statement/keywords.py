"""The keywords that every evaluating function takes, defined once.

evaluate(), sql(), compare() and the metric functions all name their inputs and conventions with
the same keywords (truth=, user=, ties=, ...) and hand them to prepare() unchanged. `inputs()`
below is their one definition (names, types, defaults, in order); `@takes_inputs` writes them
into each public function's signature, so `help()`, IDEs that read signatures and
`inspect.signature` show every keyword explicitly, and a function body receives them, defaults
filled in, as one dict. The command line's options map onto the same names (cli/options.py).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..inputs.sources import Input
from ..names.conventions import CHOICES

F = TypeVar("F", bound=Callable[..., Any])


def inputs(
    *,
    truth: Input | None = None,
    user: str | Sequence[str] = "user_id",
    item: str = "item_id",
    score: str = "score",
    rank: str | None = None,
    relevance: str | Mapping[str, float] | None = None,
    action: str | None = None,
    ties: str | None = None,
    threshold: float | str | None = None,
    gain: str | None = None,
    empty: str | None = None,
    missing: str | None = None,
    ap_denominator: str | None = None,
    duplicates: str | None = None,
    truth_duplicates: str | None = None,
    short_lists: str | None = None,
    profile: str | None = None,
    history: Input | None = None,
    catalog: Input | None = None,
    item_features: Input | None = None,
    features: str = "features",
    item_genres: Input | None = None,
    genre: str = "genre",
    genre_weight: str | None = None,
    group_target: Input | None = None,
    # subtopic judgements (unit, subtopic, item, grade): the intent-aware measures' input
    subtopics: Input | None = None,
) -> None:
    """The shared keywords (their meanings: evaluate()'s docstring and docs/inputs.md). Only its
    signature is used; `truth` comes first in every public signature, the rest where the
    function's own `**inputs` stands."""


INPUTS: tuple[inspect.Parameter, ...] = tuple(inspect.signature(inputs).parameters.values())
NAMES: tuple[str, ...] = tuple(p.name for p in INPUTS)
DEFAULTS: dict[str, Any] = {p.name: p.default for p in INPUTS}
# the conventions among them (a profile's defaults, which a keyword given overrides)
CONVENTION_KEYWORDS = (*CHOICES, "threshold")


def takes_inputs(*, last: Sequence[str] = ()) -> Callable[[F], F]:
    """Give the decorated function (whose signature ends in `**inputs`) the shared keywords in
    place of `**inputs`: `truth` first after the positional parameters, then the function's own
    keywords, the other shared ones, and last the function's own keywords named in `last`.
    Calls are bound to that signature (an unknown keyword is a TypeError, as for any function)
    and the body gets `inputs` complete, with the defaults.

    >>> @takes_inputs(last=("progress",))
    ... def f(con, *, by=None, progress=False, **inputs):
    ...     return inputs["truth"], inputs["user"], by
    >>> f(None, truth="t", by="model")
    ('t', 'user_id', 'model')
    >>> names = list(inspect.signature(f).parameters)
    >>> names[:4], names[-2:]
    (['con', 'truth', 'by', 'user'], ['subtopics', 'progress'])
    """

    def decorate(function: F) -> F:
        own = inspect.signature(function)
        params = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        positional = [p for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        keywords = [p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        before = [p for p in keywords if p.name not in last]
        after = [p for p in keywords if p.name in last]
        signature = own.replace(parameters=[*positional, INPUTS[0], *before, *INPUTS[1:], *after])

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            values = dict(bound.arguments)
            args = [values.pop(p.name) for p in positional]
            return function(*args, **values)

        wrapper.__signature__ = signature  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
