"""Adaptive stopping: end a cell once its 95 % intervals are narrow enough, and what that saves.

A matrix may carry ``[adaptive] target_rel_width = 0.1, min_requests = 40, max_requests = 400``
(``batch`` optional). A cell then runs ``min_requests`` and adds ``batch`` requests at a time until the
95 % bootstrap intervals of its output throughput *and* its p99 e2e latency are each at most
``target_rel_width`` wide relative to the point estimate, or it reaches ``max_requests``. The intervals
are the store's own (ingest.cellstats: the same Poisson bootstrap the winner rule uses), so a cell that
stopped early is exactly as certain as the winners page will say it is.

:func:`simulated_saving` measures the saving on the simulator: for a sample of the matrix's cells it
finds where each cell would stop, and compares with the one fixed request count a matrix *without*
adaptive stopping would need for every sampled cell to reach the same target width ("equal CI width").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from analysis import costmodel, params
from ingest import cellstats
from runner.matrix import AdaptiveSpec, Matrix
from runner.simulate import simulate_cell

METRICS: tuple[str, ...] = ("output_throughput", "p99_e2e_ms")
# Below this a "p99" is the sample maximum, whose bootstrap interval is spuriously narrow: never stop there.
MIN_TAIL_REQUESTS = 100
SAMPLE_CELLS = 36  # enough to cover loads × workloads × families of a large matrix; plan stays seconds


def window_of(requests: pl.DataFrame) -> float | None:
    """Measured window of a request frame: first send to last finish (seconds)."""
    ok = requests.filter(pl.col("e2e_ms").is_not_null() & pl.col("start_s").is_not_null())
    if ok.height == 0:
        return None
    end = (ok["start_s"] + ok["e2e_ms"] / 1000.0).max()
    return float(end - ok["start_s"].min())  # type: ignore[operator]


def rel_widths(requests: pl.DataFrame, window_s: float | None, depth: int, seed: int) -> dict[str, float]:
    """Relative width (97.5th − 2.5th percentile of the bootstrap) / point, per stopping metric."""
    metrics = cellstats.derive(requests, depth=depth, window_s=window_s, gpu_count=1)
    boot = cellstats.bootstrap(requests, metrics, depth=depth, seed=seed)
    out = {}
    for name in METRICS:
        point = metrics.values.get(name)
        reps = boot[name][np.isfinite(boot[name])]
        if point is None or not point or reps.size < 10:
            out[name] = float("inf")
            continue
        lo, hi = np.percentile(reps, [2.5, 97.5])
        out[name] = float((hi - lo) / abs(point))
    return out


def within(requests: pl.DataFrame, window_s: float | None, depth: int, seed: int,
           spec: AdaptiveSpec) -> tuple[bool, dict[str, float]]:
    """Are both intervals within target now? A p99 needs MIN_TAIL_REQUESTS samples to mean anything."""
    widths = rel_widths(requests, window_s, depth, seed)
    ok_rows = requests.height - int((~requests["ok"].fill_null(True)).sum()) if requests.height else 0
    enough = ok_rows >= MIN_TAIL_REQUESTS
    return enough and all(w <= spec.target_rel_width for w in widths.values()), widths


class Stopper:
    """The stopping rule for one cell: within target at two successive checks (one lucky bootstrap is
    not enough), or ``max_requests`` reached. Feed it the cell's requests so far at each grid point."""

    def __init__(self, spec: AdaptiveSpec, depth: int, seed: int) -> None:
        self.spec, self.depth, self.seed = spec, depth, seed
        self.previous = False
        self.widths: dict[str, float] = {}
        self.reached = False

    def check(self, requests: pl.DataFrame, window_s: float | None) -> bool:
        now, self.widths = within(requests, window_s, self.depth, self.seed, self.spec)
        self.reached = now and self.previous
        self.previous = now
        return self.reached or requests.height >= self.spec.max_requests


