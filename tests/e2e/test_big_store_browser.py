"""In real headless Chromium on a store of 12.1 M request rows (the session's ``big_store``,
tests/big_store.py): the landing page draws every load, one load opens with a click, and clicking a heatmap
cell opens its drill-down — latency distribution included — with no error (issue 16: MaxRowsError at 10 M)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.server import dashboard

pytestmark = pytest.mark.browser

CHART = "[data-testid='stVegaLiteChart']"
PLOTLY = "[data-testid='stPlotlyChart']"


@pytest.fixture(scope="module")
def big_url(big_store: tuple[Path, dict], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db, info = big_store
    assert info["requests"] >= 10_000_000
    with dashboard(db, tmp_path_factory.mktemp("big_store_browser") / "server.log", timeout_s=120) as url:
        yield url


def no_error(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0
    assert "MaxRowsError" not in page.content()


def test_landing_page_and_a_drilldown_on_the_big_store(browser, big_url: str):
    context = browser.new_context(viewport={"width": 1500, "height": 1200})
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(big_url)
        page.get_by_text("Simulated data on screen").wait_for()
        page.locator(f"{CHART} svg").first.wait_for()
        for c in (1, 16, 64):  # the landing page: every load side by side
            page.get_by_role("button", name=f"c = {c}", exact=True).wait_for()
        no_error(page)
        page.get_by_role("button", name="c = 1", exact=True).click()
        page.wait_for_url(re.compile(r"conc=1\b"))
        page.locator(f"{CHART} svg text", has_text="concurrency 1").first.wait_for()
        n_before = page.locator(CHART).count()
        cell = "workload: code; row: Qwen3.5-122B-A10B"  # the heatmap's rows name the model
        page.locator(f"{CHART} path[fill-opacity='0'][aria-label*='{cell}']").first.click()
        page.get_by_text("MI300X · Qwen3.5-122B-A10B · code · c=1").last.wait_for()  # the drill-down header
        expect(page.locator(CHART)).to_have_count(n_before + 3, timeout=120_000)  # Altair: candidates, positions ×2
        expect(page.locator(PLOTLY)).to_have_count(1, timeout=120_000)  # Plotly: the latency distribution
        page.locator(f"{PLOTLY} svg text", has_text="Request E2E distribution").first.wait_for()
        no_error(page)
    finally:
        context.close()
