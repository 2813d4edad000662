"""What the commands share: exit statuses, the usage error, the options every evaluating
command takes (inputs, column names, conventions) and how they become the API's keywords."""

from __future__ import annotations

import argparse
import glob
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from ..errors import SqlMetricsError
from ..names.conventions import ANY_TRUTH_ROW, CHOICES, Conventions
from ..names.metric_names import split_metric_list as metric_list
from ..names.profiles import PROFILES
from ..statement import keywords
from ..statement.plan import NO_RELEVANCE_HINT, SUBTOPICS_HINT
from ..statement.prepare import NOT_BOTH_TRUTHS
from .interrupt import watched

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_NO_DATA, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

_PARQUET_CSV = (".parquet", ".pq", ".parq", ".csv", ".tsv", ".csv.gz", ".tsv.gz")


class UsageError(Exception):
    """Bad command-line usage: reported in one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


HELP = argparse.RawDescriptionHelpFormatter


def comma_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace(" ", ",").split(",") if part.strip()]


def _threshold(text: str) -> float | str:
    """--threshold: a number (an integer stays one) or 'any'."""
    if text.strip() == ANY_TRUTH_ROW:
        return ANY_TRUTH_ROW
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or 'any'") from None
    return int(value) if value.is_integer() else value


def unit_key(text: str) -> str | list[str]:
    """--user: one column (as given), or several, comma-separated."""
    if "," not in text:
        return text
    parts = [part.strip() for part in text.split(",")]
    if not all(parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a column or a comma-separated list of columns")
    return parts[0] if len(parts) == 1 else parts


def memory_size(text: str) -> str:
    """A size DuckDB's memory_limit takes (validated, since SET takes no bound parameter)."""
    if not re.fullmatch(r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)", text.strip(), re.IGNORECASE):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 512MB or 4GB")
    return text.strip()


def relevance_grades(text: str | None) -> str | dict[str, float] | None:
    """'grade' (a column) or 'purchase=3,view=1' (grades of the --action column)."""
    if text is None or "=" not in text:
        return text
    grades: dict[str, float] = {}
    for part in text.split(","):
        action, sep, grade = part.partition("=")
        try:
            value = float(grade)
        except ValueError:
            raise UsageError(
                f"--relevance {text!r}: {part.strip()!r} is not action=grade (e.g. purchase=3)"
            ) from None
        grades[action.strip()] = int(value) if value.is_integer() else value
    return grades


_CONVENTION_HELP = {
    "ties": "order of items with equal scores",
    "gain": "gain of grade rel: rel, or 2^rel - 1",
    "empty": "users with truth but nothing relevant: scored by the formulas, or left out",
    "missing": "truth users absent from SOURCE: left out, or scored 0 (trec_eval -c)",
    "ap_denominator": "map@k divides by R, or by min(R, k)",
    "short_lists": "a list shorter than k: padded with non-relevant items, or as Evidently "
    "counts it (precision@k over min(k, N), the last item repeated in map@k and mar@k)",
    "duplicates": "which (user, item) pairs are checked for duplicates: those that reach the "
    "top k, or every row",
    "truth_duplicates": "several --truth rows of one (user, item), as in an event log: an error, "
    "the highest grade, or the sum of the grades",
}


def add_evaluation_options(parser: argparse.ArgumentParser, per_user: bool = True) -> None:
    """SOURCE, --metrics, --truth, --by, --db, --wait, the column names and the conventions;
    --per-user too unless `per_user` is False (a command that gives no per-user rows)."""
    parser.add_argument("source", metavar="SOURCE", help="the recommendations (see below)")
    parser.add_argument(
        "-m", "--metrics", type=metric_list, metavar="LIST",
        help="comma-separated metric names, e.g. ndcg@10,map@10,recall@20,r_precision, or "
        "trec_eval's, ranx's and ir_measures' names (P_10, P.5,10, official, nDCG@10, AP); "
        "required, except for a TREC run, where it defaults to trec_eval's official set (with "
        "--subtopics, ndeval's measures)",
    )  # fmt: skip
    parser.add_argument("--truth", metavar="SOURCE", help="the truth: (user, item[, relevance]) rows")
    parser.add_argument(
        "--subtopics", metavar="SOURCE",
        help="subtopic judgements (user, subtopic, item[, relevance][, weight] rows, or an "
        "ndeval qrels file: topic subtopic docno judgement) for alpha_ndcg@k, p_ia@k, ap_ia, "
        "err_ia@k, nrbp; the truth of the other metrics too, so not with --truth",
    )  # fmt: skip
    parser.add_argument(
        "--by", type=comma_list, metavar="COLS", help="segment by these columns of SOURCE (comma-separated)"
    )
    parser.add_argument("--db", metavar="PATH", help="a DuckDB database file (opened read-only)")
    parser.add_argument(
        "--wait", type=float, default=0.0, metavar="SECONDS",
        help="if another process is writing the --db file, wait up to this long [0: fail at once]",
    )  # fmt: skip
    if per_user:
        parser.add_argument("--per-user", action="store_true", help="one row per user instead of the means")
    names = parser.add_argument_group("column names (as in sqlmetrics.evaluate)")
    names.add_argument(
        "--user", default="user_id", type=unit_key, metavar="COLS",
        help="the unit's key: user (or query) column, or several, comma-separated: one ranked "
        "list per (user_id, day) with user_id,day [user_id]",
    )  # fmt: skip
    names.add_argument("--item", default="item_id", help="item (or document) column [item_id]")
    names.add_argument("--score", default="score", help="score column, higher is better [score]")
    names.add_argument("--rank", help="rank column (1 is the top) instead of a score")
    names.add_argument(
        "--relevance", metavar="COL|GRADES",
        help="relevance column [relevance, where present], or with --action the grades of the "
        "actions: purchase=3,add_to_cart=2,view=1",
    )  # fmt: skip
    names.add_argument("--action", help="action column, graded by --relevance action=grade,...")
    add_convention_options(parser)