@dataclass(slots=True)
class CellTrace:
    """One simulated cell checked at every grid point: stop here? and the window up to that point."""

    converged: list[bool]
    windows: list[float]
    widths: list[dict[str, float]]

    def stop_index(self) -> int:
        return next((i for i, c in enumerate(self.converged) if c), len(self.converged) - 1)


def trace_cell(frame: pl.DataFrame, depth: int, seed: int, spec: AdaptiveSpec) -> CellTrace:
    """Check a cell's first n requests at each grid point n (prefixes of one full-length run)."""
    frame = frame.sort("request_index")
    stopper = Stopper(spec, depth, seed)
    t = CellTrace([], [], [])
    for n in spec.grid():
        part = frame.head(n)
        window = window_of(part)
        stopper.check(part, window)
        t.converged.append(stopper.reached)
        t.windows.append(window or 0.0)
        t.widths.append(stopper.widths)
    return t


def sample_cells(matrix: Matrix, limit: int = SAMPLE_CELLS) -> list:
    """A deterministic random sample of the matrix's cells the simulator can model (all loads, workloads)."""
    p = params.load()
    gpus = costmodel.gpu_specs()
    known = [k for k in matrix.cells()
             if k.family in p.families and k.workload in p.workloads and (k.method == "none" or k.method in p.methods)
             and k.gpu in gpus]
    if len(known) <= limit:
        return known
    picks = np.random.default_rng(0).choice(len(known), size=limit, replace=False)
    return [known[i] for i in sorted(picks)]


def simulated_saving(matrix: Matrix, spec: AdaptiveSpec | None = None, limit: int = SAMPLE_CELLS) -> dict[str, Any]:
    """Requests and GPU time adaptive stopping saves on the simulator, at equal CI width.

    Baseline: the smallest fixed count N (on the same grid) at which *every* sampled cell's intervals
    are within the target — what a non-adaptive matrix must set to promise the same width everywhere.
    """
    spec = spec or matrix.adaptive
    if spec is None:
        return {}
    cells = sample_cells(matrix, limit)
    out: dict[str, Any] = {**spec.as_dict(), "cells_simulated": len(cells), "backend": "sim"}
    if not cells:
        out["note"] = "the simulator has no parameters for this matrix's families/workloads/GPUs"
        return out
    traces = []
    for key in cells:
        wl = matrix.workload(key.workload)
        res = simulate_cell(key, spec.max_requests, max_output_tokens=max(wl.max_tokens, 16))
        traces.append(trace_cell(res.requests, key.depth, cellstats.seed_for(key.cell_id), spec))
    grid = spec.grid()
    stops = [t.stop_index() for t in traces]
    # A fixed design must be sized for the neediest cell it wants within target: N = the largest stop
    # among cells that got within target. Cells that never did cost max_requests in both designs.
    reached = [i for t, i in zip(traces, stops, strict=True) if t.converged[i]]
    fixed_i = max(reached) if reached else len(grid) - 1
    fixed = [i if not t.converged[i] else fixed_i for t, i in zip(traces, stops, strict=True)]
    req_adaptive = sum(grid[i] for i in stops)
    req_fixed = sum(grid[i] for i in fixed)
    time_adaptive = sum(t.windows[i] for t, i in zip(traces, stops, strict=True))
    time_fixed = sum(t.windows[i] for t, i in zip(traces, fixed, strict=True))
    worst = {m: max(t.widths[i][m] for t, i in zip(traces, stops, strict=True) if t.converged[i])
             for m in METRICS} if reached else {}
    out.update({
        "fixed_requests_per_cell": grid[fixed_i],
        "mean_fixed_requests_per_cell": round(req_fixed / len(traces), 1),
        "mean_adaptive_requests_per_cell": round(req_adaptive / len(traces), 1),
        "cells_within_target": len(reached),
        "requests_saved_pct": round(100.0 * (1 - req_adaptive / req_fixed), 1),
        "gpu_time_saved_pct": round(100.0 * (1 - time_adaptive / time_fixed), 1) if time_fixed else 0.0,
        "worst_adaptive_rel_width": {m: round(v, 4) for m, v in worst.items()},
    })
    return out
