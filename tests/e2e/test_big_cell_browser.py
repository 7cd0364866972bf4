"""In real headless Chromium, on a store whose cell holds more requests than Altair accepts (5,000): clicking
the heatmap cell opens its drill-down, latency distribution included, with no error (issue 16)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from tests.conftest import cli
from tests.dashboard.test_big_cell_drilldown import MATRIX
from tests.e2e.server import dashboard

pytestmark = pytest.mark.browser

CHART = "[data-testid='stVegaLiteChart']"
PLOTLY = "[data-testid='stPlotlyChart']"


@pytest.fixture(scope="module")
def big_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("bigcell_browser")
    (folder / "m.toml").write_text(MATRIX)
    db = folder / "big.duckdb"
    proc = cli("runner", "run", "--matrix", str(folder / "m.toml"), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    with dashboard(db, folder / "server.log") as url:
        yield url


@pytest.fixture
def big_page(browser, big_url: str):
    context = browser.new_context(viewport={"width": 1500, "height": 1200})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()


def test_click_a_cell_over_altairs_row_limit(big_page, big_url: str):
    page = big_page
    page.goto(f"{big_url}/?gpu=MI300X&conc=1")
    page.locator(f"{CHART} svg").first.wait_for()
    n_before = page.locator(CHART).count()
    page.locator(f"{CHART} path[fill-opacity='0'][aria-label*='workload: code; row: Qwen3.5-397B-A17B']").first.click()
    page.get_by_text("MI300X · Qwen3.5-397B-A17B · code · c=1").last.wait_for()  # the drill-down header
    expect(page.locator(CHART)).to_have_count(n_before + 3, timeout=60_000)  # Altair: candidates, positions ×2
    expect(page.locator(PLOTLY)).to_have_count(1, timeout=60_000)  # Plotly: the latency distribution
    page.locator(f"{PLOTLY} svg text", has_text="Request E2E distribution").first.wait_for()
    assert page.locator("[data-testid='stException']").count() == 0
    assert "MaxRowsError" not in page.content()
