"""Gains with their certainty, shared by the winner rule (analysis.winners) and the pick (analysis.equivalence).

Owns the percentile interval over replicates (:func:`intervals`, :func:`interval`, at ``LEVEL``) and one
candidate's gain over another from the same paired replicates (:func:`gain_vs`), said in words
(:func:`gain_text`). Below both users, so neither imports the other for it.
"""

from __future__ import annotations

import numpy as np

from analysis.metrics import Metric

LEVEL = 0.95


def intervals(reps: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Each row's percentile interval over its finite values (NaN with fewer than 10), vectorised.

    Same numbers as ``np.percentile(row[finite], ...)`` per row (linear method, numpy's lerp), in one sort.
    """
    reps = np.atleast_2d(np.asarray(reps, dtype=float))
    m = reps.shape[0]
    if reps.size == 0:
        return np.full(m, np.nan), np.full(m, np.nan)
    s = np.sort(reps, axis=1)  # NaNs sort last
    count = np.isfinite(reps).sum(axis=1)
    qs = np.true_divide(np.array([(1 - level) / 2 * 100, (1 + level) / 2 * 100]), 100)
    rows = np.arange(m)
    out = []
    for q in qs:
        virtual = (np.maximum(count, 1) - 1) * q
        prev = np.floor(virtual).astype(int)
        nxt = np.minimum(prev + 1, np.maximum(count - 1, 0))
        gamma = virtual - prev
        a, b = s[rows, prev], s[rows, nxt]
        diff = b - a
        val = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
        out.append(np.where(count >= 10, val, np.nan))
    return out[0], out[1]


def interval(reps: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    lo, hi = intervals(np.asarray(reps, dtype=float).reshape(1, -1), level)
    return float(lo[0]), float(hi[0])


def gain_vs(v: np.ndarray, r: np.ndarray, j: int, ref: int | None, m: Metric
            ) -> tuple[float | None, list[float | None] | None]:
    """Candidate ``j``'s gain over ``ref`` (%, in the good direction: +23 % is 1.23× throughput or 1/1.23 the
    latency) and its 95 % interval from the same paired replicates (None without replicates)."""
    if ref is None or not (np.isfinite(v[ref]) and v[ref] and np.isfinite(v[j]) and v[j]):
        return None, None
    gain = ((v[j] / v[ref]) if m.higher_is_better else (v[ref] / v[j])) * 100 - 100
    if not r.size:
        return float(gain), None
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = r[j] / r[ref] if m.higher_is_better else r[ref] / r[j]
    ci = [_num(x * 100 - 100) for x in interval(ratio * 1.0)]
    return float(gain), (ci if ci[0] is not None else None)


def _signed(x: float) -> str:
    return f"{x:+.0f}" if abs(x) >= 10 else f"{x:+.1f}"


def gain_text(gain: float | None, ci: list[float | None] | None, ref: str, *,
              winner_is_baseline: bool = False) -> str | None:
    """A gain with its certainty in words: ``+38 % [+21, +55] vs none``, or ``not separable from …`` when its
    interval includes 0 (``ref`` = ``none``: "no speculation")."""
    if winner_is_baseline:
        return "no speculation is the best point estimate"
    if gain is None:
        return None
    if ci is None or ci[1] is None:
        return f"{_signed(gain)} % vs {ref} (no interval)"
    figure = f"{_signed(gain)} % [{_signed(ci[0])}, {_signed(ci[1])}]"
    if ci[0] <= 0 <= ci[1]:
        return f"not separable from {'no speculation' if ref == 'none' else ref} ({figure})"
    return f"{figure} vs {ref}"


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)
