"""Temp entries name their creating process; a later start removes the ones whose creator is gone.

The kill test is the real case: ``ingest trace`` inflating a gzip bomb is SIGKILLed mid-way (no
``finally`` runs), and the next spectune command that makes a temp entry removes what it left.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ingest import tempfiles
from tests.conftest import REPO


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_entries_of_dead_processes_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead = tmp_path / f"spectune-trace-{_dead_pid()}-abc"
    dead.mkdir()
    (dead / "inflated").write_bytes(b"x" * 1000)
    mine = tmp_path / f"spectune-trace-{os.getpid()}-def"
    mine.mkdir()
    parent = tmp_path / f"spectune-upload-{os.getppid()}-ghi"  # alive, started before the entry was written
    parent.mkdir()
    other = tmp_path / "spectune-notes.txt"  # not ours: no pid in the name
    other.write_text("keep")
    removed = tempfiles.sweep_orphans(tmp_path)
    assert removed == [dead] and not dead.exists()
    assert mine.exists() and parent.exists() and other.exists()


def test_a_reused_pid_does_not_protect_an_old_entry(tmp_path: Path) -> None:
    old = tmp_path / f"spectune-csv-{os.getppid()}-xyz"  # the parent is alive, but "wrote" this long before it began
    old.write_bytes(b"")
    os.utime(old, (1_000_000, 1_000_000))
    assert tempfiles.is_orphan(old)


def test_a_gzip_bomb_killed_mid_inflation_is_cleaned_by_the_next_start(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fh:
        fh.write(b"input_tokens,output_tokens\n")
        block = b"\n" * (1 << 20)
        for _ in range(1000):  # 1 GB of newlines, ~1 MB compressed
            fh.write(block)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "ingest", "trace", str(bomb), "--db", str(tmp_path / "s.duckdb")],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        inflated = None
        while time.monotonic() < deadline:
            hits = list(tmp.glob("spectune-*/inflated"))
            if hits and hits[0].stat().st_size > 50 << 20:
                inflated = hits[0]
                break
            time.sleep(0.2)
        assert inflated is not None, "the inflation never started"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert inflated.exists()  # SIGKILL: no finally ran
    small = tmp_path / "small.csv.gz"
    with gzip.open(small, "wb") as fh:
        fh.write(b"input_tokens,output_tokens\n10,20\n")
    done = subprocess.run([sys.executable, "-m", "ingest", "trace", str(small), "--db", str(tmp_path / "s.duckdb")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert not inflated.parent.exists()
    assert list(tmp.iterdir()) == []


def test_only_this_users_folders_and_files_are_swept(tmp_path: Path) -> None:
    pid = _dead_pid()
    victim = tmp_path / "elsewhere.txt"
    victim.write_text("not a temp file")
    link = tmp_path / f"spectune-csv-{pid}-link"
    link.symlink_to(victim)
    fifo = tmp_path / f"spectune-csv-{pid}-fifo"
    os.mkfifo(fifo)
    foreign = tmp_path / f"spectune-upload-{pid}-theirs"
    foreign.mkdir()
    os.chown(foreign, 65534, 65534)  # the tests run as root (as CI does): an entry of "nobody"
    mine = tmp_path / f"spectune-trace-{pid}-mine"
    mine.mkdir()
    assert tempfiles.sweep_orphans(tmp_path) == [mine]
    assert link.is_symlink() and fifo.is_fifo() and foreign.is_dir() and victim.read_text() == "not a temp file"
