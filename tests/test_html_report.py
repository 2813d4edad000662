"""The HTML report: self-contained, and drawn by a real browser (Debian's headless Chromium)
with no console error."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sqlmetrics import cli

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
METRICS = ["ndcg@10", "map@10", "recall@20", "mrr@10", "hit_rate@10"]


def _require_chromium() -> str:
    if CHROMIUM:
        return CHROMIUM
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(
            "chromium is not installed; .ci/run installs Debian's chromium (apt-get install chromium)"
        )
    pytest.skip("chromium is not installed (apt-get install chromium); CI=true makes this a failure")


def load_in_chromium(
    page: Path, tmp_path: Path, width: int = 1280, *, output: str = "--dump-dom"
) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran (or, with output="--screenshot=PATH", a PNG of the
    page), and every console message the page produced; the window `width` px wide."""
    browser = _require_chromium()
    done = subprocess.run(
        [
            browser, "--headless", "--allow-file-access-from-files", "--no-sandbox", "--disable-gpu",
            "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr", "--v=0",
            "--hide-scrollbars", "--window-size=1280,2000", output, page.resolve().as_uri(),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    return done.stdout, console


@pytest.fixture(scope="module")
def report_page(tmp_path_factory) -> Path:
    import importlib.util

    folder = tmp_path_factory.mktemp("html")
    spec = importlib.util.spec_from_file_location("mw", ROOT / "warehouse_examples" / "make_warehouse.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(str(folder / "warehouse.duckdb"), users=200, days=4)
    page = folder / "report.html"
    code = cli.main(
        ["report", str(ROOT / "warehouse_examples" / "daily_report.toml"),
         "--db", str(folder / "warehouse.duckdb"), "--from", "2026-11-01", "--to", "2026-11-04",
         "--html", str(page), "--quiet"]
    )  # fmt: skip
    assert code == 0
    return page


def test_the_page_is_self_contained(report_page):
    html = report_page.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in html and "default-src 'none'" in html  # nothing may be fetched
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "<link" not in html and "@import" not in html and "url(" not in html


def test_the_page_has_a_chart_per_metric_curves_and_the_numbers(report_page):
    html = report_page.read_text()
    history = re.findall(r'<figure class="chart" data-kind="history" data-metric="([^"]+)"', html)
    curves = re.findall(r'<figure class="chart" data-kind="curve" data-metric="([^"]+)"', html)
    assert history == METRICS
    assert curves == ["ndcg", "map", "recall", "mrr", "hit_rate"]
    assert "metric@k for the latest period, 2026-11-04" in html
    # one line per segment in each chart, one point per period
    first = html.split('data-metric="ndcg@10"', 1)[1].split("</figure>", 1)[0]
    assert first.count('class="series"') == 2 and first.count('class="point"') == 8
    numbers = html.split('<table class="numbers">', 1)[1].split("</table>", 1)[0]
    assert numbers.count("<tr>") == 1 + 4 * 2
    # the means' 95% intervals (the config's [compare] section), a band around each line
    assert first.count('<polygon class="band"') == 2


def test_the_page_compares_the_models_with_intervals_and_a_summary(report_page):
    html = report_page.read_text()
    deltas = re.findall(r'<figure class="chart" data-kind="delta" data-metric="([^"]+)"', html)
    assert deltas == METRICS
    first = html.split('data-kind="delta" data-metric="ndcg@10"', 1)[1].split("</figure>", 1)[0]
    # B against A: one line of 4 days, its interval a band, and the line at 0
    assert first.count('class="series"') == 1 and first.count('class="point"') == 4
    assert first.count('<polygon class="band"') == 1 and first.count('class="zero"') == 1
    latest = html.split('<table class="summary" data-range="latest">', 1)[1].split("</table>", 1)[0]
    whole = html.split('<table class="summary" data-range="whole">', 1)[1].split("</table>", 1)[0]
    assert "<caption>latest period, 2026-11-04</caption>" in latest
    assert "<caption>whole range, 2026-11-01 to 2026-11-04 (4 periods, all users pooled)</caption>" in whole
    for summary in (latest, whole):
        assert summary.count("<tr>") == 1 + len(METRICS)  # a header row
        assert summary.count("<td") == len(METRICS) * (2 + 4)


def test_chromium_draws_every_chart_without_a_console_error(report_page, tmp_path):
    dom, console = load_in_chromium(report_page, tmp_path)
    assert console == []
    body = re.search(r"<body([^>]*)>", dom).group(1)
    charts = int(re.search(r'data-charts="(\d+)"', body).group(1))
    assert charts == 15  # 5 metrics over the periods + 5 deltas against A + 5 metric@k curves
    assert re.search(r'data-charts-drawn="(\d+)"', body).group(1) == str(charts)
    assert dom.count('data-drawn="yes"') == charts and 'data-drawn="no"' not in dom


def test_the_console_check_catches_errors(tmp_path):
    """The same check on a page that logs an error and throws: it must see both."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><body><script>console.error('deliberate');"
        "throw new Error('boom');</script></body></html>"
    )
    _, console = load_in_chromium(page, tmp_path)
    assert any("deliberate" in line for line in console)
    assert any("Uncaught Error: boom" in line for line in console)


# --- on a phone (issue 33, item 4) ------------------------------------------------------------

PHONE = 390  # px: the viewport of a common phone


def on_a_phone(page: Path, tmp_path: Path) -> Path:
    """A page that shows `page` in a frame as wide as a phone's viewport (headless Chromium's
    window is at least 500 px wide, so the frame is the viewport), and once both loaded writes
    on its body what the browser laid out there: the viewport's width, the document's scroll
    width and the right edge of the element that reaches furthest (but inside a .wide box,
    the table of every number, which scrolls sideways on its own)."""
    host = tmp_path / "phone.html"
    host.write_text(
        f"""<!DOCTYPE html><html><body style="margin:0">
<iframe id="phone" src="{page.resolve().as_uri()}" style="border:0;width:{PHONE}px;height:2000px"></iframe>
<script>
window.addEventListener("load", function () {{
  var view = document.getElementById("phone").contentWindow, doc = view.document;
  var widest = 0, what = "";
  doc.querySelectorAll("body *").forEach(function (e) {{
    if (e.parentElement.closest(".wide")) {{ return; }}  // inside a box that scrolls on its own
    var right = e.getBoundingClientRect().right;
    if (right > widest) {{ widest = right; what = e.tagName + "." + e.className; }}
  }});
  document.body.setAttribute("data-viewport", String(view.innerWidth));
  document.body.setAttribute("data-scroll-width", String(doc.documentElement.scrollWidth));
  document.body.setAttribute("data-widest", String(Math.ceil(widest)) + " " + what);
  document.body.setAttribute("data-charts-drawn", doc.body.getAttribute("data-charts-drawn"));
}});
</script></body></html>"""
    )
    return host


def test_no_horizontal_scroll_on_a_phone(report_page, tmp_path):
    dom, console = load_in_chromium(on_a_phone(report_page, tmp_path), tmp_path)
    assert console == []
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert re.search(r'data-viewport="(\d+)"', body).group(1) == str(PHONE)
    scroll = int(re.search(r'data-scroll-width="(\d+)"', body).group(1))
    widest = re.search(r'data-widest="([^"]+)"', body).group(1)
    assert scroll <= PHONE, f"the page scrolls sideways: {scroll} px wide (widest element: {widest})"
    assert int(widest.split()[0]) <= PHONE, widest  # nothing sticks out, even where it is clipped
    assert re.search(r'data-charts-drawn="(\d+)"', body).group(1) == "15"  # and every chart drawn


def _series_colors(html: str) -> dict[str, set[str]]:
    colors: dict[str, set[str]] = {}
    for name, color in re.findall(r'<g class="series" data-series="([^"]+)" stroke="([^"]+)"', html):
        colors.setdefault(name, set()).add(color)
    return colors


def test_one_colour_per_model_in_every_chart(report_page):
    html = report_page.read_text()
    colors = _series_colors(html)
    assert set(colors) == {"model=A", "model=B"}
    # B is B's colour over the periods, in the deltas against A and in the curves
    assert len(colors["model=A"]) == 1 and len(colors["model=B"]) == 1
    assert colors["model=A"] != colors["model=B"]
    # the legend shows the line's colour
    legend = dict(
        re.findall(r'<g class="legend-item" data-series="([^"]+)"[^>]*><rect [^>]*fill="([^"]+)"', html)
    )
    assert {legend["model=A"]} == colors["model=A"] and {legend["model=B"]} == colors["model=B"]


def test_a_one_line_verdict_at_the_top(report_page):
    html = report_page.read_text()
    header = html.split("<header>", 1)[1].split("</header>", 1)[0]
    found = re.findall(r'<p class="verdict">([^<]*)</p>', header)
    assert len(found) == 1 and "\n" not in found[0]
    # what it says is the whole range's table: the metrics whose p (adjusted) < 0.05, by sign
    whole = html.split('data-range="whole">', 1)[1].split("</table>", 1)[0]
    higher, lower = [], []
    for metric, delta, p in re.findall(
        r'<td class="text">B</td><td class="text">([^<]+)</td><td class="num[^"]*">([-0-9.]+)'
        r'(?:<span[^>]*>\*</span>)?</td><td class="num interval">[^<]*</td><td class="num p">([^<]+)</td>',
        whole,
    ):
        if float(p) < 0.05:
            (higher if float(delta) > 0 else lower).append(metric)
    assert higher or lower, "the example's B should differ from A somewhere"
    said = [f"higher on {', '.join(higher)}"] * bool(higher) + [f"lower on {', '.join(lower)}"] * bool(lower)
    where = "Against A, 2026-11-01 to 2026-11-04, all users pooled"
    expected = f"{where}: model=B {', '.join(said)} (p adjusted &lt; 0.05)."
    assert found[0] == expected


def test_every_band_is_captioned(report_page):
    html = report_page.read_text()
    figures = re.findall(r'<figure class="chart" data-kind="(\w+)"[^>]*>(.*?)</figure>', html, re.S)
    banded = [(kind, body) for kind, body in figures if 'class="band"' in body]
    assert len(banded) == 10  # the 5 metrics over the periods and their 5 deltas
    for kind, body in banded:
        note = re.search(r'<p class="note">([^<]+)</p>', body)
        assert note, kind
        if kind == "history":
            assert note.group(1) == "Shaded: each mean&#x27;s 95% confidence interval (t, over the users)."
        else:
            assert (
                note.group(1)
                == "Shaded: the 95% interval of each delta (t test); dashed: no difference from A."
            )
    # the curves have no band and no such caption
    assert all('class="note"' not in body for kind, body in figures if kind == "curve")


def test_a_p_value_below_the_smallest_printable_is_not_0():
    import pyarrow as pa

    from sqlmetrics.reports.html import summary_table

    row = {"model": "B", "metric": "ndcg@10", "delta": 0.2, "ci_low": 0.1, "ci_high": 0.3}
    latest = pa.Table.from_pylist([{**row, "p_adjusted": 0.0}])
    pooled = pa.Table.from_pylist([{**row, "p_adjusted": 5e-310}])
    html = summary_table(latest, pooled, ["model"], 0.05, ("latest", "whole"))
    assert html.count('<td class="num p">&lt; 1e-300</td>') == 2 and ">0<" not in html
    assert html.count('<span class="mark">*</span>') == 2  # significant, both


def test_a_screenshot_on_a_phone(report_page, tmp_path):
    """What a reader sees on a phone: the page in a 390 px frame, as a PNG (look at it after a
    change: pytest's tmp_path keeps it)."""
    shot = tmp_path / "phone.png"
    load_in_chromium(on_a_phone(report_page, tmp_path), tmp_path, output=f"--screenshot={shot}")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(data[16:20], "big") == 1280
