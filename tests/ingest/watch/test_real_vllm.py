"""``ingest watch`` against a REAL vLLM 0.32 CPU server (ngram, depth 3) and a REAL Prometheus scraping it.

One vLLM server and one Prometheus (Debian's ``prometheus`` binary on a loopback port, a config and a
tsdb folder of the test's own) serve the whole module. The first test watches the server while the runner
(attached to it, no warm-up) measures a cell: the acceptance the watch's counter deltas give equals the
runner's. The second backfills the same traffic from Prometheus' HTTP API and matches the direct scrape.
Needs ``SPECTUNE_VLLM_ENV`` (scripts/setup_vllm_cpu.sh); skipped only when it is unset.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from analysis.production import deltas, load
from ingest import sql, store
from ingest.watch.exposition import parse
from runner.vllm.server import VllmServer, env_from_setup, free_port
from tests.conftest import REPO, cli

pytestmark = pytest.mark.vllm
K = 3
MATRIX = """
name = "watch-real"
gpus = ["cpu"]
[methods.ngram]
depths = [3]
extra = { prompt_lookup_max = 3, prompt_lookup_min = 2 }
[families.TinyLlama]
model = "${SPECTUNE_VLLM_MODEL}"
[workloads.code]
max_tokens = 48
[load]
concurrency = [2]
[run]
requests_per_cell = 16
warmup_requests = 0
request_timeout_s = 120
stall_timeout_s = 60
"""


@pytest.fixture(scope="module")
def vllm_env() -> dict[str, str]:
    env_dir = os.environ.get("SPECTUNE_VLLM_ENV")
    if not env_dir:
        pytest.skip("SPECTUNE_VLLM_ENV is unset (run scripts/setup_vllm_cpu.sh DIR, then set it to DIR)")
    return env_from_setup(env_dir)


@pytest.fixture(scope="module")
def server(vllm_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    tmp = tmp_path_factory.mktemp("vllm")
    srv = VllmServer(vllm_env["SPECTUNE_VLLM_MODEL"], log_path=tmp / "vllm.log", method="ngram",
                     num_speculative_tokens=K, speculative_extra={"prompt_lookup_max": 3, "prompt_lookup_min": 2},
                     extra_flags=["--dtype", "float32", "--max-model-len", "1024", "--enforce-eager"],
                     command_template=vllm_env["SPECTUNE_VLLM_LAUNCH"],
                     env={**vllm_env, "VLLM_CPU_KVCACHE_SPACE": "1"})
    with srv:
        srv.wait_healthy(400)
        yield srv


@pytest.fixture(scope="module")
def prometheus(server: VllmServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("the prometheus binary is missing: scripts/test.sh installs it (apt-get install -y prometheus)")
    tmp = tmp_path_factory.mktemp("prom")
    port = free_port()
    (tmp / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
        "scrape_configs:\n  - job_name: vllm\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{server.port}']\n        labels: {{deployment: cpu-ngram}}\n")
    log = (tmp / "prometheus.log").open("wb")
    proc = subprocess.Popen([binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=log, stderr=log, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/-/ready", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            pytest.fail(f"prometheus never became ready (log: {tmp / 'prometheus.log'})")
        _wait_scraped(url)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _wait_scraped(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = httpx.get(f"{url}/api/v1/query", params={"query": "vllm:spec_decode_num_drafts_total"}, timeout=5,
                      trust_env=False).json()
        if r["data"]["result"]:
            return
        time.sleep(0.5)
    pytest.fail("prometheus never scraped the vLLM server")


def _direct(server: VllmServer) -> dict:
    s = parse(httpx.get(f"{server.base_url}/metrics", timeout=10, trust_env=False).text)
    return {**s.values, "per_pos": s.per_pos}


def _totals(db: Path, target: str) -> dict:
    with store.session(db, read_only=True) as con:
        iv = deltas.intervals(load.samples(con, targets=(target,)))
    return {c: float(iv[c].sum()) for c in deltas.COUNTERS} | {"intervals": iv.height, "resets": int(iv["reset"].sum())}


T0: dict[str, float] = {}


def test_watch_during_a_runner_cell_gets_the_runners_acceptance(server: VllmServer, prometheus: str,
                                                                 vllm_env: dict[str, str], tmp_path: Path) -> None:
    T0["t"] = time.time()
    before = _direct(server)
    targets = tmp_path / "targets.toml"
    targets.write_text(f'[[target]]\nname = "cpu"\nurl = "{server.base_url}/metrics"\nsegment = "cpu/code"\n'
                       f'family = "TinyLlama"\nmethod = "ngram"\ndepth = {K}\ngpu = "cpu"\nworkload = "code"\n'
                       'timeout_s = 10\n')
    db = tmp_path / "watch.duckdb"
    env = {**os.environ, **vllm_env, "PYTHONPATH": str(REPO)}
    watcher = subprocess.Popen([sys.executable, "-m", "ingest", "watch", str(targets), "--interval", "1",
                                "--db", str(db), "--json"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and watcher.poll() is None:
            if db.exists():
                try:
                    with store.session(db, read_only=True) as con:
                        if sql.one(con, "SELECT count(*) FROM watch_samples")[0] >= 2:
                            break
                except Exception:  # the watcher holds the write lock for a moment
                    pass
            time.sleep(0.3)
        matrix = tmp_path / "m.toml"
        matrix.write_text(MATRIX)
        run = cli("runner", "run", "--matrix", str(matrix), "--backend", "vllm", "--endpoint", server.base_url,
                  "--db", str(tmp_path / "runner.duckdb"), "--runs-dir", str(tmp_path / "runs"), "--json",
                  env=vllm_env, timeout=600)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["cells_ok"] == 1
        time.sleep(3)  # two more scrapes after the load
    finally:
        watcher.send_signal(signal.SIGTERM)
        out, err = watcher.communicate(timeout=60)
    assert watcher.returncode == 0, err
    report = json.loads(out)
    assert report["stopped_by"] == "SIGTERM" and report["targets"][0]["failed_rounds"] == 0, report
    with store.session(tmp_path / "runner.duckdb", read_only=True) as con:
        cell = sql.frame(con, "SELECT * FROM cells").row(0, named=True)
        runner_pos = sql.frame(con, "SELECT acceptance FROM positions ORDER BY position")["acceptance"].to_list()
    got = _totals(db, "cpu")
    assert got["intervals"] >= 4 and got["resets"] == 0
    assert got["drafts"] == cell["drafts"] > 0
    assert got["draft_tokens"] == cell["draft_tokens"] and got["accepted_tokens"] == cell["accepted_tokens"]
    assert got["accepted_tokens"] / got["draft_tokens"] == pytest.approx(cell["acceptance_rate"], abs=1e-12)
    assert 1 + got["accepted_tokens"] / got["drafts"] == pytest.approx(cell["acceptance_length"], abs=1e-12)
    assert got["generation_tokens"] == cell["output_tokens"] == 16 * 48
    assert got["requests_ok"] == 16
    # per-position rates through the analysis windows equal the runner's
    from analysis.production.report import ProductionQuery, production_report
    from analysis.production.windows import TOO_FEW

    with store.session(db, read_only=True) as con:
        doc = production_report(con, ProductionQuery(window_s=1e9, decide=False))  # one window for it all
    (seg,) = doc["segments"]
    (win,) = seg["windows"]
    assert win["per_position"] == pytest.approx(runner_pos, abs=1e-6)
    assert win["acceptance_rate"] == pytest.approx(cell["acceptance_rate"], abs=1e-12)
    lo, hi = win["acceptance_rate_ci"]
    if win["interval"] == TOO_FEW:  # fewer than 3 drafting scrapes or 30 drafts: no interval, never a point
        assert (lo, hi) == (None, None)
    else:
        assert lo <= win["acceptance_rate"] <= hi
    after = _direct(server)
    assert after["drafts"] - before["drafts"] == cell["drafts"]


def test_prometheus_backfill_matches_the_direct_scrape(server: VllmServer, prometheus: str, tmp_path: Path) -> None:
    if "t" not in T0:  # run alone: make some traffic first
        T0["t"] = time.time()
        for _ in range(4):
            httpx.post(f"{server.base_url}/v1/completions", json={
                "model": server.model, "prompt": "a b c a b c a b", "max_tokens": 24, "temperature": 0,
                "ignore_eos": True}, timeout=120, trust_env=False)
    time.sleep(2.5)  # Prometheus scrapes every second: let it see the final counters
    direct = _direct(server)
    targets = tmp_path / "targets.toml"
    targets.write_text(f'[[target]]\nname = "prom"\nkind = "prometheus"\nurl = "{prometheus}"\n'
                       'selector = \'{job="vllm", deployment="cpu-ngram"}\'\nsegment = "cpu/code"\n'
                       'family = "TinyLlama"\nmethod = "ngram"\ngpu = "cpu"\nworkload = "code"\ntimeout_s = 30\n')
    db = tmp_path / "prom.duckdb"
    since, until = T0["t"] - 60, time.time()
    res = cli("ingest", "watch", str(targets), "--since", str(since), "--until", str(until), "--interval", "1",
              "--db", str(db), "--json", timeout=300)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["targets"][0]["failed_rounds"] == 0 and doc["added"]["watch_samples"] > 10, doc
    target = f"prom@127.0.0.1:{server.port}"
    with store.session(db, read_only=True) as con:
        last = sql.frame(con, "SELECT * FROM watch_samples WHERE target = ? ORDER BY ts DESC LIMIT 1", [target])
        pos = sql.frame(con, "SELECT position, accepted FROM watch_positions WHERE target = ? AND ts = ? "
                             "ORDER BY position", [target, last["ts"][0]])
        hist = sql.one(con, "SELECT count(DISTINCT metric) FROM watch_histograms WHERE target = ?", [target])[0]
    row = last.row(0, named=True)
    for key in ("drafts", "draft_tokens", "accepted_tokens", "generation_tokens", "requests_ok"):
        assert row[key] == direct[key], key
    assert pos["accepted"].to_list() == direct["per_pos"]
    assert row["depth"] == K, "depth read from the server's per-position counters"
    assert hist == 3
    got = _totals(db, target)
    assert got["resets"] == 0 and got["drafts"] > 0
    # a second backfill over the same range adds nothing
    again = cli("ingest", "watch", str(targets), "--since", str(since), "--until", str(until), "--interval", "1",
                "--db", str(db), "--json", timeout=300)
    assert json.loads(again.stdout)["added"]["watch_samples"] == 0
