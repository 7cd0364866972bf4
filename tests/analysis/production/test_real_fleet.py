"""Drift against a REAL vLLM 0.32 CPU server of a plain fleet: n-gram depth 3 with ``prompt_lookup_max`` 3 and
WITHOUT ``--per-request-spec-decode-metrics``. ``runner run --endpoint`` measures the benchmark cell from the
/metrics counters alone (no per-request acceptance, NaN acceptance replicates), ``ingest watch --once`` rounds
read production traffic into the same store, and ``analysis drift`` decides on it: no traceback, a band from the
counters, the measured lookup window in the recommended command, UTC offsets on every timestamp.
Needs ``SPECTUNE_VLLM_ENV`` (scripts/setup_vllm_cpu.sh); skipped only when it is unset.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from ingest import sql, store
from runner.vllm.server import VllmServer, env_from_setup
from tests.conftest import cli

pytestmark = pytest.mark.vllm
K = 3
LOOKUP = {"prompt_lookup_max": 3, "prompt_lookup_min": 2}
MATRIX = """
name = "plain-fleet"
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
                     num_speculative_tokens=K, speculative_extra=LOOKUP, per_request="off",
                     extra_flags=["--dtype", "float32", "--max-model-len", "1024", "--enforce-eager"],
                     command_template=vllm_env["SPECTUNE_VLLM_LAUNCH"],
                     env={**vllm_env, "VLLM_CPU_KVCACHE_SPACE": "1"})
    with srv:
        srv.wait_healthy(400)
        yield srv


def _traffic(server: VllmServer, n: int = 4) -> None:
    for i in range(n):
        r = httpx.post(f"{server.base_url}/v1/completions", json={
            "model": server.model, "prompt": f"def f{i}(x): return x + x + x + x + x", "max_tokens": 40,
            "temperature": 0, "ignore_eos": True}, timeout=120, trust_env=False)
        assert r.status_code == 200, r.text


@pytest.fixture(scope="module")
def fleet_store(server: VllmServer, vllm_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fleet")
    db = tmp / "fleet.duckdb"
    (tmp / "m.toml").write_text(MATRIX)
    run = cli("runner", "run", "--matrix", str(tmp / "m.toml"), "--backend", "vllm", "--endpoint", server.base_url,
              "--db", str(db), "--runs-dir", str(tmp / "runs"), "--json", env=vllm_env, timeout=600)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["cells_ok"] == 1
    targets = tmp / "targets.toml"
    targets.write_text(f'[[target]]\nname = "cpu"\nurl = "{server.base_url}/metrics"\nsegment = "cpu/code"\n'
                       f'family = "TinyLlama"\nmethod = "ngram"\ndepth = {K}\ngpu = "cpu"\nworkload = "code"\n'
                       'timeout_s = 10\n')
    for i in range(6):  # six watch rounds with production traffic between them
        if i:
            _traffic(server)
        res = cli("ingest", "watch", str(targets), "--once", "--db", str(db), timeout=120)
        assert res.returncode == 0, res.stderr
    return db


def test_the_benchmark_cell_is_counters_only_and_states_its_lookup_window(fleet_store: Path) -> None:
    with store.session(fleet_store, read_only=True) as con:
        cell = sql.frame(con, "SELECT * FROM cells").row(0, named=True)
        finite = sql.one(con, "SELECT count(*) FROM cell_bootstrap WHERE isfinite(acceptance_rate)")[0]
    assert cell["acceptance_source"] == "counters" and cell["drafts"] > 0 and 0 <= cell["acceptance_rate"] <= 1
    assert finite == 0, "a server without the per-request flag leaves nothing to resample"
    assert json.loads(cell["speculative_extra"]) == LOOKUP


def test_drift_on_the_plain_fleet_decides_and_recommends_what_was_measured(fleet_store: Path) -> None:
    res = cli("analysis", "drift", "--db", str(fleet_store), "--json")
    assert res.returncode in (0, 3), res.stderr  # 1 was the TypeError on the NaN band
    doc = json.loads(res.stdout)
    (seg,) = doc["segments"]
    assert seg["status"] in ("no_change", "acceptance_outside_band"), seg
    bench = seg["benchmark"]
    assert bench["band_source"] == "counters" and bench["provenance"] == "measured"
    assert bench["band"][0] <= bench["acceptance_rate"] <= bench["band"][1] and bench["band"][0] < bench["band"][1]
    assert (seg["status"] == "acceptance_outside_band") == bool(seg["outside_band"])
    assert (res.returncode == 3) == (seg["status"] == "acceptance_outside_band")
    rec = seg["recommendation"]
    config = json.loads(rec["vllm_args"].removeprefix("--speculative-config ").strip("'"))
    assert config == {"method": "ngram", "num_speculative_tokens": K, **LOOKUP}
    stamps = [doc["period"]["start"], doc["period"]["end"], *(w["window"] for w in seg["windows"])]
    assert all(datetime.fromisoformat(s).utcoffset().total_seconds() == 0 and s.endswith("+00:00") for s in stamps)
    text = cli("analysis", "drift", "--db", str(fleet_store))
    assert text.returncode == res.returncode and text.stdout.startswith("period ") and " UTC → " in text.stdout
    if seg["status"] == "acceptance_outside_band":  # the pick holds: its command, as measured, is printed
        assert "ACCEPTANCE OUTSIDE BAND" in text.stdout and '"prompt_lookup_max":3' in text.stdout
