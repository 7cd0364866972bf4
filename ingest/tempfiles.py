"""Temporary files and folders that a later start can recognise as orphans and remove.

Every temp entry spectune makes is named ``spectune-<kind>-<pid>-<random>`` in the system temp folder:
the creating process's id is in the name. ``finally`` blocks remove them on every normal path, but a
SIGKILL (or an OOM kill) runs no ``finally``; so the first temp entry a process makes sweeps the temp
folder for ``spectune-*`` entries whose creator is gone — its PID is dead, or it is a different, newer
process that reused the PID (it started after the entry was last written). A live creator's entries
are never touched, so two spectune processes never delete each other's files; only folders and regular files of
the current user are removed (a link, FIFO or another user's entry named like ours stays).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

PREFIX = "spectune-"
_NAME = re.compile(r"^spectune-(?P<kind>[a-z]+)-(?P<pid>\d+)-")
_swept: set[str] = set()  # temp folders this process already swept


def _start_time(pid: int) -> float | None:
    """Wall-clock start of process ``pid`` (Linux /proc), None where unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22 (starttime), counted after the ")" that ends the command name
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def is_orphan(entry: Path) -> bool:
    """True when ``entry`` is a spectune temp entry whose creating process no longer runs."""
    m = _NAME.match(entry.name)
    if not m:
        return False
    pid = int(m.group("pid"))
    if pid == os.getpid():
        return False
    if not _alive(pid):
        return True
    started = _start_time(pid)
    try:
        written = entry.lstat().st_mtime
    except OSError:
        return False
    # A live PID that started after the entry was last written is a reuse of the number: the creator died.
    return started is not None and started > written + 2.0


def sweep_orphans(folder: str | Path | None = None) -> list[Path]:
    """Remove the orphaned spectune temp entries in ``folder`` (default: the system temp folder)."""
    root = Path(folder or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = [p for p in root.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    for entry in entries:
        if not is_orphan(entry):
            continue
        try:
            st = entry.lstat()
            # Only what spectune makes there: folders and files of this user. A link, FIFO or another user's
            # entry with a matching name is not ours to remove (the temp folder is shared).
            if st.st_uid != os.getuid() or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                continue
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(entry)  # rmtree does not follow links inside it
            else:
                entry.unlink()
            removed.append(entry)
        except OSError:
            continue  # another sweeper got there first, or not ours to remove
    return removed


def make_temp_dir(kind: str) -> Path:
    """A private temp folder ``spectune-<kind>-<pid>-…``; the first call also sweeps old orphans."""
    root = tempfile.gettempdir()
    if root not in _swept:
        _swept.add(root)
        sweep_orphans(root)
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-"))

