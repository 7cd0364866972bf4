"""Measuring one cell against a live vLLM server: counters around the load, the load, the verdict.

Owns when a cell is ``ok`` and when it is ``failed``: the server died during the cell, the counters
went backwards (a restart inside the window), or most requests failed (the most common error is the
reason). A cell with a few failed requests is ``ok`` and keeps them (``n_failed``, per-request errors).
With adaptive stopping the load runs in batches (``runner.adaptive``): the first ``min_requests``, then
``batch`` more until both 95 % intervals are within target or ``max_requests`` is reached; batches are
stitched into one window (request starts offset by the batches before).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

import httpx
import numpy as np
import polars as pl

from ingest.cellstats import seed_for
from ingest.records import CellKey, SpecCounters
from ingest.settings import Settings
from ingest.settings import load as load_settings
from runner.adaptive import Stopper
from runner.backends.base import CellOutcome
from runner.matrix import AdaptiveSpec, Matrix
from runner.vllm.client import LoadResult, run_load
from runner.vllm.metrics import delta, snapshot
from runner.workloads import WorkloadRequests

DEATH_GRACE_S = 2.0  # after connection errors: how long a crash may take to show as an exit


@dataclass(slots=True)
class Target:
    """Where a cell's requests go, and how to tell whether the server is still there."""

    base_url: str
    model: str
    died: Callable[[], str | None]  # None while alive, else why it is gone (exit code + log tail)


def auth_headers(settings: Settings | None = None) -> dict[str, str]:
    """The bearer token of the ``vllm_api_key`` setting (default: this process's settings) as a header; sent,
    never stored."""
    key = (settings if settings is not None else load_settings()).vllm_api_key
    return {"Authorization": f"Bearer {key}"} if key else {}


def _snapshot(base_url: str) -> SpecCounters | None:
    try:
        return snapshot(base_url)
    except (httpx.HTTPError, ValueError):
        return None


SETTLE_S = 0.25  # gap between two /metrics reads that must agree
SETTLE_MAX_S = 3.0


def settled_snapshot(base_url: str) -> SpecCounters | None:
    """Counters once they stop moving: vLLM records a step's stats after the response that step finished
    went out, so a read right after the last [DONE] can miss the last steps — the counter deltas and the
    per-request sums (the cross-check) would then disagree by a step through no fault of the cell."""
    last = _snapshot(base_url)
    deadline = time.monotonic() + SETTLE_MAX_S
    while last is not None and time.monotonic() < deadline:
        time.sleep(SETTLE_S)
        now = _snapshot(base_url)
        if now == last:
            return now
        last = now
    return last


def _load(matrix: Matrix, key: CellKey, target: Target, reqs: WorkloadRequests) -> LoadResult:
    wl = matrix.workload(key.workload)
    return asyncio.run(run_load(
        target.base_url, target.model, reqs.prompts, key.concurrency, endpoint=matrix.endpoint,  # type: ignore[arg-type]
        max_tokens=wl.max_tokens, temperature=wl.temperature, ignore_eos=wl.ignore_eos,
        timeout_s=matrix.request_timeout_s, stall_timeout_s=matrix.stall_timeout_s,
        arrival_times_s=reqs.arrival_times_s, headers=auth_headers(),
    ))


def _stitch(parts: list[LoadResult]) -> LoadResult:
    """Batches of one cell as one load: indices renumbered, starts offset by the earlier windows."""
    out = LoadResult(requests=[])
    offset_s = 0.0
    for part in parts:
        for r in part.requests:
            out.requests.append(replace(r, request_index=len(out.requests), start_s=r.start_s + offset_s))
        out.itl_ms.extend(part.itl_ms)
        offset_s += part.window_s
    out.window_s = offset_s
    return out


def run_requests(matrix: Matrix, key: CellKey, target: Target, reqs: WorkloadRequests,
                 adaptive: AdaptiveSpec | None) -> LoadResult:
    if adaptive is None:
        return _load(matrix, key, target, reqs.head(matrix.requests_for(key.concurrency)))
    stopper = Stopper(adaptive, key.depth, seed_for(key.cell_id))
    parts: list[LoadResult] = []
    sent = 0
    for n in adaptive.grid():
        if n > len(reqs.prompts) or target.died() is not None:
            break
        parts.append(_load(matrix, key, target, reqs.slice(sent, n)))
        sent = n
        so_far = _stitch(parts)
        if stopper.check(so_far.requests_frame(), so_far.window_s):
            break
    return _stitch(parts)


def most_common_error(res: LoadResult) -> str:
    errors = Counter(e for e in res.errors())
    if not errors:
        return "no error recorded"
    text, count = errors.most_common(1)[0]
    return f"{text} (x{count})" if count > 1 else text


def measure_cell(matrix: Matrix, key: CellKey, target: Target, reqs: WorkloadRequests,
                 gpu_count: int) -> CellOutcome:
    """Run one cell's load and judge it; never raises for a server or request fault."""
    speculating = key.method != "none"
    before = settled_snapshot(target.base_url) if speculating else _snapshot(target.base_url)
    res = run_requests(matrix, key, target, reqs, matrix.adaptive)
    gone = target.died()
    if gone is None and any(e.startswith("connection error") for e in res.errors()):
        # A dying server closes its sockets before its exit can be seen: the remaining requests can fail
        # (connection refused) faster than the kernel reports the exit. Give the death a moment to show.
        deadline = time.monotonic() + DEATH_GRACE_S
        while gone is None and time.monotonic() < deadline:
            time.sleep(0.1)
            gone = target.died()
    if gone is not None:
        return CellOutcome(key, status="failed", error=f"server died during the cell: {gone}")
    after = settled_snapshot(target.base_url) if speculating else _snapshot(target.base_url)
    n = len(res.requests)
    if n == 0:
        return CellOutcome(key, status="failed", error="no requests to send (empty workload)")
    if res.failed_count * 2 > n:
        reason = f"{res.failed_count}/{n} requests failed; most common: {most_common_error(res)}"
        return CellOutcome(key, status="failed", error=reason)
    counters = None
    if key.method != "none" and before is not None and after is not None:
        try:
            counters = delta(before, after)
        except ValueError as exc:
            return CellOutcome(key, status="failed", error=str(exc))
    frame: pl.DataFrame = res.requests_frame()
    return CellOutcome(key, requests=frame, counters=counters, itl_ms=np.asarray(res.itl_ms, dtype=float),
                       window_s=res.window_s, gpu_count=gpu_count)
