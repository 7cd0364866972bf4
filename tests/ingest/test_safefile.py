"""ingest/safefile.py on real files: links, FIFOs, devices and folders at a name are never followed, opened
blocking, read unbounded or removed; regular files are written atomically and read back."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from ingest import safefile


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_regular_file_is_written_atomically_and_read_back(tmp_path):
    target = tmp_path / "note.txt"
    safefile.write_atomic(target, b"first")
    safefile.write_atomic(target, b"second, longer")
    assert safefile.read_bytes(target, 100) == b"second, longer"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["note.txt"]  # no temp file left behind
    assert safefile.read_bytes(tmp_path / "absent", 100) is None


def test_a_link_at_the_name_is_not_written_through(tmp_path):
    victim = tmp_path / "victim.cfg"
    victim.write_bytes(b"precious settings\n")
    before = _digest(victim)
    link = tmp_path / "store.duckdb.holder"
    link.symlink_to(victim)
    with pytest.raises(safefile.Refused, match="symbolic link"):
        safefile.write_atomic(link, b"{}")
    assert not safefile.write_sidecar(link, b"{}")
    assert _digest(victim) == before and link.is_symlink()
    with pytest.raises(safefile.Refused):
        safefile.read_bytes(link, 100)  # not followed for reading either


def test_a_fifo_is_neither_read_nor_written_and_nothing_waits(tmp_path):
    fifo = tmp_path / "stamp"
    os.mkfifo(fifo)
    with pytest.raises(safefile.Refused, match="FIFO"):
        safefile.read_bytes(fifo, 100)
    assert safefile.read_sidecar(fifo) is None
    assert not safefile.write_sidecar(fifo, b"x")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_device_is_never_read(tmp_path):
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    with pytest.raises(safefile.Refused, match="device"):
        safefile.read_bytes(link, 1 << 20, follow=True)
    with pytest.raises(safefile.Refused):
        safefile.read_bytes("/dev/zero", 1 << 20)


def test_reads_are_bounded(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 5000)
    with pytest.raises(safefile.Refused, match="larger than 4096"):
        safefile.read_bytes(big, 4096)
    assert safefile.read_bytes(big, 5000) == b"x" * 5000


def test_only_recognised_regular_files_are_removed(tmp_path):
    ours, theirs = tmp_path / "a", tmp_path / "b"
    ours.write_bytes(b"OURS 1")
    theirs.write_bytes(b"somebody's data")
    link = tmp_path / "c"
    link.symlink_to(ours)
    def is_ours(head: bytes) -> bool:
        return head.startswith(b"OURS")
    assert not safefile.remove_if_ours(theirs, is_ours) and theirs.exists()
    assert not safefile.remove_if_ours(link, is_ours) and link.is_symlink() and ours.exists()
    assert safefile.remove_if_ours(ours, is_ours) and not ours.exists()
