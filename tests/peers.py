"""The interpreter of the peer tools that cannot share the test venv (Microsoft Recommenders
and Evidently need pandas < 3): named by an environment variable, built by .ci/run (see
docs/testing.md). Without it their tests are skipped on a developer's machine and FAIL in CI
(CI=true), like the other engines' (engines.unavailable)."""

from __future__ import annotations

import os

from engines import unavailable


def peer_python(variable: str, tool: str) -> str:
    """The Python that $variable names, which has `tool` installed."""
    python = os.environ.get(variable)
    if not python:
        unavailable(
            f"{tool} is not installed here: set {variable} to a Python that has it "
            "(it cannot share this venv; see docs/testing.md)"
        )
    return python
