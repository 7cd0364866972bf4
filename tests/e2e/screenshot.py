"""The docs' screenshots: ``python -m tests.e2e.screenshot [OUT.png]`` (README) and ``--pages`` (every page).

Builds the default store in a temporary folder (never touches data/), starts the real dashboard and opens it
in headless Chromium at 1440 px wide. The README image is the Winners landing page, every load at once
(docs/img/winners.png);
``--pages`` also saves one image per page of the navigation (docs/img/page-<name>.png, listed in
docs/dashboard.md), each after its charts have drawn.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

from tests.e2e.server import CHROMIUM, CHROMIUM_ARGS, REPO, dashboard

OUT = REPO / "docs" / "img" / "winners.png"
IMG = REPO / "docs" / "img"
# page URL path (Streamlit's, from the file name) → image name; "" is the landing page
PAGES: dict[str, str] = {"": "winners", "explore": "explore", "tradeoffs": "tradeoffs", "gpus": "gpus",
                         "load": "load", "traffic": "traffic", "runs": "runs", "production": "production",
                         "datasets": "data"}


def main(out: Path = OUT) -> Path:
    from playwright.sync_api import sync_playwright

    from ingest.default_data import build_default_db

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "default.duckdb"
        build_default_db(db)
        with dashboard(db, Path(tmp) / "server.log") as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1480}, device_scale_factor=1)
            page.goto(f"{url}/")  # the landing page as a new user first sees it: every load at once
            page.locator("[data-testid='stVegaLiteChart'] svg").nth(1).wait_for(timeout=60_000)
            page.wait_for_timeout(1500)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=False)
            browser.close()
    return out


def pages(folder: Path = IMG) -> list[Path]:
    """One image per page, each when its main area has drawn (charts, or the page's empty-state text)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from ingest.default_data import build_default_db

    saved = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "default.duckdb"
        build_default_db(db)
        with dashboard(db, Path(tmp) / "server.log") as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1100}, device_scale_factor=1)
            for path, name in PAGES.items():
                page.goto(f"{url}/{path}")
                page.locator("[data-testid='stMainBlockContainer'] h1").first.wait_for(timeout=90_000)
                charts = page.locator("[data-testid='stVegaLiteChart'] svg")
                with contextlib.suppress(PlaywrightTimeout):  # a page without charts here (e.g. no upload yet)
                    charts.first.wait_for(timeout=20_000)
                page.wait_for_timeout(2000)
                out = folder / f"page-{name}.png"
                page.screenshot(path=str(out), full_page=False)
                saved.append(out)
            browser.close()
    return saved


if __name__ == "__main__":
    if "--pages" in sys.argv[1:]:
        print("\n".join(map(str, pages())))
    else:
        print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
