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


def load_in_chromium(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """The DOM after the page's scripts ran, and every console message the page produced."""
    browser = _require_chromium()
    done = subprocess.run(
        [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'chromium-profile'}", "--enable-logging=stderr", "--v=0",
            "--window-size=1280,2000", "--dump-dom", page.resolve().as_uri(),
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
    summary = html.split('<table class="summary">', 1)[1].split("</table>", 1)[0]
    assert "latest period, 2026-11-04" in summary
    assert "whole range, 2026-11-01 to 2026-11-04 (4 periods, all users pooled)" in summary
    assert summary.count("<tr>") == 2 + len(METRICS)  # two header rows
    assert summary.count("<td") == len(METRICS) * (2 + 2 * 4)


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
