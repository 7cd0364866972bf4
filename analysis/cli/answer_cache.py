"""Answers of read-only commands kept for an unchanged store: ``winners``/``curve`` replayed without the query.

A read-only answer is a function of the command line, the store's content, spectune's code and its data files
(published rows, simulator priors). Everything here is keyed on those — the command line, the working directory,
``SPECTUNE_*`` variables, the store's content stamp (ingest/storestamp.py: DuckDB's own checkpoint headers, the
write-ahead logs' bytes and the real file's times, so a write is seen even with its mtime put back, through a
link, or within one second) and ``(size, mtime_ns, inode)`` of every ``.py`` file of the packages and every file
under ``data/`` that is not a store — so any write to the store, any edit of the code and any new data file makes
a new key. A hit prints the stored stdout and stderr and returns the stored exit code, before numpy, polars or
DuckDB are imported: that is the whole point (a cold ``winners --json`` spends most of its time importing them).

Only exit code 0 answers are kept. ``SPECTUNE_CACHE=off`` turns the cache off; ``SPECTUNE_CACHE_DIR`` moves it
(default ``$XDG_CACHE_HOME/spectune/answers``, i.e. ``~/.cache/spectune/answers``). A cache that cannot be read
or written is ignored: it can make a command faster, never wrong or failing. At most :data:`MAX_ENTRIES` answers
are kept (oldest dropped).

The folder may hold anything, so (ingest/safefile.py) the cache is used only when the folder is a real folder
(not a link) of the current user that group and others cannot write — otherwise it is off for the call, with one
``warning:`` line; an entry is replayed only when it is a regular file of this user, at most
:data:`MAX_ENTRY_BYTES`, opened without following links or blocking, carrying this cache's header
(:data:`MAGIC`) and its own key, with exit code 0; entries are written to a fresh temp name and renamed into
place; and pruning removes only files named ``<64 hex>.json`` that carry the header. A user's files are never
deleted, a link is never written through, a FIFO never waited on.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from ingest import safefile, storestamp
from ingest.cli import answers
from ingest.paths import DATA_DIR, ROOT

MAX_ENTRIES = 200
MAX_ENTRY_BYTES = 64 * 2**20  # a winners document on the default store is ~0.5 MB
MAGIC = b"spectune-answer 1\n"  # the first line of every entry: what prune and replay recognise as theirs
ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.json")
# The cache's own settings are not part of an answer (a hit happens only with the cache on anyway).
CACHE_SETTINGS = frozenset({"SPECTUNE_CACHE", "SPECTUNE_CACHE_DIR"})
PACKAGES = ("analysis", "ingest", "runner", "spectune")
STORE_SUFFIXES = (".duckdb", ".wal", ".lock", ".tmp", ".holder", ".default-stamp")


def enabled() -> bool:
    return answers.enabled()


def cache_dir() -> Path:
    explicit = os.environ.get("SPECTUNE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "spectune" / "answers"


def _stat(path: Path) -> list[int] | None:
    try:
        s = path.stat()
    except OSError:
        return None
    return [s.st_size, s.st_mtime_ns, s.st_ino]


def _tree_stats(folder: Path, keep: Callable[[str], bool]) -> list:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "runs") and not d.startswith("."))
        for name in sorted(filenames):
            if keep(name):
                path = Path(dirpath) / name
                out.append([str(path.relative_to(folder)), _stat(path)])
    return out


def key(argv: list[str], db: Path) -> str | None:
    """The answer's key, or None when there is no store yet (the first call builds it: nothing to key on)."""
    store = storestamp.store_stamp(db)
    if store is None:
        return None
    from spectune import __version__

    parts = {
        "version": __version__, "argv": argv, "cwd": os.getcwd(), "python": sys.version,
        "env": sorted((k, v) for k, v in os.environ.items() if k.startswith("SPECTUNE_") and k not in CACHE_SETTINGS),
        "store": store,
        "code": [_tree_stats(ROOT / p, lambda n: n.endswith(".py")) for p in PACKAGES],
        "data": _tree_stats(DATA_DIR, lambda n: not n.endswith(STORE_SUFFIXES)),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _name(answer_key: str) -> str:
    return f"{answer_key}.json"


def open_folder(create: bool) -> int | None:
    """The cache folder, opened, when it is safe to use (ingest/safefile.py: a real folder of this user that no one
    else can write; else the cache is off for this call, said once on stderr)."""
    return safefile.open_private_dir(cache_dir(), create=create)


def _parse(raw: bytes, answer_key: str) -> tuple[str, str, int] | None:
    """(stdout, stderr, code) of an entry this cache wrote for this key, else None."""
    if not raw.startswith(MAGIC):
        return None
    try:
        doc = json.loads(raw[len(MAGIC):].decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("key") != answer_key:
        return None
    stdout, stderr, code = doc.get("stdout"), doc.get("stderr"), doc.get("code")
    if not (isinstance(stdout, str) and isinstance(stderr, str) and code == 0 and type(code) is int):
        return None  # only exit-0 answers are ever kept
    return stdout, stderr, code


def replay(answer_key: str) -> int | None:
    """Print a kept answer and return its exit code; None when there is none (or it is not one of ours)."""
    fd = open_folder(create=False)
    if fd is None:
        return None
    try:
        raw = safefile.read_bytes(_name(answer_key), MAX_ENTRY_BYTES, dir_fd=fd, owner=os.getuid())
    except (safefile.Refused, OSError):
        return None  # a link, FIFO, device, another user's or oversized entry: never opened blocking, never replayed
    finally:
        os.close(fd)
    entry = _parse(raw, answer_key) if raw is not None else None
    if entry is None:
        return None
    stdout, stderr, code = entry
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    return code


def _is_entry(raw: bytes) -> bool:
    return raw.startswith(MAGIC)


def _keep(answer_key: str, stdout: str, stderr: str, code: int) -> None:
    data = MAGIC + json.dumps({"key": answer_key, "stdout": stdout, "stderr": stderr, "code": code}).encode()
    if len(data) > MAX_ENTRY_BYTES:
        return
    fd = open_folder(create=True)
    if fd is None:
        return
    try:
        safefile.write_atomic(_name(answer_key), data, dir_fd=fd, mode=0o600)
        prune(fd, ENTRY_NAME, _is_entry, MAX_ENTRIES)
    except (safefile.Refused, OSError):
        pass
    finally:
        os.close(fd)


def prune(fd: int, pattern: re.Pattern[str], is_ours: Callable[[bytes], bool], keep: int) -> None:
    """Drop the oldest entries beyond ``keep``: only files named as this cache names them, regular, of this user,
    and starting with its own header (a user's files in the folder are never touched)."""
    names = [n for n in os.listdir(fd) if pattern.fullmatch(n)]
    entries = safefile.entry_stats(fd, names)
    for _mtime, name in entries[:-keep] if len(entries) > keep else []:
        safefile.remove_if_ours(name, is_ours, dir_fd=fd, limit=len(MAGIC) + 4096)


class _Tee(io.TextIOBase):
    """Writes through to the real stream and keeps a copy."""

    def __init__(self, real: io.TextIOBase) -> None:
        self.real, self.copy = real, io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.real.write(text)

    def flush(self) -> None:
        self.real.flush()

    def fileno(self) -> int:
        return self.real.fileno()


def cached(argv: list[str], db: Path, run: Callable[[], int]) -> int:
    """``run()``'s exit code, from the kept answer when the key matches, otherwise running it and keeping it."""
    answer_key = key(argv, db) if enabled() else None
    if answer_key is None:
        return run()
    code = replay(answer_key)
    if code is not None:
        return code
    out, err = _Tee(sys.stdout), _Tee(sys.stderr)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run()
    if code == 0 and key(argv, db) == answer_key:  # the store did not change while the answer was computed
        _keep(answer_key, out.copy.getvalue(), err.copy.getvalue(), code)
    return code
