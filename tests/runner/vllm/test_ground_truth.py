"""Ground truth for the acceptance pipeline, on the REAL vLLM 0.32 CPU server, through ``runner run``.

- A target drafting for itself (``draft_model`` with the target's own path) accepts every draft under greedy
  sampling: acceptance rate 1.0, length k + 1, every per-position rate 1.0 — per request and per cell, at
  depths 1 and 3.
- A depth schedule per batch size (``schedule`` under the method, vLLM's num_speculative_tokens_per_batch_size)
  runs as a server config: at concurrency 1 the schedule's K for batch size 1 (1) is what vLLM drafts, not the
  server's num_speculative_tokens (3).
- An independent random drafter (the same tiny model shape with another seed) is accepted almost never.
- Per-request sums agree with the /metrics counter deltas in every cell (``acceptance_suspect`` stays null).

Needs ``scripts/setup_vllm_cpu.sh DIR`` and ``SPECTUNE_VLLM_ENV=DIR``; skipped only when that variable is unset.
Four server starts (three in one run), few requests with short outputs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ingest import sql, store
from runner.vllm.server import env_from_setup
from tests.conftest import cli
from tests.runner.procs import wait_gone

pytestmark = pytest.mark.vllm
REQUESTS = 4
MAX_TOKENS = 16


@pytest.fixture(scope="module")
def vllm_env() -> dict[str, str]:
    env_dir = os.environ.get("SPECTUNE_VLLM_ENV")
    if not env_dir:
        pytest.skip("SPECTUNE_VLLM_ENV is unset (run scripts/setup_vllm_cpu.sh DIR, then set it to DIR)")
    env = env_from_setup(env_dir)
    if "SPECTUNE_VLLM_DRAFT_MODEL" not in env:
        pytest.fail(f"{env_dir}/env.sh has no SPECTUNE_VLLM_DRAFT_MODEL: rerun scripts/setup_vllm_cpu.sh {env_dir}")
    return env


def matrix(tmp: Path, drafter: str, method: str) -> Path:
    path = tmp / "m.toml"
    path.write_text(f"""
name = "ground-truth"
gpus = ["cpu"]

[methods.draft_model]
{method}

[families.Tiny]
model = "${{SPECTUNE_VLLM_MODEL}}"
vllm_args = ["--dtype", "float32", "--max-model-len", "512", "--enforce-eager"]
draft_models = {{ draft_model = "{drafter}" }}

[workloads.code]
max_tokens = {MAX_TOKENS}

[load]
concurrency = [1]