def add_convention_options(parser: argparse.ArgumentParser) -> None:
    """--profile and the conventions (--ties, --gain, ..., --threshold)."""
    conv = parser.add_argument_group(
        "conventions (defaults reproduce trec_eval, or --profile's tool; see docs/conventions.md)"
    )
    conv.add_argument(
        "--profile", choices=tuple(PROFILES), metavar="TOOL",
        help="another tool's conventions: " + ", ".join(PROFILES) + "; the options below "
        "override it [trec_eval]",
    )  # fmt: skip
    defaults = Conventions()
    for name, choices in CHOICES.items():  # --ties, --gain, --empty, --missing, --ap-denominator, ...
        default = getattr(defaults, name)
        meaning = _CONVENTION_HELP.get(name, "")
        conv.add_argument(
            f"--{name.replace('_', '-')}", choices=choices, help=f"{meaning} [{default}]"
        )
    conv.add_argument(
        "--threshold", type=_threshold, metavar="GRADE",
        help="grade from which an item is relevant, or 'any': every truth row [1]",
    )  # fmt: skip


def _sniff_trec(path: Path, lines: int = 20) -> str | None:
    """'run', 'qrels' or None, from the first lines of a text file: a run's score starts with
    a number, a qrels grade is a whole number (with a sign or not), as the readers take them."""
    from ..inputs.trec import looks_like_grade, reads_as_score

    kinds = set()
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if not fields or fields[0].startswith("#"):
                    continue
                if len(fields) >= 6 and reads_as_score(fields[4]):
                    kinds.add("run")
                elif len(fields) == 4 and looks_like_grade(fields[3]):
                    kinds.add("qrels")
                else:
                    return None
                lines -= 1
                if lines == 0:
                    break
    except (OSError, UnicodeDecodeError):
        return None
    return kinds.pop() if len(kinds) == 1 else None


def source_input(text: str | None, subtopics: bool = False) -> Any:
    """A SOURCE as the library takes it: TREC files are read here, the rest passes as is.
    With `subtopics` (--subtopics), a qrels file is ndeval's: topic subtopic docno judgement."""
    if text is None:
        return None
    from ..inputs.trec import read_qrels, read_run, read_subtopic_qrels

    path = Path(text)
    lowered = text.lower()
    if path.is_file() and not lowered.endswith(_PARQUET_CSV):
        kind = _sniff_trec(path)
        if kind == "run" and subtopics:
            raise SqlMetricsError(
                f"--subtopics {text!r} is a TREC run (qid Q0 docno rank score tag); expected "
                "subtopic judgements (topic subtopic docno judgement lines, ndeval's qrels)"
            )
        if kind == "run":
            return read_run(path)
        if kind == "qrels":
            return read_subtopic_qrels(path) if subtopics else read_qrels(path)
        if not lowered.endswith(".txt"):
            expected = (
                "subtopic qrels (topic subtopic docno judgement)" if subtopics
                else "TREC run (qid Q0 docno rank score tag) or qrels (qid iter docno rel)"
            )  # fmt: skip
            raise SqlMetricsError(
                f"cannot tell what {text!r} is: expected a .parquet or .csv file, or a {expected} file"
            )
    return text


# The shared keywords (statement/keywords.py) the command line does not offer: inputs for the
# beyond-accuracy metrics, which the commands have no options for yet
NOT_ON_THE_COMMAND_LINE = frozenset(
    {"history", "catalog", "item_features", "features", "item_genres", "genre", "genre_weight",
     "group_target"}
)


def evaluation_options(args: argparse.Namespace) -> dict[str, Any]:
    """The API's keywords from the parsed options: each shared keyword from the option of its
    name (--truth and --relevance converted), plus by and per_user (False for a command without
    --per-user). --action and grades in --relevance go together."""
    grades = relevance_grades(args.relevance)
    if args.action is not None and not isinstance(grades, dict):
        raise UsageError(
            f"sqlmetrics {args.command}: --action {args.action} needs --relevance with the grade "
            "of each action, e.g. --relevance purchase=3,view=1"
        )
    if isinstance(grades, dict) and args.action is None:
        raise UsageError(
            f"sqlmetrics {args.command}: --relevance {args.relevance} grades actions: name their "
            "column with --action COL"
        )
    converted = {
        "truth": source_input(args.truth),
        "subtopics": source_input(args.subtopics, subtopics=True),
        "relevance": grades,
    }
    shared = {
        name: converted[name] if name in converted else getattr(args, name)
        for name in keywords.NAMES
        if name not in NOT_ON_THE_COMMAND_LINE
    }
    return {**shared, "by": args.by, "per_user": getattr(args, "per_user", False)}


