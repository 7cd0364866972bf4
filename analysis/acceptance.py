"""The acceptance model: expected tokens per verify step from per-position acceptance, and its fits.

With conditional per-position acceptance p_1..p_k, a verify step yields
E(k) = 1 + Σ_{j=1..k} Π_{i≤j} p_i tokens (i.i.d. α: (1 − α^{k+1}) / (1 − α), Leviathan et al. 2023).
vLLM's per-position counter gives cumulative r_i = Π_{j≤i} p_j, so τ = 1 + Σ r_i.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def cumulative(conditional: Sequence[float]) -> np.ndarray:
    """r_i = Π_{j≤i} p_j."""
    return np.cumprod(np.asarray(conditional, dtype=float))


def conditional_from_cumulative(r: Sequence[float]) -> np.ndarray:
    """p_i = r_i / r_{i−1} (r_0 = 1); 0 where the previous position was never accepted."""
    r = np.asarray(r, dtype=float)
    prev = np.concatenate([[1.0], r[:-1]])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(prev > 0, r / prev, 0.0)


def expected_tokens(conditional: Sequence[float]) -> float:
    """E(k) for a depth-k chain with conditional acceptances p_1..p_k."""
    return float(1.0 + cumulative(conditional).sum())


def expected_tokens_iid(alpha: float, k: int) -> float:
    if abs(1.0 - alpha) < 1e-12:
        return float(k + 1)
    return float((1.0 - alpha ** (k + 1)) / (1.0 - alpha))


def acceptance_rate(conditional: Sequence[float]) -> float:
    """Accepted / drafted tokens for a full chain of length k: (E(k) − 1) / k."""
    k = len(conditional)
    return (expected_tokens(conditional) - 1.0) / k if k else float("nan")


def positions(alpha: float, decay: float, k: int, *, cap: float = 0.98, block: float = 0.0) -> np.ndarray:
    """The simulator's conditional acceptance shape: p_i = α·k^(−block)·decay^(i−1), clipped to [0, cap].

    One shape for every method; ``decay`` and ``block`` are fitted per method from published per-depth and
    per-position curves (:mod:`analysis.calibration`). decay < 1 makes E(k) saturate with depth, decay = 1 is
    i.i.d. ``block`` > 0 says a longer draft costs every position (a block drafter asked for 15 tokens drafts
    its first ones worse than when asked for 3: vLLM's AMD post, per-position rates by depth); 0 is no such cost,
    and α is then the depth-1 level.
    """
    i = np.arange(1, k + 1)
    return np.clip(alpha * float(k) ** (-block) * decay ** (i - 1), 0.0, cap)


def _tau(alpha: float, powers: Sequence[float], cap: float = 0.98) -> float:
    """E(k) of the :func:`positions` shape (``powers`` = k^(−block)·decay^0..decay^(k−1)) in plain floats: the same
    products and sums as ``expected_tokens(positions(...))`` without numpy's per-call cost on a handful of elements
    (the bisection below evaluates it 50 times per solve, and every store read solves once per published row)."""
    total, run = 0.0, 1.0
    for p in powers:
        run *= min(max(alpha * p, 0.0), cap)
        total += run
    return 1.0 + total


def solve_alpha(target_tau: float, k: int, decay: float = 1.0, block: float = 0.0) -> float:
    """The α whose :func:`positions` shape gives E(k) = ``target_tau`` (bisection; p_1 clipped to [0, 0.98])."""
    scale = float(k) ** (-block) if k else 1.0
    powers = [scale * decay ** i for i in range(k)]
    lo, hi = 0.0, 0.98 / scale  # α is the depth-1 level: with block > 0 the first position reaches the cap first
    target_tau = min(max(float(target_tau), 1.0), _tau(hi, powers))
    for _ in range(50):
        mid = (lo + hi) / 2
        if _tau(mid, powers) < target_tau:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def fit_alpha_from_counters(drafts: float, accepted: float, k: int) -> float:
    """i.i.d. α from counter deltas: solve 1 + accepted/drafts = E_iid(α, k)."""
    if drafts <= 0 or k <= 0:
        return float("nan")
    return solve_alpha(1.0 + accepted / drafts, k)


def fit_from_positions(r: Sequence[float]) -> tuple[float, float]:
    """(α, decay) of p_i = α·decay^(i−1) fitted by least squares on log conditional rates."""
    p = conditional_from_cumulative(r)
    p = p[p > 0]
    if p.size == 0:
        return 0.0, 1.0
    if p.size == 1:
        return float(p[0]), 1.0
    i = np.arange(p.size)
    slope, intercept = np.polyfit(i, np.log(p), 1)
    return float(np.exp(intercept)), float(np.exp(slope))
