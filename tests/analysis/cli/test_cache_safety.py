"""The answer and matrix caches in a folder anyone may have put things into (analysis/cli/answer_cache.py,
analysis/cli/matrix_cache.py, ingest/safefile.py): they delete only their own entries, never write through a
linked or shared folder, never replay another user's entry or anything but their own validated answer, and a FIFO
or device entry neither hangs nor exhausts memory. Real stores, real subprocesses where a command is the subject."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from analysis.cli import answer_cache, matrix_cache
from tests.conftest import cli

ARGS = ("winners", "--json", "--family", "Gemma")
HOSTILE = "\x1b]0;owned\x07\x1b[2J you have been replayed \x1b[31m"


def _winners(db: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return cli("analysis", *ARGS, db=db, env=env, timeout=180)


def _fresh(db: Path) -> str:
    res = _winners(db, {"SPECTUNE_CACHE": "off"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def _entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if answer_cache.ENTRY_NAME.fullmatch(p.name))


def _warned(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("warning: ")]


def test_pruning_spares_a_users_files_in_the_cache_folder(tmp_path, monkeypatch):
    folder = tmp_path / "mixed"
    folder.mkdir(mode=0o700)
    mine = {"holiday.json": b'{"photos": 12}', "a" * 64 + ".json": b'{"stdout": "a user file named like ours"}',
            "matrices-" + "b" * 64 + ".npz": b"PK\x03\x04 not ours"}
    for name, data in mine.items():
        (folder / name).write_bytes(data)
        os.utime(folder / name, (1, 1))  # the oldest files in the folder: first in line for pruning
    monkeypatch.setenv("SPECTUNE_CACHE_DIR", str(folder))
    monkeypatch.setattr(answer_cache, "MAX_ENTRIES", 1)
    for n in range(3):
        answer_cache._keep(f"{n:064x}", f"answer {n}\n", "", 0)
    assert {name: (folder / name).read_bytes() for name in mine} == mine
    assert [p.name for p in _entries(folder) if p.name not in mine] == [f"{2:064x}.json"]


def test_a_linked_cache_folder_is_not_written_through(store_copy, tmp_path):
    target = tmp_path / "system"
    target.mkdir()
    (target / "keep.conf").write_text("x = 1\n")
    link = tmp_path / "cache-link"
    link.symlink_to(target)
    res = _winners(store_copy, {"SPECTUNE_CACHE": "on", "SPECTUNE_CACHE_DIR": str(link)})
    assert res.returncode == 0 and res.stdout == _fresh(store_copy)
    assert sorted(p.name for p in target.iterdir()) == ["keep.conf"]
    assert len(_warned(res.stderr)) == 1 and "symbolic link" in _warned(res.stderr)[0]


def test_a_folder_others_can_write_turns_the_cache_off(store_copy, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env = {"SPECTUNE_CACHE": "on", "SPECTUNE_CACHE_DIR": str(shared)}
    first, second = _winners(store_copy, env), _winners(store_copy, env)
    assert first.returncode == second.returncode == 0 and first.stdout == second.stdout == _fresh(store_copy)
    assert list(shared.iterdir()) == []
    assert len(_warned(first.stderr)) == 1 and "writable by group or others" in first.stderr


def test_another_users_entry_is_never_replayed(store_copy, tmp_path):
    env = {"SPECTUNE_CACHE": "on", "SPECTUNE_CACHE_DIR": str(tmp_path / "answers")}
    assert _winners(store_copy, env).returncode == 0
    [entry] = _entries(tmp_path / "answers")
    entry.write_text(json.dumps({"stdout": HOSTILE, "stderr": HOSTILE, "code": 0}))
    os.chown(entry, 65534, 65534)  # the tests run as root (as CI does): the entry now belongs to "nobody"
    res = _winners(store_copy, env)
    assert res.returncode == 0 and res.stdout == _fresh(store_copy)
    assert "\x1b" not in res.stdout + res.stderr


def test_only_this_caches_own_exit_zero_entries_for_this_key_are_replayed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECTUNE_CACHE_DIR", str(tmp_path / "answers"))
    key, other = "c" * 64, "d" * 64
    answer_cache._keep(key, "fine\n", "", 0)
    assert answer_cache.replay(key) == 0 and capsys.readouterr().out == "fine\n"
    entry = tmp_path / "answers" / f"{key}.json"
    forged = [
        answer_cache.MAGIC + json.dumps({"key": other, "stdout": HOSTILE, "stderr": "", "code": 0}).encode(),
        answer_cache.MAGIC + json.dumps({"key": key, "stdout": HOSTILE, "stderr": "", "code": 3}).encode(),
        answer_cache.MAGIC + json.dumps({"key": key, "stdout": ["x"], "stderr": "", "code": 0}).encode(),
        json.dumps({"key": key, "stdout": HOSTILE, "stderr": "", "code": 0}).encode(),
    ]
    for doc in forged:
        entry.write_bytes(doc)
        assert answer_cache.replay(key) is None
    entry.write_bytes(forged[0].replace(other.encode(), key.encode()))  # well-formed, ours… but not our user's
    assert answer_cache.replay(key) == 0
    capsys.readouterr()
    os.chown(entry, 65534, 65534)
    assert answer_cache.replay(key) is None and capsys.readouterr().out == ""


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_entry_neither_hangs_nor_exhausts_memory(store_copy, tmp_path, kind):
    env = {"SPECTUNE_CACHE": "on", "SPECTUNE_CACHE_DIR": str(tmp_path / "answers")}
    assert _winners(store_copy, env).returncode == 0
    [entry] = _entries(tmp_path / "answers")
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    else:
        entry.symlink_to("/dev/zero")
    res = _winners(store_copy, env)  # a hang is a TimeoutExpired, an unbounded read a MemoryError / OOM kill
    assert res.returncode == 0 and res.stdout == _fresh(store_copy)
    assert entry.is_fifo() if kind == "fifo" else entry.is_symlink()


def _empty_matrices_file(folder: Path, key: str) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        matrix_cache.write(matrix_cache._name(key), {}, dir_fd=fd, key=key)
    finally:
        os.close(fd)


def test_matrix_files_pruned_are_only_this_caches(tmp_path, monkeypatch):
    folder = tmp_path / "answers"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("SPECTUNE_CACHE_DIR", str(folder))
    users = folder / f"matrices-{'e' * 64}.npz"
    np.savez(users, meta=np.frombuffer(b'{"mine": true}', dtype=np.uint8))
    os.utime(users, (1, 1))
    keys = [f"{n:064x}" for n in range(4)]
    for key in keys:
        _empty_matrices_file(folder, key)
    assert users.exists()
    assert sorted(p.name for p in folder.iterdir() if p != users) == [matrix_cache._name(k) for k in keys[-2:]]
    assert matrix_cache.kept(keys[-1]) == {}
    assert matrix_cache.kept(keys[0]) is None


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "foreign"])
def test_a_special_or_foreign_matrix_file_is_not_loaded(tmp_path, monkeypatch, kind):
    folder = tmp_path / "answers"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("SPECTUNE_CACHE_DIR", str(folder))
    key = "f" * 64
    path = folder / matrix_cache._name(key)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        _empty_matrices_file(folder, key)
        os.chown(path, 65534, 65534)
    assert matrix_cache.kept(key) is None
