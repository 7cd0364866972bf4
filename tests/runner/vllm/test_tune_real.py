"""`spectune tune` on the REAL vLLM 0.32 CPU server over the shipped tune matrix (runner/matrices/cpu-tune.toml:
n-gram, the self-drafting draft_model at depth 1 and its depth-schedule arm, loads 1 and 2). The tune is SIGKILLed
once its first server config's cells landed and a second server is up, then resumed: it completes with a winner and
a deploy command per group, no cell or request twice, the orphaned server reaped and none left behind. The schedule
arm is measured for real: it drafts its batch size's K (3 at concurrency 1, 1 at concurrency 2) with every draft
accepted (the target drafting for itself).

Needs ``scripts/setup_vllm_cpu.sh DIR`` and ``SPECTUNE_VLLM_ENV=DIR``; skipped only when that variable is unset.
The matrix's 6 requests per cell are below tune's per-round floor, so one round measures every cell in full: three
server configs, plus the restart of the one the kill interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ingest import sql, store
from runner.matrix import load_matrix
from runner.vllm.pidfile import group_alive
from runner.vllm.server import env_from_setup
from tests.conftest import REPO, cli
from tests.runner.procs import wait_gone

pytestmark = pytest.mark.vllm
MATRIX = REPO / "runner" / "matrices" / "cpu-tune.toml"


def _second_server(runs: Path, tune: subprocess.Popen, deadline: float) -> dict:
    """The pid record of the second server config the tune starts (the first one's cells have landed by then)."""
    while time.monotonic() < deadline and tune.poll() is None:
        logs = sorted(runs.glob("*/*.log"), key=lambda p: p.stat().st_mtime)
        if len(logs) >= 2:
            pid_file = logs[1].with_suffix(".pid")
            try:
                return json.loads(pid_file.read_text())
            except (OSError, ValueError):  # not written yet (or half written)
                pass
        time.sleep(0.2)
    raise AssertionError(f"no second server started (tune exit {tune.poll()})")


def test_tune_on_real_vllm_resumes_after_sigkill_and_measures_its_schedule_arm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_dir = os.environ.get("SPECTUNE_VLLM_ENV")
    if not env_dir:
        pytest.skip("SPECTUNE_VLLM_ENV is unset (run scripts/setup_vllm_cpu.sh DIR, then set it to DIR)")
    env = env_from_setup(env_dir)
    db, runs = tmp_path / "s.duckdb", tmp_path / "runs"  # runs: the store's folder's runs/ (runner.execute)
    args = ["spectune", "tune", "--matrix", str(MATRIX), "--backend", "vllm", "--db", str(db), "--json"]
    tune = subprocess.Popen([sys.executable, "-m", *args], cwd=REPO, env={**os.environ, **env, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        record = _second_server(runs, tune, time.monotonic() + 600)
    finally:
        tune.send_signal(signal.SIGKILL)
        tune.wait()
    assert tune.returncode == -signal.SIGKILL
    assert group_alive(record["pgid"]), "the server outlives a SIGKILLed tune (own session) until resumed"
    with store.session(db, read_only=True) as con:
        landed = sql.frame(con, "SELECT run_id, cell_id, written_at FROM cells").rows()
    assert len(landed) == 2, "the first server config's two loads landed, nothing of the interrupted one"

    res = cli(*args, "--resume", env=env, timeout=1500)
    assert res.returncode == 0, res.stderr
    assert not group_alive(record["pgid"]), "resume reaped the orphaned server"
    assert wait_gone(runs) == []  # every server stopped, its process group gone
    doc = json.loads(res.stdout)
    assert doc["tune_id"] == landed[0][0].rsplit("-r", 1)[0], "resume continued the killed tune"
    assert [r["run_id"] for r in doc["round_log"]] == [landed[0][0]] and doc["round_log"][0]["cells_failed"] == 0
    assert sorted(g["concurrency"] for g in doc["groups"]) == [1, 2]
    for g in doc["groups"]:
        assert g["candidates"] == 3 and g["winner"]["method"] in ("ngram", "draft_model"), g
        assert g["pick"]["deploy"]["command"].startswith("vllm serve ") and g["verdict"], g
        assert "--speculative-config" in g["pick"]["deploy"]["command"], g

    with store.session(db, read_only=True) as con:
        cells = sql.frame(con, "SELECT * FROM cells ORDER BY method, mode, concurrency").to_dicts()
        dup_cells = sql.one(con, "SELECT count(*) - count(DISTINCT (run_id, cell_id)) FROM cells")[0]
        dup_reqs = sql.one(con, "SELECT count(*) - count(DISTINCT (run_id, cell_id, request_index)) FROM requests")[0]
        steps = {c["cell_id"]: sql.frame(con, "SELECT step_drafted, accepted_tokens, drafted_tokens FROM requests "
                                              "WHERE cell_id = ?", [c["cell_id"]]).to_dicts() for c in cells}
    assert (dup_cells, dup_reqs) == (0, 0)
    assert {(r, c, w) for r, c, w in landed} <= {(c["run_id"], c["cell_id"], c["written_at"]) for c in cells}, \
        "the cells landed before the kill were not measured again"
    assert [(c["method"], c["mode"], c["concurrency"], c["status"]) for c in cells] == [
        ("draft_model", "fixed", 1, "ok"), ("draft_model", "fixed", 2, "ok"), ("draft_model", "schedule", 1, "ok"),
        ("draft_model", "schedule", 2, "ok"), ("ngram", "fixed", 1, "ok"), ("ngram", "fixed", 2, "ok")]
    assert all(c["n_requests"] == 6 for c in cells), "one round of the matrix's 6 requests, never more"
    for name in ("SPECTUNE_VLLM_MODEL", "SPECTUNE_VLLM_LAUNCH"):  # the matrix reads them, as the tune did
        monkeypatch.setenv(name, env[name])
    assert {c["cell_id"] for c in cells} == {k.cell_id for k in load_matrix(MATRIX).cells()}
    # three server configs, each with its own log in the round's run folder and one start serving both loads; the
    # config the kill interrupted started once more (a log line `$ <launch command>` per start)
    starts = {p.name: p.read_text().count("\n$ ") + p.read_text().startswith("$ ") for p in runs.glob("*/*.log")}
    assert len(starts) == 3 and sum(starts.values()) == 4, starts
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
