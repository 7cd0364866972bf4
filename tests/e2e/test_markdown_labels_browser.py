"""In real headless Chromium: labels from data that carry Markdown link and image syntax (a GPU, family, model and
workload imported with ``ingest results --set``; tenants and a workload from a stored trace) show as text on the
Winners page (every load, and one load's drill-down) and in the Your-traffic deploy section — no ``<a href>`` to
the hostile host, no ``<img>`` of it, and no request to it at all (Playwright sees every request the page makes)."""

from __future__ import annotations

import json
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard import drill, md
from tests.conftest import REPO, cli
from tests.e2e.server import dashboard

pytestmark = pytest.mark.browser

SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"
HOST = "127.0.0.1:9"
# put together here, not copied: a link, an image, and emphasis/code/shortcode around them
WL = "[" + "see docs" + "](" + f"http://{HOST}/w" + ")"
GPU = "!" + "[" + "logo" + "](" + f"http://{HOST}/g.png" + ")"
FAMILY = "**" + "Fam" + "**"
MODEL = "acme/" + "`m`" + "![" + "i" + "](" + f"http://{HOST}/m.png" + ")"
TENANT_LINK = "<" + f"http://{HOST}/t" + ">"
TENANT_IMAGE = "!" + "[" + "t" + "](" + f"http://{HOST}/t.png" + ")"


@pytest.fixture(scope="module")
def hostile(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A server on the default data plus the hostile import and a stored trace with hostile tenants; yields
    (base URL, trace id)."""
    root = tmp_path_factory.mktemp("hostile_browser")
    db = Path(shutil.copy(default_db, root / "s.duckdb"))
    sets = ["--set", f"gpu={GPU}", "--set", f"family={FAMILY}", "--set", f"model={MODEL}", "--set", f"workload={WL}"]
    res = cli("ingest", "results", str(SAMPLE), "--db", str(db), *sets)
    assert res.returncode == 0, res.stderr
    trace = root / "tenants.csv"
    rows = ["timestamp_s,input_tokens,output_tokens,workload,shard"]
    rows += [f"{i * 0.5},{300 + i},{120 + i},\"{'code' if i % 2 else WL}\",\"{TENANT_IMAGE if i % 2 else TENANT_LINK}\""
             for i in range(80)]
    trace.write_text("\n".join(rows) + "\n")
    res = cli("ingest", "trace", str(trace), "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    trace_id = json.loads(res.stdout)["trace_id"]
    with dashboard(db, root / "server.log") as url:
        yield url, trace_id


def _watch(page) -> list[str]:
    hits: list[str] = []
    page.on("request", lambda r: hits.append(r.url) if HOST in r.url else None)
    return hits


def _settled(page) -> None:
    page.wait_for_timeout(500)
    page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden", timeout=90_000)


def _text(page) -> str:
    return md.unjoined(page.locator("[data-testid='stMain']").inner_text())


def _no_live_markup(page) -> None:
    links = page.locator(f"a[href*='{HOST}']")
    shown = "e => e.outerHTML + ' in ' + e.parentElement.outerHTML.slice(0, 400)"
    assert links.count() == 0, [links.nth(i).evaluate(shown) for i in range(links.count())]
    assert page.locator(f"img[src*='{HOST}']").count() == 0


def test_winners_every_load_and_drill_down(page, hostile):
    url, _ = hostile
    hits = _watch(page)
    page.goto(url + "/")
    page.get_by_text("run eagle3·3 for", exact=False).first.wait_for()
    _settled(page)
    shown = _text(page)
    assert "run eagle3·3 for " in shown and f" on {GPU}" in shown  # the answer names model and GPU, as text
    _no_live_markup(page)
    cell = drill.cell_id(GPU, FAMILY, WL, MODEL, "")
    page.goto(url + "/?conc=16&cell=" + urllib.parse.quote(cell, safe=""))
    page.get_by_text("Why this pick", exact=False).first.wait_for()
    _settled(page)
    body = _text(page)
    assert WL in body and GPU in body  # shown character for character
    _no_live_markup(page)
    assert hits == []


def test_traffic_deploy_section(page, hostile):
    url, trace_id = hostile
    hits = _watch(page)
    page.goto(f"{url}/traffic?fam=Qwen&gpu=MI300X&trace={trace_id}")
    page.get_by_role("heading", name="Deploy").wait_for()
    _settled(page)
    body = _text(page)
    assert f"{TENANT_LINK}:" in body and f"{TENANT_IMAGE}:" in body  # each tenant's recommendation, literally
    _no_live_markup(page)
    # the family × GPU link without cells: a message, not a traceback
    page.goto(f"{url}/traffic?fam=Qwen&gpu={urllib.parse.quote(GPU, safe='')}&trace={trace_id}")
    page.get_by_text("Nothing to score this trace against", exact=False).wait_for()
    assert page.locator("[data-testid='stException']").count() == 0
    _no_live_markup(page)
    assert hits == []
