"""Factorized plans: measure what decides the winner, predict the rest, confirm the contenders.

``--strategy factorized`` runs, per GPU × family × method, the method's **deepest** depth D at every
workload and load (its per-position acceptance r_i gives τ(d) = 1 + Σ_{i≤d} r_i for every shallower d),
its **shallowest** depth s at every load of the cheapest workload (the step-time slope per extra depth:
in the cost model, T(k) = T_verify(B, k+1) + T_draft(k) is linear in k and its slope does not depend on
the workload), and the ``none`` baseline everywhere. Every other (depth, workload, load) cell is
**predicted** from those pieces (:func:`predict_cell`):

  T(x) = TPOT(x) · τ(x) (time per verify step of a measured cell),
  T_w(d) = T_w(D) + (T(D) − T(s)) / (D − s) · (d − D)   (slope from the cheapest workload, same load),
  TPOT(d) = T_w(d) / τ_w(d), and the deep cell's e2e, throughput and p99s rescaled by that decode speed
  (TTFT kept), its bootstrap replicates rescaled alike.

Then, per group (GPU × model × workload × load), the winner rule (analysis.winners.decide) runs on the
real cells and the open predictions together, a prediction's replicates widened by the model's own error;
every prediction it cannot rule out (the winner, or tied with it) is a contender and is **confirmed**
with a real cell (best first, ``per_round`` per group and round), until no contender is left — the
group's winner is then decided by real cells, clear or a tie. The model error starts at a stated prior
(2 % on the log scale) and is then estimated from every confirmed prediction, out of sample (a robust
spread of log(predicted / measured) less the sampling noise both cells' replicates already carry).
Predicted cells land in their own run (``<run id>-predicted``, cells.origin =
predicted, with replicates and no requests); confirmed cells land in the run with origin = confirmed and,
being newer, win over the prediction wherever analysis picks the latest cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import polars as pl

from analysis import frames
from analysis.metrics import get_metric
from analysis.winners import GROUP, decide
from ingest import open_store, sql, store
from ingest.records import CellKey, RunInfo
from runner.execute import RunSummary, resolve_run_id, run_matrix
from runner.matrix import Matrix
from runner.plan import SERVER_START_S, model_cell_seconds, plan_matrix

STRATEGIES = ("full", "factorized")
PREDICTED_SUFFIX = "-predicted"
SCALED_METRICS = ("output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate",
                  "acceptance_length")


@dataclass(frozen=True, slots=True)
class FactorizedOptions:
    metric: str = "output_throughput"
    model_error: float = 0.02  # prior log-scale error of a prediction; replaced by the confirmed cells' own
    per_round: int = 2  # contenders confirmed per group and round
    max_rounds: int = 20  # a safety bound; a deep matrix (depths 1–8) needed more than 8 rounds


def deepest(matrix: Matrix, method: str) -> int:
    return max(next(ms for ms in matrix.methods if ms.name == method).depths)


def cheapest_workload(matrix: Matrix) -> str:
    """The workload where the slope cell costs least (shortest outputs)."""
    return min(matrix.workloads, key=lambda w: w.max_tokens).name


def measure_cells(matrix: Matrix) -> list[CellKey]:
    """The cells the factorized plan measures before predicting (see module docstring)."""
    cheap = cheapest_workload(matrix)
    out = []
    for key in matrix.cells():
        m = next(ms for ms in matrix.methods if ms.name == key.method)
        deep = key.method == "none" or key.depth == max(m.depths)
        slope = len(m.depths) > 1 and key.depth == min(m.depths) and key.workload == cheap
        if deep or slope:
            out.append(key)
    return out


def _k(row: dict) -> tuple:
    return (row["gpu"], row["family"], row["method"], int(row["depth"]), row["workload"], int(row["concurrency"]))


def propose_share(row: dict) -> float:
    """Share of verify steps that carried a draft: drafts / steps, steps = decode tokens − accepted tokens
    (a step emits its accepted drafts plus one token). 1 for chain drafters; below 1 for n-gram, which
    drafts only when the prompt has a match."""
    decode = float(row["output_tokens"] or 0) - float(row["n_requests"] or 0)
    steps = decode - float(row["accepted_tokens"] or 0)
    drafts = float(row["drafts"] or 0)
    return min(drafts / steps, 1.0) if steps > 0 and drafts > 0 else 1.0


def step_ms(row: dict) -> float:
    """Mean time per verify step of a measured cell: TPOT × tokens per step (τ over every step, drafting or
    not: 1 + q·(τ − 1) with q the propose share)."""
    return float(row["mean_tpot_ms"]) * (1.0 + propose_share(row) * (float(row["acceptance_length"] or 1.0) - 1.0))


def predict_cell(key: CellKey, deep: dict, deep_r: np.ndarray, slope_ms: float, deep_reps: dict[str, np.ndarray]
                 ) -> tuple[dict[str, float], list[float], dict[str, np.ndarray]]:
    """(headline values, per-position r_i, replicates) of cell ``key`` from its method's deep cell.

    ``slope_ms``: step time per extra draft position on a step that drafts (scaled here by the deep cell's
    propose share)."""
    d, D = key.depth, len(deep_r)
    r = deep_r[:d]
    q = propose_share(deep)
    tau_d = 1.0 + float(r.sum())
    tau_D = float(deep["acceptance_length"])
    t_d = step_ms(deep) + q * slope_ms * (d - D)
    tpot_d = t_d / (1.0 + q * (tau_d - 1.0))
    scale = tpot_d / float(deep["mean_tpot_ms"])  # decode time per token, relative to the deep cell
    ttft, e2e = float(deep["mean_ttft_ms"]), float(deep["mean_e2e_ms"])
    e2e_d = ttft + (e2e - ttft) * scale
    speed = e2e / e2e_d  # closed loop: requests (and tokens) per second ∝ 1 / e2e
    factors = {"output_throughput": speed, "p99_e2e_ms": 1 / speed, "p99_tpot_ms": scale, "p99_ttft_ms": 1.0,
               "acceptance_length": tau_d / tau_D, "acceptance_rate": ((tau_d - 1) / d) / ((tau_D - 1) / D)}
    values = {m: float(deep[m]) * f for m, f in factors.items() if deep.get(m) is not None}
    values.update({"mean_tpot_ms": tpot_d, "mean_e2e_ms": e2e_d, "mean_ttft_ms": ttft,
                   "output_throughput_per_gpu": values["output_throughput"] / max(int(deep["gpu_count"] or 1), 1),
                   "request_throughput": float(deep["request_throughput"]) * speed,
                   "acceptance_length": tau_d, "acceptance_rate": (tau_d - 1) / d,
                   "n_requests": 0})
    reps = {m: deep_reps[m] * factors[m] for m in SCALED_METRICS if m in deep_reps}
    return values, r.tolist(), reps


@dataclass(slots=True)
class Pieces:
    """The measured cells of a run, indexed for prediction."""

    rows: dict[tuple, dict]
    positions: dict[str, np.ndarray]  # cell_id → r_i
    reps: dict[str, dict[str, np.ndarray]]  # cell_id → metric → replicates


def read_pieces(con, run_id: str) -> Pieces:
    cells = sql.frame(con, "SELECT * FROM cells WHERE run_id = ? AND status = 'ok'", [run_id])
    pos = frames.positions(con, cells)
    by_cell: dict[str, np.ndarray] = {}
    for cid, g in pos.group_by("cell_id"):
        g = g.sort("position")
        by_cell[str(cid[0])] = g["acceptance"].to_numpy()
    reps: dict[str, dict[str, np.ndarray]] = {cid: {} for cid in cells["cell_id"].to_list()}
    for m in SCALED_METRICS:
        mat = frames.sampling_replicates(con, cells, m)
        for i, cid in enumerate(cells["cell_id"].to_list()):
            if mat.size:
                reps[cid][m] = mat[i]
    return Pieces({_k(r): r for r in cells.to_dicts()}, by_cell, reps)


def predictions(matrix: Matrix, pieces: Pieces, skip: set[str]) -> list[tuple[CellKey, dict, list[float], dict]]:
    """Every matrix cell not in ``skip`` (measured or confirmed) predicted from the pieces."""
    cheap = cheapest_workload(matrix)
    out = []
    for key in matrix.cells():
        if key.cell_id in skip or key.method == "none":
            continue
        m = next(ms for ms in matrix.methods if ms.name == key.method)
        D, s = max(m.depths), min(m.depths)
        base = (key.gpu, key.family, key.method)
        deep = pieces.rows.get((*base, D, key.workload, key.concurrency))
        deep_cheap = pieces.rows.get((*base, D, cheap, key.concurrency))
        shallow = pieces.rows.get((*base, s, cheap, key.concurrency))
        if deep is None or deep_cheap is None or shallow is None or deep["cell_id"] not in pieces.positions:
            continue  # a failed piece: this cell cannot be predicted (and is left to the full grid)
        q = propose_share(deep_cheap)
        slope = (step_ms(deep_cheap) - step_ms(shallow)) / (q * (D - s)) if s < D else 0.0
        values, r, reps = predict_cell(key, deep, pieces.positions[deep["cell_id"]], slope,
                                       pieces.reps.get(deep["cell_id"], {}))
        out.append((key, values, r, reps))
    return out


@dataclass(slots=True)
class FactorizedSummary:
    measured: int = 0
    predicted: int = 0
    confirmed: int = 0
    rounds: int = 0
    model_error: float = 0.0
    prediction_errors_pct: list[float] = field(default_factory=list)
    server_starts: int = 0
    gpu_hours: float = 0.0  # cells' windows × GPUs plus the guessed server starts of every phase

    def as_dict(self) -> dict[str, object]:
        errs = self.prediction_errors_pct
        return {"cells_measured": self.measured, "cells_predicted": self.predicted,
                "cells_confirmed": self.confirmed, "confirm_rounds": self.rounds,
                "model_error": round(self.model_error, 4), "server_starts": self.server_starts,
                "gpu_hours": round(self.gpu_hours, 3),
                "prediction_error_pct": {"median": round(float(np.median(errs)), 2),
                                         "max": round(float(np.max(errs)), 2)} if errs else None}


def gpu_hours(con, run_id: str, keys: list[CellKey]) -> float:
    """GPU-hours of ``keys`` as run: each cell's window × its GPUs, plus one guessed start per server config."""
    cfg_of = {k.cell_id: "|".join(map(str, k.server_config)) for k in keys}
    got = con.execute("SELECT cell_id, window_s, gpu_count FROM cells WHERE run_id = ? AND status = 'ok' AND "
                      "cell_id IN (SELECT unnest(?))", [run_id, list(cfg_of)]).fetchall()
    cells_s = sum(float(w or 0) * int(g or 1) for _c, w, g in got)
    gpus_per_cfg: dict[str, int] = {}
    for cid, _w, g in got:
        gpus_per_cfg[cfg_of[cid]] = max(gpus_per_cfg.get(cfg_of[cid], 1), int(g or 1))
    return (cells_s + SERVER_START_S * sum(gpus_per_cfg.values())) / 3600.0


