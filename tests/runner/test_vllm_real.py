"""The runner against a REAL vLLM 0.32 server on this CPU (tiny random Llama), through the command line.

Needs ``scripts/setup_vllm_cpu.sh DIR`` and ``SPECTUNE_VLLM_ENV=DIR``; skipped only when that variable
is unset. Covers: the cpu-smoke matrix end to end (ngram acceptance counters, none without, ordered
latencies, rows in the store, no server left), a model folder vLLM cannot load (its reason kept), and SIGKILL of
the runner during a real vLLM cell followed by --resume. Four server starts in all (~35 s each),
one of them failing fast.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ingest import sql, store
from runner.vllm.pidfile import group_alive
from runner.vllm.server import env_from_setup
from tests.conftest import REPO, cli
from tests.runner.procs import wait_gone

pytestmark = pytest.mark.vllm
SMOKE = REPO / "runner" / "matrices" / "cpu-smoke.toml"


@pytest.fixture(scope="module")
def vllm_env() -> dict[str, str]:
    env_dir = os.environ.get("SPECTUNE_VLLM_ENV")
    if not env_dir:
        pytest.skip("SPECTUNE_VLLM_ENV is unset (run scripts/setup_vllm_cpu.sh DIR, then set it to DIR)")
    return env_from_setup(env_dir)


def runner_cli(tmp: Path, env: dict[str, str], matrix: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli("runner", "run", "--matrix", str(matrix), "--backend", "vllm", "--db", str(tmp / "s.duckdb"),
               "--runs-dir", str(tmp / "runs"), *extra, env=env, timeout=900)


def test_cpu_smoke_matrix_against_real_vllm(vllm_env: dict[str, str], tmp_path: Path) -> None:
    plan = cli("runner", "plan", "--matrix", str(SMOKE), "--json", env=vllm_env)
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["cells"] == 2
    res = runner_cli(tmp_path, vllm_env, SMOKE, "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert (summary["cells_ok"], summary["cells_failed"]) == (2, 0), summary["failures"]
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        cells = {r["method"]: r for r in sql.frame(con, "SELECT * FROM cells").iter_rows(named=True)}
        n_req = sql.one(con, "SELECT count(*) FROM requests WHERE ok")[0]
        run = sql.frame(con, "SELECT * FROM runs").row(0, named=True)
        positions = sql.frame(con, "SELECT position, acceptance, ci_low, ci_high FROM positions ORDER BY position")
        req_sums = sql.frame(con, "SELECT sum(q.drafted_tokens) AS drafted, sum(q.accepted_tokens) AS accepted, "
                                  "count(q.spec_steps) AS with_metrics FROM requests q JOIN cells c "
                                  "USING (run_id, cell_id) WHERE c.method = 'ngram'").row(0, named=True)
        none_spec_rows = sql.one(con, "SELECT count(q.spec_steps) FROM requests q JOIN cells c USING (run_id, cell_id) "
                                      "WHERE c.method = 'none'")[0]
    ngram, none = cells["ngram"], cells["none"]
    assert ngram["drafts"] > 0 and ngram["draft_tokens"] > 0 and ngram["accepted_tokens"] > 0
    assert 0 < ngram["acceptance_rate"] <= 1 and 1 < ngram["acceptance_length"] <= 1 + 3
    assert positions.height == 3 and positions["acceptance"].is_sorted(descending=True)
    assert none["drafts"] is None and none["acceptance_rate"] is None
    for c in (ngram, none):
        assert c["status"] == "ok" and c["n_requests"] == 20 and c["n_failed"] == 0
        assert c["output_tokens"] == 20 * 48  # ignore_eos: exactly max_tokens each
        assert c["output_throughput"] > 0 and c["gpu_count"] == 1
        for m in ("ttft_ms", "tpot_ms", "e2e_ms"):
            assert 0 < c[f"p50_{m}"] <= c[f"p90_{m}"] <= c[f"p99_{m}"], m
    assert n_req == 40
    assert run["backend"] == "vllm" and run["gpu_model"] == "cpu" and run["engine_version"] == "vllm 0.32.0"
    logs = sorted(p.name for p in (tmp_path / "runs").glob("*/*.log"))
    assert logs == ["TinyLlama_ngram_3_cpu.log", "TinyLlama_none_cpu.log"]
    # ngram: acceptance from vLLM's per-request metrics, whose sums equal the /metrics counter deltas exactly
    assert ngram["acceptance_source"] == "per-request" and ngram["acceptance_checked"] is True
    assert ngram["acceptance_suspect"] is None, ngram["acceptance_suspect"]
    assert ngram["drafts"] == ngram["counter_drafts"] > 0 and ngram["draft_tokens"] == ngram["counter_draft_tokens"]
    assert ngram["accepted_tokens"] == ngram["counter_accepted_tokens"] > 0
    assert (req_sums["drafted"], req_sums["accepted"]) == (ngram["draft_tokens"], ngram["accepted_tokens"])
    assert req_sums["with_metrics"] == 20
    assert positions["ci_low"].is_not_null().all() and (positions["ci_low"] <= positions["acceptance"]).all()
    # none: no acceptance at all, and the server never got the per-request flag (vLLM refuses it there)
    assert none["acceptance_source"] is None and none["accepted_tokens"] is None and none["counter_drafts"] is None
    assert none_spec_rows == 0
    run_logs = {p.name: p.read_text() for p in (tmp_path / "runs").glob("*/*.log")}
    assert "--per-request-spec-decode-metrics" not in run_logs["TinyLlama_none_cpu.log"]
    assert "--per-request-spec-decode-metrics summary" in run_logs["TinyLlama_ngram_3_cpu.log"]
    assert wait_gone(tmp_path / "runs") == []


def test_a_model_folder_vllm_cannot_load_fails_the_cell_with_the_reason(vllm_env: dict[str, str],
                                                                          tmp_path: Path) -> None:
    # A path that does not exist is refused before any start (tests/runner/test_vllm_preflight.py); a folder
    # that exists but holds no model gets through to vLLM, which must fail the cell with its own reason.
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    bad = tmp_path / "bad.toml"
    text = SMOKE.read_text().replace('model = "${SPECTUNE_VLLM_MODEL}"', f'model = "{not_a_model}"')
    bad.write_text(text.replace("[methods.ngram]\ndepths = [3]", "").replace("extra = {", "# extra = {"))
    t0 = time.monotonic()
    res = runner_cli(tmp_path, vllm_env, bad, "--json")
    assert time.monotonic() - t0 < 180
    assert res.returncode == 4, res.stderr  # NO_CELL_SUCCEEDED: the run's only cell failed (README exit codes)
    summary = json.loads(res.stdout)
    assert (summary["cells_ok"], summary["cells_failed"]) == (0, 1)
    err = summary["failures"][0]["error"]
    # the reason is vLLM's own exception line (a multi-line pydantic message, joined), then where the log is
    assert err.startswith("server start failed: server exited with code 1 before becoming healthy: "), err
    assert "Invalid repository ID or local directory specified" in err and str(not_a_model) in err, err
    log = next((tmp_path / "runs").glob("*/TinyLlama_none_cpu.log"))
    assert err.endswith(f"(log: {log})") and "\n" not in err and "File \"" not in err, err
    assert wait_gone(tmp_path / "runs") == []


def _requests_done(port: int) -> float:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return sum(float(m) for m in re.findall(r"^vllm:request_success_total\{[^}]*\} (\S+)$", text, re.M))


def test_sigkill_during_a_real_vllm_cell_then_resume(vllm_env: dict[str, str], tmp_path: Path) -> None:
    # One server config, two loads: the first cell finishes, the runner dies during the second. The second
    # load runs one request at a time so the kill lands well inside it even on a slow, busy machine (the
    # server's /metrics can take 2 s to answer while it decodes on two cores).
    per_cell = 30
    matrix = tmp_path / "kill.toml"
    text = SMOKE.read_text().replace("[methods.none]\n", "").replace("concurrency = [2]", "concurrency = [2, 1]")
    matrix.write_text(text.replace("requests_per_cell = 20", f"requests_per_cell = {per_cell}"))
    env = {**os.environ, **vllm_env, "PYTHONPATH": str(REPO)}
    runner = subprocess.Popen([sys.executable, "-m", "runner", "run", "--matrix", str(matrix), "--backend", "vllm",
                               "--db", str(tmp_path / "s.duckdb"), "--runs-dir", str(tmp_path / "runs"),
                               "--run-id", "K", "--json"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    done = 0.0
    try:
        pid_file = tmp_path / "runs" / "K" / "TinyLlama_ngram_3_cpu.pid"
        deadline = time.monotonic() + 400
        while not pid_file.exists() and time.monotonic() < deadline and runner.poll() is None:
            time.sleep(0.2)
        record = json.loads(pid_file.read_text())
        # warm-up (2) + the first cell + a couple of requests of the second cell, then kill at once
        while time.monotonic() < deadline and runner.poll() is None:
            try:
                done = _requests_done(record["port"])
            except httpx.HTTPError:
                continue
            if done >= 2 + per_cell + 2:
                break
            time.sleep(0.05)
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    assert done < 2 + 2 * per_cell, "the second cell must still have been running when the runner was killed"
    assert group_alive(record["pgid"]), "the server outlives a SIGKILLed runner (own session) until resumed"
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        landed = sql.frame(con, "SELECT concurrency, written_at FROM cells").rows()
    assert [c for c, _ in landed] == [2], "the finished cell landed, the interrupted one left nothing"
    res = runner_cli(tmp_path, vllm_env, matrix, "--run-id", "K", "--resume", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert (summary["cells_ok"], summary["cells_skipped"], summary["cells_failed"]) == (1, 1, 0)
    assert not group_alive(record["pgid"]), "resume reaped the orphaned server"
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        after = dict(sql.frame(con, "SELECT concurrency, written_at FROM cells").rows())
        dupes = sql.one(con, "SELECT count(*) - count(DISTINCT (cell_id, request_index)) FROM requests")[0]
        n = sql.one(con, "SELECT count(*) FROM requests")[0]
        accepted = sql.one(con, "SELECT min(accepted_tokens) FROM cells")[0]
    assert after[2] == landed[0][1], "the finished cell was not rerun"
    assert set(after) == {2, 1} and dupes == 0 and n == 2 * per_cell and accepted > 0
    assert wait_gone(tmp_path / "runs") == []
