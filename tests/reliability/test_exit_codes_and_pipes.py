"""Exit codes scripts rely on: a closed output pipe ends quietly (0, nothing on stderr) in every CLI;
``runner run`` exits 4 when it ran cells and none succeeded; a workload named apart from its prompt set runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SMALL_MATRIX

SAMPLE = str(REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json")


def _closed_pipe_run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run with stdout a pipe whose reader is already gone (`… | head -c 600` after head exited)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", *args], cwd=REPO, stdout=write, stderr=subprocess.PIPE,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), **env})
    finally:
        os.close(write)


@pytest.mark.parametrize("command", ["analysis", "ingest", "runner"])
def test_a_closed_output_pipe_ends_quietly(tmp_path: Path, default_db: Path, command: str) -> None:
    args = {"analysis": ["analysis", "winners", "--db", str(default_db), "--json"],
            "ingest": ["ingest", "results", SAMPLE, "--db", str(tmp_path / "s.duckdb"), "--json"],
            "runner": ["runner", "plan", "--matrix", str(REPO / "runner" / "matrices" / "default.toml"), "--json"]}
    proc = _closed_pipe_run(args[command], {})
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]


def _run(matrix: Path, db: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner", "run", "--matrix", str(matrix), "--backend", "sim",
                           "--db", str(db), *extra], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


ONE_CELL = """
name = "one"
gpus = ["MI300X"]
[methods.eagle3]
depths = [2]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
[workloads.{name}]
source = "{source}"
[run]
requests_per_cell = 20
"""


def test_a_run_in_which_every_cell_failed_exits_4(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(ONE_CELL.format(name="mystery", source="mystery"))  # the simulator knows no such prompt set
    for extra in ((), ("--json",)):
        proc = _run(matrix, tmp_path / f"s{len(extra)}.duckdb", *extra)
        assert proc.returncode == 4, proc.stderr[-2000:]
        assert "0 ok, 1 failed" in proc.stdout or '"cells_ok": 0' in proc.stdout
    ok = tmp_path / "ok.toml"
    ok.write_text(SMALL_MATRIX.replace("requests_per_cell = 60", "requests_per_cell = 10"))
    assert _run(ok, tmp_path / "ok.duckdb").returncode == 0


def test_a_workload_named_apart_from_its_known_source_is_simulated(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(ONE_CELL.format(name="specbench", source="chat"))
    proc = _run(matrix, tmp_path / "s.duckdb")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    assert "1 ok, 0 failed" in proc.stdout
