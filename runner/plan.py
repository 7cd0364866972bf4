"""Planning a matrix: its cells, its server configs in start order, and the GPU-hours it will cost.

Estimates come from earlier runs of the same cell in the store when there are any (seconds per request,
times this plan's requests per cell), else from the cost and acceptance models (steps × step time), else
a flat guess that is reported as such. Every server config adds a guessed start (SERVER_START_S). With
``[adaptive]`` the requests per cell are the simulated adaptive mean (or ``max_requests`` when the
simulator cannot model the matrix), since ``requests_per_cell`` is then ignored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from analysis import acceptance, calibration, costmodel, params
from ingest import open_store
from ingest.records import CellKey
from runner.adaptive import simulated_saving
from runner.matrix import Matrix

SERVER_START_S = 300.0  # a large model's load + warm-up; a guess, reported in the plan
FALLBACK_CELL_S = 120.0  # per cell of DEFAULT_REQUESTS requests, when nothing better is known
DEFAULT_REQUESTS = 200


@dataclass(slots=True)
class Plan:
    cells: int
    server_configs: list[dict[str, object]]
    estimated_gpu_hours: float
    estimate_sources: dict[str, int]
    adaptive: dict[str, object] | None = None  # adaptive stopping's simulated saving (matrix [adaptive])
    requests_per_cell: float = 0.0  # what the estimate assumes: the matrix's count, or adaptive's expected mean
    requests_basis: str = "requests_per_cell"  # requests_per_cell | adaptive_simulated | adaptive_max

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"cells": self.cells, "server_configs": self.server_configs,
                                  "estimated_gpu_hours": round(self.estimated_gpu_hours, 3),
                                  "estimate_sources": self.estimate_sources,
                                  "requests_per_cell": round(self.requests_per_cell, 1),
                                  "requests_basis": self.requests_basis,
                                  "server_start_s": SERVER_START_S}
        if self.adaptive is not None:
            out["adaptive"] = self.adaptive
        return out


def model_cell_seconds(key: CellKey, requests: float, max_tokens: int) -> float | None:
    p = params.load()
    if key.family not in p.families or key.workload not in p.workloads:
        return None
    try:
        dep = p.deployment(key.family, key.gpu)
    except ValueError:
        return None
    wl = p.workloads[key.workload]
    out = min(wl.output_median, max_tokens)
    step = costmodel.verify_ms(dep, key.concurrency, key.depth + 1.0)
    tau = 1.0
    if key.depth and key.method in p.methods:
        step += costmodel.draft_ms(dep, p.methods[key.method].draft, key.concurrency, key.depth)
        tau = acceptance.expected_tokens(calibration.conditional_positions(key.method, key.family, key.workload,
                                                                           key.depth))
    per_request_s = (costmodel.prefill_ms(dep, wl.input_median) + out / tau * step) / 1e3
    return requests * per_request_s / key.concurrency


def _modelled(key: CellKey, source: str) -> CellKey:
    """The cell as the cost model knows it: a workload named otherwise (``[workloads.x] source = "chat"``, a
    trace's shard) is timed as the built-in prompt set it comes from."""
    workloads = params.load().workloads
    if key.workload in workloads or source not in workloads:
        return key
    return dataclasses.replace(key, workload=source)


def earlier_seconds_per_request(db: Path | None) -> dict[str, float]:
    """Measured seconds per request of each cell in earlier vLLM runs (window / requests sent), so a plan
    for 200 requests per cell is not read off a 20-request smoke run's window."""
    try:
        with open_store.session(db, read_only=True) as con:
            rows = con.execute(
                "SELECT cell_id, median(window_s / n_requests) FROM cells WHERE status = 'ok' "
                "AND window_s IS NOT NULL AND n_requests > 0 "
                "AND run_id IN (SELECT run_id FROM runs WHERE backend = 'vllm') GROUP BY cell_id"
            ).fetchall()
    except Exception:  # no store yet: plans must work without one
        return {}
    return dict(rows)


def _requests_basis(matrix: Matrix) -> tuple[float, str, dict[str, object] | None]:
    """Requests per cell the estimate assumes: the fixed count, or with ``[adaptive]`` (which ignores
    ``requests_per_cell``) the simulated mean where the simulator can model the matrix, else its maximum."""
    if matrix.adaptive is None:  # the mean over cells (``run.requests_per_slot`` scales it with concurrency)
        loads = [matrix.requests_for(c) for c in matrix.concurrency]
        return sum(loads) / len(loads), "requests_per_cell", None
    saving = simulated_saving(matrix)
    if "mean_adaptive_requests_per_cell" in saving:
        return float(saving["mean_adaptive_requests_per_cell"]), "adaptive_simulated", saving  # type: ignore[arg-type]
    return float(matrix.adaptive.max_requests), "adaptive_max", saving


def plan_matrix(matrix: Matrix, db: Path | None = None, cells: list[CellKey] | None = None) -> Plan:
    """The plan of the whole grid, or of ``cells`` only (a factorized plan's phases): server configs without
    any of them are not started."""
    earlier = earlier_seconds_per_request(db)
    requests, basis, saving = _requests_basis(matrix)
    sources = {"earlier_runs": 0, "cost_model": 0, "flat_guess": 0}
    configs = []
    gpu_hours = 0.0
    cell_gpu_hours = 0.0  # the part that scales with requests per cell (not server starts)
    cells_by_cfg: dict[tuple, list[CellKey]] = {}
    for key in (matrix.cells() if cells is None else cells):
        cells_by_cfg.setdefault(key.server_config, []).append(key)
    configs_run = [cfg for cfg in matrix.server_configs() if cells is None or cfg.key in cells_by_cfg]
    for order, cfg in enumerate(configs_run, start=1):
        cells = cells_by_cfg.get(cfg.key, [])
        seconds = SERVER_START_S
        for key in cells:
            wl = matrix.workload(key.workload)
            n = float(matrix.requests_for(key.concurrency)) if basis == "requests_per_cell" else requests
            if key.cell_id in earlier:
                seconds += earlier[key.cell_id] * n
                sources["earlier_runs"] += 1
            elif (s := model_cell_seconds(_modelled(key, wl.source), n, wl.max_tokens)) is not None:
                seconds += s
                sources["cost_model"] += 1
            else:
                seconds += FALLBACK_CELL_S * n / DEFAULT_REQUESTS
                sources["flat_guess"] += 1
        gpus = cfg.family_spec.tensor_parallel_size
        gpu_hours += seconds * gpus / 3600.0
        cell_gpu_hours += (seconds - SERVER_START_S) * gpus / 3600.0
        configs.append({"order": order, "label": cfg.label(), "method": cfg.method, "depth": cfg.depth,
                        "mode": cfg.mode, "schedule": [list(r) for r in cfg.schedule] or None,
                        "family": cfg.family, "model": cfg.model, "gpu": cfg.gpu,
                        "tensor_parallel_size": gpus, "cells": len(cells), "estimated_s": round(seconds, 1)})
    return Plan(cells=sum(len(c) for c in cells_by_cfg.values()), server_configs=configs,
                estimated_gpu_hours=gpu_hours, estimate_sources=sources,
                adaptive=adaptive_plan(saving, requests, gpu_hours, cell_gpu_hours),
                requests_per_cell=requests, requests_basis=basis)


def adaptive_plan(saving: dict[str, object] | None, requests: float, gpu_hours: float,
                  cell_gpu_hours: float) -> dict[str, object] | None:
    """The simulated saving of the matrix's ``[adaptive]`` stopping, as requests and GPU-hours.

    Cell time is linear in requests in these estimates, so GPU-hours at the adaptive mean (what the plan's
    total assumes) and at the fixed count that gives every cell the same target width rescale the
    requests-per-cell part.
    """
    if saving is None:
        return None
    if "mean_adaptive_requests_per_cell" not in saving:
        return saving
    start_hours = gpu_hours - cell_gpu_hours
    per_request = cell_gpu_hours / requests if requests else 0.0
    fixed = start_hours + per_request * float(saving["mean_fixed_requests_per_cell"])  # type: ignore[arg-type]
    adaptive = start_hours + per_request * float(saving["mean_adaptive_requests_per_cell"])  # type: ignore[arg-type]
    return {**saving, "fixed_gpu_hours": round(fixed, 3), "adaptive_gpu_hours": round(adaptive, 3),
            "gpu_hours_saved": round(fixed - adaptive, 3)}
