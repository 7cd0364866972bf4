"""The vLLM backend end to end against stand-in server *processes* (tests/runner/fake_vllm.py) launched
through the launch template: good cells, every fault (start failure, start timeout, port taken, crash
mid-cell, hang, HTTP 500, truncated streams), restarts, and process groups always gone afterwards.
The real vLLM server is in test_vllm_real.py."""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

import pytest

from ingest import sql, store
from ingest.errors import InputError
from runner.backends.vllm import VllmBackend
from runner.execute import RunOptions, RunSummary, run_matrix
from runner.matrix import load_matrix
from tests.conftest import REPO
from tests.runner.procs import procs_under, wait_gone

FAKE = REPO / "tests" / "runner" / "fake_vllm.py"
LAUNCH = f"{sys.executable} {FAKE} --model {{model}} --port {{port}} {{args}}"


def write_matrix(tmp: Path, families: list[str], *, methods: str = "[methods.none]\n[methods.ngram]\ndepths = [3]",
                 concurrency: str = "[2]", requests: int = 6, run_extra: str = "", name: str = "fake") -> Path:
    fams = "\n".join(f'[families.{f.replace("-", "_")}]\nmodel = "{f}"' for f in families)
    path = tmp / f"{name}.toml"
    path.write_text(f"""
name = "{name}"
gpus = ["cpu"]
{methods}
{fams}
[workloads.code]
max_tokens = 12
[load]
concurrency = {concurrency}
[run]
requests_per_cell = {requests}
warmup_requests = 0
launch = '{LAUNCH}'
startup_timeout_s = 20
request_timeout_s = 20
stall_timeout_s = 5
{run_extra}
""")
    return path


def run(tmp: Path, matrix_path: Path, **kw: object) -> RunSummary:
    opts = RunOptions(backend="vllm", db=tmp / "s.duckdb", runs_dir=tmp / "runs", run_id="R", **kw)  # type: ignore[arg-type]
    return run_matrix(load_matrix(matrix_path), opts)


def cells(db: Path) -> dict[tuple[str, str, int], dict]:
    with store.session(db, read_only=True) as con:
        frame = sql.frame(con, "SELECT * FROM cells")
    return {(r["model"], r["method"], r["concurrency"]): r for r in frame.iter_rows(named=True)}


