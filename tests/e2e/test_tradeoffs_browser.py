"""In real headless Chromium: the Trade-offs scatter (Plotly) draws one point per cell of the store, and a box
dragged over it narrows the table below to the cells inside the box (Streamlit's plotly selection event)."""

from __future__ import annotations

import re

import pytest

from analysis.frames import Filters
from analysis.pareto import tradeoff
from ingest import store

pytestmark = pytest.mark.browser

PLOTLY = "[data-testid='stPlotlyChart']"
GPU, FAMILY, WORKLOAD = "MI300X", "Qwen", "code"


def _wait_idle(page) -> None:
    page.wait_for_timeout(300)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)


def _selected(page) -> int:
    text = page.get_by_text(re.compile(r"^Selected cells: \d+$")).inner_text(timeout=60_000)
    return int(text.rsplit(" ", 1)[1])


def _drag(page, box: dict, x0: float, y0: float, x1: float, y1: float) -> None:
    """A mouse drag over the plot area, corners as fractions of its width and height (plotly's box select)."""
    page.mouse.move(box["x"] + x0 * box["width"], box["y"] + y0 * box["height"])
    page.mouse.down()
    page.mouse.move(box["x"] + (x0 + x1) / 2 * box["width"], box["y"] + (y0 + y1) / 2 * box["height"], steps=5)
    page.mouse.move(box["x"] + x1 * box["width"], box["y"] + y1 * box["height"], steps=5)
    page.mouse.up()


def test_the_scatter_draws_every_cell_and_a_box_selection_narrows_the_table(page, base_url, default_db):
    with store.session(default_db, read_only=True) as con:
        cells = tradeoff(con, Filters(gpus=(GPU,), families=(FAMILY,), workloads=(WORKLOAD,)), "p99_e2e_ms")
    assert cells.height >= 100  # over a hundred candidates (method · depth · load) in the one panel
    page.goto(f"{base_url}/tradeoffs?gpu={GPU}&fam={FAMILY}&wl={WORKLOAD}")
    chart = page.locator(PLOTLY).first
    chart.locator("svg.main-svg").first.wait_for()
    _wait_idle(page)
    # Plotly draws each point as a path.point in its scatter layer: one per cell (the front's rings are drawn
    # by their own trace, which takes no hover and no selection)
    points = chart.locator("g.trace.scatter path.point")
    rings = cells["on_front"].sum()
    assert points.count() == cells.height + rings
    assert page.get_by_text("Selected cells:").count() == 0  # nothing selected yet: no table of a selection
    area = chart.locator("rect.nsewdrag").first.bounding_box()
    _drag(page, area, 0.002, 0.002, 0.5, 0.998)  # the lower-latency half of the panel
    _wait_idle(page)
    narrowed = _selected(page)
    assert 0 < narrowed < cells.height
    page.reload()  # a fresh view; then the whole panel: every cell
    chart.locator("svg.main-svg").first.wait_for()
    _wait_idle(page)
    assert page.get_by_text("Selected cells:").count() == 0
    _drag(page, chart.locator("rect.nsewdrag").first.bounding_box(), 0.002, 0.002, 0.998, 0.998)
    _wait_idle(page)
    assert _selected(page) == cells.height
    assert page.locator("[data-testid='stException']").count() == 0
