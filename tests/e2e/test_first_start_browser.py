"""First start in real headless Chromium: on a dashboard whose store does not exist yet, the build's status box is
on screen within a second of the page's first paint and while the store is still being built; the Winners page
follows once it is done (dashboard/first_start.py)."""

from __future__ import annotations

import time

import pytest

from tests.e2e.server import dashboard

pytestmark = pytest.mark.browser


def test_the_first_start_says_what_it_does(browser, tmp_path):
    db = tmp_path / "first" / "spectune.duckdb"
    with dashboard(db, tmp_path / "server.log") as url:
        assert not db.exists()  # the server is up; nothing is built until a page is opened
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            page.goto(url, wait_until="commit")
            page.locator("[data-testid='stApp']").wait_for(timeout=30_000)  # the app's first paint
            painted = time.monotonic()
            page.get_by_text("First start: building the results store").wait_for(timeout=30_000)
            shown_after = time.monotonic() - painted
            assert not db.exists(), "the status box must be on screen while the store is built"
            assert shown_after <= 1.0, f"status box {shown_after:.2f} s after the first paint"
            page.get_by_text("reading the embedded data").wait_for(timeout=30_000)
            page.get_by_text("Results store built").wait_for(timeout=180_000)
            assert db.exists()
            page.locator("[data-testid='stVegaLiteChart'] svg").first.wait_for(timeout=120_000)
        finally:
            context.close()