def contenders(real: pl.DataFrame, real_reps: np.ndarray, preds: dict[str, tuple[CellKey, dict, dict]],
               opts: FactorizedOptions, sigma: float) -> list[CellKey]:
    """Per group, the predicted candidates the winner rule cannot yet rule out, best first (``per_round``).

    The rule (analysis.winners.decide) runs on the group's real cells and its open predictions together; a
    prediction's replicates are its deep cell's, times a lognormal model error of ``sigma`` (drawn per
    replicate, seeded by the cell id). Predictions in the winner's tied set — or the winner itself — are
    contenders; a group without any is decided by real cells alone."""
    m = get_metric(opts.metric)
    by_group: dict[tuple, list[tuple[CellKey, dict, dict]]] = {}
    for key, values, reps in preds.values():
        # the same key as analysis.winners.GROUP (gpu, family, model, workload, dataset, concurrency)
        by_group.setdefault((key.gpu, key.family, key.model, key.workload, key.dataset, key.concurrency),
                            []).append((key, values, reps))
    rows = real.with_row_index("_i")
    out = []
    for g_key, g in rows.group_by(list(GROUP), maintain_order=True):
        cands = by_group.get(tuple(g_key), [])
        if not cands:
            continue
        idx = g["_i"].to_numpy()
        n_rep = real_reps.shape[1] if real_reps.size else 0
        values = [*g[m.name].fill_null(np.nan).to_numpy().astype(float), *[c[1][m.name] for c in cands]]
        reps = [*(real_reps[idx] if n_rep else []), *[_with_model_error(c[2].get(m.name), c[0].cell_id, sigma, n_rep)
                                                      for c in cands]]
        d = decide(np.asarray(values), np.stack(reps) if n_rep else np.zeros((0, 0)), m)
        open_ = [cands[j - g.height][0] for j in d.tied if j >= g.height]
        out += open_[: opts.per_round]
    return out


