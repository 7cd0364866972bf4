"""A store that cannot grow (disk full, quota, file-size limit): a write is one line ``error: <store>: no room to
write the store …``, exit 2, and the store reads back exactly as before (DuckDB rolls the transaction back).

The limit is the process's own RLIMIT_FSIZE (no mount needed): every write past that offset fails with EFBIG,
the same path through DuckDB as ENOSPC (checked by hand on a full tmpfs: the same message, the store unchanged).
"""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
import sys
from pathlib import Path

import duckdb

from tests.conftest import REPO

PUBLISHED = REPO / "data" / "published" / "vllm-amd-2026-08"


def _limited(args: list[str], db: Path, limit_bytes: int) -> subprocess.CompletedProcess:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *args, "--db", str(db)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=cap)


def _content(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [con.execute(f"SELECT count(*), sum(hash(columns(*))) FROM {t}").fetchall()[0]
                for t in ("runs", "cells")]
    finally:
        con.close()


def test_a_write_that_finds_no_room_is_one_line_and_the_store_is_as_before(tiny_store: Path) -> None:
    before_bytes = hashlib.sha256(tiny_store.read_bytes()).hexdigest()
    before = _content(tiny_store)
    proc = _limited(["-m", "ingest", "results", str(PUBLISHED)], tiny_store, 64 * 1024)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tiny_store}: no room to write the store"), lines
    assert "Traceback" not in proc.stderr and "rolled back" in lines[0]
    assert hashlib.sha256(tiny_store.read_bytes()).hexdigest() == before_bytes
    assert _content(tiny_store) == before
    # with room again the same command lands everything
    proc = _limited(["-m", "ingest", "results", str(PUBLISHED)], tiny_store, resource.RLIM_INFINITY)
    assert proc.returncode == 0, proc.stderr
    assert _content(tiny_store)[1][0] > before[1][0]
