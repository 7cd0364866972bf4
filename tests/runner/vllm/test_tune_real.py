"""The shipped tune matrix (runner/matrices/cpu-tune.toml) on the REAL vLLM 0.32 CPU server, as written:
`spectune run --backend vllm` measures every arm — n-gram, the self-drafting draft_model at depth 1, and its depth
schedule — and the schedule arm drafts its batch size's K (3 at concurrency 1, 1 at concurrency 2) with every
draft accepted (the target drafting for itself). No server is left behind.

Needs ``scripts/setup_vllm_cpu.sh DIR`` and ``SPECTUNE_VLLM_ENV=DIR``; skipped only when that variable is unset.
Three server starts, six 16-token requests per cell.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ingest import sql, store
from runner.matrix import load_matrix
from runner.vllm.server import env_from_setup
from tests.conftest import REPO, cli
from tests.runner.procs import wait_gone

pytestmark = pytest.mark.vllm
MATRIX = REPO / "runner" / "matrices" / "cpu-tune.toml"


def test_the_tune_matrix_measures_its_schedule_arm_for_real(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    env_dir = os.environ.get("SPECTUNE_VLLM_ENV")
    if not env_dir:
        pytest.skip("SPECTUNE_VLLM_ENV is unset (run scripts/setup_vllm_cpu.sh DIR, then set it to DIR)")
    env = env_from_setup(env_dir)
    db, runs = tmp_path / "s.duckdb", tmp_path / "runs"
    res = cli("spectune", "run", "--matrix", str(MATRIX), "--backend", "vllm", "--db", str(db), "--runs-dir",
              str(runs), "--json", env=env, timeout=1500)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert (summary["cells_ok"], summary["cells_failed"]) == (6, 0), summary.get("failures")
    assert wait_gone(runs) == []  # every server stopped, its process group gone
    with store.session(db, read_only=True) as con:
        cells = sql.frame(con, "SELECT * FROM cells ORDER BY method, mode, concurrency").to_dicts()
        steps = {c["cell_id"]: sql.frame(con, "SELECT step_drafted, accepted_tokens, drafted_tokens FROM requests "
                                              "WHERE cell_id = ?", [c["cell_id"]]).to_dicts() for c in cells}
    assert [(c["method"], c["mode"], c["concurrency"]) for c in cells] == [
        ("draft_model", "fixed", 1), ("draft_model", "fixed", 2), ("draft_model", "schedule", 1),
        ("draft_model", "schedule", 2), ("ngram", "fixed", 1), ("ngram", "fixed", 2)]
    for name in ("SPECTUNE_VLLM_MODEL", "SPECTUNE_VLLM_LAUNCH"):  # the matrix reads them, as the run did
        monkeypatch.setenv(name, env[name])
    assert {c["cell_id"] for c in cells} == {k.cell_id for k in load_matrix(MATRIX).cells()}
    sched = [c for c in cells if c["mode"] == "schedule"]
    for cell, k in zip(sched, (3, 1), strict=True):
        assert json.loads(cell["schedule"]) == [[1, 1, 3], [2, 256, 1]] and cell["depth"] == 3
        assert cell["acceptance_rate"] == 1.0  # the target drafting for itself: every draft accepted
        drafted = [s for r in steps[cell["cell_id"]] for s in r["step_drafted"]]
        assert all(r["accepted_tokens"] == r["drafted_tokens"] for r in steps[cell["cell_id"]])
        if k == 3:  # batch size 1 throughout: the schedule's K for 1
            assert set(drafted) == {3}
        else:  # batch size 2 while both slots are busy (1, and so K = 3, only as the cell winds down)
            assert drafted.count(1) > len(drafted) / 2
