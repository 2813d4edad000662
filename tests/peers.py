"""The interpreter of the peer tools that cannot share the test venv (Microsoft Recommenders
and Evidently need pandas < 3): named by an environment variable, built by .ci/run (see
docs/testing.md). Without it their tests are skipped on a developer's machine and FAIL in CI
(CI=true), like the other engines' (engines.unavailable)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

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


def run_cases(variable: str, tool: str, script: str, cases: list[dict]) -> list:
    """Every case through tests/`script` in ONE run of the interpreter that $variable names
    (importing Evidently or Recommenders costs seconds, a case milliseconds): a JSON list of
    cases in, the list of their results out."""
    python = peer_python(variable, tool)
    done = subprocess.run(
        [python, str(Path(__file__).parent / script)],
        input=json.dumps(cases), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert len(results) == len(cases)
    return results
