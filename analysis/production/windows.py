"""Acceptance per segment (or target) over time windows, from counter increases, with 95 % intervals.

vLLM's definitions (DESIGN "Metric definitions"): acceptance rate = Σ accepted / Σ draft tokens,
acceptance length τ = 1 + Σ accepted / Σ drafts, per-position r_i = Σ accepted at i / Σ drafts. A
window's interval is a bootstrap over its scrape intervals (Poisson weights, ratio of weighted sums):
each interval's increase is one unit of traffic. Units next to each other are correlated (a long
request spans several), so with few intervals the band is honest rather than tight.

Tiny windows are not drawn as exact points (the rule, docs/watch.md): a window with fewer than
:data:`MIN_INTERVALS` scrape intervals that drafted anything, or fewer than :data:`MIN_DRAFTS` drafts
(verify steps), has **no** interval and says ``interval: "too few tokens to tell"``. Otherwise the interval
is the envelope of the bootstrap one and a Wilson score interval over the window's drafts — each draft's
accepted fraction lies in [0, 1], so its variance is at most p(1 − p) and the Wilson interval with n = drafts
is never narrower than independent drafts allow. So one busy interval among idle ones (every replicate the
same ratio) or a window where every draft was fully accepted never reads as a zero-width, exact value.

Timestamps in the documents are ISO 8601 in UTC with their offset (``2026-12-03T10:00:00+00:00``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import polars as pl

REPLICATES = 400
MIN_INTERVALS = 3  # scrape intervals with drafted tokens in them
MIN_DRAFTS = 30  # verify steps: below this a window's rate is "too few tokens to tell"
Z95 = 1.959964
TOO_FEW = "too few tokens to tell"
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


def wilson(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``p`` over ``n`` units (n > 0)."""
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denom
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))


def iso_utc(ts) -> str:
    """A stored (naive, UTC) timestamp as ISO 8601 with its offset; an aware one is converted to UTC."""
    from datetime import UTC, datetime

    if isinstance(ts, datetime):
        return (ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)).isoformat()
    return str(ts)


@dataclass(frozen=True, slots=True)
class RateInterval:
    """Acceptance rate and length with their 95 % intervals; ``note`` says why there is none."""

    rate: float | None
    rate_ci: tuple[float | None, float | None]
    length: float | None
    length_ci: tuple[float | None, float | None]
    note: str  # "95 %" or TOO_FEW


def rate_interval(acc: np.ndarray, dtok: np.ndarray, drafts: np.ndarray, seed: int) -> RateInterval:
    """Rate = Σacc/Σdtok and length = 1 + Σacc/Σdrafts over units (scrape intervals), with honest intervals:
    none when too few units drafted or too few drafts; else bootstrap ∪ Wilson-over-drafts (module doc)."""
    n_drafts, n_tok = float(drafts.sum()), float(dtok.sum())
    rate = float(acc.sum()) / n_tok if n_tok > 0 else None
    length = 1 + float(acc.sum()) / n_drafts if n_drafts > 0 else None
    busy = int((dtok > 0).sum())
    if rate is None or busy < MIN_INTERVALS or n_drafts < MIN_DRAFTS:
        return RateInterval(rate, (None, None), length, (None, None), TOO_FEW)
    blo, bhi = ratio_interval(acc, dtok, seed)
    wlo, whi = wilson(min(max(rate, 0.0), 1.0), n_drafts)
    lo = wlo if blo is None else min(blo, wlo)
    hi = whi if bhi is None else max(bhi, whi)
    per_draft = n_tok / n_drafts  # draft tokens per verify step (the depth): maps a rate bound to a length bound
    return RateInterval(rate, (lo, hi), length, (1 + lo * per_draft, 1 + hi * per_draft), "95 %")


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
        seed = zlib.crc32(f"{k['segment']}|{k['window']}".encode())  # hash() of text differs per process
        ri = rate_interval(acc, dtok, drafts, seed)
        per_pos: list[float | None] = []
        pp = per_pos_of.get(tuple(key), {})
        if pp and drafts.sum() > 0:
            per_pos = [_r(pp.get(i, 0.0) / drafts.sum()) for i in range(1, max(pp) + 1)]
        gen = g["generation_tokens"].fill_null(0).sum()
        span = float(g["dt_s"].sum())
        out.append({**{kk: (iso_utc(v) if kk == "window" else v) for kk, v in k.items()},
                    "intervals": g.height, "span_s": round(span, 3), "resets": int(g["reset"].sum()),
                    "gaps": int(g["gap"].sum()), "drafts": float(drafts.sum()), "draft_tokens": float(dtok.sum()),
                    "accepted_tokens": float(acc.sum()), "generation_tokens": float(gen),
                    "acceptance_rate": _r(ri.rate), "acceptance_rate_ci": [_r(x) for x in ri.rate_ci],
                    "acceptance_length": _r(ri.length), "acceptance_length_ci": [_r(x) for x in ri.length_ci],
                    "interval": ri.note,
                    "per_position": per_pos,
                    "output_throughput": _r(gen / span if span > 0 else None, 3)})
    return out
