"""Line charts as inline SVG, drawn in Python: no JavaScript library, nothing to download."""

from __future__ import annotations

import math
from html import escape

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999")

WIDTH, HEIGHT = 540, 300
LEFT, RIGHT, TOP, BOTTOM = 58, 18, 40, 44


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high].

    >>> nice_ticks(0.21, 0.38)
    [0.2, 0.25, 0.3, 0.35, 0.4]
    """
    if not high > low:
        low, high = low - 0.5, high + 0.5
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step + 1e-9) * step
    ticks = []
    value = first
    while value < high + step * 0.999:
        ticks.append(round(value, 12))
        value += step
    return ticks


def series_colors(names: list[str]) -> dict[str, str]:
    """One colour per series name for every chart of a page, in the order given (a model's line
    has the same colour over the periods, in the deltas and in the curves).

    >>> series_colors(["model=A", "model=B", "model=A"])
    {'model=A': '#0072B2', 'model=B': '#D55E00'}
    """
    colors: dict[str, str] = {}
    for name in names:
        colors.setdefault(name, PALETTE[len(colors) % len(PALETTE)])
    return colors


def _label_indexes(n: int, most: int) -> list[int]:
    """Which of n x labels to print: at most `most`, evenly spaced, the last one always.

    >>> _label_indexes(8, 6), _label_indexes(3, 6)
    ([0, 2, 4, 7], [0, 1, 2])
    """
    if n <= most:
        return list(range(n))
    every = math.ceil(n / most)
    shown = list(range(0, n, every))
    shown[-1] = n - 1  # the last label, in place of a regular one that would crowd it
    return shown


def _runs(x: list[float], bands: list) -> list[list]:
    """The runs of consecutive x whose interval has both bounds finite."""
    runs: list[list] = [[]]
    for xv, band in zip(x, bands, strict=False):
        if band and all(b is not None and math.isfinite(b) for b in band):
            runs[-1].append((xv, band))
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def line_chart(
    title: str,
    x: list[float],
    x_labels: list[str],
    series: dict[str, list[float | None]],
    x_title: str = "",
    bands: dict[str, list[tuple[float | None, float | None]]] | None = None,
    zero: bool = False,
    colors: dict[str, str] | None = None,
) -> str:
    """An SVG line chart: one line per series (None leaves a gap), a point with a tooltip per
    value, a legend whose entries hide and show their line (with the page's script). bands:
    per series, an interval (low, high) per x, drawn as a shaded band around the line (a bar
    where a value stands alone); zero: a line at 0, which the y axis then includes; colors:
    each series' colour (series_colors: the same on every chart of a page), else the palette's
    in order.

    >>> svg = line_chart("ndcg@10", [0, 1], ["d1", "d2"], {"A": [0.3, 0.35], "B": [0.4, None]},
    ...                  bands={"A": [(0.2, 0.4), (0.3, 0.4)], "B": [(0.35, 0.45), (None, None)]})
    >>> svg.count('class="point"'), svg.count('class="line"'), svg.count('class="band"')
    (3, 1, 2)
    """
    bands = bands or {}
    values = [v for vs in series.values() for v in vs if v is not None and math.isfinite(v)]
    values += [v for bs in bands.values() for b in bs for v in b if v is not None and math.isfinite(v)]
    if zero:
        values.append(0.0)
    ticks = nice_ticks(min(values), max(values)) if values else [0.0, 1.0]
    y_low, y_high = ticks[0], ticks[-1]
    x_low, x_high = (min(x), max(x)) if x else (0.0, 1.0)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(value: float) -> float:
        if x_high == x_low:
            return LEFT + plot_w / 2
        return LEFT + (value - x_low) / (x_high - x_low) * plot_w

    def py(value: float) -> float:
        return TOP + (1 - (value - y_low) / (y_high - y_low)) * plot_h

    out = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(title)}">'
    ]
    for tick in ticks:  # horizontal grid and y labels
        y = py(tick)
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:g}</text>')
    widest = max((len(label) for label in x_labels), default=1) * 6.5 + 14  # px at 11px type
    shown = _label_indexes(len(x), max(2, min(10, int(plot_w // widest))))
    for i in shown:
        xx = px(x[i])
        # the outermost labels grow inwards, so that a long one (a date) is not cut at the edge
        anchor = "middle"
        if len(x) > 1 and len(x_labels[i]) > 4:
            anchor = "start" if i == 0 else "end" if i == len(x) - 1 else "middle"
        out.append(
            f'<line class="axis" x1="{xx:.1f}" x2="{xx:.1f}" y1="{TOP + plot_h}" y2="{TOP + plot_h + 4}"/>'
        )
        out.append(
            f'<text class="tick" x="{xx:.1f}" y="{TOP + plot_h + 17}" text-anchor="{anchor}">'
            f"{escape(x_labels[i])}</text>"
        )
    out.append(
        f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + plot_h}" y2="{TOP + plot_h}"/>'
    )
    if zero:
        out.append(f'<line class="zero" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py(0):.1f}" y2="{py(0):.1f}"/>')
    if x_title:
        out.append(
            f'<text class="axis-title" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" '
            f'text-anchor="middle">{escape(x_title)}</text>'
        )
    legend_x = LEFT
    for n, (name, vs) in enumerate(series.items()):
        color = (colors or {}).get(name) or PALETTE[n % len(PALETTE)]
        out.append(f'<g class="series" data-series="{escape(name)}" stroke="{color}" fill="{color}">')
        for run_of_bands in _runs(x, bands.get(name, [])):
            upper = [f"{px(xv):.1f},{py(hi):.1f}" for xv, (_, hi) in run_of_bands]
            lower = [f"{px(xv):.1f},{py(lo):.1f}" for xv, (lo, _) in reversed(run_of_bands)]
            if len(run_of_bands) > 1:
                out.append(f'<polygon class="band" points="{" ".join(upper + lower)}"/>')
            else:  # one interval alone: a bar
                (xv, (lo, hi)), = run_of_bands
                out.append(
                    f'<line class="band" x1="{px(xv):.1f}" x2="{px(xv):.1f}" '
                    f'y1="{py(lo):.1f}" y2="{py(hi):.1f}"/>'
                )
        run: list[str] = []
        runs = []
        for xv, v in zip(x, vs, strict=True):
            if v is None or not math.isfinite(v):
                runs.append(run)
                run = []
                continue
            run.append(f"{px(xv):.1f},{py(v):.1f}")
        runs.append(run)
        for points in runs:
            if len(points) > 1:
                out.append(f'<polyline class="line" fill="none" points="{" ".join(points)}"/>')
        for xv, label, v in zip(x, x_labels, vs, strict=True):
            if v is not None and math.isfinite(v):
                out.append(
                    f'<circle class="point" cx="{px(xv):.1f}" cy="{py(v):.1f}" r="3">'
                    f"<title>{escape(name)}, {escape(label)}: {v:.4f}</title></circle>"
                )
        out.append("</g>")
        out.append(
            f'<g class="legend-item" data-series="{escape(name)}" tabindex="0">'
            f'<rect x="{legend_x}" y="12" width="12" height="12" fill="{color}"/>'
            f'<text x="{legend_x + 17}" y="22">{escape(name)}</text></g>'
        )
        legend_x += 30 + 7 * len(name)
    out.append("</svg>")
    return "".join(out)
