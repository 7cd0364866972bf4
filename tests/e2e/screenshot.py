"""Take the README screenshot of the Winners page: ``python -m tests.e2e.screenshot [OUT.png]``.

Builds the default store in a temporary folder (never touches data/), starts the real dashboard, opens the
Winners page in headless Chromium with one cell drilled into, and saves a full-page PNG (docs/img/winners.png).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.e2e.server import CHROMIUM, CHROMIUM_ARGS, REPO, dashboard

OUT = REPO / "docs" / "img" / "winners.png"


def main(out: Path = OUT) -> Path:
    from playwright.sync_api import sync_playwright

    from ingest.default_data import build_default_db

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "default.duckdb"
        build_default_db(db)
        with dashboard(db, Path(tmp) / "server.log") as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1480}, device_scale_factor=1)
            page.goto(f"{url}/?conc=16")
            page.locator("[data-testid='stVegaLiteChart'] svg").nth(1).wait_for(timeout=60_000)
            page.wait_for_timeout(1500)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=False)
            browser.close()
    return out


if __name__ == "__main__":
    print(main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
