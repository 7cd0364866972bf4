"""``python -m runner run --backend vllm`` as a user runs it, against stand-in server processes: the
progress display and summary line, --json, --resume/--retry-failed, --endpoint, bad workload files,
and SIGKILL of the runner mid-cell followed by --resume (no duplicates, no rerun, no orphan server)."""

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
from runner.vllm.server import free_port
from tests.conftest import REPO, cli
from tests.runner.procs import wait_gone
from tests.runner.test_vllm_backend import FAKE, write_matrix


def run_cli(tmp: Path, matrix: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return cli("runner", "run", "--matrix", str(matrix), "--backend", "vllm", "--db", str(tmp / "s.duckdb"),
               "--runs-dir", str(tmp / "runs"), *extra, env=env, timeout=300)


def statuses(db: Path) -> dict[str, tuple[str, object]]:
    with store.session(db, read_only=True) as con:
        rows = sql.frame(con, "SELECT model, status, written_at FROM cells").rows()
    return {m: (s, w) for m, s, w in rows}


def start_slow_run(tmp: Path, run_id: str, **popen: object) -> tuple[subprocess.Popen, dict, Path]:
    """A runner on the ok + slow fake servers, returned (with the slow server's pid record and the matrix) once the
    slow server is up and its cell under way."""
    path = write_matrix(tmp, ["ok", "slow"], methods="[methods.none]", requests=8)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runner = subprocess.Popen([sys.executable, "-m", "runner", "run", "--matrix", str(path), "--backend", "vllm",
                               "--db", str(tmp / "s.duckdb"), "--runs-dir", str(tmp / "runs"), "--run-id", run_id,
                               "--json"], cwd=REPO, env=env, **popen)  # type: ignore[call-overload]
    pid_file = tmp / "runs" / run_id / "slow_none_cpu.pid"
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    record = json.loads(pid_file.read_text())
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{record['port']}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    return runner, record, path


def test_progress_display_and_summary_line_then_json_is_quiet(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["ok"])
    shown = run_cli(tmp_path, path, "--run-id", "A")
    assert shown.returncode == 0, shown.stderr
    assert "ok/ngram:3@cpu" in shown.stderr and "2/2" in shown.stderr and "cells" in shown.stderr
    assert re.fullmatch(r"run A: 2 ok, 0 failed, 0 skipped \(already in the store\) in \d+ s; "
                        rf"server logs: {re.escape(str(tmp_path / 'runs' / 'A'))}", shown.stdout.strip()), shown.stdout
    quiet = run_cli(tmp_path, path, "--run-id", "B", "--json")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert json.loads(quiet.stdout) == {"run_id": "B", "cells_ok": 2, "cells_failed": 0, "cells_skipped": 0,
                                        "failures": []}


def test_resume_skips_done_cells_and_retry_failed_reruns_failures(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["ok", "flaky"], methods="[methods.none]")
    first = run_cli(tmp_path, path, "--json", env={"FAKE_VLLM_FAIL": "1"})
    summary = json.loads(first.stdout)
    assert (summary["cells_ok"], summary["cells_failed"]) == (1, 1)
    before = statuses(tmp_path / "s.duckdb")
    assert before["flaky"][0] == "failed"
    again = json.loads(run_cli(tmp_path, path, "--resume", "--json").stdout)
    assert again["run_id"] == summary["run_id"] and again["cells_skipped"] == 2 and again["cells_ok"] == 0
    retry = json.loads(run_cli(tmp_path, path, "--retry-failed", "--json").stdout)
    assert retry["run_id"] == summary["run_id"]
    assert (retry["cells_ok"], retry["cells_failed"], retry["cells_skipped"]) == (1, 0, 1)
    after = statuses(tmp_path / "s.duckdb")
    assert after["flaky"][0] == "ok" and after["ok"] == before["ok"]  # the good cell was not rerun


def test_endpoint_attaches_to_a_running_server(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(FAKE), "--model", "served-name", "--port", str(port),
                             "--speculative-config", '{"method":"ngram","num_speculative_tokens":2}'],
                            cwd=tmp_path, start_new_session=True, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        one = write_matrix(tmp_path, ["ok"], methods="[methods.ngram]\ndepths = [2]", name="one")
        res = run_cli(tmp_path, one, "--endpoint", f"http://127.0.0.1:{port}", "--json")
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["cells_ok"] == 1
        with store.session(tmp_path / "s.duckdb", read_only=True) as con:
            rate, engine, notes = sql.one(con, "SELECT c.acceptance_rate, r.engine_version, r.notes FROM cells c "
                                               "JOIN runs r USING (run_id)")
        assert rate == 0.5 and engine == "vllm 0.0.0-fake" and f"attached to http://127.0.0.1:{port}" in notes
        two = write_matrix(tmp_path, ["ok"], name="two")
        bad = run_cli(tmp_path, two, "--endpoint", f"http://127.0.0.1:{port}", "--db", str(tmp_path / "x.duckdb"))
        assert bad.returncode == 2
        assert bad.stderr.strip() == ("error: --endpoint attaches to one running server, but the matrix has 2 "
                                      "server configs")
        assert not (tmp_path / "x.duckdb").exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_bad_workload_file_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"prompt": "fine"}\n{"prompt": 3}\n')
    path = write_matrix(tmp_path, ["ok"])
    path.write_text(path.read_text().replace("[workloads.code]", '[workloads.code]\nsource = "bad.jsonl"'))
    res = run_cli(tmp_path, path)
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: {tmp_path / 'bad.jsonl'}:2: expected a non-empty string field 'prompt'"
    assert not (tmp_path / "s.duckdb").exists()
    assert wait_gone(tmp_path) == []


