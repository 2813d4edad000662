"""trec_eval 10.0's test collection and, where its C source is at hand, trec_eval itself.

The collection (inputs and trec_eval's expected outputs) is data, copied into the repository
with NIST's notice (tests/data/trec_eval/README.md): a fresh clone has it. trec_eval's C source
is not part of the repository (no vendored peer code): only the shared directory beside the
project's own CI checkout has it (../shared/peer_data/trec_eval/src), or the directory that
$SQLMETRICS_TREC_EVAL_SRC names. The tests that need the program build it from there once per
process, and without it they are skipped with one reason on a developer's machine and FAIL in
CI (CI=true), like a missing engine (engines.unavailable).
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from engines import unavailable

DATA = Path(__file__).resolve().parent / "data" / "trec_eval"

# <root>/main/tests/this_file.py: the shared directory is <root>/shared
SHARED_SOURCE = Path(__file__).resolve().parents[2] / "shared" / "peer_data" / "trec_eval" / "src"


def source_dir() -> Path:
    """trec_eval's C source: $SQLMETRICS_TREC_EVAL_SRC, else ../shared/peer_data/trec_eval/src."""
    named = os.environ.get("SQLMETRICS_TREC_EVAL_SRC")
    return Path(named) if named else SHARED_SOURCE


@functools.cache
def trec_eval_binary(precise: bool = False) -> Path:
    """trec_eval built from its C source in a temporary copy (the source may be read-only),
    deleted when the process ends; skipped (CI=true: failed) without the source or a compiler.
    precise=True: a build that prints every value with "%.17g" instead of "%6.4f" (its two
    printing files changed in the copy), to compare values to 1e-9."""
    source = source_dir()
    if not (source / "Makefile").is_file():
        unavailable(
            f"trec_eval's C source not found at {source} (only the project's CI checkout has "
            "../shared/peer_data/trec_eval/src; or set SQLMETRICS_TREC_EVAL_SRC): no trec_eval oracle"
        )
    if shutil.which("make") is None or shutil.which(os.environ.get("CC", "cc")) is None:
        unavailable("make or a C compiler (cc) is missing: cannot build trec_eval from its source")
    build = Path(tempfile.mkdtemp(prefix="sqlmetrics-trec_eval-"))
    atexit.register(shutil.rmtree, build, ignore_errors=True)
    shutil.copytree(source, build / "src")
    for path in (build / "src").rglob("*"):
        path.chmod(path.stat().st_mode | 0o200)
    for name in ("meas_print_single.c", "meas_print_final.c") if precise else ():
        path = build / "src" / name
        path.write_text(path.read_text(encoding="utf-8").replace("%6.4f", "%.17g"), encoding="utf-8")
    done = subprocess.run(["make"], cwd=build / "src", capture_output=True, text=True, check=False)
    binary = build / "src" / "trec_eval"
    assert done.returncode == 0 and binary.is_file(), f"building trec_eval failed:\n{done.stderr[-2000:]}"
    return binary
