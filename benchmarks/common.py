"""Shared benchmark plumbing: timing repeats, the figure record, the machine description.

Owns how a figure is reported: a median over repeats with min and max (wall seconds unless the unit says
otherwise), the CPU seconds of this process alongside (the machine is shared, so wall time alone can hide
contention), the target and whether it was met.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


@dataclass(slots=True)
class Samples:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)


def timed(fn: Callable[[], Any], repeats: int, setup: Callable[[], None] | None = None) -> Samples:
    """Run ``fn`` ``repeats`` times (``setup`` before each, untimed); wall and CPU seconds of each run."""
    out = Samples()
    for _ in range(repeats):
        if setup is not None:
            setup()
        c0, t0 = time.process_time(), time.perf_counter()
        res = fn()
        out.wall.append(time.perf_counter() - t0)
        out.cpu.append(time.process_time() - c0)
        out.results.append(res)
    return out


def figure(values: list[float], *, unit: str = "s", target: float | None = None, higher_is_better: bool = False,
           cpu: list[float] | None = None, **extra: Any) -> dict[str, Any]:
    """One figure: median, min, max over ``values`` (+ CPU seconds), target and whether the median meets it."""
    med = statistics.median(values)
    out: dict[str, Any] = {"median": _r(med), "min": _r(min(values)), "max": _r(max(values)), "repeats": len(values),
                           "unit": unit}
    if cpu:
        out["cpu_s_median"] = _r(statistics.median(cpu))
    if target is not None:
        out["target"] = f"{'>=' if higher_is_better else '<'} {target:g}"
        out["meets_target"] = bool(med >= target if higher_is_better else med < target)
    out.update(extra)
    return out


def _r(x: float) -> float:
    return float(f"{x:.4g}") if abs(x) < 1e4 else round(x, 1)


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    """What the figures were measured on (cores, CPU, memory, versions, load, commit)."""
    import duckdb
    import numpy as np
    import polars as pl

    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
        mem_kb = next(int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines()
                      if x.startswith("MemTotal"))
    except (OSError, StopIteration):
        mem_kb = 0
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"cpus": os.cpu_count(), "cpu_model": cpu_model, "mem_gb": round(mem_kb / 2**20, 1),
            "platform": platform.platform(), "python": platform.python_version(), "duckdb": duckdb.__version__,
            "polars": pl.__version__, "numpy": np.__version__, "git_commit": commit, "load_avg_start": load_average()}


def peak_rss_mb() -> float:
    """Peak RSS of this process so far (VmHWM), MB."""
    return status_mb(os.getpid(), "VmHWM")


def status_mb(pid: int, key: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")
