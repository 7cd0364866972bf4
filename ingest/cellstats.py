"""A cell's stored metrics and bootstrap replicates, derived from its samples when the cell lands.

Every writer (sim runner, vLLM runner, importers) goes through here, so every row in ``cells`` follows
the same definitions — vLLM's own (see docs/metrics.md):

* acceptance rate  = accepted draft tokens / drafted tokens (counter deltas over the cell)
* acceptance length τ = 1 + accepted / drafts; per-position r_i = accepted_at_i / drafts
* output throughput = output tokens of successful requests / measured window (s)
* TPOT = (e2e − TTFT)/(output tokens − 1); p50/p90/p99 by linear interpolation (numpy's default,
  as ``vllm bench serve`` computes them)

Bootstrap: ``B`` Poisson-weighted replicates over the cell's successful requests, seeded by the cell id so
replicates are reproducible. Throughput replicates rescale the point estimate by the resampled
tokens-per-second of requests (Σw·tokens / Σw·e2e), the ratio estimator for a closed-loop load.
Acceptance replicates need per-request drafted/accepted counts; without them they stay null and the
winner rule will not call such a difference clear.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from ingest.records import SpecCounters

BOOTSTRAP_REPLICATES = 200
PERCENTILES = (50, 90, 99)


@dataclass(slots=True)
class CellMetrics:
    values: dict[str, float | int | None]
    positions: list[float]  # r_i for i = 1..k


def _pct(values: np.ndarray, q: float) -> float | None:
    values = values[np.isfinite(values)]
    return float(np.percentile(values, q)) if values.size else None


def _nz(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def derive(
    requests: pl.DataFrame,
    *,
    depth: int,
    window_s: float | None,
    gpu_count: int,
    counters: SpecCounters | None = None,
    itl_ms: np.ndarray | None = None,
) -> CellMetrics:
    """Headline metrics of one cell from its per-request samples (and counter deltas when measured)."""
    ok = requests.filter(pl.col("ok").fill_null(True)) if requests.height else requests
    out_tokens = ok["output_tokens"].cast(pl.Float64).to_numpy() if ok.height else np.zeros(0)
    ttft = ok["ttft_ms"].cast(pl.Float64).to_numpy() if ok.height else np.zeros(0)
    tpot = ok["tpot_ms"].cast(pl.Float64).fill_null(np.nan).to_numpy() if ok.height else np.zeros(0)
    e2e = ok["e2e_ms"].cast(pl.Float64).to_numpy() if ok.height else np.zeros(0)
    total_out = float(np.nansum(out_tokens))
    window = float(window_s) if window_s and window_s > 0 else None
    v: dict[str, float | int | None] = {
        "n_requests": int(requests.height),
        "n_failed": int(requests.height - ok.height),
        "window_s": window,
        "gpu_count": int(gpu_count),
        "output_tokens": total_out,
        "output_throughput": total_out / window if window else None,
        "request_throughput": ok.height / window if window else None,
        "mean_ttft_ms": _nz(float(np.nanmean(ttft))) if ttft.size else None,
        "mean_tpot_ms": _nz(float(np.nanmean(tpot))) if np.isfinite(tpot).any() else None,
        "mean_e2e_ms": _nz(float(np.nanmean(e2e))) if e2e.size else None,
    }
    v["output_throughput_per_gpu"] = (
        v["output_throughput"] / gpu_count if v["output_throughput"] is not None and gpu_count > 0 else None
    )
    itl = np.asarray(itl_ms, dtype=float) if itl_ms is not None else np.zeros(0)
    for name, arr in (("ttft_ms", ttft), ("tpot_ms", tpot), ("itl_ms", itl), ("e2e_ms", e2e)):
        for q in PERCENTILES:
            v[f"p{q}_{name}"] = _pct(arr, q)

    positions: list[float] = []
    drafts = draft_tokens = accepted = None
    if counters is not None and counters.drafts > 0:
        drafts, draft_tokens, accepted = counters.drafts, counters.draft_tokens, counters.accepted_tokens
        positions = [a / counters.drafts for a in counters.accepted_per_pos]
    elif depth > 0 and ok.height and ok["drafted_tokens"].null_count() < ok.height:
        draft_tokens = float(ok["drafted_tokens"].sum())
        accepted = float(ok["accepted_tokens"].sum())
        drafts = draft_tokens / depth if draft_tokens else None
    v["drafts"], v["draft_tokens"], v["accepted_tokens"] = drafts, draft_tokens, accepted
    v["acceptance_rate"] = accepted / draft_tokens if draft_tokens else None
    v["acceptance_length"] = 1.0 + accepted / drafts if drafts else None
    return CellMetrics(values=v, positions=positions)


def _weighted_quantile(sorted_vals: np.ndarray, weights_sorted: np.ndarray, q: float) -> np.ndarray:
    """Per replicate (rows of weights), the q-quantile of ``sorted_vals`` under those weights."""
    cum = np.cumsum(weights_sorted, axis=1)
    target = q * cum[:, -1]
    idx = (cum < target[:, None]).sum(axis=1)
    idx = np.minimum(idx, sorted_vals.size - 1)
    out = sorted_vals[idx].astype(float)
    out[cum[:, -1] == 0] = np.nan
    return out


def bootstrap(
    requests: pl.DataFrame, metrics: CellMetrics, *, depth: int, seed: int, replicates: int = BOOTSTRAP_REPLICATES
) -> dict[str, np.ndarray]:
    """Poisson-bootstrap replicates (length ``replicates``) of the cell's headline metrics."""
    ok = requests.filter(pl.col("ok").fill_null(True)) if requests.height else requests
    n = ok.height
    nan = np.full(replicates, np.nan)
    out: dict[str, np.ndarray] = {}
    if n == 0:
        return {k: nan.copy() for k in
                ("output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate",
                 "acceptance_length")}
    rng = np.random.default_rng(seed)
    w = rng.poisson(1.0, size=(replicates, n)).astype(np.float64)
    tokens = ok["output_tokens"].cast(pl.Float64).fill_null(0).to_numpy()
    e2e = ok["e2e_ms"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    point_tput = metrics.values.get("output_throughput")
    finite = np.isfinite(e2e)
    if point_tput is not None and finite.any():
        base = tokens[finite].sum() / e2e[finite].sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = (w[:, finite] @ tokens[finite]) / (w[:, finite] @ e2e[finite])
        out["output_throughput"] = point_tput * rate / base
    else:
        out["output_throughput"] = nan.copy()
    for col, key in (("e2e_ms", "p99_e2e_ms"), ("tpot_ms", "p99_tpot_ms"), ("ttft_ms", "p99_ttft_ms")):
        vals = ok[col].cast(pl.Float64).fill_null(np.nan).to_numpy()
        keep = np.isfinite(vals)
        if not keep.any():
            out[key] = nan.copy()
            continue
        order = np.argsort(vals[keep], kind="stable")
        out[key] = _weighted_quantile(vals[keep][order], w[:, keep][:, order], 0.99)
    drafted = ok["drafted_tokens"].cast(pl.Float64).to_numpy() if depth > 0 else None
    if drafted is not None and np.isfinite(drafted).all() and drafted.sum() > 0:
        accepted = ok["accepted_tokens"].cast(pl.Float64).fill_null(0).to_numpy()
        wd, wa = w @ drafted, w @ accepted
        with np.errstate(invalid="ignore", divide="ignore"):
            out["acceptance_rate"] = wa / wd
            out["acceptance_length"] = 1.0 + wa / (wd / depth)
    else:
        out["acceptance_rate"] = nan.copy()
        out["acceptance_length"] = nan.copy()
    return out


def seed_for(cell_id: str) -> int:
    return int(cell_id[:12], 16)
