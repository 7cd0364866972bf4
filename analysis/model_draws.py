"""Model uncertainty of simulated cells: R parameter draws and each cell's factors under them.

Draw j (j = 0..R−1, one seed for the whole product, so draw j is the same parameter set for every cell and
every comparison stays paired) takes, per method:

* an acceptance-level error ε = s_j + δ_{m,j} from the leave-one-source-out residuals
  log(published τ / predicted τ) (:mod:`analysis.validation`): s_j, shared by every method, resampled from
  the per-source shifts (each left-out source's mean residual: a deployment's target, prompts and harness
  move all its drafters together, as the DSpark paper's three methods moved together), and δ_{m,j}, per
  method, resampled from the rows' deviations from their source's shift (all methods pooled when a method
  has fewer than ``MIN_RESIDUALS``); both centred on their median (the point fit already uses every source).
  A new deployment's level may be as far from the fit as a left-out source was, and methods compared within
  it differ by as much as methods within one source did;
  cells whose α is a ``prior`` draw α uniformly in the prior's range instead;
* a decay — uniform in the fitted decay's range (the spread of the curves' own fits, or the prior range);
* every draft-cost constant (pass_ms, token_frac, serial_head_ms) and the n-gram proposal rate — uniform in
  its range in data/sim_params.toml.

A cell's factors relate its expected numbers under draw j to those under the point parameters, with the
analytic model the simulator samples from: tokens per step E = 1 + Σ Π p_i (τ' = clip(E(α, decay', k)·e^ε,
1, k+1)), step time T = T_verify(B, k+1) + T_draft'(B, k) (n-gram: averaged over steps with and without a
match). throughput × (E'/T')/(E/T); p99 e2e and TPOT × its inverse; TTFT × 1; acceptance length × τ'/τ and
rate × (τ'−1)/(τ−1). No-spec cells get factor 1: their cost terms are shared by every candidate of a group.
The runner's sim backend hands these factors to ingest, which multiplies the sampling bootstrap replicates
by them (replicate j × draw j), so the winner rule sees sampling noise and model error together.

A **world** (``--world N``, :func:`world_cell`) is one more draw, seeded by N: a hidden truth the simulator
measures with sampling noise only (its cells carry no factors), to test a tuner against (docs/tune.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache

import numpy as np

from analysis import acceptance, calibration, costmodel, params, validation
from ingest.cellstats import BOOTSTRAP_REPLICATES

R = BOOTSTRAP_REPLICATES
MODEL_SEED = 20261201
MIN_RESIDUALS = 5
FACTOR_KEYS = ("output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate",
               "acceptance_length")


@dataclass(frozen=True, slots=True)
class MethodDraws:
    eps: np.ndarray  # (R,) log-τ level error
    decay: np.ndarray  # (R,)
    u_alpha: np.ndarray  # (R,) uniform(0,1): position inside a prior α range
    pass_ms: np.ndarray
    token_frac: np.ndarray
    serial_head_ms: np.ndarray
    u_propose: np.ndarray


def _uniform(rng: np.random.Generator, prior: params.Prior | None, fallback: float, n: int = R) -> np.ndarray:
    if prior is None or prior.low is None or prior.high is None:
        return np.full(n, prior.value if prior is not None else fallback)
    return rng.uniform(prior.low, prior.high, n)


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.sha256(f"{MODEL_SEED}:{name}".encode()).hexdigest()[:12], 16))


def _shift(rng: np.random.Generator, n: int) -> np.ndarray:
    shifts, _dev = validation.residual_parts()
    return rng.choice(shifts - np.median(shifts), n, replace=True)


@cache
def shared_shift() -> np.ndarray:
    """s_j: the per-source level shift of draw j, the same for every method and cell."""
    return _shift(_rng("source-shift"), R)


def _draws(method: str, rng: np.random.Generator, shift: np.ndarray) -> MethodDraws:
    """``len(shift)`` draws of ``method``'s parameters (module docstring), from ``rng``."""
    n = len(shift)
    _shifts, dev = validation.residual_parts()
    pool = dev.get(method)
    if pool is None or pool.size < MIN_RESIDUALS:
        pool = dev["*"]
    # centred: the fit already uses every source, so the draws spread around the point, they do not shift it
    eps = shift + rng.choice(pool - np.median(pool), n, replace=True)
    fit = calibration.decay_fit(method)
    decay = rng.uniform(fit.low, fit.high, n) if fit.high > fit.low else np.full(n, fit.value)
    pri = params.priors()
    d = params.load().methods[method].draft
    return MethodDraws(
        eps=eps, decay=decay, u_alpha=rng.random(n),
        pass_ms=_uniform(rng, pri.get(f"methods.{method}.draft.pass_ms"), d.pass_ms, n),
        token_frac=_uniform(rng, pri.get(f"methods.{method}.draft.token_frac"), d.token_frac, n),
        serial_head_ms=_uniform(rng, pri.get(f"methods.{method}.draft.serial_head_ms"), d.serial_head_ms, n),
        u_propose=rng.random(n),
    )


