"""The Jinja2 environment over sql/: the templates are the single source of every formula."""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache

from ..inputs.identifiers import quote_string


def template_dir() -> Path:
    """sql/ inside the installed wheel, else the repository's sql/ (editable installs)."""
    package = Path(__file__).resolve().parents[1]  # sqlmetrics/ (this file is statement/templates.py)
    packaged = package / "sql"
    if packaged.is_dir():
        return packaged
    return package.parent / "sql"


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        auto_reload=False,  # (the shipped templates do not change under a running process)
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        finalize=_hold_value,
    )
    env.filters["sql_string"] = quote_string
    return env


class _QuietBytecodeCache(jinja2.FileSystemBytecodeCache):
    """A cache that cannot fail an evaluation: a template it cannot store is compiled again
    next time."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between processes (a private folder per user in the temp
    directory; Jinja recompiles any template whose source changed): compiling the templates
    costs about 100 ms, a fifth of a 10M-row evaluation started from a cron job or the CLI."""
    try:
        # its own file names: code compiled for another environment (one without finalize=,
        # an older sqlmetrics) must never be loaded into this one
        return _QuietBytecodeCache(pattern="__sqlmetrics_held_%s.cache")
    except (OSError, RuntimeError):  # no safe temp directory: compile every time
        return None


# The values a render has put out, behind placeholders: {placeholder prefix, values}.
_HELD: ContextVar[tuple[str, list[str]] | None] = ContextVar("sqlmetrics_held", default=None)


@jinja2.pass_eval_context  # (so Jinja calls it at render time, never on constants at compile time)
def _hold_value(_eval_ctx: Any, value: Any) -> Any:
    """Every {{ expression }} goes out as a placeholder, put back only after render()'s blank
    line cleanup, so the cleanup can never touch the text of a quoted name or literal (which
    may hold line breaks of any kind). Text that already holds placeholders is a macro's or a
    block's output: template text, which the cleanup may tidy."""
    held = _HELD.get()
    if held is None or not isinstance(value, str) or not value:
        return value
    prefix, values = held
    if prefix in value:
        return value
    values.append(value)
    return f"{prefix}{len(values) - 1}\x00"


def held_text(text: str) -> str:
    """`text` of the render under way with its placeholders put back: what it will read as
    (to compare two pieces of template output).

    >>> held_text("a") == "a"
    True
    """
    held = _HELD.get()
    if held is None:
        return text
    prefix, values = held
    return re.sub(re.escape(prefix) + r"(\d+)\x00", lambda m: values[int(m.group(1))], text)


_ANY_PLACEHOLDER = re.compile(r"\x00[0-9a-f]{32}:\d+\x00")


def render(name: str, context: dict[str, Any]) -> str:
    """The template `name` rendered with `context`, without the blank lines its tags leave;
    every value the context puts in comes out byte for byte (see _hold_value).

    >>> render("reports/done_periods.sql.j2", {"table": '"r\\n\\nx"'}).count('"r\\n\\nx"')
    1
    """
    # NUL cannot occur in a name or literal (identifiers.py refuses it): the placeholders can
    # never be confused with a value's own text
    prefix = f"\x00{uuid.uuid4().hex}:"
    values: list[str] = []
    token = _HELD.set((prefix, values))
    try:
        text = environment().get_template(name).render(**context)
    finally:
        _HELD.reset(token)
    # Drop the blank lines that template tags leave behind, so the SQL reads cleanly; the
    # template text has only \n line breaks.
    lines = [line for line in text.split("\n") if line.strip(" \t")]
    cleaned = "\n".join(lines) + "\n"
    restored = re.sub(re.escape(prefix) + r"(\d+)\x00", lambda m: values[int(m.group(1))], cleaned)
    if _ANY_PLACEHOLDER.search(restored):  # another render's (a cached template module's)
        raise RuntimeError(f"sqlmetrics: a placeholder was left in the SQL of {name}")
    return restored