def test_good_cells_land_with_counters_log_and_no_process_left(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["ok"])
    summary = run(tmp_path, path)
    assert (summary.cells_ok, summary.cells_failed) == (2, 0), summary.failures
    got = cells(tmp_path / "s.duckdb")
    none, ngram = got[("ok", "none", 2)], got[("ok", "ngram", 2)]
    assert none["acceptance_rate"] is None and none["drafts"] is None
    # the fake accepts k-1 of k drafted tokens on every draft
    assert ngram["acceptance_rate"] == pytest.approx(2 / 3) and ngram["acceptance_length"] == pytest.approx(3.0)
    for c in (none, ngram):
        assert c["status"] == "ok" and c["n_requests"] == 6 and c["n_failed"] == 0 and c["gpu_count"] == 1
        assert c["output_tokens"] == 6 * 12 and c["output_throughput"] > 0
        assert 0 < c["p50_ttft_ms"] <= c["p90_ttft_ms"] <= c["p99_ttft_ms"]
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        pos = sql.frame(con, "SELECT position, acceptance FROM positions ORDER BY position")
        reqs = sql.one(con, "SELECT count(*), count(DISTINCT cell_id) FROM requests")
        run_row = sql.one(con, "SELECT backend, gpu_model, engine_version, notes FROM runs")
    assert pos["acceptance"].to_list() == [1.0, 1.0, 0.0]
    assert reqs == (12, 2)
    assert run_row[0] == "vllm" and run_row[1] == "cpu" and run_row[2].startswith("vllm")
    assert "workload code: builtin" in run_row[3]
    run_dir = tmp_path / "runs" / "R"
    log = (run_dir / "ok_ngram_3_cpu.log").read_text()
    spec = json.loads(log.split("spec=", 1)[1].split(" extra=", 1)[0])
    assert spec == {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    assert "spec=None" in (run_dir / "ok_none_cpu.log").read_text()
    assert not list(run_dir.glob("*.pid"))
    assert wait_gone(run_dir) == []


def test_a_vllm_without_per_request_metrics_is_restarted_without_the_flag_and_says_counters(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["oldvllm"])
    summary = run(tmp_path, path)
    assert (summary.cells_ok, summary.cells_failed) == (2, 0), summary.failures
    ngram = cells(tmp_path / "s.duckdb")[("oldvllm", "ngram", 2)]
    assert ngram["acceptance_source"] == "counters" and ngram["acceptance_rate"] == pytest.approx(2 / 3)
    assert ngram["acceptance_checked"] is None and ngram["acceptance_suspect"] is None
    log = (tmp_path / "runs" / "R" / "oldvllm_ngram_3_cpu.log").read_text()
    assert "unrecognized arguments: --per-request-spec-decode-metrics summary" in log
    assert log.count("fake vllm: ready") == 1, "the second start, without the flag, served the cells"
    assert "--per-request-spec-decode-metrics" not in (tmp_path / "runs" / "R" / "oldvllm_none_cpu.log").read_text()
    assert wait_gone(tmp_path / "runs" / "R") == []


def test_start_failure_and_start_timeout_fail_their_cells_and_the_run_goes_on(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["exit", "nohealth", "ok"], methods="[methods.none]",
                        run_extra="").read_text().replace("startup_timeout_s = 20", "startup_timeout_s = 2")
    (tmp_path / "m.toml").write_text(path)
    t0 = time.monotonic()
    summary = run(tmp_path, tmp_path / "m.toml")
    assert time.monotonic() - t0 < 30
    assert (summary.cells_ok, summary.cells_failed) == (1, 2)
    got = cells(tmp_path / "s.duckdb")
    err = got[("exit", "none", 2)]["error"]
    assert err.startswith("server start failed: server exited with code 1") and "model path does not exist" in err
    assert got[("nohealth", "none", 2)]["error"].startswith("server start failed: server not healthy after 2 s")
    assert got[("ok", "none", 2)]["status"] == "ok"
    assert wait_gone(tmp_path / "runs") == []


def test_port_taken_at_the_start_is_bad_input_and_taken_later_fails_the_start(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        path = write_matrix(tmp_path, ["ok"], methods="[methods.none]", run_extra=f"port = {port}")
        # taken before the run: every start would fail, so the run refuses to begin (exit 2, nothing written)
        with pytest.raises(InputError, match=rf"run\.port: port {port} is already in use"):
            run(tmp_path, path)
        assert not (tmp_path / "s.duckdb").exists()

        # taken after the run began (another process grabbed it between server starts): the start fails
        class LatePort(VllmBackend):
            def prepare(self, *args: object, **kw: object) -> None:
                sock.close()
                super().prepare(*args, **kw)  # type: ignore[arg-type]
                grab = socket.socket()
                grab.bind(("127.0.0.1", port))
                grab.listen()
                self.grabbed = grab

        late = LatePort()
        opts = RunOptions(backend="vllm", db=tmp_path / "s.duckdb", runs_dir=tmp_path / "runs", run_id="R")
        summary = run_matrix(load_matrix(path), opts, backend=late)
        late.grabbed.close()
    assert summary.cells_failed == 1
    assert summary.failures[0]["error"] == f"server start failed: port {port} in use"


def test_crash_mid_cell_fails_that_cell_then_one_restart_serves_the_rest(tmp_path: Path) -> None:
    path = write_matrix(tmp_path, ["crash-once-3", "crash-after-3"], methods="[methods.none]",
                        concurrency="[1, 2, 3]")
    summary = run(tmp_path, path)
    got = cells(tmp_path / "s.duckdb")
    # crash-once: the first cell dies with the server, the restarted server serves the other two
    assert got[("crash-once-3", "none", 1)]["status"] == "failed"
    assert got[("crash-once-3", "none", 1)]["error"].startswith("server died during the cell: exit code 9")
    assert got[("crash-once-3", "none", 2)]["status"] == "ok"
    assert got[("crash-once-3", "none", 3)]["status"] == "ok"
    # crash-always: first cell fails, the restart crashes too, the third cell is not attempted
    assert got[("crash-after-3", "none", 1)]["error"].startswith("server died during the cell")
    assert got[("crash-after-3", "none", 2)]["error"].startswith("server died during the cell")
    assert got[("crash-after-3", "none", 3)]["error"].startswith("server died again after 1 restart(s)")
    assert (summary.cells_ok, summary.cells_failed) == (2, 4)
    assert wait_gone(tmp_path / "runs") == []


@pytest.mark.parametrize(("behaviour", "reason"), [
    ("hang", "4/4 requests failed; most common: hang: no token for 1 s (x4)"),
    ("err500", "4/4 requests failed; most common: http 500: "),
    ("truncate", "4/4 requests failed; most common: truncated stream: no [DONE] (x4)"),
])
def test_request_faults_fail_the_cell_with_the_reason(tmp_path: Path, behaviour: str, reason: str) -> None:
    path = write_matrix(tmp_path, [behaviour], methods="[methods.none]", requests=4,
                        run_extra="").read_text().replace("stall_timeout_s = 5", "stall_timeout_s = 1")
    (tmp_path / "m.toml").write_text(path)
    t0 = time.monotonic()
    summary = run(tmp_path, tmp_path / "m.toml")
    assert time.monotonic() - t0 < 20, "a hang must cost about the stall timeout, not the request timeout"
    assert (summary.cells_ok, summary.cells_failed) == (0, 1)
    assert summary.failures[0]["error"].startswith(reason)
    assert wait_gone(tmp_path / "runs") == []


def test_prepare_reaps_a_server_left_by_a_dead_runner(tmp_path: Path) -> None:
    """A pidfile whose runner is gone: the next prepare() on that run folder kills the group."""
    import subprocess

    from runner.vllm import pidfile

    run_dir = tmp_path / "runs" / "R"
    run_dir.mkdir(parents=True)
    # Started by a launcher that exits at once, as a killed runner would: the server's parent is init.
    launcher = (f"import subprocess, sys; p = subprocess.Popen([sys.executable, {str(FAKE)!r}, '--model', 'ok', "
                f"'--port', '0'], start_new_session=True, stdout=subprocess.DEVNULL, "
                f"stderr=subprocess.DEVNULL); print(p.pid)")
    orphan_pid = int(subprocess.run([sys.executable, "-c", launcher], cwd=run_dir, capture_output=True, text=True,
                                    check=True).stdout)
    dead_runner = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_runner.wait()
    pidfile.write(run_dir / "x.pid", orphan_pid, 0, "x")
    record = json.loads((run_dir / "x.pid").read_text())
    record["runner_pid"] = dead_runner.pid
    (run_dir / "x.pid").write_text(json.dumps(record))
    time.sleep(0.5)
    assert procs_under(run_dir)
    backend = VllmBackend()
    backend.prepare(load_matrix(write_matrix(tmp_path, ["ok"])), "R", tmp_path / "runs")
    assert backend.reaped == [orphan_pid]
    assert wait_gone(run_dir) == [] and not (run_dir / "x.pid").exists()
    # a pidfile of another *live* runner is left alone (that runner still owns its server)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pidfile.write(run_dir / "other.pid", live.pid, 0, "x")  # (its "server" is the runner itself here)
        record = json.loads((run_dir / "other.pid").read_text())
        record.update(runner_pid=live.pid, runner_ticks=pidfile.start_ticks(live.pid))
        (run_dir / "other.pid").write_text(json.dumps(record))
        backend.prepare(load_matrix(write_matrix(tmp_path, ["ok"])), "R", tmp_path / "runs")
        assert (run_dir / "other.pid").exists() and backend.reaped == [] and live.poll() is None
    finally:
        live.kill()
        live.wait()


def test_trace_replay_keeps_arrivals_and_sends_the_traces_input_lengths_in_the_servers_tokens(tmp_path: Path) -> None:
    """Arrival times (rescaled by request_rate) become the stored request starts, and synthesized prompts are
    fitted to the server's tokenizer through /tokenize, so the stored (server-counted) input tokens are the
    trace's; a server without /tokenize keeps the estimated text."""
    inputs = [120, 300, 80, 500, 240, 160]
    times = [0.0, 0.2, 0.25, 1.0, 1.1, 2.0]
    (tmp_path / "t.csv").write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
        f"2024-05-10 00:00:{t:06.3f},{n},8\n" for t, n in zip(times, inputs, strict=True)))
    path = write_matrix(tmp_path, ["ok", "notokenize"], methods="[methods.none]")
    path.write_text(path.read_text().replace("[workloads.code]\nmax_tokens = 12", '[workloads.prod]\nsource = "t.csv"'
                                             '\nrequest_rate = 5.0'))
    summary = run(tmp_path, path)
    assert (summary.cells_ok, summary.cells_failed) == (2, 0), summary.failures
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        rows = sql.frame(con, "SELECT c.model, r.request_index, r.input_tokens, r.output_tokens, r.start_s "
                              "FROM requests r JOIN cells c USING (run_id, cell_id) ORDER BY 1, 2")
    fitted = rows.filter(rows["model"] == "ok")
    assert fitted["output_tokens"].to_list() == [8] * 6
    for got, want in zip(fitted["input_tokens"].to_list(), inputs, strict=True):
        assert got == pytest.approx(want, rel=0.05), (got, want)
    # 5 gaps in 2 s is 2.5 req/s recorded; at 5 req/s every gap is halved, shape kept
    assert fitted["start_s"].to_list() == pytest.approx([t / 2 for t in times], abs=0.08)
    estimated = rows.filter(rows["model"] == "notokenize")["input_tokens"].to_list()
    assert all(g > 1.5 * w for g, w in zip(estimated, inputs, strict=True)), estimated  # 2 chars/token vs ~4
