"""One vocabulary in real headless Chromium (issue 27, Done when): for one cell, the Winners heatmap (its tooltip
text and its drill-down), the GPUs page (its winner-by-GPU table, as downloaded), the Trade-offs goodput
heatmap and the Winners report (HTML and PDF text) name the same verdict and pick with the same chance of
being best. The expected words are computed here from ``analysis.winners.winners`` on the same store, never
written in advance."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from analysis import frames, vocabulary
from analysis.winners import winners
from dashboard import heatmap_spec
from ingest import store

pytestmark = pytest.mark.browser

CHART = "[data-testid='stVegaLiteChart']"
GPU, OTHER, FAMILY, WORKLOAD, CONC = "MI300X", "MI355X", "Qwen", "code", 1
TIP = "verdict · pick (chance of being best)"  # the heatmap tooltip's title for the headline (charts.TOOLTIP)


def _cell(default_db: Path, metric: str) -> dict:
    """The cell's winners entry as the pages compute it (default SLO and margin)."""
    with store.session(default_db, read_only=True) as con:
        doc = winners(con, metric, frames.Filters(gpus=(GPU,), concurrency=(CONC,)), slo_ttft_ms=2000.0,
                      slo_tpot_ms=50.0, margin_pct=2.0)
    return next(c for c in doc["cells"] if (c["family"], c["workload"]) == (FAMILY, WORKLOAD)
                and not c.get("source_url"))


def _wait_idle(page) -> None:
    page.wait_for_timeout(300)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)


def _heatmap_cell(page, c: dict, headline: str):
    """The heatmap cell of ``c`` (its model × workload) whose drawn tooltip (Vega's aria-label) carries
    ``headline``: the click layer on top of the cell (heatmap_spec.OUTLINE_VIEW)."""
    return page.locator(f"{CHART} g.{heatmap_spec.OUTLINE_VIEW}_marks path[aria-label*='workload: {WORKLOAD}']"
                        f"[aria-label*='Model: {c['model']};'][aria-label*='{TIP}: {headline};']").first


def _download(page, click) -> Path:
    with page.expect_download(timeout=120_000) as info:
        click()
    return Path(info.value.path())


def test_one_cell_reads_the_same_on_winners_gpus_tradeoffs_and_the_report(page, base_url, default_db):
    thr_cell = _cell(default_db, "output_throughput")
    thr = vocabulary.cell_words(thr_cell)
    assert thr.headline.startswith(f"{thr.verdict} · pick {thr.pick} (p ")

    # Winners heatmap: the cell's tooltip says the verdict and pick; its label draws them; the drill-down repeats
    page.goto(f"{base_url}/?gpu={GPU}&conc={CONC}")
    cell = _heatmap_cell(page, thr_cell, thr.headline)
    cell.wait_for()
    # the drawn label: its lines (tspans) read verdict, pick (p), gain — no gain without its interval
    texts = page.locator(f"{CHART} svg text").all_text_contents()
    drawn = f"{thr.verdict}pick {thr.pick} ({vocabulary.p_text(thr.pick_p)}){thr.gain}"
    assert any(t.startswith(drawn) for t in texts), (drawn, texts[:8])
    cell.click()
    page.locator("[data-testid='stMarkdownContainer']", has_text=thr.headline).first.wait_for()
    page.locator("[data-testid='stMarkdownContainer']", has_text=f"Chance of being best: {thr.chances}").first \
        .wait_for()

    # the Winners report (HTML and PDF) names the same verdict, pick and chance for the cell's group
    page.get_by_role("button", name=re.compile("Report")).click()
    html = _download(page, lambda: page.get_by_role("button", name="HTML report").click()).read_text()
    assert thr.headline in re.sub(r"<[^>]+>", "", html).replace("&middot;", "·")
    pdf = _download(page, lambda: page.get_by_role("button", name="PDF report").click())
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(pdf).pages).split())
    assert thr.headline in text

    # GPUs page: the table of winners by GPU carries the same words for GPU A (read from its CSV download)
    page.goto(f"{base_url}/gpus?a={GPU}&b={OTHER}&conc={CONC}")
    page.get_by_text("Does the answer change with the GPU?").wait_for()
    _wait_idle(page)
    buttons = page.locator("[data-testid='stDownloadButton'] button", has_text="CSV")
    with page.expect_download(timeout=120_000) as info:
        buttons.nth(1).click()
    assert info.value.suggested_filename.endswith("_winner-changes.csv")
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text())))
    row = next(r for r in rows if (r["Model family"], r["Workload"]) == (FAMILY, WORKLOAD))  # see below
    assert row[f"Verdict · pick (p) on {GPU}"] == thr.headline
    assert row[f"Pick on {GPU}"] == thr.pick and row[f"Verdict on {GPU}"] == thr.verdict

    # Trade-offs goodput heatmap and the Winners heatmap by goodput: the same words for the same cell
    good_cell = _cell(default_db, "goodput")
    good = vocabulary.cell_words(good_cell)
    page.goto(f"{base_url}/tradeoffs?gpu={GPU}&gconc={CONC}")
    page.get_by_text("Goodput winners under the SLO").wait_for()
    _heatmap_cell(page, good_cell, good.headline).wait_for()
    page.goto(f"{base_url}/?gpu={GPU}&conc={CONC}&metric=goodput")
    _heatmap_cell(page, good_cell, good.headline).wait_for()
