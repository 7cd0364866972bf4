"""Browser tests: the real dashboard server on a store built from the embedded data, driven by headless
Debian Chromium through Playwright. Skipped only when /usr/bin/chromium is missing (CI installs it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import CHROMIUM, CHROMIUM_ARGS, dashboard


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(reason=f"{CHROMIUM} missing (apt-get install -y chromium)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def base_url(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("streamlit") / "server.log"
    with dashboard(default_db, log) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Module-scoped on purpose: Playwright's sync API keeps an asyncio loop running in the main thread
    while it is started, which breaks every later test that calls asyncio.run()."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, base_url: str):
    context = browser.new_context(viewport={"width": 1500, "height": 1200}, accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()
