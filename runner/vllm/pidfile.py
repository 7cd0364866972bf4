"""Pidfiles for launched servers, so a runner killed with SIGKILL leaves no server behind for good.

A server runs in its own session (its own process group), so it outlives a runner that dies without
running its ``finally``. While a server is up, ``<run folder>/<server config>.pid`` records its process
group, the runner's pid and the leader's start time (``/proc/<pid>/stat`` field 22, so a recycled pid
is never mistaken for our server). The next runner on that run folder (``--resume``) reaps every group
whose runner is gone, then removes the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

REAP_GRACE_S = 10.0


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux), or None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its closing paren.
    fields = stat.rsplit(")", 1)[-1].split()
    return int(fields[19]) if len(fields) > 19 else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def group_alive(pgid: int) -> bool:
    """Does the group have a live (non-zombie) member? A zombie waits for its parent, not for us."""
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: the signal probe (counts zombies as alive)
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def write(path: Path, pgid: int, port: int, label: str) -> None:
    record = {"pgid": pgid, "port": port, "label": label, "runner_pid": os.getpid(),
              "runner_ticks": start_ticks(os.getpid()), "server_ticks": start_ticks(pgid)}
    tmp = path.with_suffix(".pid.tmp")
    tmp.write_text(json.dumps(record))
    tmp.replace(path)


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _runner_alive(record: dict) -> bool:
    pid = int(record.get("runner_pid", 0))
    if pid <= 0 or pid == os.getpid() or not alive(pid):
        return False
    return record.get("runner_ticks") is None or start_ticks(pid) == record.get("runner_ticks")


def _ours(record: dict) -> bool:
    """Is the recorded group still the server we started (not a recycled pid)?"""
    pgid = int(record.get("pgid", 0))
    if pgid <= 0 or not group_alive(pgid):
        return False
    ticks = record.get("server_ticks")
    now = start_ticks(pgid)
    # Leader gone but workers left in the group: the ids cannot be recycled while the group lives.
    return ticks is None or now is None or now == ticks


def reap(run_dir: Path) -> list[int]:
    """Stop the server groups of dead runners recorded in ``run_dir``; returns the groups signalled."""
    reaped = []
    for path in sorted(run_dir.glob("*.pid")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            remove(path)
            continue
        if _runner_alive(record):
            continue  # another live runner owns this server: never touch it
        if _ours(record):
            pgid = int(record["pgid"])
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGTERM)
            deadline = time.monotonic() + REAP_GRACE_S
            while group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            deadline = time.monotonic() + REAP_GRACE_S
            while group_alive(pgid) and time.monotonic() < deadline:
                time.sleep(0.1)
            reaped.append(pgid)
        remove(path)
    return reaped