def with_baseline(call: Any, text: str, by: list[str]) -> Any:
    """call(baseline) with --baseline's values (comma-separated for several --by columns), each
    read again as a value of its by column's type (a number, a boolean, a date) where that column
    is not text: the command line gives text only (compare, and evaluate's rbo)."""
    from ..statement.baselines import TextBaselineError
    from ..stats.compare import baseline_from_text

    values: list[Any] = text.split(",") if len(by) > 1 else [text]
    for _ in range(len(values) + 1):
        try:
            return call(tuple(values) if len(values) > 1 else values[0])
        except TextBaselineError as exc:
            values[exc.position] = baseline_from_text(values[exc.position], exc.column_type)
    raise AssertionError("unreachable: each by column's value is read again once at most")


def refuse_overwriting(
    command: str, option: str, output: str | None, inputs: Iterable[tuple[str, str | None]]
) -> None:
    """Refuse (exit status 2, before anything is written) an output path that names one of the
    command's inputs: (what, path or glob) pairs, e.g. ("SOURCE", "recs.parquet"), ("--db",
    "warehouse.duckdb"); an input that names no file (a table, a URL) has none to overwrite.
    Paths are compared resolved (symbolic links followed) and, where both exist, as the same
    file (a hard link); a glob, by the files it matches.

    >>> refuse_overwriting("sql", "--output", "out.sql", [("SOURCE", "recs"), ("--truth", None)])
    """
    if not output:
        return
    target = Path(output).expanduser().resolve()
    for what, text in inputs:
        if not text:
            continue
        paths = glob.glob(text, recursive=True) if glob.has_magic(text) else [text]
        for path in paths:
            candidate = Path(path).expanduser()
            if not candidate.is_file():  # a table's name, a URL: no file to overwrite
                continue
            same = candidate.resolve() == target
            if not same and target.exists():
                try:
                    same = os.path.samefile(candidate, target)
                except OSError:
                    same = False
            if same:
                named = text if path == text else f"{text} ({path})"
                raise UsageError(
                    f"sqlmetrics {command}: {option} {output!r} is the {what} {named!r}; writing "
                    "there would overwrite it: choose another path"
                )


def evaluation_inputs(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The files an evaluating command reads: SOURCE, --truth, --subtopics, --db."""
    return [
        ("SOURCE", args.source), ("--truth", args.truth), ("--subtopics", args.subtopics), ("--db", args.db)
    ]  # fmt: skip


def connection(args: argparse.Namespace) -> duckdb.DuckDBPyConnection:
    from ..reports.warehouse import connect

    if args.wait < 0:
        raise UsageError(f"sqlmetrics {args.command}: --wait must be 0 or more seconds")
    con = connect(args.db, read_only=True, wait=args.wait) if args.db else duckdb.connect()
    # DuckDB's Python client prints a progress bar on stdout for a statement of over 2 s, which
    # went into the command's output (-m all_trec --format trec > out: seen at 10M rows)
    con.execute("SET enable_progress_bar = false")
    return watched(con)


def require_metrics(args: argparse.Namespace) -> None:
    if args.metrics is None:
        raise UsageError(f"sqlmetrics {args.command}: --metrics LIST is required (e.g. ndcg@10,map@10)")


def cli_wording(text: str) -> str:
    """The API's advice in a message, worded as the command line's options.

    >>> print(cli_wording(NO_RELEVANCE_HINT))  # doctest: +NORMALIZE_WHITESPACE
    and no --truth was given; pass --truth SOURCE (user, item[, relevance] rows), or
    --relevance COL, or --action COL with --relevance purchase=3,view=1
    """
    for hint, options in _OPTIONS_WORDING.items():
        text = text.replace(hint, options)
    return text


_NO_RELEVANCE_OPTIONS = (
    "and no --truth was given; pass --truth SOURCE (user, item[, relevance] rows), or "
    "--relevance COL, or --action COL with --relevance purchase=3,view=1"
)
_OPTIONS_WORDING = {
    NO_RELEVANCE_HINT: _NO_RELEVANCE_OPTIONS,
    SUBTOPICS_HINT: "pass --subtopics SOURCE (user, subtopic, item[, relevance] rows, or an "
    "ndeval qrels file)",
    NOT_BOTH_TRUTHS: "give --subtopics or --truth, not both",
}


def one_line(exc: BaseException) -> str:
    text = str(exc)
    text = text.split("\nLINE ", 1)[0]  # DuckDB's excerpt of our SQL, which the user did not write
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines) if lines else type(exc).__name__


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
