"""The HTML report: one self-contained page (inline CSS, SVG and a few lines of script; a
Content-Security-Policy forbids loading anything), readable offline and attachable to an email.

For each metric: a line chart over the periods, one line per segment (with its confidence band
when the report has a [compare] section); metric@k curves for the latest period; with [compare],
each system's delta against the baseline over the periods (its interval a band around it) and a
summary of the latest period and of the whole range; with [off_policy], each estimator's
estimates over the periods (one line per segment and target, its interval a band around it)
and, with a baseline, each delta against it; the table of numbers."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..stats.unpaired import SRM_ALPHA
from .charts import line_chart, series_colors
from .comparisons import flat, stored_periods
from .config import CompareSection, OffPolicySection
from .formats import cell_text, counted, p_text
from .periods import Period
from .results_table import metric_label, wide

_STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       margin: 24px auto; max-width: 1200px; padding: 0 16px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
.meta { color: #555; margin: 0; overflow-wrap: anywhere; } .meta code { font-size: 12px; }
.verdict { font-size: 16px; margin: 12px 0 0; padding: 8px 12px; border-left: 4px solid #0072B2;
           background: #f3f8fc; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure.chart { margin: 0; border: 1px solid #ddd; border-radius: 6px; padding: 8px; background: #fff;
               max-width: 100%; box-sizing: border-box; }
figcaption { font-weight: 600; } figure.chart p.note { margin: 4px 0 0; color: #555; font-size: 12px; }
.wide { max-width: 100%; overflow-x: auto; }
.summaries { display: flex; flex-wrap: wrap; gap: 8px 24px; align-items: flex-start; }
table.summary caption { text-align: left; font-weight: 600; padding: 4px 0; }
td.p { white-space: nowrap; } td .mark { padding-left: 1px; } p.note { color: #555; font-size: 12px; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg .grid { stroke: #e6e6e6; } svg .axis { stroke: #888; }
svg text { font-size: 11px; fill: #444; stroke: none; } svg .axis-title { fill: #666; }
svg .line { stroke-width: 2; } svg .point { stroke: none; }
svg polygon.band { stroke: none; fill-opacity: 0.16; } svg line.band { stroke-width: 6; stroke-opacity: 0.3; }
svg .zero { stroke: #888; stroke-dasharray: 4 3; }
p.srm { color: #8a1c1c; font-weight: 600; }
td.significant { font-weight: 600; } th.group { text-align: center; } table.summary { margin-bottom: 12px; }
svg .legend-item { cursor: pointer; } svg .legend-item.off { opacity: 0.35; }
svg .series.off { display: none; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f6f6f6; position: sticky; top: 0; } td.text, th.text { text-align: left; }
@media (max-width: 600px) {
  body { margin: 12px auto; padding: 0 10px; } h1 { font-size: 20px; } h2 { font-size: 16px; }
  th, td { padding: 3px 5px; } table { font-size: 13px; } td.interval { min-width: 4.5em; }
  table.summary .sig { display: none; }
}
"""

