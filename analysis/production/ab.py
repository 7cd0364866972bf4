"""A/B readout: two targets serving one segment with different configs, compared with the winner rule.

Both arms are cut to the time range they share and into blocks of ``block_s`` seconds (every block of
that range counts, also one an arm left idle). Per arm and block: counter increases (accepted, drafted, output
tokens, time) and latency-histogram bucket increases. The metrics are vLLM's: acceptance rate, output
throughput per GPU (output tokens / time / GPUs), and p50/p99 TTFT, TPOT and e2e latency interpolated
within histogram buckets as Prometheus' ``histogram_quantile`` does. Intervals: a paired bootstrap over
blocks (the same Poisson weights for both arms, so a busy minute weighs on both). The winner rule
(DESIGN): the better point estimate wins *clearly* only when the 95 % interval of the difference
excludes zero and the difference exceeds the practical-equivalence margin; otherwise it is a ``tie``.
With fewer than :data:`MIN_BLOCKS` blocks or :data:`MIN_REQUESTS` requests per arm it is
``too_early``. The shared window's start and end are ISO 8601 in UTC with their offset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis.production import deltas
from analysis.production.windows import iso_utc

MIN_BLOCKS = 5
MIN_REQUESTS = 30
REPLICATES = 400
LATENCY = {"ttft": "ttft_ms", "tpot": "tpot_ms", "e2e": "e2e_ms"}
METRICS: dict[str, bool] = {  # name → higher is better
    "acceptance_rate": True, "acceptance_length": True, "output_throughput_per_gpu": True,
    "p99_ttft_ms": False, "p99_tpot_ms": False, "p99_e2e_ms": False,
    "p50_ttft_ms": False, "p50_tpot_ms": False, "p50_e2e_ms": False,
}


@dataclass(frozen=True, slots=True)
class ABOptions:
    metric: str = "p99_tpot_ms"
    block_s: float = 60.0
    margin_pct: float = 2.0
    seed: int = 0


def histogram_quantile(q: float, les: np.ndarray, counts: np.ndarray) -> float:
    """Prometheus' histogram_quantile on cumulative bucket counts (les ascending, last = +Inf)."""
    if counts.size == 0 or counts[-1] <= 0:
        return float("nan")
    rank = q * counts[-1]
    i = int(np.searchsorted(counts, rank, side="left"))
    i = min(i, counts.size - 1)
    if np.isinf(les[i]):
        return float(les[i - 1]) if i > 0 else float("nan")
    lo_le = les[i - 1] if i > 0 else 0.0
    lo_c = counts[i - 1] if i > 0 else 0.0
    width = counts[i] - lo_c
    if width <= 0:
        return float(les[i])
    return float(lo_le + (les[i] - lo_le) * (rank - lo_c) / width)


@dataclass(slots=True)
class Arm:
    target: str
    label: dict
    gpu_count: int
    sums: dict[str, np.ndarray]  # per block: accepted, draft_tokens, drafts, generation, dt, requests
    hist: dict[str, tuple[np.ndarray, np.ndarray]]  # ttft|tpot|e2e → (les, blocks × les cumulative counts)


