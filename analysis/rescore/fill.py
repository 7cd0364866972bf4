"""The acceptance and cost models filling what the matrix did not measure, for re-scoring.

Owns three fills, each a TPOT ratio applied to a measured cell's samples (TTFT does not depend on the
speculative method in vLLM's prefill, so it is kept as measured):

* **another depth** of a measured method (same workload and load): α is solved from the measured
  acceptance length τ with the method's acceptance shape (analysis.acceptance / calibration), then
  TPOT(k') = TPOT(k) · [T(k')/E(k')] / [T(k)/E(k)], E the expected tokens per verify step and
  T = T_verify(B, k+1) + T_draft(method, k) from analysis.costmodel;
* **a method never measured** on this workload and load: from the ``none`` cell, with α from the
  published-results calibration: TPOT = TPOT(none) · [T(k)/E(k)] / T_verify(B, 1);
* **production acceptance** (counters in the trace): α scaled by α_observed/α_benchmark, the step
  time unchanged: TPOT · E(α) / E(α_adjusted).

Without a cost model for the family × GPU (a GPU or family the tables do not know), step time is
taken as independent of depth and only the acceptance ratio moves TPOT (``model:acceptance``).
"""

from __future__ import annotations

import numpy as np

from analysis import acceptance, calibration, costmodel, params
from analysis.rescore.matrix import CellSamples, Matrix

ALPHA_CAP = 0.98


def deployment(family: str, gpu: str) -> costmodel.Deployment | None:
    try:
        return params.load().deployment(family, gpu)
    except (KeyError, ValueError):
        return None


def _decay(method: str) -> float:
    """The method's fitted conditional-acceptance decay (calibration); i.i.d. for unknown methods."""
    return calibration.decay_for(method) if method in params.load().methods else 1.0


def _block(method: str) -> float:
    """The method's fitted depth exponent β (calibration); 0 for unknown methods."""
    return calibration.block_for(method) if method in params.load().methods else 0.0


def tokens_per_step(method: str, family: str, k: int, alpha: float) -> float:
    if k <= 0:
        return 1.0
    return acceptance.expected_tokens(acceptance.positions(alpha, _decay(method), k, block=_block(method)))


def alpha_from_tau(method: str, family: str, tau: float, k: int) -> float:
    return acceptance.solve_alpha(tau, k, _decay(method), _block(method))


def _propose(method: str, workload: str) -> float:
    mp = params.load().methods.get(method)
    return float(mp.propose.get(workload, 1.0)) if mp is not None and mp.propose else 1.0


def step_ms(method: str, workload: str, k: int, dep: costmodel.Deployment, batch: float, context: float) -> float:
    """Model time of one decode step (n-gram: averaged over steps with and without a match)."""
    plain = costmodel.verify_ms(dep, batch, 1.0, context)
    if k <= 0:
        return plain
    mp = params.load().methods.get(method)
    t = costmodel.verify_ms(dep, batch, k + 1.0, context)
    if mp is None:
        return t
    t += costmodel.draft_ms(dep, mp.draft, batch, k, context)
    p = _propose(method, workload)
    return p * t + (1.0 - p) * (plain + mp.draft.pass_ms)


def time_per_token(method: str, family: str, workload: str, k: int, alpha: float,
                   dep: costmodel.Deployment | None, batch: float, context: float) -> float:
    """Model decode time per output token, T(k)/E(k) (n-gram: only a share of steps find a draft)."""
    e = tokens_per_step(method, family, k, alpha)
    if k > 0 and method in params.load().methods:
        p = _propose(method, workload)
        e = p * e + (1.0 - p)
    if dep is None:
        return 1.0 / e
    return step_ms(method, workload, k, dep, batch, context) / e


def step_line(method: str, workload: str, k: int, dep: costmodel.Deployment | None, batch: float
              ) -> tuple[float, float]:
    """(T0, T1) with step time = T0 + T1 · context (the cost model is linear in context); (1, 0) without it."""
    if dep is None:
        return 1.0, 0.0
    t0 = step_ms(method, workload, k, dep, batch, 0.0)
    return t0, (step_ms(method, workload, k, dep, batch, 1000.0) - t0) / 1000.0


def prefill_line(dep: costmodel.Deployment | None) -> tuple[float, float]:
    """(P0, P1) with prefill time = P0 + P1 · input tokens; (1, 0) without a cost model."""
    if dep is None:
        return 1.0, 0.0
    p0 = costmodel.prefill_ms(dep, 0.0)
    return p0, costmodel.prefill_ms(dep, 1000.0) / 1000.0 - p0 / 1000.0


def input_mean(cell: CellSamples) -> float:
    """The cell's mean input tokens (1,500 for a cell stored without input lengths)."""
    return cell.in_mean if np.isfinite(cell.in_mean) else 1500.0


def context(cell: CellSamples) -> float:
    """The cell's mean context over its decode: mean input + half its mean output."""
    return float(input_mean(cell) + np.mean(cell.out) / 2)


def fill(m: Matrix, method: str, depth: int, workload: str, conc: int) -> CellSamples | None:
    """The cell (method, depth) at (workload, conc): measured, else model-filled, else None."""
    key = (method, depth, workload, conc)
    if key in m.cells:
        return m.cells[key]
    dep = deployment(m.family, m.gpu)
    same = [c for (mm, _d, w, cc), c in m.cells.items() if mm == method and w == workload and cc == conc
            and method != "none" and c.tau is not None and np.isfinite(c.tau)]
    if same:
        src = min(same, key=lambda c: (abs(c.depth - depth), c.depth))
        alpha = alpha_from_tau(method, m.family, float(src.tau), src.depth)
        ctx = context(src)
        ratio = (time_per_token(method, m.family, workload, depth, alpha, dep, conc, ctx)
                 / time_per_token(method, m.family, workload, src.depth, alpha, dep, conc, ctx))
        out = src.scaled(ratio, "model:depth" if dep is not None else "model:acceptance", depth=depth)
        out.tau = tokens_per_step(method, m.family, depth, alpha)
        return out
    base = m.cells.get(("none", 0, workload, conc))
    if base is None or method not in params.load().methods or m.family not in params.load().families:
        return None
    alpha, _prov = calibration.alpha_for(method, m.family, workload)
    ctx = context(base)
    ratio = (time_per_token(method, m.family, workload, depth, alpha, dep, conc, ctx)
             / time_per_token("none", m.family, workload, 0, alpha, dep, conc, ctx))
    out = base.scaled(ratio, "model:none", depth=depth, method=method)
    out.tau = tokens_per_step(method, m.family, depth, alpha)
    return out


def adjust_acceptance(cell: CellSamples, family: str, factor: float) -> CellSamples:
    """The cell under production acceptance: α × ``factor``, step time unchanged."""
    if cell.method == "none" or cell.tau is None or not np.isfinite(cell.tau) or not np.isfinite(factor):
        return cell
    alpha = alpha_from_tau(cell.method, family, float(cell.tau), cell.depth)
    adjusted = float(np.clip(alpha * factor, 0.0, ALPHA_CAP))
    e0 = tokens_per_step(cell.method, family, cell.depth, alpha)
    e1 = tokens_per_step(cell.method, family, cell.depth, adjusted)
    out = cell.scaled(e0 / e1, cell.provenance)
    out.tau = e1
    return out
