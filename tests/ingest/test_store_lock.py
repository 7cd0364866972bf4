"""A store held by another process: commands wait with a message naming the holder, then exit 2 in one line.

The holder is a real process with the store open for writing (as ``runner run`` has it while landing
cells); the waiters are the real CLIs as subprocesses.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ingest import store
from tests.conftest import REPO, SMALL_MATRIX
from tests.reliability.conftest import assert_clean_usage_error, run_cli

HOLD = """
import sys, time
sys.argv = [{main!r}, "run", "m.toml"]  # what `python -m runner run m.toml` has as argv
from ingest import store
with store.session({db!r}) as con:
    print("held", flush=True)
    time.sleep({seconds})
"""


@contextmanager
def held(db: Path, seconds: float) -> Iterator[subprocess.Popen]:
    code = HOLD.format(main=str(REPO / "runner" / "__main__.py"), db=str(db), seconds=seconds)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.duckdb"
    store.connect(path).close()
    return path


def _commands(tmp: Path, db: Path) -> dict[str, list[str]]:
    matrix = tmp / "m.toml"
    matrix.write_text(SMALL_MATRIX)
    trace = str(REPO / "data" / "samples" / "traces" / "azure_code.csv")
    results = str(REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json")
    return {
        "analysis winners": ["analysis", "winners", "--db", str(db)],
        "ingest trace": ["ingest", "trace", trace, "--db", str(db)],
        "ingest results": ["ingest", "results", results, "--db", str(db), "--set", "gpu=MI300X"],
        "runner run": ["runner", "run", "--matrix", str(matrix), "--backend", "sim", "--db", str(db)],
    }


@pytest.mark.parametrize("command", ["analysis winners", "ingest trace", "ingest results", "runner run"])
def test_a_held_store_is_waited_on_then_refused_in_one_line_naming_the_holder(
        tmp_path: Path, db: Path, command: str) -> None:
    args = _commands(tmp_path, db)[command]
    with held(db, 60) as holder:
        proc = run_cli(*args, env={store.LOCK_ENV: "1.5"}, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith(f"waiting for the store, held by PID {holder.pid} (runner run)"), proc.stderr
    assert "Traceback" not in proc.stderr
    last = assert_clean_usage_error(subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout,
                                                                lines[-1]))
    assert f"held by PID {holder.pid} (runner run) for more than 1.5 s" in last
    assert store.LOCK_ENV in last  # says what to do


def test_a_store_released_within_the_timeout_is_read_after_the_wait(db: Path) -> None:
    with held(db, 8):
        proc = run_cli("ingest", "trace", str(REPO / "data" / "samples" / "traces" / "azure_code.csv"),
                       "--db", str(db), env={store.LOCK_ENV: "60"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "waiting for the store, held by PID" in proc.stderr


def test_the_holder_sidecar_lives_while_a_writer_has_the_store_open(db: Path) -> None:
    sidecar = store.holder_path(db)
    with store.session(db):
        assert f'"pid": {os.getpid()}' in sidecar.read_text()
    assert not sidecar.exists()


@pytest.mark.parametrize("value", ["soon", "-1", "1e9"])
def test_a_bad_lock_timeout_is_a_usage_error(db: Path, value: str) -> None:
    proc = run_cli("analysis", "winners", "--db", str(db), env={store.LOCK_ENV: value})
    assert store.LOCK_ENV in assert_clean_usage_error(proc)


def test_command_names_are_what_the_user_typed() -> None:
    assert store.command_name(["/x/runner/__main__.py", "run", "m.toml", "--backend", "sim"]) == "runner run"
    assert store.command_name(["/usr/bin/streamlit", "run", "dashboard/app.py"]) == "streamlit run dashboard/app.py"
