"""Files beside the store (``.holder``, ``.default-stamp``, ``.lock``) that are links, FIFOs or devices: real
commands in real processes never write through them, never wait on them, never read them unbounded
(ingest/safefile.py). A bad sidecar is ignored with one ``warning:`` line; a bad build lock is an error."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.reliability.conftest import run_cli

SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "elsewhere" / "settings.ini"
    victim.parent.mkdir()
    victim.write_bytes(b"[owner]\nname = someone else's file\n" * 50)
    return victim


def _warnings(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("warning: ")]


def _import(db: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run_cli("ingest", "results", str(SAMPLE), "--json", "--db", str(db), *extra, env=env,
                   timeout=120)


def test_a_linked_holder_is_not_written_through_by_an_import(tiny_store, tmp_path):
    victim = _victim(tmp_path)
    before = _digest(victim)
    holder = Path(str(tiny_store) + ".holder")
    holder.symlink_to(victim)
    res = _import(tiny_store)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["files"][0]["rows"] >= 1  # the import itself went on
    assert _digest(victim) == before and holder.is_symlink() and holder.readlink() == victim
    warned = _warnings(res.stderr)
    assert len(warned) == 1 and str(holder) in warned[0] and "symbolic link" in warned[0]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_holder_neither_hangs_nor_floods_the_lock_message(tiny_store, kind):
    holder = Path(str(tiny_store) + ".holder")
    if kind == "fifo":
        os.mkfifo(holder)
    else:
        holder.symlink_to("/dev/zero")
    res = _import(tiny_store)  # writer: records itself in the holder (refused), clears it (refused)
    assert res.returncode == 0, res.stderr
    # A second writer waits on a store held by another process, reading the holder to name it.
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    keeper = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
                               "time.sleep(60)", str(tiny_store)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert keeper.stdout.readline().strip() == "held"
        started = time.monotonic()
        waited = _import(tiny_store, env={"SPECTUNE_LOCK_TIMEOUT": "1"})
        assert time.monotonic() - started < 60
        assert waited.returncode == 2 and "Traceback" not in waited.stderr, waited.stderr[-2000:]
        last = waited.stderr.strip().splitlines()[-1]  # after "waiting for the store …": the one error line
        assert last.startswith(f"error: {tiny_store}: ") and f"PID {keeper.pid}" in last
    finally:
        keeper.kill()
        keeper.wait()
    assert holder.is_symlink() if kind == "dev-zero" else holder.is_fifo()


@pytest.fixture
def default_copy(default_db: Path, tmp_path: Path) -> Path:
    """A copy of the built default store, opened as *the* default store (``SPECTUNE_DB``, no ``--db``)."""
    db = tmp_path / "home" / "spectune.duckdb"
    db.parent.mkdir()
    shutil.copyfile(default_db, db)
    return db


def _winners_on_default(db: Path) -> subprocess.CompletedProcess:
    return run_cli("analysis", "winners", "--json", "--family", "Kimi", db=db, timeout=180)


def test_a_linked_default_stamp_is_not_written_by_a_read_only_winners(default_copy, tmp_path):
    victim = _victim(tmp_path)
    before = _digest(victim)
    stamp = Path(str(default_copy) + ".default-stamp")
    stamp.symlink_to(victim)
    res = _winners_on_default(default_copy)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["cells"]
    assert _digest(victim) == before and stamp.is_symlink()
    warned = _warnings(res.stderr)
    assert len(warned) == 1 and str(stamp) in warned[0]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_default_stamp_neither_hangs_nor_exhausts_memory(default_copy, kind):
    stamp = Path(str(default_copy) + ".default-stamp")
    if kind == "fifo":
        os.mkfifo(stamp)
    else:
        stamp.symlink_to("/dev/zero")
    res = _winners_on_default(default_copy)  # a hang is a TimeoutExpired, an unbounded read a MemoryError
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout)["cells"] and "Traceback" not in res.stderr
    assert len(_warnings(res.stderr)) == 1


def test_a_linked_build_lock_stops_the_first_build_and_is_not_truncated(tmp_path):
    victim = _victim(tmp_path)
    before = _digest(victim)
    db = tmp_path / "fresh" / "spectune.duckdb"
    db.parent.mkdir()
    lock = Path(str(db) + ".lock")
    lock.symlink_to(victim)
    res = run_cli("analysis", "winners", "--json", db=db, timeout=180)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-2000:]
    lines = res.stderr.strip().splitlines()  # the first-start notice, then the one error line
    assert all(ln.startswith("first start:") for ln in lines[:-1]), lines
    assert lines[-1].startswith(f"error: {lock}: ") and "symbolic link" in lines[-1]
    assert _digest(victim) == before and lock.is_symlink() and not db.exists()
    assert res.stdout == ""
