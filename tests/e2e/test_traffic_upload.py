"""End to end in real headless Chromium: upload a trace on "Your traffic" (``set_input_files``), get the
recommendation and the vLLM flag, and download the recommendations as CSV. The server gets its own copy of
the default store, because uploading writes a trace."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import dashboard

pytestmark = pytest.mark.browser
SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples" / "traces"


@pytest.fixture(scope="module")
def traffic_url(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("traffic")
    db = root / "store.duckdb"
    shutil.copy(default_db, db)
    with dashboard(db, root / "server.log") as url:
        yield url


def _wait_idle(page) -> None:
    page.wait_for_timeout(300)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=60_000)


def test_upload_a_trace_in_the_browser(page, traffic_url, tmp_path):
    page.goto(f"{traffic_url}/traffic")
    page.get_by_text("Upload a trace").wait_for()
    page.locator("[data-testid='stFileUploader'] input[type='file']").set_input_files(str(SAMPLES / "azure_code.csv"))
    page.get_by_text("stored.").first.wait_for(timeout=120_000)
    _wait_idle(page)
    code = page.locator("[data-testid='stCode']").first
    code.wait_for()
    text = code.inner_text()
    assert text.startswith("vllm serve ") and "--speculative-config" in text and "num_speculative_tokens" in text
    page.get_by_text("Simulated data on screen").wait_for()
    assert "trace=" in page.url
    # every chart is drawn at its own size inside the page (stretched to a column, legends were cut off)
    main = page.locator("[data-testid='stMainBlockContainer']").bounding_box()
    for svg in page.locator("[data-testid='stVegaLiteChart'] svg.marks").all():
        box = svg.bounding_box()
        assert box["x"] + box["width"] <= main["x"] + main["width"] + 1
    # every chart exports its data: the heatmap's CSV holds one row per candidate
    with page.expect_download(timeout=120_000) as info:
        page.locator("[data-testid='stDownloadButton'] button", has_text="CSV").nth(4).click()
    trace_id = page.url.split("trace=")[1].split("&")[0]
    assert info.value.suggested_filename == f"traffic_{trace_id}_Gemma_MI300X_heatmap.csv"  # named like every view
    csv = Path(info.value.path()).read_text()
    assert csv.splitlines()[0].startswith("Model family,GPU,Shard,Method,Depth") and "dflash" in csv  # human titles
