"""In real headless Chromium at 1440×900 on the default store: no legend or axis label is cut ("eagle…"), and
the drill-down's candidate chart draws one label per candidate (issue 14 item 3)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

CHART = "[data-testid='stVegaLiteChart']"


def _open(page, url: str) -> None:
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(url)
    page.locator(f"{CHART} svg").first.wait_for()
    page.wait_for_timeout(300)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)


def _texts(page, role: str) -> list[str]:
    return page.locator(f"{CHART} svg g.role-{role} text").all_text_contents()


@pytest.mark.parametrize("path", ["?conc=1&cell=MI300X%7CQwen%7Ccode", "explore", "tradeoffs", "gpus", "load"])
def test_no_label_is_cut_and_every_candidate_row_is_labelled(page, base_url, path):
    _open(page, f"{base_url}/{path}")
    legend = _texts(page, "legend-label")
    assert legend and not [t for t in legend if t.endswith("…")], path
    assert not [t for t in _texts(page, "axis-label") if t.endswith("…")], path
    if "cell=" in path:  # the drill-down: one label per candidate of Qwen × code at c=1
        page.locator(f"{CHART} svg text", has_text="Every candidate with its 95 % interval").first.wait_for()
        labels = set(_texts(page, "axis-label"))
        assert {"none", "eagle3·2", "dflash·5", "mtp·8"} <= labels
        assert sum("·" in t for t in labels) >= 40  # 5 methods × depths 1–8 of the default data, all labelled
