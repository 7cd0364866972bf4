"""docs/dashboard.md shows every page of the navigation, and every image it names exists and is a real PNG."""

from __future__ import annotations

import ast
import re

from tests.conftest import REPO
from tests.e2e.screenshot import PAGES as SCREENSHOT_PAGES


def test_every_navigation_page_has_its_screenshot_in_the_docs():
    # dashboard/app.py runs the app when imported: read its PAGES literal instead
    tree = ast.parse((REPO / "dashboard" / "app.py").read_text())
    pages = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.AnnAssign)
                 and getattr(n.target, "id", "") == "PAGES")
    text = (REPO / "docs" / "dashboard.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\((img/[^)]+\.png)\)", text)
    assert len(images) == len(pages) == len(SCREENSHOT_PAGES)
    assert sorted(images) == sorted(f"img/page-{name}.png" for name in SCREENSHOT_PAGES.values())
    for rel in images:
        data = (REPO / "docs" / rel).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, rel
    paths = {p.split("/")[-1].removesuffix(".py") for p, _title, _icon in pages}
    assert set(SCREENSHOT_PAGES) - {""} == paths - {"winners"}
