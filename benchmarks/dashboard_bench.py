"""Dashboard benchmarks: Winners page rerun after a filter change, cold start, peak RSS of a real server.

Owns ``page_rerun_s``, ``cold_start_s`` and ``dashboard_rss_mb``.

* page rerun: the real app under Streamlit's AppTest (server side: the script run), default data; each
  repeat applies a filter change never seen before in the session (so ``st.cache_data`` cannot answer it).
* cold start: a fresh Python process with the store file absent: imports, building the store from
  ``data/default/``, and the first Winners run under AppTest, timed from the first line of the process
  (interpreter start-up itself excluded). The same process then reports ``open_store.connect()`` + first
  winners query as a detail.
* RSS: ``streamlit run dashboard/app.py`` on a store of N request rows; headless Chromium (Playwright)
  opens the Winners page and waits for the heatmap; VmHWM of the server process is read from /proc.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, figure, status_mb

APP = REPO / "dashboard" / "app.py"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# Filter changes applied one after another (each a new state): (widget kind, key, value).
CHANGES: list[tuple[str, str, Any]] = [
    ("selectbox", "winners.conc", 16), ("selectbox", "winners.conc", 64), ("multiselect", "winners.fam", ["Qwen"]),
    ("multiselect", "winners.wl", ["code", "chat"]), ("selectbox", "winners.metric", "p99_e2e_ms"),
    ("multiselect", "winners.gpu", ["MI355X"]), ("selectbox", "winners.conc", 1),
]


# The same kind of changes on the landing view (every load at once: the load strips), never seen before either.
LANDING_CHANGES: list[tuple[str, str, Any]] = [
    ("multiselect", "winners.fam", ["Qwen"]), ("multiselect", "winners.wl", ["code", "chat"]),
    ("selectbox", "winners.metric", "p99_e2e_ms"), ("multiselect", "winners.gpu", ["MI355X"]),
    ("multiselect", "winners.fam", ["Gemma", "Kimi"]), ("selectbox", "winners.metric", "p99_ttft_ms"),
    ("multiselect", "winners.wl", ["reasoning"]),
]


def page_rerun(db: Path, repeats: int, changes: list[tuple[str, str, Any]] = CHANGES) -> dict[str, Any]:
    os.environ["SPECTUNE_DB"] = str(db)
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()  # a second call in one process (another change set) starts from empty caches too
    at = AppTest.from_file(str(APP), default_timeout=300)
    t0 = time.perf_counter()
    at.run()
    first = time.perf_counter() - t0
    if at.exception:
        raise RuntimeError(f"Winners page failed: {[e.message for e in at.exception]}")
    walls, cpus = [], []
    for kind, key, value in changes[:repeats]:
        getattr(at, kind)(key=key).set_value(value)
        c0, t0 = time.process_time(), time.perf_counter()
        at.run()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)  # the script runs in a thread of this process
        if at.exception:
            raise RuntimeError(f"Winners page failed after {key}={value}: {[e.message for e in at.exception]}")
    charts = len(at.get("vega_lite_chart"))
    return figure(walls, target=0.5, cpu=cpus, first_run_s=round(first, 3), charts_on_last_run=charts,
                  changes=[f"{k}={v}" for _, k, v in changes[:repeats]],
                  wall_s=[round(w, 3) for w in walls], cpu_s=[round(c, 3) for c in cpus])


_COLD = """
import json, os, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {repo!r})
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=300)
at.run()
t1 = time.perf_counter()
built = os.path.exists(os.environ["SPECTUNE_DB"])
ok = not at.exception and len(at.get("vega_lite_chart")) > 0
os.remove(os.environ["SPECTUNE_DB"])
t2 = time.perf_counter()
from ingest import open_store
from analysis.winners import winners
with open_store.session() as con:
    n = len(winners(con)["cells"])