def _blocks(iv: pl.DataFrame, block_s: float) -> pl.DataFrame:
    us = int(block_s * 1e6)
    return iv.with_columns((pl.col("ts").dt.epoch("us") // us).alias("block"))


def build_arm(target: str, iv: pl.DataFrame, hist_iv: pl.DataFrame, blocks: list[int], block_s: float) -> Arm:
    b = _blocks(iv.filter(pl.col("target") == target), block_s)
    agg = b.group_by("block").agg(*[pl.col(c).fill_null(0).sum() for c in
                                    ("accepted_tokens", "draft_tokens", "drafts", "generation_tokens",
                                     "requests_ok", "dt_s")])
    idx = pl.DataFrame({"block": blocks}, schema={"block": pl.Int64})
    agg = idx.join(agg, on="block", how="left").fill_null(0).sort("block")
    sums = {c: agg[c].to_numpy().astype(float) for c in agg.columns if c != "block"}
    hist = {}
    h = hist_iv.filter(pl.col("target") == target) if hist_iv.height else hist_iv
    if h.height:
        h = _blocks(h, block_s)
        for metric in LATENCY:
            hm = h.filter(pl.col("metric") == metric)
            if hm.height == 0:
                continue
            les = np.array(sorted(set(hm["le"].to_list())), dtype=float)
            piv = hm.group_by("block", "le").agg(pl.col("v").sum())
            mat = np.zeros((len(blocks), les.size))
            bpos = {blk: i for i, blk in enumerate(blocks)}
            lpos = {le: j for j, le in enumerate(les)}
            for blk, le, v in piv.iter_rows():
                if blk in bpos:
                    mat[bpos[blk], lpos[le]] += v
            hist[metric] = (les, mat)
    last = iv.filter(pl.col("target") == target).tail(1).row(0, named=True)
    label = {k: last[k] for k in ("segment", "family", "method", "depth", "gpu", "workload")}
    return Arm(target, label, int(last["gpu_count"] or 1), sums, hist)


def arm_metrics(arm: Arm, w: np.ndarray) -> dict[str, np.ndarray]:
    """Metric values for each weight row (w: reps × blocks; a row of ones is the point estimate)."""
    s = {k: w @ v for k, v in arm.sums.items()}
    with np.errstate(invalid="ignore", divide="ignore"):
        out = {"acceptance_rate": s["accepted_tokens"] / s["draft_tokens"],
               "acceptance_length": 1 + s["accepted_tokens"] / s["drafts"],
               "output_throughput_per_gpu": s["generation_tokens"] / s["dt_s"] / arm.gpu_count}
    for metric, col in LATENCY.items():
        if metric not in arm.hist:
            continue
        les, mat = arm.hist[metric]
        cum = w @ mat
        for q, p in ((0.99, "p99"), (0.5, "p50")):
            out[f"{p}_{col}"] = np.array([histogram_quantile(q, les, row) * 1000.0 for row in cum])
    return out


def _r(x, nd: int = 4):
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def readout(iv: pl.DataFrame, hist_iv: pl.DataFrame, a: str, b: str, opts: ABOptions) -> dict:
    """The A/B document for targets ``a`` and ``b`` (both must be in ``iv``)."""
    if opts.metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}")
    got = set(iv["target"].to_list()) if iv.height else set()
    missing = [t for t in (a, b) if t not in got]
    if missing:
        return {"verdict": "too_early", "why": f"no intervals for {', '.join(missing)}", "a": {"target": a},
                "b": {"target": b}, "metric": opts.metric}
    ia, ib = iv.filter(pl.col("target") == a), iv.filter(pl.col("target") == b)
    start = max(ia["ts"].min(), ib["ts"].min())
    end = min(ia["ts"].max(), ib["ts"].max())
    both = _blocks(iv.filter(pl.col("target").is_in([a, b]) & pl.col("ts").is_between(start, end)), opts.block_s)
    # every block of the shared range counts, idle or not: dropping a block one arm left idle would drop the
    # other arm's traffic in it too, and a busy host stalls a server for seconds at a time
    blocks = sorted(set(both["block"].to_list()))
    arms = [build_arm(t, both, hist_iv.filter(pl.col("ts").is_between(start, end)) if hist_iv.height else hist_iv,
                      blocks, opts.block_s) for t in (a, b)]
    rng = np.random.default_rng(opts.seed)
    n = len(blocks)
    w = rng.poisson(1.0, size=(REPLICATES, n)).astype(float) if n else np.zeros((REPLICATES, 0))
    ones = np.ones((1, n))
    point = [arm_metrics(arm, ones) for arm in arms]
    reps = [arm_metrics(arm, w) for arm in arms]
    doc_arms = []
    for arm, pt, rp in zip(arms, point, reps, strict=True):
        metrics = {}
        for k, v in pt.items():
            lo, hi = (np.nanquantile(rp[k], [0.025, 0.975]) if np.isfinite(rp[k]).sum() > REPLICATES // 2
                      else (np.nan, np.nan))
            metrics[k] = {"value": _r(v[0]), "ci": [_r(lo), _r(hi)]}
        doc_arms.append({"target": arm.target, **arm.label, "gpu_count": arm.gpu_count,
                         "requests": _r(float(arm.sums["requests_ok"].sum()), 1), "metrics": metrics})
    m = opts.metric
    higher = METRICS[m]
    doc = {"metric": m, "higher_is_better": higher, "blocks": n, "block_s": opts.block_s,
           "window": {"start": iso_utc(start), "end": iso_utc(end)}, "a": doc_arms[0], "b": doc_arms[1],
           "margin_pct": opts.margin_pct}
    reqs = [d["requests"] or 0 for d in doc_arms]
    if m not in point[0] or m not in point[1]:
        return {**doc, "verdict": "too_early", "why": f"{m} is not available for both targets"}
    va, vb = point[0][m][0], point[1][m][0]
    diff = reps[0][m] - reps[1][m]
    ok = np.isfinite(diff)
    if n < MIN_BLOCKS or min(reqs) < MIN_REQUESTS or ok.sum() < REPLICATES // 2 or not (np.isfinite(va)
                                                                                     and np.isfinite(vb)):
        return {**doc, "verdict": "too_early", "difference": _r(va - vb),
                "why": f"{n} shared block(s) of {opts.block_s:g} s and {min(reqs):g} requests in the smaller arm "
                       f"(need {MIN_BLOCKS} and {MIN_REQUESTS})"}
    lo, hi = np.quantile(diff[ok], [0.025, 0.975])
    a_better = (va > vb) if higher else (va < vb)
    win, lose = (0, 1) if a_better else (1, 0)
    vals = (va, vb)
    gain = (vals[win] / vals[lose] - 1) * 100 if higher else (vals[lose] / vals[win] - 1) * 100
    clear = (lo > 0 or hi < 0) and abs(gain) > opts.margin_pct
    return {**doc, "difference": _r(va - vb), "difference_ci": [_r(lo), _r(hi)],
            "verdict": "winner" if clear else "tie", "clear": bool(clear),
            "winner": doc_arms[win]["target"] if clear else None,
            "leader": doc_arms[win]["target"], "gain_pct": _r(gain, 2)}


def histogram_intervals(hist: pl.DataFrame, iv: pl.DataFrame) -> pl.DataFrame:
    """Histogram bucket increases between consecutive samples (resets follow the samples')."""
    if hist.height:  # a NaN bound cannot be ordered or looked up (NaN != NaN): never let one reach the pivot
        hist = hist.filter(pl.col("le").is_not_nan())
    if hist.height == 0:
        return hist.rename({"count": "v"}) if "count" in hist.columns else hist
    return deltas.keyed_intervals(hist.rename({"count": "v"}), ["metric", "le"], iv.select("target", "ts", "reset"))