# Marks each chart the browser has laid out (data-drawn="yes": every line and point has a size)
# and lets a click on a legend entry hide or show its line.
_SCRIPT = """
(function () {
  var figures = document.querySelectorAll("figure.chart");
  var drawn = 0;
  figures.forEach(function (figure) {
    var svg = figure.querySelector("svg");
    var marks = figure.querySelectorAll(".line, .point");
    var sized = svg && svg.getBoundingClientRect().width > 0 && marks.length > 0;
    marks.forEach(function (mark) {
      var box = mark.getBBox();
      if (!(box.width > 0 || box.height > 0)) { sized = false; }
    });
    figure.setAttribute("data-drawn", sized ? "yes" : "no");
    if (sized) { drawn += 1; }
    figure.querySelectorAll(".legend-item").forEach(function (item) {
      item.addEventListener("click", function () {
        var name = item.getAttribute("data-series");
        item.classList.toggle("off");
        figure.querySelectorAll(".series").forEach(function (series) {
          if (series.getAttribute("data-series") === name) { series.classList.toggle("off"); }
        });
      });
    });
  });
  document.body.setAttribute("data-charts", String(figures.length));
  document.body.setAttribute("data-charts-drawn", String(drawn));
})();
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _segment_name(segment: dict[str, str | None]) -> str:
    if not segment:
        return "all"
    return ", ".join(f"{k}={v}" for k, v in segment.items())


def _figure(kind: str, metric: str, caption: str, svg: str, note: str = "") -> str:
    """A chart in its frame: its title above, and below it what its bands are (note)."""
    below = f'<p class="note">{escape(note)}</p>' if note else ""
    return (
        f'<figure class="chart" data-kind="{kind}" data-metric="{escape(metric)}">'
        f"<figcaption>{escape(caption)}</figcaption>{svg}{below}</figure>"
    )


def _history_name(row: dict) -> str:
    return _segment_name(dict(row["segment"]))


def _delta_name(row: dict) -> str:
    return _segment_name({**dict(row["segment"]), **dict(row["system"])})


def history_charts(
    rows: pa.Table, metrics: list[str], colors: dict[str, str] | None = None, confidence: float | None = None
) -> list[str]:
    """One chart per metric over the stored periods, one line per segment, each with its
    confidence band where the rows have one (ci_low, ci_high: the t interval of the mean at
    the [compare] section's confidence), captioned below the chart."""
    share = f"{confidence:.0%} " if confidence is not None else ""
    return _over_periods(
        rows.to_pylist(), metrics, "history", _history_name, "value", lambda metric: f"{metric} by period",
        colors=colors, band_note=f"Shaded: each mean's {share}confidence interval (t, over the users).",
    )  # fmt: skip


def delta_charts(
    comparisons: pa.Table, metrics: list[str], baseline: str, confidence: float,
    colors: dict[str, str] | None = None, test: str = "t",
) -> list[str]:  # fmt: skip
    """One chart per metric over the stored periods: each system's delta against the baseline
    (one line per segment and system), its interval a band around it, and the line at 0."""
    return _over_periods(
        comparisons.to_pylist(), metrics, "delta", _delta_name, "delta",
        lambda metric: f"{metric}: delta against {baseline}, {confidence:.0%} interval", zero=True,
        colors=colors, band_note=f"Shaded: the {confidence:.0%} interval of each delta ({test} test); "
        f"dashed: no difference from {baseline}.",
    )  # fmt: skip


def _over_periods(
    rows: list[dict], metrics: list[str], kind: str, name, value: str, caption, zero: bool = False,
    colors: dict[str, str] | None = None, band_note: str = "",
) -> list[str]:  # fmt: skip
    periods = sorted({(r["period_start"], r["period_end"]) for r in rows})
    index = {start: i for i, (start, _) in enumerate(periods)}
    labels = [Period(s, e).label for s, e in periods]
    data: dict[str, dict[str, list[float | None]]] = {m: {} for m in metrics}
    bands: dict[str, dict[str, list]] = {m: {} for m in metrics}
    for r in rows:
        label = metric_label(r["metric"], r["k"])
        series = data.setdefault(label, {}).setdefault(name(r), [None] * len(periods))
        band = bands.setdefault(label, {}).setdefault(name(r), [None] * len(periods))
        series[index[r["period_start"]]] = r[value]
        band[index[r["period_start"]]] = (r.get("ci_low"), r.get("ci_high"))
    figures = []
    for metric, series in data.items():
        if series:
            svg = line_chart(
                metric, list(range(len(periods))), labels, dict(sorted(series.items())), "period",
                bands=bands[metric], zero=zero, colors=colors,
            )  # fmt: skip
            banded = any(b and None not in b for bs in bands[metric].values() for b in bs)
            figures.append(_figure(kind, metric, caption(metric), svg, band_note if banded else ""))
    return figures


def summary_table(
    latest: pa.Table, pooled: pa.Table | None, keys: list[str], alpha: float, ranges: tuple[str, str]
) -> str:
    """Per segment, system and metric: delta, interval, p (adjusted) and whether significant
    (p_adjusted < alpha), for the latest period (stored rows, flat()) and for the whole range
    (compare() over all its users pooled): a table per range, side by side on a wide screen and
    one above the other on a phone (no row is wider than 390 px). The whole range's rows follow
    the latest period's order; without them (pooled None) its caption says why."""
    def key(r: dict) -> tuple:
        return (*[None if r.get(k) is None else str(r[k]) for k in keys], r["metric"])

    order = [key(r) for r in latest.to_pylist()]
    range_rows = {key(r): r for r in (pooled.to_pylist() if pooled is not None else [])}
    tables = [
        _summary_part("latest", ranges[0], latest.to_pylist(), keys, alpha),
        _summary_part("whole", ranges[1], [range_rows[k] for k in order if k in range_rows], keys, alpha),
    ]
    note = f'<p class="note">* significant: p (adjusted) &lt; {alpha:g}</p>'
    return f'<div class="summaries">{"".join(tables)}</div>{note}'


def _summary_part(name: str, caption: str, rows: list[dict], keys: list[str], alpha: float) -> str:
    """One range's table of the summary: its caption, then a row per (segment, system, metric)."""
    head = "".join(f'<th class="text">{escape(k)}</th>' for k in [*keys, "metric"])
    head += '<th>delta</th><th>interval</th><th>p (adj.)</th><th class="sig">significant</th>'
    body = []
    for r in rows:
        low, high = r["ci_low"], r["ci_high"]
        interval = "" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"
        p = r["p_adjusted"]
        yes = p is not None and p < alpha
        labels = "".join(f'<td class="text">{escape(cell_text(r.get(k), 4))}</td>' for k in [*keys, "metric"])
        mark = '<span class="mark">*</span>' if yes else ""
        body.append(
            f'<tr>{labels}<td class="num{" significant" if yes else ""}">{escape(cell_text(r["delta"], 4))}'
            f'{mark}</td><td class="num interval">{interval}</td><td class="num p">{escape(p_text(p))}</td>'
            f'<td class="text sig{" significant" if yes else ""}">{"yes" if yes else "no"}</td></tr>'
        )
    return (
        f'<table class="summary" data-range="{name}"><caption>{escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


def verdict(table: pa.Table, keys: list[str], alpha: float, baseline: str, where: str) -> str:
    """One sentence: which systems differ from the baseline (p_adjusted < alpha), on which
    metrics and in which direction, from compare()'s rows (or flat() stored ones) of `where`.

    >>> t = pa.table({"model": ["B", "B", "C"], "metric": ["ndcg@10", "recall@20", "ndcg@10"],
    ...               "delta": [0.1, -0.02, 0.01], "p_adjusted": [0.001, 0.01, 0.4]})
    >>> print(verdict(t, ["model"], 0.05, "A", "latest period, 2026-11-04"))  # doctest: +NORMALIZE_WHITESPACE
    Against A, latest period, 2026-11-04: model=B higher on ndcg@10, lower on recall@20;
    model=C no different (p adjusted < 0.05).
    """
    found: dict[str, dict[str, list[str]]] = {}
    for r in table.to_pylist():
        moves = found.setdefault(_segment_name({k: r.get(k) for k in keys}), {"higher": [], "lower": []})
        p, delta = r.get("p_adjusted"), r.get("delta")
        if p is not None and p < alpha and delta:
            moves["higher" if delta > 0 else "lower"].append(r["metric"])
    parts = []
    for system, moves in found.items():
        said = [f"{way} on {', '.join(names)}" for way, names in moves.items() if names]
        parts.append(f"{system} {', '.join(said) if said else 'no different'}")
    return f"Against {baseline}, {where}: {'; '.join(parts)} (p adjusted < {alpha:g})."


def curve_charts(
    curves: dict[str, pa.Table], segments: int, colors: dict[str, str] | None = None
) -> list[str]:
    """One chart per metric family: value against k, one line per segment."""
    figures = []
    for name, table in curves.items():
        cutoffs = [c for c in table.column_names if c.startswith(f"{name}@")]
        ks = [int(c.split("@", 1)[1]) for c in cutoffs]
        keys = table.column_names[:segments]
        series = {}
        for row in table.to_pylist():
            series[_segment_name({k: row[k] for k in keys})] = [row[c] for c in cutoffs]
        if series:
            svg = line_chart(
                f"{name}@k", ks, [str(k) for k in ks], dict(sorted(series.items())), "k", colors=colors
            )
            figures.append(_figure("curve", name, f"{name}@k", svg))
    return figures


def numbers_table(rows: pa.Table, metrics: list[str]) -> str:
    """The stored numbers, one row per (period, segment)."""
    table = wide(rows, metrics)
    numeric = [pa.types.is_integer(t) or pa.types.is_floating(t) for t in table.schema.types]
    head = "".join(
        f'<th class="{"num" if num else "text"}">{escape(n)}</th>'
        for n, num in zip(table.column_names, numeric, strict=True)
    )
    body = []
    for row in table.to_pylist():
        cells = "".join(
            f'<td class="{"num" if num else "text"}">{escape(cell_text(v, 4))}</td>'
            for v, num in zip(row.values(), numeric, strict=True)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="wide"><table class="numbers"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(body)}</tbody></table></div>'
    )


@dataclass(frozen=True)
class Comparison:
    """What the page shows of a [compare] section: the stored comparisons (comparisons.read),
    compare() over all the users of their periods pooled (None: not computed), the section."""

    rows: pa.Table
    pooled: pa.Table | None
    section: CompareSection
    why_not_pooled: str = ""  # why pooled is None, shown in its place


def _comparison_parts(
    comparison: Comparison, metrics: list[str], colors: dict[str, str]
) -> tuple[str, list[str]]:
    """The verdict for the top of the page, and the section of the comparisons: a summary of
    the latest period and of the whole range, and the deltas over the periods."""
    section = comparison.section
    baseline = ", ".join(map(str, section.baseline))
    periods = stored_periods(comparison.rows)
    rows = comparison.rows
    latest = flat(rows.filter(pc.equal(rows["period_start"], periods[-1].start)), metrics)
    keys = [*section.within, *section.systems]
    span = f"{periods[0].label} to {periods[-1].label}"
    ranges = (
        f"latest period, {periods[-1].label}",
        f"whole range, {span} ({counted(len(periods), 'period')}, all users pooled)"
        + (f": {comparison.why_not_pooled}" if comparison.pooled is None else ""),
    )
    alpha = 1 - section.confidence
    if comparison.pooled is not None:
        sentence = verdict(comparison.pooled, keys, alpha, baseline, f"{span}, all users pooled")
    else:
        sentence = verdict(latest, keys, alpha, baseline, ranges[0])
    correction = section.correction or "no correction"
    stored = rows.to_pylist()
    designs = sorted({r["design"] for r in stored if r.get("design")}) or ["paired"]
    return f'<p class="verdict">{escape(sentence)}</p>', [
        f'<section id="comparisons"><h2>Against {escape(baseline)}: {escape(section.test)} test '
        f"({escape(', '.join(designs))}), {section.confidence:.0%} intervals, p adjusted "
        f"({escape(correction)})</h2>",
        *_srm_flags(stored),
        summary_table(latest, comparison.pooled, keys, alpha, ranges),
        '<div class="charts">',
        *delta_charts(comparison.rows, metrics, baseline, section.confidence, colors, section.test),
        "</div></section>",
    ]


@dataclass(frozen=True)
class OffPolicy:
    """What the page shows of an [off_policy] section: the stored estimates (off_policy.read),
    off_policy() over all the slates of their periods pooled (runner.off_policy_periods; None:
    not computed), and why not."""

    rows: pa.Table
    section: OffPolicySection
    pooled: pa.Table | None = None
    why_not_pooled: str = ""


def off_policy_range_table(estimates: OffPolicy) -> str:
    """The whole range's estimates (all the slates of the stored periods pooled): a row per
    (segment, target, estimator) with its value, interval, units, ess and support, and with a
    baseline its delta, interval and p; in a box of its own that scrolls sideways on a phone."""
    section, stored = estimates.section, estimates.rows.to_pylist()
    periods = sorted({(r["period_start"], r["period_end"]) for r in stored})
    span = f"{Period(*periods[0]).label} to {Period(*periods[-1]).label}" if periods else "no period"
    caption = f"whole range, {span} ({counted(len(periods), 'period')}, all slates pooled)"
    if estimates.pooled is None:
        why = escape(estimates.why_not_pooled)
        return f'<p class="note" data-range="off-policy-whole">{escape(caption)}: {why}</p>'
    rows = estimates.pooled.to_pylist()
    by = list(section.keywords.get("by") or [])
    compared = any(r["delta"] is not None for r in rows)
    names = ["estimate of", "estimator", "value", "interval", "units", "ess", "support"]
    names += ["baseline", "delta", "interval", "p"] if compared else []
    head = "".join(f'<th class="{"text" if i < 2 or n == "baseline" else "num"}">{escape(n)}</th>'
                   for i, n in enumerate(names))  # fmt: skip

    def interval(low: float | None, high: float | None) -> str:
        return "" if low is None or high is None else f"[{low:.4f}, {high:.4f}]"

    body = []
    for r in rows:
        named = {**{c: r[c] for c in by}, **{c: r[f"_t{i}"] for i, c in enumerate(section.target_by)}}
        cells = [_segment_name(named), r["estimator"], cell_text(r["value"], 4),
                 interval(r["ci_low"], r["ci_high"]), cell_text(r["units"], 4), cell_text(r["ess"], 4),
                 cell_text(r["support"], 4)]  # fmt: skip
        if compared:
            cells += [cell_text(r["baseline"], 4), cell_text(r["delta"], 4),
                      interval(r["delta_ci_low"], r["delta_ci_high"]), p_text(r["p_value"])]  # fmt: skip
        body.append("<tr>" + "".join(f'<td class="{"text" if i < 2 or names[i] == "baseline" else "num"}">'
                                     f"{escape(c)}</td>" for i, c in enumerate(cells)) + "</tr>")  # fmt: skip
    return (
        f'<div class="wide"><table class="summary" data-range="off-policy-whole"><caption>{escape(caption)}'
        f"</caption><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _estimate_name(row: dict) -> str:
    return _segment_name({**dict(row["segment"]), **dict(row["target"])})


def off_policy_charts(estimates: OffPolicy, colors: dict[str, str] | None = None) -> list[str]:
    """One chart per estimator over the stored periods: each target's estimate (one line per
    segment and target), its interval a band around it; with a baseline, one chart per
    estimator of each delta against it, its interval a band, and the line at 0."""
    section, stored = estimates.section, estimates.rows.to_pylist()
    order = [*section.estimators, *sorted({r["estimator"] for r in stored} - set(section.estimators))]
    level = f"{section.keywords.get('confidence', 0.95):.0%}"
    test = section.keywords.get("test", "t")
    as_metric = [{**r, "metric": r["estimator"], "k": None} for r in stored]
    figures = _over_periods(
        as_metric, order, "off-policy", _estimate_name, "value", lambda e: f"{e}: estimated value by period",
        colors=colors, band_note=f"Shaded: each estimate's {level} interval ({test}).",
    )  # fmt: skip
    compared = [{**r, "ci_low": r["delta_ci_low"], "ci_high": r["delta_ci_high"]}
                for r in as_metric if r["delta"] is not None]  # fmt: skip
    baselines = sorted({r["baseline"] for r in compared})
    if compared:
        against = ", ".join(baselines)
        figures += _over_periods(
            compared, [e for e in order if e not in baselines], "off-policy-delta", _estimate_name, "delta",
            lambda e: f"{e}: delta against {against}, {level} interval", zero=True, colors=colors,
            band_note=f"Shaded: the {level} interval of each delta (paired over the units, {test}); "
            f"dashed: no difference from {against}.",
        )  # fmt: skip
    return figures


def _off_policy_part(estimates: OffPolicy, colors: dict[str, str]) -> list[str]:
    section = estimates.section
    if section.target is None:  # a stochastic target: its propensities, columns of the impressions
        what = "the stochastic target " + ", ".join(
            f"{k}={v}" for k, v in section.keywords.items() if k.startswith("target_"))
    else:
        by = f" by {', '.join(section.target_by)}" if section.target_by else ""
        what = f"target {section.target}{by}"
    return [
        f'<section id="off-policy"><h2>Off-policy estimates of {escape(what)} from '
        f"{escape(section.impressions)}</h2>",
        off_policy_range_table(estimates),
        '<div class="charts">', *off_policy_charts(estimates, colors), "</div></section>",
    ]


def _colors(
    rows: pa.Table, comparison: Comparison | None, curves: dict[str, pa.Table], segments: int,
    estimates: OffPolicy | None = None,
) -> dict[str, str]:  # fmt: skip
    """One colour per line name over the page: the segments (models) of the results first."""
    names = sorted({_history_name(r) for r in rows.select(["segment"]).to_pylist()})
    if comparison is not None:
        names += sorted({_delta_name(r) for r in comparison.rows.select(["segment", "system"]).to_pylist()})
    if estimates is not None:
        names += sorted({_estimate_name(r) for r in estimates.rows.select(["segment", "target"]).to_pylist()})
    for table in curves.values():
        keys = table.column_names[:segments]
        names += sorted({_segment_name({k: r[k] for k in keys}) for r in table.select(keys).to_pylist()})
    return series_colors(names)


def _srm_flags(stored: list[dict]) -> list[str]:
    """A warning naming the periods whose sample-ratio check fails (srm_p_value < SRM_ALPHA)."""
    flagged = sorted(
        {Period(r["period_start"], r["period_end"]) for r in stored
         if r.get("srm_p_value") is not None and r["srm_p_value"] < SRM_ALPHA}
    )  # fmt: skip
    if not flagged:
        return []
    return [
        f'<p class="srm">Sample-ratio mismatch (srm_p_value &lt; {SRM_ALPHA:g}) in '
        f"{escape(', '.join(p.label for p in flagged))}: the arms' units are not in the expected "
        "split; check the assignment before reading these comparisons.</p>"
    ]


def render_page(
    report: str,
    rows: pa.Table,
    metrics: list[str],
    curves: dict[str, pa.Table],
    curve_period: Period | None,
    segments: int,
    details: dict[str, str] | None = None,
    comparison: Comparison | None = None,
    estimates: OffPolicy | None = None,
) -> str:
    """The whole page as a string. rows: the report's stored rows (results_table.read);
    metrics: their labels in display order; curves: runner.curves() of curve_period;
    segments: how many segment columns the curve tables start with; comparison: the stored
    comparisons and the whole range's, with a [compare] section; estimates: the stored
    off-policy estimates and the whole range's, with an [off_policy] section.

    >>> import pyarrow as pa
    >>> from datetime import date
    >>> rows = pa.table({"period_start": [date(2026, 11, 1)], "period_end": [date(2026, 11, 2)],
    ...     "segment": pa.array([[("model", "A")]], pa.map_(pa.string(), pa.string())),
    ...     "metric": ["ndcg"], "k": [10], "value": [0.3], "users": [5]})
    >>> page = render_page("daily", rows, ["ndcg@10"], {}, None, 1)
    >>> page.startswith("<!DOCTYPE html>"), page.count('<figure class="chart"')
    (True, 1)
    """
    starts = sorted({r["period_start"] for r in rows.to_pylist()})
    span = f"{starts[0]} to {starts[-1]} ({counted(len(starts), 'period')})" if starts else "no periods yet"
    written = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    facts = {"periods": span, **(details or {}), "written": written}
    meta = " · ".join(f"{escape(k)} <code>{escape(v)}</code>" for k, v in facts.items())
    compared = comparison is not None and comparison.rows.num_rows > 0
    estimated = estimates if estimates is not None and estimates.rows.num_rows else None
    colors = _colors(rows, comparison if compared else None, curves, segments, estimated)
    confidence = comparison.section.confidence if comparison is not None else None
    history = history_charts(rows, metrics, colors, confidence)
    curve_figs = curve_charts(curves, segments, colors)
    top, compared_parts = _comparison_parts(comparison, metrics, colors) if compared else ("", [])
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(report)}: sqlmetrics report</title>",
        f"<style>{_STYLE}</style></head><body>",
        f'<header><h1>{escape(report)}</h1><p class="meta">{meta}</p>{top}</header>',
        '<section id="history"><h2>Each metric over the periods</h2>',
        f'<div class="charts">{"".join(history)}</div></section>'
        if history
        else "<p>No rows yet.</p></section>",
    ]
    parts += compared_parts
    if estimated is not None:
        parts += _off_policy_part(estimated, colors)
    if curve_figs and curve_period is not None:
        parts += [
            f'<section id="curves"><h2>metric@k for the latest period, {escape(curve_period.label)}</h2>',
            f'<div class="charts">{"".join(curve_figs)}</div></section>',
        ]
    parts += [
        '<section id="numbers"><h2>Numbers</h2>',
        numbers_table(rows, metrics),
        "</section>",
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_page(path: str | Path, page: str) -> None:
    """Write the page next to its final name, then rename: a reader never sees half a page."""
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(path)