def _with_model_error(reps: np.ndarray | None, cell_id: str, sigma: float, n: int) -> np.ndarray:
    if reps is None or reps.size != n:
        return np.full(n, np.nan)
    rng = np.random.default_rng(int(cell_id[:12], 16))
    return reps * np.exp(rng.normal(0.0, sigma, n)) if sigma > 0 else reps


def model_error(log_errors: list[float], noise_var: list[float], floor: float) -> float:
    """The predictions' own error (log scale), from every confirmed prediction: a robust spread (1.4826 ×
    median |log error|; a long closed-loop tail makes single cells noisy) less the sampling noise both
    cells already carry in their replicates, never below ``floor``."""
    if len(log_errors) < 10:
        return floor
    robust = 1.4826 * float(np.median(np.abs(log_errors)))
    return max(floor, float(np.sqrt(max(robust ** 2 - float(np.median(noise_var)), 0.0))))


def run_factorized(matrix: Matrix, opts, fopts: FactorizedOptions | None = None, progress=None, backend=None,
                   notify=None):
    """Run ``matrix`` with the factorized strategy; returns (RunSummary, FactorizedSummary)."""
    fopts = fopts or FactorizedOptions()
    run_id, _ = resolve_run_id(matrix, opts, notify)
    opts = replace(opts, run_id=run_id)
    total = RunSummary(run_id=run_id)
    fs = FactorizedSummary(model_error=fopts.model_error)

    def phase(keys: list[CellKey], origin: str) -> None:
        if not keys:
            return
        s = run_matrix(matrix, replace(opts, only=frozenset(k.cell_id for k in keys), origin=origin,
                                       resume=True), progress=progress, backend=backend)
        total.cells_ok += s.cells_ok
        total.cells_failed += s.cells_failed
        total.failures += s.failures
        with open_store.session(opts.db, read_only=True) as con:
            fs.gpu_hours += gpu_hours(con, run_id, keys)
        fs.server_starts += len({k.server_config for k in keys})

    measured = measure_cells(matrix)
    phase(measured, "measured")
    fs.measured = len(measured)
    done = {k.cell_id for k in measured}
    predicted: dict[str, tuple[CellKey, dict, dict]] = {}
    with open_store.session(opts.db) as con:
        pieces = read_pieces(con, run_id)
        rows = predictions(matrix, pieces, done)
        pred_run = run_id + PREDICTED_SUFFIX
        store.write_run(con, RunInfo(run_id=pred_run, backend=opts.backend, source=str(matrix.path),
                                     matrix_hash=matrix.digest,
                                     notes=f"factorized-plan predictions for run {run_id}: cost model over its "
                                           "measured deep/shallow/baseline cells; no requests"))
        parts: dict[str, list[pl.DataFrame]] = {}
        for key, values, r, reps in rows:
            deep = pieces.rows[(key.gpu, key.family, key.method, deepest(matrix, key.method), key.workload,
                                key.concurrency)]
            built = store.cell_frames(pred_run, key, pl.DataFrame(), window_s=None,
                                      gpu_count=int(deep["gpu_count"] or 1), headline={**values, "positions": r},
                                      labels={"origin": "predicted"}, replicates=reps)
            for table, frame in built.items():
                parts.setdefault(table, []).append(frame)
            predicted[key.cell_id] = (key, values, reps)
        if parts:  # one transaction for every prediction (a rerun adds nothing: cells are keyed)
            store.write_tables_bulk(con, {t: pl.concat(f, how="diagonal_relaxed") for t, f in parts.items()})
        store.finish_run(con, pred_run)
    fs.predicted = len(predicted)
    m = get_metric(fopts.metric).name
    sigma = fopts.model_error
    log_errors: list[float] = []
    noise: list[float] = []
    for _round in range(fopts.max_rounds):
        with open_store.session(opts.db, read_only=True) as con:
            real = frames.cells(con, frames.Filters(runs=(run_id,)))
            real_reps = frames.sampling_replicates(con, real, m)
        todo = contenders(real, real_reps, {c: p for c, p in predicted.items() if c not in done}, fopts, sigma)
        if not todo:
            break
        phase(todo, "confirmed")
        fs.rounds += 1
        fs.confirmed += len(todo)
        done |= {k.cell_id for k in todo}
        with open_store.session(opts.db, read_only=True) as con:
            real = frames.cells(con, frames.Filters(runs=(run_id,)))
            real_reps = frames.sampling_replicates(con, real, m)
        row_of = {cid: i for i, cid in enumerate(real["cell_id"].to_list())}
        for k in todo:
            i = row_of.get(k.cell_id)
            got, (_k, pv, pr) = (real[m][i] if i is not None else None), predicted[k.cell_id]
            if got and pv.get(m):
                log_errors.append(float(np.log(pv[m] / got)))
                fs.prediction_errors_pct.append(abs(got - pv[m]) / abs(pv[m]) * 100)
                with np.errstate(invalid="ignore", divide="ignore"):
                    noise.append(float(np.nanvar(np.log(pr.get(m, np.full(1, np.nan)))) +
                                       np.nanvar(np.log(real_reps[i])) if real_reps.size else 0.0))
        sigma = model_error(log_errors, noise, fopts.model_error)
    fs.model_error = sigma
    total.cells_skipped = 0
    return total, fs


