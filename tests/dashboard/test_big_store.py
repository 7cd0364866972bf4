"""Every page and every drill-down of the real app on a store of 12.1 M request rows (issue 16: the dashboard
raised Altair's MaxRowsError at 10 M rows when a heatmap cell was clicked).

The store is the session's ``big_store`` (tests/big_store.py). Each page opens without an exception; on the
two pages with a drill-down (Winners' heatmap, Trade-offs' goodput heatmap) a cell is picked with the
drill-down's selectbox — the widget a heatmap click writes (dashboard/drill.py; the click itself is driven in
Chromium, tests/e2e/test_big_store_browser.py) — and every latency distribution is shown in turn. Every chart
must carry at most one row per cell, never per request: the latency chart's box rows count every request of
their candidate (checked against the store) in a handful of rows.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from dashboard.app import PAGES
from dashboard.drill import LATENCY_COLS
from tests.dashboard.conftest import chart_specs, figure_title, latency_boxes, latency_figure, open_page, plotly_figures

GPU, FAMILY, WORKLOAD = "MI300X", "Qwen", "code"
MODEL = "Qwen/Qwen3.5-122B-A10B"  # the big store resamples the default matrix: one model per family
ALTAIR_MAX_ROWS = 5000


@pytest.fixture(scope="module")
def big(big_store: tuple[Path, dict]):
    db, info = big_store
    old = os.environ["SPECTUNE_DB"]
    os.environ["SPECTUNE_DB"] = str(db)
    yield db, info
    os.environ["SPECTUNE_DB"] = old


def requests_per_candidate(db: Path, concurrency: int) -> dict[tuple[str, str], int]:
    """{(candidate, latency): requests with that latency} for the cells of the drilled group, from the store."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            """SELECT c.method, c.depth, count(q.ttft_ms), count(q.tpot_ms), count(q.e2e_ms)
               FROM cells c JOIN requests q USING (run_id, cell_id)
               WHERE c.gpu = ? AND c.family = ? AND c.workload = ? AND c.concurrency = ? AND coalesce(q.ok, TRUE)
               GROUP BY ALL""", [GPU, FAMILY, WORKLOAD, concurrency]).fetchall()
    finally:
        con.close()
    out = {}
    for method, depth, *counts in rows:
        cand = "none" if method == "none" else f"{method}·{depth}"
        out.update({(cand, lat): n for lat, n in zip(("ttft_ms", "tpot_ms", "e2e_ms"), counts, strict=True)})
    return out


def assert_binned(at, info: dict) -> list[dict]:
    assert not at.exception, [e.message for e in at.exception]
    specs = chart_specs(at)
    assert specs
    for s in specs:  # at most one row per cell: never per request
        assert len(s["rows"]) <= info["cells"] < ALTAIR_MAX_ROWS, (s["spec"].get("title"), len(s["rows"]))
    for f in plotly_figures(at):  # the interactive figures too: at most one point per cell
        drawn = sum(len(t.get("x") or []) for t in f["figure"]["data"])
        assert drawn <= info["cells"], (figure_title(f), drawn)
    return specs


@pytest.mark.parametrize("page", [p for p, _, _ in PAGES])
def test_every_page_opens_on_the_big_store(big, page: str):
    _, info = big
    assert info["requests"] >= 10_000_000
    at = open_page(page)  # asserts no exception
    if at.get("vega_lite_chart") or at.get("plotly_chart"):
        assert_binned(at, info)


def _drill_through_latencies(at, page: str, db: Path, info: dict, concurrency: int) -> None:
    charts_before = len(at.get("vega_lite_chart"))
    at.selectbox(key=f"{page}.cell").set_value(f"{GPU}|{FAMILY}|{WORKLOAD}|{MODEL}|").run()
    assert_binned(at, info)
    short = MODEL.rsplit("/", 1)[-1]
    assert any(f"{GPU} · {short} · {WORKLOAD} · c={concurrency}" in m.value for m in at.markdown)
    assert len(at.get("vega_lite_chart")) == charts_before + 3
    want = requests_per_candidate(db, concurrency)
    for lat in LATENCY_COLS:
        at.radio(key=f"{page}.dlat").set_value(lat).run()
        specs = assert_binned(at, info)
        latency = latency_figure(at)  # the distribution is an interactive (Plotly) figure
        assert figure_title(latency) == f"Request {lat.replace('_ms', '').upper()} distribution"
        boxes = latency_boxes(latency)
        assert len(boxes) >= 2 and any(r["candidate"] == "none" for r in boxes)
        assert all(r["n"] == want[(r["candidate"], lat)] for r in boxes)  # every request counted …
        assert sum(r["n"] for r in boxes) > ALTAIR_MAX_ROWS  # … more than the chart could carry as rows
        drawn = sum(len(t.get("x") or []) for t in latency["figure"]["data"] if t["type"] == "scatter")
        assert drawn < 40 * len(boxes)  # ≤ 40 outlier bins per candidate
    # candidates, acceptance by position (twice) in Altair; the latency distribution in Plotly
    assert len(specs) == charts_before + 3


def test_winners_drilldown_from_the_landing_page(big):
    db, info = big
    at = open_page()  # the landing page: every load side by side
    assert_binned(at, info)
    at.button(key="winners.open.1").click().run()  # one load's heatmap, as a user opens it
    assert_binned(at, info)
    _drill_through_latencies(at, "winners", db, info, 1)


def test_tradeoffs_goodput_drilldown(big):
    db, info = big
    at = open_page("views/tradeoffs.py", query={"gpu": GPU, "gconc": "64"})
    assert_binned(at, info)
    _drill_through_latencies(at, "tradeoffs", db, info, 64)