[run]
requests_per_cell = {REQUESTS}
warmup_requests = 1
per_request_spec_decode = "detailed"
launch = "${{SPECTUNE_VLLM_LAUNCH}}"
startup_timeout_s = 400
request_timeout_s = 120
stall_timeout_s = 60
env = {{ VLLM_CPU_KVCACHE_SPACE = "1" }}
""")
    return path


def run(tmp: Path, env: dict[str, str], path: Path) -> tuple[dict, list[dict], dict[str, list], dict[str, list]]:
    res = cli("runner", "run", "--matrix", str(path), "--backend", "vllm", "--db", str(tmp / "s.duckdb"),
              "--runs-dir", str(tmp / "runs"), "--json", env=env, timeout=1500)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    with store.session(tmp / "s.duckdb", read_only=True) as con:
        cells = sql.frame(con, "SELECT * FROM cells ORDER BY depth, schedule NULLS FIRST").to_dicts()
        reqs = {c["cell_id"]: sql.frame(con, "SELECT * FROM requests WHERE cell_id = ? ORDER BY request_index",
                                        [c["cell_id"]]).to_dicts() for c in cells}
        pos = {c["cell_id"]: sql.frame(con, "SELECT * FROM positions WHERE cell_id = ? ORDER BY position",
                                       [c["cell_id"]]).to_dicts() for c in cells}
    assert wait_gone(tmp / "runs") == []
    return summary, cells, reqs, pos


def assert_agrees_with_counters(cell: dict) -> None:
    assert cell["acceptance_source"] == "per-request"
    assert cell["acceptance_checked"] is True and cell["acceptance_suspect"] is None, cell["acceptance_suspect"]
    assert cell["drafts"] == cell["counter_drafts"] > 0
    assert cell["draft_tokens"] == cell["counter_draft_tokens"]
    assert cell["accepted_tokens"] == cell["counter_accepted_tokens"]


def test_a_self_drafting_target_accepts_everything_and_a_schedule_runs(vllm_env: dict[str, str],
                                                                      tmp_path: Path) -> None:
    target = vllm_env["SPECTUNE_VLLM_MODEL"]
    path = matrix(tmp_path, target, "depths = [1, 3]\nschedule = [[1, 1, 1], [2, 256, 3]]")
    summary, cells, reqs, pos = run(tmp_path, vllm_env, path)
    assert (summary["cells_ok"], summary["cells_failed"]) == (3, 0), summary["failures"]
    static = [c for c in cells if c["schedule"] is None]
    assert [c["depth"] for c in static] == [1, 3]
    for cell in static:
        k = cell["depth"]
        assert cell["acceptance_rate"] == 1.0 and cell["acceptance_length"] == k + 1.0
        assert [p["acceptance"] for p in pos[cell["cell_id"]]] == [1.0] * k
        assert all(p["ci_low"] == p["ci_high"] == 1.0 for p in pos[cell["cell_id"]])
        assert_agrees_with_counters(cell)
        assert len(reqs[cell["cell_id"]]) == REQUESTS
        for r in reqs[cell["cell_id"]]:
            assert r["ok"] and r["output_tokens"] == MAX_TOKENS
            assert r["spec_steps"] > 0 and r["drafted_tokens"] == k * r["spec_steps"]
            assert r["accepted_tokens"] == r["drafted_tokens"], "a self-drafting target accepts every draft"
            assert r["accepted_per_pos"] == [r["spec_steps"]] * k  # every position accepted at every step
            assert r["step_accepted"] == r["step_drafted"] == [k] * r["spec_steps"]
    sched = next(c for c in cells if c["schedule"] is not None)
    assert json.loads(sched["schedule"]) == [[1, 1, 1], [2, 256, 3]] and sched["depth"] == 3
    assert sched["cell_id"] not in {c["cell_id"] for c in static}
    # concurrency 1 = batch size 1: vLLM drafts the schedule's K = 1 per step, of the server's 3
    for r in reqs[sched["cell_id"]]:
        assert r["step_drafted"] == [1] * r["spec_steps"] and r["accepted_tokens"] == r["spec_steps"]
    assert sched["acceptance_rate"] == 1.0 and sched["acceptance_length"] == 2.0
    assert [p["acceptance"] for p in pos[sched["cell_id"]]] == [1.0, 0.0, 0.0]
    assert_agrees_with_counters(sched)
    logs = {p.name: p.read_text() for p in (tmp_path / "runs").glob("*/*.log")}
    sched_log = next(text for name, text in logs.items() if "schedule" in name)
    assert '"num_speculative_tokens_per_batch_size":[[1,1,1],[2,256,3]]' in sched_log
    assert all("--per-request-spec-decode-metrics detailed" in text for text in logs.values())


def test_an_independent_random_drafter_is_almost_never_accepted(vllm_env: dict[str, str], tmp_path: Path) -> None:
    path = matrix(tmp_path, vllm_env["SPECTUNE_VLLM_DRAFT_MODEL"], "depths = [3]")
    summary, cells, reqs, pos = run(tmp_path, vllm_env, path)
    assert (summary["cells_ok"], summary["cells_failed"]) == (1, 0), summary["failures"]
    cell = cells[0]
    assert cell["acceptance_rate"] < 0.05 and cell["acceptance_length"] < 1.15
    assert_agrees_with_counters(cell)
    drafted = sum(r["drafted_tokens"] for r in reqs[cell["cell_id"]])
    assert drafted == cell["draft_tokens"] > 0
    assert all(p["acceptance"] < 0.05 for p in pos[cell["cell_id"]])