def test_sigkill_mid_cell_then_resume(tmp_path: Path) -> None:
    runner, record, path = start_slow_run(tmp_path, "R", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    os.killpg(record["pgid"], 0)  # the server outlived its runner (own session): an orphan, for now
    first = statuses(tmp_path / "s.duckdb")
    assert set(first) == {"ok"}, "exactly the finished cell landed; the killed one left nothing"
    res = run_cli(tmp_path, path, "--run-id", "R", "--resume", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert (summary["cells_ok"], summary["cells_skipped"], summary["cells_failed"]) == (1, 1, 0)
    after = statuses(tmp_path / "s.duckdb")
    assert after["ok"] == first["ok"] and after["slow"][0] == "ok"
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        assert sql.one(con, "SELECT count(*), count(DISTINCT (cell_id, request_index)) FROM requests") == (16, 16)
    assert wait_gone(tmp_path / "runs") == []
    from runner.vllm.pidfile import group_alive

    assert not group_alive(record["pgid"]), "the orphan from the killed runner was reaped"
    assert not list((tmp_path / "runs" / "R").glob("*.pid"))


def test_failures_are_listed_with_their_reason_and_resume_says_what_it_skipped(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["ok", "exit"], methods="[methods.none]")
    first = run_cli(tmp_path, path, "--run-id", "F")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith("run F: 1 ok, 1 failed, 0 skipped (already in the store) in ")
    log = tmp_path / "runs" / "F" / "exit_none_cpu.log"
    assert lines[1:] == [f"  failed exit/none@cpu code c=2: server start failed: server exited with code 1 before "
                         f"becoming healthy: ValueError: model path does not exist: exit (log: {log})"]
    again = run_cli(tmp_path, path, "--resume")
    assert again.stdout.startswith("run F: 0 ok, 0 failed, 2 skipped (already in the store; 1 of them failed "
                                   "earlier: --retry-failed runs them again) in ")


def test_resume_of_an_edited_matrix_says_it_starts_a_new_run(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["ok"], methods="[methods.none]")
    assert run_cli(tmp_path, path, "--run-id", "old-run", "--json").returncode == 0
    path.write_text(path.read_text().replace("requests_per_cell = 6", "requests_per_cell = 4"))
    res = run_cli(tmp_path, path, "--resume", "--json")
    assert res.returncode == 0, res.stderr
    new = json.loads(res.stdout)["run_id"]
    assert new != "old-run" and new.startswith("fake-vllm-")
    assert res.stderr.strip() == (f"note: --resume: {path} changed since run old-run (runs resume only an identical "
                                  f"matrix file), so this is a new run {new}; to add to old-run anyway, pass "
                                  f"--run-id old-run --resume")
    other = write_matrix(tmp_path, ["ok"], methods="[methods.none]", name="other")
    res = run_cli(tmp_path, other, "--resume", "--json")
    new = json.loads(res.stdout)["run_id"]
    assert res.stderr.strip() == (f"note: --resume: no earlier vllm run of {other} in {tmp_path / 's.duckdb'}; "
                                  f"starting a new run {new}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_mid_cell_stops_the_server_keeps_the_store_and_says_how_to_resume(tmp_path: Path,
                                                                                   sig: signal.Signals) -> None:
    """Ctrl-C, `kill`/`timeout` (SIGTERM) and a closed terminal (SIGHUP) all take the server's process group
    down (it runs in its own session, so nothing else would), land no half cell, and print the resume line."""
    runner, record, path = start_slow_run(tmp_path, "S", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pid_file = tmp_path / "runs" / "S" / "slow_none_cpu.pid"
    time.sleep(0.5)
    runner.send_signal(sig)
    out, err = runner.communicate(timeout=60)
    from runner.vllm.pidfile import group_alive

    assert runner.returncode == 128 + sig, err
    assert out == "" and "Traceback" not in err
    why = "interrupted" if sig == signal.SIGINT else sig.name
    assert err.strip() == (f"error: {why}: run S stopped after 1 cell(s) this time, every server stopped, finished "
                           f"cells kept; continue with: python -m runner run --matrix {path} --backend vllm --run-id S "
                           f"--resume --db {tmp_path / 's.duckdb'} --runs-dir {tmp_path / 'runs'}")
    assert not group_alive(record["pgid"]) and not pid_file.exists()
    assert set(statuses(tmp_path / "s.duckdb")) == {"ok"}  # the finished cell, nothing of the interrupted one
    res = run_cli(tmp_path, path, "--run-id", "S", "--resume", "--json")
    assert json.loads(res.stdout)["cells_ok"] == 1 and json.loads(res.stdout)["cells_skipped"] == 1
    assert wait_gone(tmp_path / "runs") == []