def expected_confirmations(matrix: Matrix, per_round: int = 2) -> list[CellKey]:
    """What ``plan`` assumes the confirm phase runs: per group, the ``per_round`` best unmeasured candidates
    by the cost model's cell time (shortest = fastest) — one round; a guess, reported as such."""
    measured = {k.cell_id for k in measure_cells(matrix)}
    groups: dict[tuple, list[tuple[float, CellKey]]] = {}
    for key in matrix.cells():
        if key.cell_id in measured:
            continue
        secs = model_cell_seconds(key, 100.0, matrix.workload(key.workload).max_tokens)
        if secs is not None:
            groups.setdefault((key.gpu, key.family, key.model, key.workload, key.concurrency), []).append((secs, key))
    return [k for g in groups.values() for _s, k in sorted(g, key=lambda x: x[0])[:per_round]]


def factorized_plan(matrix: Matrix, db: Path | None = None) -> dict[str, object]:
    """``plan --strategy factorized``: the measure phase, an estimated confirm phase, and the full grid's
    GPU-hours, estimated the same way (runner/plan.py)."""
    full = plan_matrix(matrix, db)
    measure = plan_matrix(matrix, db, measure_cells(matrix))
    confirm = plan_matrix(matrix, db, expected_confirmations(matrix, FactorizedOptions().per_round))
    total = measure.estimated_gpu_hours + confirm.estimated_gpu_hours
    saving = (1 - total / full.estimated_gpu_hours) * 100 if full.estimated_gpu_hours else 0.0
    return {"strategy": "factorized", "cells": measure.cells + confirm.cells,
            "server_configs": measure.server_configs, "estimated_gpu_hours": round(total, 3),
            "measure": {"cells": measure.cells, "server_configs": len(measure.server_configs),
                        "estimated_gpu_hours": round(measure.estimated_gpu_hours, 3)},
            "confirm_expected": {"cells": confirm.cells, "server_configs": len(confirm.server_configs),
                                 "estimated_gpu_hours": round(confirm.estimated_gpu_hours, 3),
                                 "basis": "cost model's top 2 unmeasured candidates per group, one round"},
            "predicted_cells": full.cells - measure.cells,
            "full_grid": {"cells": full.cells, "server_configs": len(full.server_configs),
                          "estimated_gpu_hours": round(full.estimated_gpu_hours, 3)},
            "saving_pct": round(saving, 1), "estimate_sources": measure.estimate_sources,
            "requests_per_cell": round(measure.requests_per_cell, 1), "server_start_s": SERVER_START_S}