@cache
def method_draws(method: str) -> MethodDraws:
    return _draws(method, _rng(method), shared_shift())


@cache
def world_draws(world: int, method: str) -> MethodDraws:
    """World ``world``'s one draw of ``method``'s parameters: drawn as the model draws are (same distributions,
    its own seed), so a world is a deployment the model could be wrong about by as much as it states."""
    return _draws(method, _rng(f"world{world}:{method}"), _shift(_rng(f"world{world}:source-shift"), 1))


@dataclass(frozen=True, slots=True)
class WorldCell:
    """What the simulator draws a world's cell from: conditional acceptance per position, drafting cost and the
    n-gram proposal rate."""

    positions: np.ndarray
    draft: costmodel.DraftCost
    propose: float


def world_cell(world: int, method: str, family: str, workload: str, depth: int) -> WorldCell:
    """A cell's parameters in world ``world``: the level error e^ε scales τ (the conditional rates are scaled by
    one factor until E(k) meets it; a prior α is drawn in its range instead), the decay and every draft-cost
    constant are the world's draws. The same world and cell give the same parameters in any run order."""
    p = params.load()
    mp = p.methods[method]
    md = world_draws(world, method)
    src = calibration.alpha_source(method, family, workload)
    block, cap = calibration.block_for(method), 0.98
    decay = float(md.decay[0])
    if src.kind == "prior":
        pr = params.priors().get(f"methods.{method}.alpha.{workload}")
        lo, hi = (pr.low, pr.high) if pr is not None and pr.low is not None else (src.alpha, src.alpha)
        alpha = min(p.borrowing["alpha_cap"], (lo + (hi - lo) * float(md.u_alpha[0])) * src.family_ratio)
        pos = acceptance.positions(alpha, decay, depth, block=block)
    else:
        base = acceptance.positions(src.alpha, decay, depth, cap=10.0, block=block)
        target = float(np.clip(acceptance.expected_tokens(np.clip(base, 0.0, cap)) * np.exp(md.eps[0]),
                               1.0, depth + 1.0))
        lo_c, hi_c = 0.0, cap / max(float(base.min()), 1e-9)
        for _ in range(60):  # E(k) grows with the scale: bisect for the one that meets the target
            mid = (lo_c + hi_c) / 2
            if acceptance.expected_tokens(np.clip(base * mid, 0.0, cap)) < target:
                lo_c = mid
            else:
                hi_c = mid
        pos = np.clip(base * lo_c, 0.0, cap)
    prop = float(mp.propose.get(workload, 1.0)) if mp.propose else 1.0
    if mp.propose:
        pr = params.priors().get(f"methods.{method}.propose.{workload}")
        if pr is not None and pr.low is not None:
            prop = pr.low + (pr.high - pr.low) * float(md.u_propose[0])
    draft = costmodel.DraftCost(mp.draft.kind, float(md.pass_ms[0]), float(md.token_frac[0]),
                                float(md.serial_head_ms[0]))
    return WorldCell(positions=pos, draft=draft, propose=prop)


def _tokens(alpha: np.ndarray, decay: np.ndarray, k: int, block: float = 0.0) -> np.ndarray:
    i = np.arange(1, k + 1)
    p = np.clip(alpha[:, None] * float(k) ** (-block) * decay[:, None] ** (i - 1)[None, :], 0.0, 0.98)
    return 1.0 + np.cumprod(p, axis=1).sum(axis=1)


