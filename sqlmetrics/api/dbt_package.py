"""The dbt package's copy of the templates (dbt/macros/generated/), GENERATED from sql/.

dbt renders Jinja too, but it has no template loader: a macro cannot `import` or `include` a
file. So the templates that evaluate.sql.j2 renders (its imports and includes, every dialect
and every metric family) are put into ONE dbt macro, `sqlmetrics.render_statement(ctx)`:

* each file's macros become nested macros of it, renamed `t<n>__<name>` (its n in FILES), as
  are its module-level variables and import aliases (a rename inside one file only: what the
  file names is what it meant);
* `{% import 'x.sql.j2' as m %}` becomes `{% set m = _m['x.sql.j2'] %}`, where `_m` holds each
  file as a namespace of its macros and variables (dispatch's `module['duckdb__' ~ name]` and
  `family[m.macro]` read it as they read a template module); `{% include %}` is the file's text
  in place;
* the context's values (plan.py's build_context, which the dbt macros of dbt/macros/ compute
  from the model's relations) are the variables of the macro, which nested macros read as
  `with context` imports read the context;
* sum_terms (exact_sums.SumTerms) and literal() (the dialect's quote_string) are given as
  Jinja: a list of the terms collected, and the dialect's escaping.

The text is the templates' own, token for token: nothing is written here but names. The test
renders the generated macro with Python's Jinja and compares it with sqlmetrics.sql() for many
calls (tests/test_dbt_package.py), and the dbt tests compare what dbt compiles.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import jinja2

from ..inputs import columns
from ..names.conventions import ANY_TRUTH_ROW, CHOICES, Conventions
from ..names.metric_names import _NAME, MAX_CUTOFF
from ..names.profiles import PROFILES
from ..names.registry import METRICS
from ..statement import dialects, plan
from ..statement.dialects import _CONTROL_ESCAPES, _SIMPLE, DIALECTS
from ..statement.plan import _NEGATABLE, WHOLE_LIST_FROM
from ..statement.templates import template_dir

ROOT_TEMPLATE = "evaluate.sql.j2"
# The directories of the files that an import expression may name (a dialect, a metric's
# template, a beyond-accuracy family); partitions=N and convention groups are not in the dbt
# package (nothing it renders imports them)
IMPORTED_DIRECTORIES = ("dialects", "metrics", "beyond")

RENDER_FILE = "dbt/macros/generated/render_statement.sql"
DATA_FILE = "dbt/macros/generated/registry.sql"

_HEADER = """\
{#- GENERATED from the templates of sql/ by `python -m sqlmetrics.api.regenerate`
    (sqlmetrics/api/dbt_package.py): do not edit. -#}
"""

# compare()'s columns that SQL computes (the dbt package's compare()), and its context's keys
# (compare.py's compare_context, with exact_sums, per_user_sql: the statement of the units'
# values, and each metric's label)
COMPARE_TEMPLATE = "compare/sql_columns.sql.j2"
COMPARE_KEYS = (
    "dialect", "within", "systems", "units", "metrics", "test", "unpaired_test", "design_gate",
    "covariate", "replicates", "seed", "digit_places", "poisson_thresholds", "bootstrap_buckets",
    "unpaired_bootstrap_buckets", "quantiles", "small_sample", "exact_sums", "per_user_sql",
)  # fmt: skip

# The context's keys (plan.build_context's, with exact_sums), set as variables of the macro
CONTEXT_KEYS = (
    "dialect", "fail_function", "recs", "truth", "groups", "unit", "order_by", "ties",
    "list_length", "threshold", "gain_kind", "gain_from_threshold", "empty", "missing",
    "ap_denominator", "short_lists", "duplicates", "truth_duplicates", "per_user", "partition",
    "metrics", "reads", "beyond", "subtopics", "exact_sums",
)  # fmt: skip


def _env() -> jinja2.Environment:
    return jinja2.Environment()


def _tokens(name: str) -> list[tuple[str, str]]:
    source = (template_dir() / name).read_text(encoding="utf-8")
    return [(kind, value) for _, kind, value in _env().lexer.tokeniter(source, name)]


def _blocks(tokens: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The tokens cut into pieces: each tag ({% %}, {{ }}, {# #}) one piece, data one piece."""
    pieces: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for kind, value in tokens:
        if kind in ("block_begin", "variable_begin", "comment_begin", "raw_begin"):
            if current:
                pieces.append(current)
            current = [(kind, value)]
        elif kind in ("block_end", "variable_end", "comment_end", "raw_end"):
            current.append((kind, value))
            pieces.append(current)
            current = []
        else:
            current.append((kind, value))
    if current:
        pieces.append(current)
    return pieces


def _significant(piece: list[tuple[str, str]]) -> list[str]:
    return [v for k, v in piece if k not in ("whitespace",) and k not in ("block_begin", "block_end")]


def _text(piece: list[tuple[str, str]]) -> str:
    return "".join(v for _, v in piece)


def _expand_includes(name: str) -> list[tuple[str, str]]:
    """The file's tokens with each {% include %} replaced by the included file's tokens."""
    out: list[tuple[str, str]] = []
    for piece in _blocks(_tokens(name)):
        words = _significant(piece)
        if piece[0][0] == "block_begin" and words[:1] == ["include"]:
            # (between empty outputs: the file's own whitespace control, as `{#-` on its first
            # line, strips nothing of the includer's text, as an include renders alone)
            target = json.loads(words[1].replace("'", '"'))
            out += [("data", _NOTHING), *_expand_includes(target), ("data", _NOTHING)]
        else:
            out += piece
    return out


_NOTHING = "{{ '' }}"


def _includes(name: str) -> list[str]:
    """The files a template includes."""
    found = []
    for piece in _blocks(_tokens(name)):
        words = _significant(piece)
        if piece[0][0] == "block_begin" and words[:1] == ["include"]:
            found.append(json.loads(words[1].replace("'", '"')))
    return found


def _imports(tokens: list[tuple[str, str]]) -> list[str]:
    """The template names a file imports (an expression: all the files it may name)."""
    found = []
    for piece in _blocks(tokens):
        words = _significant(piece)
        if piece[0][0] == "block_begin" and words[:1] in (["import"], ["from"]):
            expression = " ".join(words[1 : words.index("as" if words[0] == "import" else "import")])
            found.append(expression)
    return found


def _files(root_template: str = ROOT_TEMPLATE) -> list[str]:
    """Every file the root template may import, in an order where each comes after those it
    imports (its module-level code reads them), the root last. (evaluate.sql.j2: every
    dialect, metric and beyond family first; another root: what it imports.)"""
    root = template_dir()
    every = sorted(str(p.relative_to(root)).replace("\\", "/") for p in root.rglob("*.sql.j2"))
    # (a file that is included, as beyond/inputs.sql.j2, is text in place, never a module)
    included = {target for name in every for target in _includes(name)}
    names = [n for n in every if n.split("/")[0] in IMPORTED_DIRECTORIES and n not in included]
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for expression in _imports(_expand_includes(name)):
            for target in _targets(expression, names):
                visit(target)
        order.append(name)

    if root_template == ROOT_TEMPLATE:
        for name in names:
            visit(name)
    visit(root_template)
    return order


def _targets(expression: str, candidates: list[str]) -> list[str]:
    """The files an import expression can name: a literal, or one of the dialects, the beyond
    families or the metrics."""
    if expression.startswith("'") and expression.endswith("'") and "~" not in expression:
        return [expression[1:-1]]
    for directory in ("dialects/", "beyond/"):
        if directory in expression:
            return [n for n in candidates if n.startswith(directory)]
    return [n for n in candidates if n.startswith("metrics/")]  # (m.template)


def _top_level(tokens: list[tuple[str, str]]) -> tuple[list[str], list[str], list[str]]:
    """A file's top-level macro names, module-level variable names and import aliases."""
    macros, variables, aliases = [], [], []
    depth = 0
    for piece in _blocks(tokens):
        if piece[0][0] != "block_begin":
            continue
        words = _significant(piece)
        if not words:
            continue
        if words[0] in ("macro", "call"):
            if depth == 0 and words[0] == "macro":
                macros.append(words[1])
            depth += 1
        elif words[0] in ("endmacro", "endcall"):
            depth -= 1
        elif depth == 0 and words[0] == "set":
            variables.append(words[1])
        elif words[0] == "import":
            aliases.append(words[words.index("as") + 1])
        elif words[0] == "from":
            after = words[words.index("import") + 1 :]
            aliases += [w for w in after if w not in _IMPORT_WORDS]
    return macros, variables, aliases


_IMPORT_WORDS = (",", "with", "without", "context")


def _rename(tokens: list[tuple[str, str]], names: dict[str, str]) -> list[tuple[str, str]]:
    """Every name token in `names` that is no attribute (after a '.') and no keyword argument
    renamed; a keyword argument of a renamed name would be ambiguous, so it is refused."""
    out = []
    previous = ""
    for i, (kind, value) in enumerate(tokens):
        if kind == "name" and value in names and previous != ".":
            following = next((v for k, v in tokens[i + 1 :] if k != "whitespace"), "")
            if following == "=" and previous in ("(", ","):
                raise ValueError(f"{value!r} is a keyword argument and a renamed name")
            value = names[value]
        out.append((kind, value))
        if kind not in ("whitespace",):
            previous = value
    return out


def _convert_imports(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """{% import X as a %} -> {% set a = _m[X] %}; {% from X import b %} -> {% set b = _m[X].b %}."""
    out: list[tuple[str, str]] = []
    for piece in _blocks(tokens):
        words = _significant(piece)
        if piece[0][0] == "block_begin" and words[:1] == ["import"]:
            expression = " ".join(words[1 : words.index("as")])
            alias = words[words.index("as") + 1]
            out.append(("data", f"{piece[0][1]} set {alias} = _m[{expression}] {piece[-1][1]}"))
        elif piece[0][0] == "block_begin" and words[:1] == ["from"]:
            expression = " ".join(words[1 : words.index("import")])
            after = [w for w in words[words.index("import") + 1 :] if w not in _IMPORT_WORDS]
            sets = "".join(f"{{%- set {a} = _m[{expression}].{a.split('__', 1)[-1]} -%}}" for a in after)
            out.append(("data", sets))
        else:
            out += piece
    return out


def _alias(name: str) -> str:
    """dbt's Jinja renames every macro it parses to dbt_macro__<name>: the name given back."""
    return f"{{%- if dbt_macro__{name} is defined -%}}{{%- set {name} = dbt_macro__{name} -%}}{{%- endif -%}}"


def _with_aliases(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each macro defined in `tokens` (at any depth: an included file's macros are defined
    inside the includer's) followed, in the same scope, by its _alias()."""
    out: list[tuple[str, str]] = []
    names: list[str] = []
    for piece in _blocks(tokens):
        out += piece
        words = _significant(piece) if piece[0][0] == "block_begin" else []
        if words[:1] == ["macro"]:
            names.append(words[1])
        elif words[:1] == ["call"]:
            names.append("")
        elif words[:1] in (["endmacro"], ["endcall"]):
            name = names.pop()
            if name:
                out.append(("data", _alias(name)))
    return out


def _split(tokens: list[tuple[str, str]]) -> tuple[str, str]:
    """A non-root file's macros (their text) and its module-level statements (sets, imports:
    their text); its other top-level text is output an import discards."""
    macros, module = [], []
    depth = 0
    pieces = _blocks(tokens)
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        words = _significant(piece) if piece[0][0] == "block_begin" else []
        if words[:1] == ["macro"] or (depth and True):
            if words[:1] in (["macro"], ["call"]):
                depth += 1
            elif words[:1] in (["endmacro"], ["endcall"]):
                depth -= 1
            macros.append(_text(piece))
        elif words[:1] in (["for"], ["set"]) and "=" not in words:
            # {% set x %}...{% endset %}, {% for %}...{% endfor %} (a module-level loop: its sets)
            end = "endset" if words[0] == "set" else "endfor"
            j = i
            while not (pieces[j][0][0] == "block_begin" and _significant(pieces[j])[:1] == [end]):
                module.append(_text(pieces[j]))
                j += 1
            module.append(_text(pieces[j]))
            i = j
        elif words[:1] == ["set"]:
            module.append(_text(piece))
        elif piece[0][0] == "data" and "dbt_macro__" in _text(piece):
            macros.append(_text(piece))
        elif piece[0][0] == "data" and "_m[" in _text(piece):
            module.append(_text(piece))
        i += 1
    return "".join(macros), "".join(module)


def _quoting_macro(macro: str, quote_of) -> str:
    """A Jinja macro `macro(text, dialect)` that quotes as dialects.py does: quote_of(d) is the
    quote character and the replacements of each dialect."""
    lines = [f"{{%- macro {macro}(text, dialect) -%}}"]
    for i, (name, d) in enumerate(DIALECTS.items()):
        q, table = quote_of(d)
        expression = "text" + "".join(f".replace({a!r}, {b!r})" for a, b in table.items())
        keyword = "if" if i == 0 else "elif"
        lines.append(f"{{%- {keyword} dialect == {name!r} -%}}{q}{{{{ {expression} }}}}{q}")
    lines.append("{%- endif -%}")
    lines.append("{%- endmacro -%}")
    return "\n".join(lines)


def _string_quoting(d) -> tuple[str, dict[str, str]]:
    """Dialect.quote_string's replacements."""
    if d.escaped_names:
        return "'", {"\\": "\\\\", "'": "\\'", **_CONTROL_ESCAPES}
    if d.backslash_escapes:
        return "'", {"\\": "\\\\", "'": "\\'"}
    return "'", {"'": "''"}


def _name_quoting(d) -> tuple[str, dict[str, str]]:
    """Dialect.quote_identifier's replacements."""
    q = d.identifier_quote
    if d.escaped_names:
        return q, {"\\": "\\\\", q: "\\" + q, **_CONTROL_ESCAPES}
    return q, {q: q + q}


def _literal_macro() -> str:
    """literal(text): the dialect's quote_string, as the templates call it."""
    return (
        _quoting_macro("_quote_string", _string_quoting)
        + "\n{%- macro literal(text) -%}{{ _quote_string(text, dialect) }}{%- endmacro -%}"
    )


_SUM_TERMS = """\
{#- exact_sums.SumTerms: the terms collected between open() and close(). (A list's `in` and
    index() per call, where SumTerms looks up a dict: measured on 2026-11-27, the generated
    template renders 498 metrics in 0.13 s with it and with a dict alike, each aggregate's
    terms being few.) -#}
{%- set _st_stack = [] -%}
{%- macro _st_open() -%}{%- if _st_stack.append([]) -%}{%- endif -%}{%- endmacro -%}
{%- macro _st_collecting() -%}{{ 'yes' if _st_stack else '' }}{%- endmacro -%}
{%- macro _st_column(term, bound) -%}
{%- if (term, bound) not in _st_stack[-1] -%}
{%- if _st_stack[-1].append((term, bound)) -%}{%- endif -%}
{%- endif -%}
{{- _st_stack[-1].index((term, bound)) -}}
{%- endmacro -%}
{%- set sum_terms = namespace(open=_st_open, collecting=_st_collecting, column=_st_column,
                              close=_st_stack.pop) -%}
"""


def render_macro(root_template: str = ROOT_TEMPLATE, macro: str = "render_statement",
                 keys: tuple[str, ...] = CONTEXT_KEYS) -> str:
    """The dbt macro `render_statement(ctx)`: evaluate.sql.j2 and everything it renders (or
    another root template, as `macro`, with the context `keys`)."""
    files = _files(root_template)
    parts = [_HEADER, f"{{% macro {macro}(ctx) -%}}"]
    parts += [f"{{%- set {key} = ctx[{key!r}] -%}}" for key in keys]
    prelude = _literal_macro() + "\n" + _SUM_TERMS
    prelude_tokens = [(k, v) for _, k, v in _env().lexer.tokeniter(prelude, "prelude")]
    parts.append("".join(v for _, v in _with_aliases(prelude_tokens)))
    modules = []
    for n, name in enumerate(files):
        tokens = _with_aliases(_expand_includes(name))
        if name == root_template:
            root = _convert_imports(tokens)
            continue
        macros, variables, aliases = _top_level(tokens)
        names = {x: f"t{n}__{x}" for x in [*macros, *variables, *aliases]}
        renamed = _with_aliases(_convert_imports(_rename(_expand_includes(name), names)))
        macro_text, module_text = _split(renamed)
        parts.append(f"{{#- {name} -#}}")
        parts.append(macro_text)
        members = ", ".join(f"{x!r}: {names[x]}" for x in [*macros, *variables])
        modules.append((name, module_text, members))
    parts.append("{%- set _m = {} -%}")
    for name, module_text, members in modules:
        parts.append(module_text)
        parts.append(f"{{%- if _m.update({{{name!r}: namespace({{{members}}})}}) -%}}{{%- endif -%}}")
    parts.append(f"{{#- {root_template} -#}}")
    parts.append("".join(v for _, v in root))
    parts.append("{%- endmacro %}\n")
    return "\n".join(parts)


def data_macro() -> str:
    """The dbt macro `_registry()`: the metric registry, the type names and the dialects, as
    data (the dbt layer's plan reads them, as plan.py reads registry.py and dialects.py)."""
    metrics = {
        name: {
            "name": m.name,
            "template": m.template,
            "formula": m.formula,
            "needs_cutoff": m.needs_cutoff,
            "tie_averaged": m.tie_averaged,
            "macro": m.macro,
            "parameter": m.parameter,
            "aggregate": m.aggregate,
            "bound": m.bound,
            "reads": list(m.reads),
            "whole_list_reads": list(m.whole_list_reads),
            "short_list_reads": list(m.short_list_reads),
            "beyond": m.beyond,
            "needs": list(m.needs),
            "uses_lists": m.uses_lists,
            "per_user": m.per_user,
        }
        for name, m in METRICS.items()
    }
    dialect_data = {
        name: {
            "quote": d.identifier_quote,
            "escaped_names": d.escaped_names,
            "dotted_names": d.dotted_names,
        }
        for name, d in DIALECTS.items()
    }
    data = {
        "metrics": metrics,
        "types": _SIMPLE,
        "dialects": dialect_data,
        "choices": CHOICES,
        "negatable": _NEGATABLE,
        "max_cutoff": MAX_CUTOFF,
        "whole_list_from": WHOLE_LIST_FROM,
        "defaults": dataclasses.asdict(Conventions()),
        "any_truth_row": ANY_TRUTH_ROW,
        # the profiles whose conventions are the same for every metric
        "profiles": {n: p.conventions for n, p in PROFILES.items() if p.per_metric is None},
        "patterns": {
            "name": _NAME.pattern,
            "integer": columns._INTEGER.pattern,
            "float": columns._FLOAT.pattern,
            "decimal": columns._DECIMAL.pattern,
            "vector": plan._VECTOR.pattern,
            "type_decimal": dialects._DECIMAL.pattern,
            "sized_text": dialects._SIZED_TEXT.pattern,
        },
    }
    return (
        _HEADER
        + "{% macro _registry() -%}\n{{ return(fromjson("
        + repr(json.dumps(data, sort_keys=True))
        + ")) }}\n{%- endmacro %}\n\n"
        + "{#- dialects.py's quoting of names and of text -#}\n"
        + _quoting_macro("quote_identifier", _name_quoting).replace("{%- macro", "{% macro", 1)
        + "\n\n"
        + _quoting_macro("quote_string", _string_quoting).replace("{%- macro", "{% macro", 1)
        + "\n"
    )


def _jinja_string(text: str) -> str:
    """`text` as a Jinja string literal in which no tag can be seen: dbt reads a macro file's
    blocks before Jinja parses it, and refuses a {% macro %} inside another, so every brace,
    percent and hash sign (and the quote, backslash and line break) is an escape that Jinja's
    string literal turns back into the character."""
    safe = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,;:()[]=<>+-*/|!?&^~@$`\"")
    out = []
    for ch in text:
        if ch in safe:
            out.append(ch)
        elif ord(ch) < 256:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 65536 else f"\\U{ord(ch):08x}")
    return "'" + "".join(out) + "'"


def template_macros() -> str:
    """The dbt macros that hold the statement's template as text (rendered by dbt's render())
    and that put a context in front of it."""
    prefix_open = _jinja_string("{%- set ctx = fromjson('")
    prefix_close = _jinja_string("') -%}")
    backslash, quote = _jinja_string("\\"), _jinja_string("'")
    escaped = _jinja_string("\\\\"), _jinja_string("\\'")
    return (
        _HEADER
        + "{#- The templates of sql/ as ONE template (the macro render_statement(ctx), then its\n"
        + "    call), as a string: see sqlmetrics/api/dbt_package.py. -#}\n"
        + "{% macro statement_template() -%}\n{{ return("
        + _jinja_string(render_macro() + _alias("render_statement") + "{{ render_statement(ctx) }}")
        + ") }}\n{%- endmacro %}\n\n"
        + "{#- compare()'s statement, with the columns SQL computes, as a string: the same way -#}\n"
        + "{% macro compare_template() -%}\n{{ return("
        + _jinja_string(
            render_macro(COMPARE_TEMPLATE, "render_compare", COMPARE_KEYS)
            + _alias("render_compare")
            + "{{ render_compare(ctx) }}"
        )
        + ") }}\n{%- endmacro %}\n\n"
        + "{#- The context (JSON) as the template's first statement -#}\n"
        + "{% macro context_prefix(ctx_json) -%}\n{{ return("
        + f"{prefix_open} ~ ctx_json.replace({backslash}, {escaped[0]})"
        + f".replace({quote}, {escaped[1]}) ~ {prefix_close}"
        + ") }}\n{%- endmacro %}\n"
    )


def generated_files() -> dict[str, str]:
    """The dbt package's generated files, by path relative to the repository's root."""
    return {RENDER_FILE: template_macros(), DATA_FILE: data_macro()}


def repository_root() -> Path:
    return Path(__file__).resolve().parent.parent.parent
