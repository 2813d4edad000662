"""The docs document what the code does: every metric, convention, keyword and CLI option.

The README is the entry point (at most 250 lines, the two set-up commands first, a link to every
page of docs/); the reference lives in docs/, one page per topic; every link between them leads
to a file and a heading that exist.
"""

import inspect
import re
import unicodedata
from pathlib import Path

import pytest

import sqlmetrics
from sqlmetrics.cli import build_parser
from sqlmetrics.names.conventions import CHOICES
from sqlmetrics.names.registry import METRICS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PAGES = {path.name: path.read_text() for path in sorted((ROOT / "docs").glob("*.md"))}
DOCS = "\n".join(PAGES.values())
TOPICS = (  # the pages issue 16 asks for, plus errors and testing
    "metrics.md", "conventions.md", "inputs.md", "cli.md", "reports.md", "engines.md",
    "performance.md", "how-it-works.md", "errors.md", "testing.md", "README.md",
)  # fmt: skip


def section(text: str, heading: str) -> str:
    """The text under a heading line, up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = re.search(rf"^{re.escape(heading)}\s*$", text, flags=re.M)
    assert start, heading
    rest = text[start.end() :]
    end = re.search(rf"^#{{1,{level}}} ", rest, flags=re.M)
    return rest[: end.start()] if end else rest


def table_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row of the text (header and rule rows included)."""
    lines = [line.strip() for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_every_page_exists():
    assert set(TOPICS) <= set(PAGES), set(TOPICS) - set(PAGES)


def test_every_metric_is_in_the_metrics_table_as_the_registry_defines_it():
    rows = {}
    for cells in table_rows(section(PAGES["metrics.md"], "## Metrics")):
        found = re.fullmatch(r"`([A-Za-z0-9_.]+?)(@k)?`", cells[0])
        if found:
            rows[found.group(1)] = (bool(found.group(2)), cells[-1])
    assert set(rows) == set(METRICS)
    for name, (with_k, tie_averaged) in rows.items():
        assert with_k == METRICS[name].needs_cutoff, name
        assert tie_averaged == ("yes" if METRICS[name].tie_averaged else "no"), name


def test_every_beyond_accuracy_metric_has_its_definition():
    definitions = section(PAGES["metrics.md"], "## Beyond accuracy")
    for name, metric in METRICS.items():
        if metric.beyond:
            label = f"`{name}@k`" if metric.needs_cutoff else f"`{name}`"
            assert re.search(rf"^\* {re.escape(label)}:", definitions, flags=re.M), name


def test_every_convention_and_choice_is_in_the_conventions_table():
    rows = {cells[0]: cells for cells in table_rows(PAGES["conventions.md"])}
    for argument, choices in CHOICES.items():
        assert f"`{argument}`" in rows, argument
        row = " | ".join(rows[f"`{argument}`"])
        for choice in choices:
            assert f'"{choice}"' in row, (argument, choice)
    assert "`threshold`" in rows


@pytest.mark.parametrize("function", [sqlmetrics.evaluate, sqlmetrics.sql], ids=lambda f: f.__name__)
def test_every_keyword_is_documented(function):
    parameters = inspect.signature(function).parameters.values()
    positional = ("con", "recs", "metrics")
    keywords = [p.name for p in parameters if p.name not in positional and p.kind != p.VAR_KEYWORD]
    for keyword in keywords:
        assert f"`{keyword}" in DOCS, keyword


def test_every_option_of_the_command_line_is_in_cli_md():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict)).choices
    for name, command in commands.items():
        assert f"sqlmetrics {name}" in PAGES["cli.md"], name
        for action in command._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help":
                    assert re.search(rf"`{re.escape(option)}(?![\w-])", PAGES["cli.md"]), (name, option)


def test_every_error_is_in_errors_md():
    import sqlmetrics.reports  # noqa: F401  (defines the reports' errors)

    classes, todo = set(), [sqlmetrics.SqlMetricsError]
    while todo:
        cls = todo.pop()
        classes.add(cls)
        todo += cls.__subclasses__()
    classes.add(sqlmetrics.OutOfMemoryError)
    for cls in classes:
        if cls.__module__.startswith("sqlmetrics"):
            assert f"`{cls.__name__}`" in PAGES["errors.md"] or f"`sqlmetrics.{cls.__name__}`" in PAGES[
                "errors.md"
            ], cls


def test_the_readme_starts_with_the_two_commands_and_ci_runs_the_test_command():
    commands = re.findall(r"```bash\n(.+?)\n```", README)[:2]
    assert "daily_report.py" in commands[0]
    assert commands[1].endswith(".venv/bin/python -m pytest")
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/python -m pytest\n" in ci


def test_the_readme_is_an_entry_point():
    assert len(README.splitlines()) <= 250
    for page in TOPICS:
        assert f"](docs/{page})" in README, page
    for page in TOPICS[:-1]:
        assert f"]({page})" in PAGES["README.md"], page


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]{2,}|[`*]", "", heading.strip().lower())
    kept = "".join(c for c in text if c in "-_ " or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # no headings inside code blocks
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        base = slug(heading)
        out.add(base if base not in seen else f"{base}-{seen[base]}")
        seen[base] = seen.get(base, 0) + 1
    return out


def test_slugs_are_githubs():
    assert slug("Missing users: trec_eval 9.0.8 and 10.0") == "missing-users-trec_eval-908-and-100"
    assert slug("Conventions (keyword arguments; the defaults follow trec_eval)") == (
        "conventions-keyword-arguments-the-defaults-follow-trec_eval"
    )
    assert slug("The data (`generate.py`)") == "the-data-generatepy"
    assert anchors("# A\n## A\n```\n# not a heading\n```\n") == {"a", "a-1"}


MARKDOWN = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_internal_link_resolves(path):
    text = path.read_text()
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    links = re.findall(r"\]\(([^)\s]+)\)", prose)
    for link in links:
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        file = (path.parent / target).resolve() if target else path
        assert file.exists(), (str(path.relative_to(ROOT)), link)
        if anchor:
            assert file.suffix == ".md", link
            assert anchor in anchors(file.read_text()), (str(path.relative_to(ROOT)), link)


def test_the_tree_in_how_it_works_names_every_package_and_template_folder():
    """docs/how-it-works.md opens with the repository's tree: a new subpackage or template folder
    must appear there, and every layer of the import contract in pyproject.toml too."""
    tree = section(PAGES["how-it-works.md"], "## The tree")
    packages = sorted(p.parent.name for p in (ROOT / "sqlmetrics").glob("*/__init__.py"))
    for name in packages + sorted(p.name for p in (ROOT / "sql").iterdir() if p.is_dir()):
        assert re.search(rf"^\s+(\S+, )?{re.escape(name)}/", tree, flags=re.M), name
    layers = re.findall(r'^\s+"sqlmetrics\.(\w+)",$', (ROOT / "pyproject.toml").read_text(), flags=re.M)
    assert " -> ".join(layers) in " ".join(tree.split()), layers
