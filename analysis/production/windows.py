"""Acceptance per segment (or target) over time windows, from counter increases, with 95 % intervals.

vLLM's definitions (DESIGN "Metric definitions"): acceptance rate = Σ accepted / Σ draft tokens,
acceptance length τ = 1 + Σ accepted / Σ drafts, per-position r_i = Σ accepted at i / Σ drafts. A
window's interval is a bootstrap over its scrape intervals (Poisson weights, ratio of weighted sums):
each interval's increase is one unit of traffic. Units next to each other are correlated (a long
request spans several), so with few intervals the band is honest rather than tight — a window of
fewer than :data:`MIN_INTERVALS` intervals has no interval at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

REPLICATES = 400
MIN_INTERVALS = 3
GROUP = ("segment", "family", "method", "depth", "gpu", "workload")


@dataclass(frozen=True, slots=True)
class WindowSpec:
    window_s: float = 3600.0
    by_target: bool = False


def _window_start(window_s: float) -> pl.Expr:
    us = int(window_s * 1e6)
    return (pl.col("ts").dt.epoch("us") // us * us).cast(pl.Datetime("us")).alias("window")


def ratio_interval(num: np.ndarray, den: np.ndarray, seed: int = 0, reps: int = REPLICATES
                   ) -> tuple[float | None, float | None]:
    """95 % Poisson-bootstrap interval of Σnum/Σden over units (None when too few units or no denominator)."""
    if num.size < MIN_INTERVALS or den.sum() <= 0:
        return None, None
    rng = np.random.default_rng(seed)
    w = rng.poisson(1.0, size=(reps, num.size)).astype(float)
    d = w @ den
    ok = d > 0
    r = (w @ num)[ok] / d[ok]
    if r.size < reps // 2:
        return None, None
    lo, hi = np.quantile(r, [0.025, 0.975])
    return float(lo), float(hi)


def replicate_ratios(num: np.ndarray, den: np.ndarray, w: np.ndarray) -> np.ndarray:
    d = w @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d > 0, (w @ num) / d, np.nan)


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def acceptance_windows(iv: pl.DataFrame, pos_iv: pl.DataFrame | None, spec: WindowSpec) -> list[dict]:
    """One JSON-ready row per (group[, target], window): counts, rate, length, r_i, 95 % intervals."""
    if iv.height == 0:
        return []
    keys = [*GROUP, *(["target"] if spec.by_target else []), "window"]
    iv = iv.filter(pl.col("draft_tokens").is_not_null()).with_columns(_window_start(spec.window_s))
    per_pos_of: dict[tuple, dict[int, float]] = {}
    if pos_iv is not None and pos_iv.height:
        pos = pos_iv.select("target", "ts", "position", "v").join(
            iv.select("target", "ts", *[k for k in keys if k != "target"]), on=["target", "ts"], how="inner")
        for row in pos.group_by([*keys, "position"]).agg(pl.col("v").sum()).iter_rows(named=True):
            per_pos_of.setdefault(tuple(row[k] for k in keys), {})[int(row["position"])] = row["v"]
    out = []
    for key, g in iv.group_by(keys, maintain_order=True):
        k = dict(zip(keys, key, strict=True))
        acc, dtok, drafts = (g[c].fill_null(0).to_numpy().astype(float)
                             for c in ("accepted_tokens", "draft_tokens", "drafts"))
        seed = abs(hash((k["segment"], str(k["window"])))) % (2**32)
        rate = acc.sum() / dtok.sum() if dtok.sum() > 0 else None
        length = 1 + acc.sum() / drafts.sum() if drafts.sum() > 0 else None
        rlo, rhi = ratio_interval(acc, dtok, seed)
        llo, lhi = ratio_interval(acc, drafts, seed)
        per_pos: list[float | None] = []
        pp = per_pos_of.get(tuple(key), {})
        if pp and drafts.sum() > 0:
            per_pos = [_r(pp.get(i, 0.0) / drafts.sum()) for i in range(1, max(pp) + 1)]
        gen = g["generation_tokens"].fill_null(0).sum()
        span = float(g["dt_s"].sum())
        out.append({**{kk: (str(v) if kk == "window" else v) for kk, v in k.items()},
                    "intervals": g.height, "span_s": round(span, 3), "resets": int(g["reset"].sum()),
                    "gaps": int(g["gap"].sum()), "drafts": float(drafts.sum()), "draft_tokens": float(dtok.sum()),
                    "accepted_tokens": float(acc.sum()), "generation_tokens": float(gen),
                    "acceptance_rate": _r(rate), "acceptance_rate_ci": [_r(rlo), _r(rhi)],
                    "acceptance_length": _r(length),
                    "acceptance_length_ci": [_r(1 + llo) if llo is not None else None,
                                             _r(1 + lhi) if lhi is not None else None],
                    "per_position": per_pos,
                    "output_throughput": _r(gen / span if span > 0 else None, 3)})
    return out
