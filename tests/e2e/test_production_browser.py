"""End to end in real headless Chromium: the Production page on a store whose watch samples were collected by
the real ``python -m ingest watch`` (bounded rounds) from a local exposition server whose counters advance
between scrapes, landed into a copy of the default store so the benchmark expectation exists.

The exposition server is the tests' own (tests/ingest/watch/faults.py); the real-vLLM scrape path is proved in
tests/ingest/watch/test_real_vllm.py — this test is about the page a browser gets from those samples.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import REPO, dashboard
from tests.ingest.watch.faults import exposition, fault_server

pytestmark = pytest.mark.browser

CHART = "[data-testid='stVegaLiteChart']"
ROUNDS = 3
# segment → (route, family, method, depth, gpu, workload, accepted per position per round); depth = positions.
# acme/code drafts far below its benchmark (a changed winner is possible), globex/chat runs near it.
SEGMENTS = {
    "acme/code": ("/kimi-code", "Kimi", "mtp", 3, "MI355X", "code", [30.0, 15.0, 5.0]),
    "globex/chat": ("/kimi-chat", "Kimi", "mtp", 2, "MI355X", "chat", [80.0, 60.0]),
}


def _route(per_pos: list[float]):
    def answer(n: int) -> tuple[int, str, float]:
        r = n + 1  # cumulative counters: every scrape sees more drafts and more accepted tokens
        return 200, exposition(100.0 * r, [v * r for v in per_pos], k=len(per_pos)), 0.0
    return answer


def _targets(tmp: Path, srv) -> Path:
    text = "timeout_s = 20\n"
    for seg, (path, family, method, depth, gpu, workload, per_pos) in SEGMENTS.items():
        srv.routes[path] = _route(per_pos)
        text += (f'[[target]]\nname = "{path.strip("/")}"\nurl = "{srv.url(path)}"\nsegment = "{seg}"\n'
                 f'family = "{family}"\nmethod = "{method}"\ndepth = {depth}\ngpu = "{gpu}"\n'
                 f'workload = "{workload}"\n')
    p = tmp / "targets.toml"
    p.write_text(text)
    return p


@pytest.fixture(scope="module")
def prod_url(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("prod_e2e")
    db = tmp / "s.duckdb"
    shutil.copy(default_db, db)
    with fault_server() as srv:
        cmd = [sys.executable, "-m", "ingest", "watch", str(_targets(tmp, srv)), "--db", str(db), "--json",
               "--interval", "0.2", "--rounds", str(ROUNDS)]
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["rounds"] == ROUNDS and all(t["failed_rounds"] == 0 for t in report["targets"]), report
    assert report["added"]["watch_samples"] == ROUNDS * len(SEGMENTS), report
    with dashboard(db, tmp / "server.log") as url:
        yield url


@pytest.fixture
def page(browser, prod_url: str):
    """This module's own page: it needs the production store's server only, not the suite's default one."""
    context = browser.new_context(viewport={"width": 1500, "height": 1200})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()


def _no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']").first.inner_text()


def _labels(page) -> list[str]:
    """Vega's SVG marks carry their datum as aria-label text (the tooltip fields)."""
    chart = page.locator(CHART).first
    chart.locator("svg [aria-roledescription='point']").first.wait_for()
    return chart.locator("svg [aria-roledescription]").evaluate_all(
        "els => els.map(e => e.getAttribute('aria-roledescription') + ' | ' + (e.getAttribute('aria-label') || ''))")


def _field(label: str, name: str) -> float:
    m = re.search(rf"(?:^|; |\| ){re.escape(name)}: ([0-9.]+)", label)
    assert m, (name, label)
    return float(m.group(1))


def _expected_rate(seg: str) -> float:
    per_pos = SEGMENTS[seg][-1]
    return sum(per_pos) / (100.0 * len(per_pos))  # per round: accepted / (drafts × k) from the served counters


def test_production_page_shows_acceptance_band_and_recommendation(page, prod_url) -> None:
    page.goto(f"{prod_url}/production")
    main = page.locator("[data-testid='stMain']")
    page.get_by_text("Acceptance · acme/code · mtp·3").first.wait_for()
    labels = _labels(page)
    # measured acceptance: counter deltas between the watcher's scrapes, as the exposition server advanced them
    # (one 1 h window, or two when the rounds straddle an hour: every round drafts at the same rate)
    points = [x for x in labels if x.startswith("point |")]
    assert points and all(_field(x, "acceptance_rate") == pytest.approx(_expected_rate("acme/code"), abs=1e-5)
                          for x in points), points
    assert sum(_field(x, "Intervals") for x in points) == ROUNDS - 1, points
    # the benchmark's band (area) and expectation (rule/line) from the default store's Kimi·MI355X·code·mtp:3 cells
    band = next(x for x in labels if "benchmark band low" in x)
    lo, hi = _field(band, "benchmark band low"), _field(band, "benchmark band high")
    exp = next(x for x in labels if "expected:" in x)
    assert 0 < lo <= _field(exp, "expected") <= hi, (band, exp)
    page.get_by_text("Grey band: the benchmark").wait_for()
    # the recommendation for the segment, re-scored with its measured acceptance, with a command to deploy
    rec = main.locator("[data-testid='stAlert']", has_text="acme/code").first
    text = rec.inner_text()
    assert "runs mtp·3" in text or "(mtp·3)" in text, text
    assert "is now the clear pick" in text or "no change" in text, text
    assert "none:0" not in text and "``" not in text, text  # the baseline is named, not an empty command
    if "is now the clear pick" in text:
        assert "Deploy: \n" not in text and re.search(r"Deploy: \S", text) and "speculative-config" in text, text
    _no_exception(page)


def test_segment_in_the_url_is_selected(page, prod_url) -> None:
    page.goto(f"{prod_url}/production?seg=globex%2Fchat")
    page.get_by_text("Acceptance · globex/chat · mtp·2").first.wait_for()
    assert page.locator("input[aria-label='Segment']").input_value() == "globex/chat"
    points = [x for x in _labels(page) if x.startswith("point |")]
    assert points and all(_field(x, "acceptance_rate") == pytest.approx(_expected_rate("globex/chat"), abs=1e-5)
                          for x in points), points
    rec = page.locator("[data-testid='stAlert']", has_text="globex/chat").first
    assert "mtp·2" in rec.inner_text()
    assert page.locator("[data-testid='stAlert']", has_text="acme/code").count() == 0
    _no_exception(page)
