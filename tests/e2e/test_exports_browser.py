"""In real headless Chromium: every chart fits the page (a wider one loses its legend off the edge), an exported
chart names its view and says "simulated", and the HTML report opens offline with its summary, charts and
tables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHART = "[data-testid='stVegaLiteChart']"


def _open(page, url: str) -> None:
    page.goto(url)
    page.locator(f"{CHART} svg").first.wait_for()
    page.wait_for_timeout(300)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)


@pytest.mark.parametrize("path", ["", "explore", "tradeoffs", "gpus", "load"])
def test_every_chart_fits_inside_the_main_column(page, base_url, path):
    page.set_viewport_size({"width": 1280, "height": 900})  # a laptop screen
    _open(page, f"{base_url}/{path}")
    right = page.locator("[data-testid='stMainBlockContainer']").bounding_box()
    right = right["x"] + right["width"]
    for svg in page.locator(f"{CHART} svg.marks").all():
        box = svg.bounding_box()
        assert box["x"] + box["width"] <= right + 1, f"a chart on /{path} runs past the page: legend cut off"
    for svg in page.locator("[data-testid='stPlotlyChart'] svg.main-svg").all():  # the interactive ones too
        box = svg.bounding_box()
        assert box["x"] + box["width"] <= right + 1, f"a Plotly chart on /{path} runs past the page"


def test_an_exported_chart_names_its_view_and_says_simulated(page, base_url):
    _open(page, f"{base_url}/explore?metric=acceptance_length&gpu=MI355X")
    with page.expect_download(timeout=120_000) as info:
        page.get_by_role("button", name="SVG", exact=True).first.click()
    assert info.value.suggested_filename == "explore_acceptance-length_MI355X_c1.svg"
    svg = Path(info.value.path()).read_text()
    assert "SIMULATED DATA" in svg and "vs depth · MI355X · concurrency 1" in svg


def test_the_html_report_opens_offline_with_title_label_filters_charts_and_tables(browser, page, base_url):
    _open(page, f"{base_url}/?gpu=MI300X")
    page.get_by_role("button", name=re.compile("Report")).click()
    with page.expect_download(timeout=120_000) as info:
        page.get_by_role("button", name="HTML report").click()
    report = Path(info.value.path()).with_suffix(".html")
    Path(info.value.path()).rename(report)
    offline = browser.new_context()
    blocked: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    offline.route("**/*", only_files)
    try:
        doc = offline.new_page()
        doc.goto(report.as_uri())
        pic = doc.locator("figure img").first
        pic.wait_for(timeout=30_000)
        assert pic.evaluate("i => i.complete && i.naturalWidth > 100")  # the chart picture drew, offline
        assert doc.locator("figcaption").first.inner_text().startswith("Figure 1. ")
        assert doc.locator("h1").inner_text().startswith("spectune — winners by")
        for heading in ("Question", "Answer", "Where the numbers come from", "Charts"):
            assert doc.get_by_role("heading", name=heading).is_visible()
        assert doc.locator("pre.cmd").first.inner_text().startswith("vllm serve ")  # the whole deploy command
        assert doc.locator(".sim").is_visible() and "SIMULATED DATA" in doc.locator(".sim").inner_text()
        assert doc.get_by_role("heading", name="Filters").is_visible()
        assert doc.get_by_role("heading", name="Provenance").is_visible() and doc.locator("table").count() >= 2
        assert not blocked, blocked  # nothing fetched from the network
    finally:
        offline.close()