t3 = time.perf_counter()
print(json.dumps({{"apptest_s": t1 - t0, "built": built, "ok": ok, "connect_winners_s": t3 - t2, "groups": n}}))
"""


def cold_start(workdir: Path, repeats: int) -> dict[str, Any]:
    db = workdir / "cold" / "spectune.duckdb"
    db.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SPECTUNE_DB": str(db), "PYTHONPATH": str(REPO)}
    runs = []
    for _ in range(repeats):
        for p in db.parent.glob("spectune.duckdb*"):
            p.unlink()
        out = subprocess.run([sys.executable, "-c", _COLD.format(repo=str(REPO), app=str(APP))], env=env, cwd=REPO,
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"cold start failed: {out.stderr[-800:]}")
        res = json.loads(out.stdout.strip().splitlines()[-1])
        if not (res["built"] and res["ok"]):
            raise RuntimeError(f"cold start did not build the store and draw the heatmap: {res}")
        runs.append(res)
    return figure([r["apptest_s"] for r in runs], target=10.0,
                  connect_plus_first_winners_s=[round(r["connect_winners_s"], 3) for r in runs],
                  measured="fresh process, no store file: imports + store built from data/default + first "
                           "Winners run (AppTest), to the drawn heatmap")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_health(url: str, proc: subprocess.Popen, timeout: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("streamlit exited before it was healthy")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/_stcore/health", timeout=2, trust_env=False).status_code == 200:
                return
        time.sleep(0.25)
    raise RuntimeError("streamlit not healthy in time")


_APPTEST_RSS = """
import json, os, sys
sys.path.insert(0, {repo!r})
from streamlit.testing.v1 import AppTest
at = AppTest.from_file({app!r}, default_timeout=300)
at.run()
hwm = [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM")][0]
print(json.dumps({{"hwm_mb": hwm / 1024, "ok": not at.exception}}))
"""


def dashboard_rss(db: Path, rows: int, repeats: int = 1) -> dict[str, Any]:
    """Peak RSS of a real server process; without Chromium, of a process running the page under AppTest."""
    if not Path(CHROMIUM).exists():
        return _apptest_rss(db, rows, repeats)
    from playwright.sync_api import sync_playwright

    peaks, rss_after, load_s = [], [], []
    for _ in range(repeats):
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.address", "127.0.0.1", "--server.port", str(port)],
            env={**os.environ, "SPECTUNE_DB": str(db)}, cwd=REPO, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            _wait_health(url, proc, 60)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page()
                t0 = time.perf_counter()
                page.goto(url, timeout=120_000)
                page.get_by_text("Who wins where").wait_for(timeout=180_000)
                page.locator(".vega-embed").first.wait_for(timeout=180_000)
                load_s.append(time.perf_counter() - t0)
                browser.close()
            peaks.append(status_mb(proc.pid, "VmHWM"))
            rss_after.append(status_mb(proc.pid, "VmRSS"))
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
    return figure(peaks, unit="MB", target=600, rows_in_store=rows, rss_after_load_mb=[round(x, 1) for x in rss_after],
                  page_load_s=[round(x, 2) for x in load_s],
                  measured="VmHWM of `streamlit run dashboard/app.py` after headless Chromium loaded Winners")


def _apptest_rss(db: Path, rows: int, repeats: int) -> dict[str, Any]:
    peaks = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", _APPTEST_RSS.format(repo=str(REPO), app=str(APP))],
                             env={**os.environ, "SPECTUNE_DB": str(db)}, cwd=REPO, capture_output=True, text=True,
                             timeout=600)
        res = json.loads(out.stdout.strip().splitlines()[-1])
        if out.returncode != 0 or not res["ok"]:
            raise RuntimeError(f"Winners under AppTest failed: {out.stderr[-800:]}")
        peaks.append(res["hwm_mb"])
    return figure(peaks, unit="MB", target=600, rows_in_store=rows,
                  measured=f"no {CHROMIUM}: VmHWM of a process running Winners under AppTest (same app code)")