def _step(dep: costmodel.Deployment, cost: costmodel.DraftCost, batch: float, k: int, context: float,
          propose: float) -> float:
    plain = costmodel.verify_ms(dep, batch, 1.0, context)
    t = costmodel.verify_ms(dep, batch, k + 1.0, context) + costmodel.draft_ms(dep, cost, batch, k, context)
    return propose * t + (1.0 - propose) * (plain + cost.pass_ms)


def model_speed(method: str, depth: int, family: str, workload: str, gpu: str, concurrency: int) -> float:
    """The point model's decode speed of a cell (tokens per verify step / step time, per sequence): the number
    :func:`cell_factors` scales, so ``model_speed × factors`` is the cell's speed under each draw."""
    p = params.load()
    wl = p.workloads[workload]
    dep = p.deployment(family, gpu)
    context = wl.input_median + wl.output_median / 2
    batch = float(concurrency)
    if method == "none" or depth <= 0 or method not in p.methods:
        return 1.0 / costmodel.verify_ms(dep, batch, 1.0, context)
    mp = p.methods[method]
    tau0 = acceptance.expected_tokens(calibration.conditional_positions(method, family, workload, depth))
    prop0 = float(mp.propose.get(workload, 1.0)) if mp.propose else 1.0
    return (prop0 * tau0 + (1.0 - prop0)) / _step(dep, mp.draft, batch, depth, context, prop0)


def cell_factors(method: str, depth: int, family: str, workload: str, gpu: str, concurrency: int
                 ) -> dict[str, np.ndarray] | None:
    """Per-draw multiplicative factors of a simulated cell's metrics (None for a no-spec cell)."""
    p = params.load()
    if method == "none" or depth <= 0 or method not in p.methods:
        return None
    mp = p.methods[method]
    md = method_draws(method)
    wl = p.workloads[workload]
    dep = p.deployment(family, gpu)
    context = wl.input_median + wl.output_median / 2
    batch = float(concurrency)
    src = calibration.alpha_source(method, family, workload)
    d0, b0 = calibration.decay_for(method), calibration.block_for(method)
    tau0 = acceptance.expected_tokens(acceptance.positions(src.alpha, d0, depth, block=b0))
    if src.kind == "prior":
        pr = params.priors().get(f"methods.{method}.alpha.{workload}")
        lo, hi = (pr.low, pr.high) if pr is not None and pr.low is not None else (src.alpha, src.alpha)
        alpha = np.minimum(p.borrowing["alpha_cap"], (lo + (hi - lo) * md.u_alpha) * src.family_ratio)
        tau = _tokens(alpha, md.decay, depth, b0)
    else:
        tau = _tokens(np.full(R, src.alpha), md.decay, depth, b0) * np.exp(md.eps)
    tau = np.clip(tau, 1.0, depth + 1.0)
    prop0 = float(mp.propose.get(workload, 1.0)) if mp.propose else 1.0
    if mp.propose:
        pr = params.priors().get(f"methods.{method}.propose.{workload}")
        prop = (pr.low + (pr.high - pr.low) * md.u_propose) if pr is not None and pr.low is not None \
            else np.full(R, prop0)
    else:
        prop = np.ones(R)
    e0 = prop0 * tau0 + (1.0 - prop0)
    t0 = _step(dep, mp.draft, batch, depth, context, prop0)
    e = prop * tau + (1.0 - prop)
    t = np.array([_step(dep, costmodel.DraftCost(mp.draft.kind, float(md.pass_ms[j]), float(md.token_frac[j]),
                                                 float(md.serial_head_ms[j])), batch, depth, context, float(prop[j]))
                  for j in range(R)])
    tput = (e / t) / (e0 / t0)
    return {
        "output_throughput": tput, "p99_e2e_ms": 1.0 / tput, "p99_tpot_ms": 1.0 / tput, "p99_ttft_ms": np.ones(R),
        "acceptance_length": tau / tau0, "acceptance_rate": (tau - 1.0) / max(tau0 - 1.0, 1e-9),
    }
