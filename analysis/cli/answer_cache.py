"""Answers of read-only commands kept for an unchanged store: ``winners``/``curve`` replayed without the query.

A read-only answer is a function of the command line, the store's bytes, spectune's code and its data files
(published rows, simulator priors). Everything here is keyed on those — the command line, the working directory,
``SPECTUNE_*`` variables, and ``(size, mtime_ns, inode)`` of the store, its write-ahead log, every ``.py`` file of
the packages and every file under ``data/`` that is not a store — so any write to the store (a DuckDB checkpoint or
its ``.wal``), any edit of the code and any new data file makes a new key. A hit prints the stored stdout and stderr
and returns the stored exit code, before numpy, polars or DuckDB are imported: that is the whole point (a cold
``winners --json`` spends most of its time importing them).

Only exit code 0 answers are kept. ``SPECTUNE_CACHE=off`` turns the cache off; ``SPECTUNE_CACHE_DIR`` moves it
(default ``$XDG_CACHE_HOME/spectune/answers``, i.e. ``~/.cache/spectune/answers``). A cache that cannot be read
or written is ignored: it can make a command faster, never wrong or failing. At most :data:`MAX_ENTRIES` answers
are kept (oldest dropped).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ingest.cli import answers
from ingest.paths import DATA_DIR, ROOT

MAX_ENTRIES = 200
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
    store_stat = _stat(db)
    if store_stat is None:
        return None
    from spectune import __version__

    parts = {
        "version": __version__, "argv": argv, "cwd": os.getcwd(), "python": sys.version,
        "env": sorted((k, v) for k, v in os.environ.items() if k.startswith("SPECTUNE_") and k not in CACHE_SETTINGS),
        "store": [str(db.resolve()), store_stat, _stat(Path(str(db) + ".wal"))],
        "code": [_tree_stats(ROOT / p, lambda n: n.endswith(".py")) for p in PACKAGES],
        "data": _tree_stats(DATA_DIR, lambda n: not n.endswith(STORE_SUFFIXES)),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def replay(answer_key: str) -> int | None:
    """Print a kept answer and return its exit code; None when there is none (or it cannot be read)."""
    try:
        doc = json.loads((cache_dir() / f"{answer_key}.json").read_text(encoding="utf-8"))
        stdout, stderr, code = doc["stdout"], doc["stderr"], int(doc["code"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    sys.stdout.write(stdout)
    sys.stderr.write(stderr)
    return code


def _keep(answer_key: str, stdout: str, stderr: str, code: int) -> None:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"stdout": stdout, "stderr": stderr, "code": code}, fh)
        os.replace(tmp, folder / f"{answer_key}.json")
        entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in entries[:-MAX_ENTRIES]:
            old.unlink(missing_ok=True)
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


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
