"""Test helpers: processes whose working directory lies under a folder (our servers run in the run folder)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path


def procs_under(folder: Path) -> list[int]:
    """Live pids whose cwd is ``folder`` or below (zombies excluded)."""
    root = str(folder.resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0] == "Z":
                continue
            cwd = os.readlink(entry / "cwd")
            if cwd == root or cwd.startswith(root + os.sep):
                found.append(int(entry.name))
    return found


def wait_gone(folder: Path, timeout_s: float = 20.0) -> list[int]:
    """Wait until no process runs under ``folder``; returns what is still there at the deadline."""
    deadline = time.monotonic() + timeout_s
    while (left := procs_under(folder)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
