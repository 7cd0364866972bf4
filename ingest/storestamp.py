"""A store's content stamp: what keys the dashboard's query cache (answers it derived from a store), read in well
under a millisecond without importing DuckDB. (Derived data kept in the store carries a stamp of the store's rows
instead: analysis/derived_read.py.)

A stamp changes whenever the store's content can have changed, including the cases file times miss:

- **DuckDB's own headers.** Every checkpoint that changes anything writes a new database header (a counter, the
  new metadata's place; duckdb's storage format: the first 12 KiB of the file). The stamp hashes those bytes, so a
  change written in place is seen even when the file's size and mtime are put back (``os.utime``) or the file
  system keeps one-second times.
- **The write-ahead log**, before a checkpoint folds it in: its bytes are hashed — all of them up to
  :data:`WHOLE_WAL_BYTES`; of a larger one (DuckDB only appends to it between checkpoints) its size, first and last
  :data:`WAL_EDGE_BYTES`. Both WALs are read: beside the path given and beside the real file when the path is a
  link (DuckDB keeps it beside the real file).
- The real file's identity and times, ``ctime`` included (``os.utime`` cannot set it back).

None when there is no store at the path, or it is not a regular file: then nothing is cached.
"""

from __future__ import annotations

import hashlib
import os
import stat

from ingest import safefile

HEADER_BYTES = 3 * 4096  # duckdb: the main header and its two alternating database headers
WHOLE_WAL_BYTES = 8 * 2**20
WAL_EDGE_BYTES = 2**20


def _times(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _wal(path: str) -> list | bool | None:
    """[identity, times, sha256] of a WAL; None when there is none; False when it is not a regular file."""
    try:
        fd = safefile.open_regular(path, 2**62, follow=True)
    except (safefile.Refused, OSError):
        return False
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
        h = hashlib.sha256()
        if st.st_size <= WHOLE_WAL_BYTES:
            h.update(os.pread(fd, WHOLE_WAL_BYTES + 1, 0))
        else:  # appended between checkpoints: its size and both ends change with every commit
            h.update(os.pread(fd, WAL_EDGE_BYTES, 0))
            h.update(os.pread(fd, WAL_EDGE_BYTES, st.st_size - WAL_EDGE_BYTES))
        return [_times(st), h.hexdigest()]
    finally:
        os.close(fd)


def store_stamp(db: str | os.PathLike[str]) -> str | None:
    """A hex digest that changes with the store's content (module docstring), or None when it cannot be taken."""
    given = os.fspath(db)
    real = os.path.realpath(given)
    try:
        st = os.stat(real)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    try:
        head = _head(real)
    except OSError:
        return None
    if head is None:
        return None
    wals = [_wal(w) for w in dict.fromkeys([given + ".wal", real + ".wal"])]
    if any(w is False for w in wals):
        return None
    h = hashlib.sha256()
    h.update(repr([real, _times(st), wals]).encode())
    h.update(head)
    return h.hexdigest()


def _head(real: str) -> bytes | None:
    """The first :data:`HEADER_BYTES` of a regular file (non-blocking: a FIFO put there since is not waited on)."""
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.pread(fd, HEADER_BYTES, 0)
    finally:
        os.close(fd)
