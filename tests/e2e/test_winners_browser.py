"""End to end in real headless Chromium: the landing page shows every load at once with the CLI's summary,
change the metric, click a heatmap cell and see its detail, download a PNG, the HTML report and the PDF report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect
from pypdf import PdfReader

pytestmark = pytest.mark.browser

CHART = "[data-testid='stVegaLiteChart']"
PLOTLY = "[data-testid='stPlotlyChart']"


def _open(page, base_url: str, query: str = "") -> None:
    page.goto(f"{base_url}/{query}")
    page.locator(f"{CHART} svg").first.wait_for()
    page.get_by_text("Simulated data on screen").wait_for()


def _wait_idle(page) -> None:
    """Wait until Streamlit has finished the current rerun (its status widget disappears)."""
    page.wait_for_timeout(300)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)


def _download(page, click) -> Path:
    with page.expect_download(timeout=120_000) as info:
        click()
    return Path(info.value.path())


def test_change_metric_updates_view_and_url(page, base_url):
    _open(page, base_url)
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").first.click()
    page.get_by_role("option", name="p99 TPOT (ms)").click()
    page.wait_for_url(re.compile(r"metric=p99_tpot_ms"))
    _wait_idle(page)
    page.locator(f"{CHART} svg text", has_text="by p99 TPOT").first.wait_for()
    # the URL reproduces the view in a new page
    url = page.url
    page.goto(url)
    page.locator(f"{CHART} svg text", has_text="by p99 TPOT").first.wait_for()
    assert page.locator("input[aria-label='Metric']").input_value() == "p99 TPOT (ms)"


def test_click_a_heatmap_cell_shows_its_detail(page, base_url):
    _open(page, base_url, "?gpu=MI300X&conc=1")
    n_before = page.locator(CHART).count()
    # Vega draws the heatmap as SVG with an aria-label per cell (its tooltip text): click Qwen3.5-397B × code
    page.locator(f"{CHART} path[fill-opacity='0'][aria-label*='workload: code; row: Qwen3.5-122B-A10B']").first.click()
    page.get_by_text("MI300X · Qwen3.5-122B-A10B · code · c=1").last.wait_for()  # the drill-down's header (the
    # tie list above names the same group)
    # candidates, cumulative and conditional positions, latency distribution
    expect(page.locator(CHART)).to_have_count(n_before + 3, timeout=60_000)  # Altair: candidates, positions ×2
    expect(page.locator(PLOTLY)).to_have_count(1, timeout=60_000)  # Plotly: the latency distribution
    page.wait_for_url(re.compile(r"cell=MI300X(%7C|\|)Qwen(%7C|\|)code(%7C|\|)Qwen"))  # the link reproduces it


def test_downloads_png_and_reports(page, base_url):
    _open(page, base_url, "?gpu=MI355X&conc=1")
    png = _download(page, lambda: page.get_by_role("button", name="PNG", exact=True).first.click())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.get_by_role("button", name=re.compile("Report")).click()
    html_file = _download(page, lambda: page.get_by_role("button", name="HTML report").click())
    html = html_file.read_text()
    assert "<h2>Question</h2>" in html and "data:image/svg+xml;base64," in html and "MI355X" in html
    assert "<script" not in html and "SIMULATED DATA" in html
    pdf = _download(page, lambda: page.get_by_role("button", name="PDF report").click())
    assert pdf.read_bytes()[:5] == b"%PDF-"
    first = PdfReader(pdf).pages[0].extract_text()
    assert "Question" in first and "vllm serve " in first and "SIMULATED DATA" in first


def test_landing_shows_every_load_and_the_clis_summary_without_interaction(page, base_url, default_db):
    """A new user's first look: per GPU, every measured load side by side (c = 1, 16, 64 headers in the
    drawn SVG), each cell naming its pick, and the summary sentence equal to the CLI's over all loads."""
    from tests.conftest import cli

    # the simulated part: the published cells (load not stated) have their own table above, with its source
    doc = json.loads(cli("analysis", "winners", "--db", str(default_db), "--backend", "sim", "--json").stdout)
    loads = sorted({c["concurrency"] for c in doc["cells"]})
    _open(page, base_url)
    page.get_by_text("Published results: the best method per model × dataset").wait_for()
    # the source as a link (its shown text carries invisible joiners: dashboard/md.py keeps data from autolinking)
    page.locator("a[href='https://vllm.ai/blog/2026-08-23-speculative-decoding-amd-gpus']").first.wait_for()
    charts = page.locator(CHART)
    expect(charts.filter(has_text="sensible pick at every load")).to_have_count(2, timeout=60_000)
    for gpu in ("MI300X", "MI355X"):
        chart = charts.filter(has_text=f"{gpu} · sensible pick at every load")
        texts = [t.strip() for t in chart.locator("svg text").all_text_contents()]
        assert all(f"c = {c}" in texts for c in loads), texts
        picks = {c["pick"]["label"] for c in doc["cells"] if c["gpu"] == gpu}
        assert picks <= set(texts), picks - set(texts)
    # the page opens with the plain answer (analysis.glance over the simulated part), then the CLI's figures
    from analysis.glance import split_published, summary

    answer = summary(split_published({k: v for k, v in doc.items() if k != "summary"})[1])
    banner = page.locator("[data-testid='stAlert'] [data-testid='stMarkdownContainer']").first
    shown = " ".join(banner.inner_text().replace("\u2060", "").split())  # less dashboard/md.py's invisible joiners
    # the published figures' answer first, then the simulated part's
    assert shown.startswith("On the published figures") and shown.endswith(" ".join(answer["answer"].split()))
    page.get_by_text(answer["text"].replace("`", "")[:60]).first.wait_for()
    # the single-load view is one click away
    page.get_by_role("button", name="c = 16").click()
    page.wait_for_url(re.compile(r"conc=16"))
    page.locator(f"{CHART} svg text", has_text="concurrency 16").first.wait_for()
