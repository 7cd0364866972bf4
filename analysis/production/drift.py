"""The drift decision: re-score a segment with its production acceptance and say whether the winner changed.

For a segment running (family, method, depth) on a GPU with a workload, its production counters over a
period become a one-shard trace (requests, mean output and input lengths, drafted and accepted tokens),
re-scored twice by analysis/rescore — once with the benchmark's acceptance (``acceptance="benchmark"``),
once with the production counters (the ``--acceptance auto`` path: analysis/rescore/drift.py scales every
candidate's acceptance by production / benchmark). The status is:

* ``winner_changed`` — under production acceptance the deployed (method, depth) is no longer the answer, and
  the pick differs from the pick under benchmark acceptance: either another candidate wins *clearly* (the
  winner rule's p_best ≥ 0.95 and the deployed one is not tied with it), or the deployed one is *clearly
  beaten* — it is outside the tied set and the pick's gain over it has a 95 % interval above 0 — even when the
  leaders among themselves are a tie (``clear: false``; the recommendation is then the pick of that tie). The
  only drift worth an alert (exit 3);
* ``acceptance_outside_band`` — the winner did not change, but production acceptance lies outside the
  benchmark's band: its 95 % interval over the period (analysis.production.windows.rate_interval) does not
  overlap the band of the benchmark cells. The benchmark no longer describes this traffic (a re-measure on it
  is due), so this alerts too (exit 3). ``outside_band`` is true/false, or null when the period has too few
  tokens to tell;
* ``no_change`` — the same pick, or the deployed one still could be best (tied, or a gain not separable from 0),
  and production acceptance is inside the band (or too few tokens to tell);
* ``no_benchmark`` / ``no_traffic`` — nothing to compare against, or no drafted tokens in the period.

``ALERTS`` are the statuses ``analysis drift`` exits 3 for.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import polars as pl

from analysis.labels import candidate
from analysis.production.expectation import expectation
from analysis.production.windows import RateInterval
from analysis.rescore.config import Choice
from analysis.rescore.core import RescoreOptions, rescore
from analysis.rescore.matrix import load_matrices
from ingest.errors import UsageError

ALERTS = ("winner_changed", "acceptance_outside_band")
TRACE_REQUESTS = 400  # the synthetic trace's size: only means and counter totals matter to re-scoring


@dataclass(frozen=True, slots=True)
class DriftOptions:
    metric: str = "output_throughput"
    concurrency: float | None = None  # load per server; default: the store's middle load level


def _r(x, nd: int = 4):
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def segment_trace(segment: str, workload: str | None, totals: dict) -> pl.DataFrame:
    """A trace with the segment's mean lengths and its production counters spread evenly over its requests."""
    reqs = totals.get("requests_ok") or 0.0
    n = TRACE_REQUESTS
    out_mean = (totals.get("generation_tokens") or 0.0) / reqs if reqs > 0 else 256.0
    in_mean = (totals.get("prompt_tokens") or 0.0) / reqs if reqs > 0 else 512.0
    return pl.DataFrame({
        "timestamp_s": pl.Series([None] * n, dtype=pl.Float64),
        "input_tokens": [max(1, round(in_mean))] * n,
        "output_tokens": [max(1, round(out_mean))] * n,
        "workload": [workload] * n, "shard": [segment] * n,
        "drafted_tokens": [float(totals["draft_tokens"]) / n] * n,
        "accepted_tokens": [float(totals["accepted_tokens"]) / n] * n,
    })


def _rec(doc: dict, segment: str) -> dict | None:
    return next((r for r in doc["recommendations"] if r["shard"] == segment), None)


def _pick(rec: dict | None) -> dict | None:
    if rec is None:
        return None
    return {"method": rec["method"], "depth": rec["depth"], "clear": rec["clear"],
            "tied": [candidate(t['method'], t['depth']) for t in rec["tied"]],
            "gain_vs_deployed_pct": rec["gain_vs_default_pct"], "gain_ci_pct": rec["gain_ci_pct"],
            "expected": rec["expected"], "vllm_args": rec["vllm_args"], "keep_deployed": rec["keep_default"]}


def outside_band(band: list | None, ci: tuple[float | None, float | None]) -> bool | None:
    """True when the production interval lies wholly outside the benchmark band, False when they overlap, None
    when either is unknown (no band, or too few tokens to tell)."""
    if not band or band[0] is None or band[1] is None or ci[0] is None or ci[1] is None:
        return None
    return bool(ci[1] < band[0] or ci[0] > band[1])


def decide(con: duckdb.DuckDBPyConnection, group: dict, totals: dict, opts: DriftOptions,
           period: RateInterval | None = None) -> dict:
    """The drift row of one segment × config (group: segment, family, method, depth, gpu, workload); ``period``
    is production acceptance over the whole period with its interval."""
    seg, family, method, depth = group["segment"], group["family"], group["method"], group["depth"]
    ci = period.rate_ci if period else (None, None)
    row = {**{k: group.get(k) for k in ("segment", "family", "method", "depth", "gpu", "workload")},
           "production": {"acceptance_rate": _r(totals["accepted_tokens"] / totals["draft_tokens"], 6)
                          if totals.get("draft_tokens") else None,
                          "acceptance_rate_ci": [_r(x, 6) for x in ci],
                          "interval": period.note if period else None,
                          "acceptance_length": _r(1 + totals["accepted_tokens"] / totals["drafts"], 6)
                          if totals.get("drafts") else None,
                          "draft_tokens": totals.get("draft_tokens"), "requests": totals.get("requests_ok")}}
    exp = expectation(con, family, method, depth, group.get("workload"), group.get("gpu"))
    row["benchmark"] = exp
    rate = row["production"]["acceptance_rate"]
    row["gap_pct"] = _r((rate / exp["acceptance_rate"] - 1) * 100, 2) if exp and rate is not None and \
        exp["acceptance_rate"] else None
    row["outside_band"] = outside_band(exp["band"] if exp else None, ci)
    if not family or not method or depth is None or method == "none":
        return {**row, "status": "no_benchmark", "why": "the targets file does not say family, method and depth"}
    if not totals.get("draft_tokens"):
        return {**row, "status": "no_traffic", "why": "no drafted tokens in the period"}
    if exp is None:
        return {**row, "status": "no_benchmark",
                "why": f"no benchmark cells for {family} {candidate(method, depth)}"
                       + (f" on {group['workload']}" if group.get("workload") else "")}
    deployed = Choice(method, int(depth))
    trace = segment_trace(seg, group.get("workload"), totals)
    base = {"families": (family,), "gpus": (exp_gpu(con, group, exp),), "default": deployed, "observed": deployed,
            "metric": opts.metric, "concurrency": opts.concurrency, "shard_by": "column"}
    try:
        bench = rescore(con, trace, RescoreOptions(**base, acceptance="benchmark"))
        prod = rescore(con, trace, RescoreOptions(**base, acceptance="auto"))
    except UsageError as exc:
        return {**row, "status": "no_benchmark", "why": str(exc)}
    b, p = _pick(_rec(bench, seg)), _pick(_rec(prod, seg))
    row.update({"metric": opts.metric, "at_benchmark_acceptance": b, "at_production_acceptance": p,
                "rescore_drift": prod["acceptance"]["drift"], "simulated": prod["simulated"],
                "warnings": prod["warnings"]})
    if b is None or p is None:
        return {**row, "status": "no_benchmark", "why": "re-scoring found no candidate for this segment"}
    deployed_beaten = (candidate(deployed.method, deployed.depth) not in (p.get("tied") or [])
                       and bool(p.get("gain_ci_pct")) and p["gain_ci_pct"][0] is not None and p["gain_ci_pct"][0] > 0)
    changed = ((p["clear"] or deployed_beaten) and not p["keep_deployed"]
               and (p["method"], p["depth"]) != (b["method"], b["depth"]))
    row["deployed_clearly_beaten"] = deployed_beaten
    row["status"] = ("winner_changed" if changed else "acceptance_outside_band" if row["outside_band"]
                     else "no_change")
    row["recommendation"] = {"method": p["method"], "depth": p["depth"], "clear": p["clear"],
                             "gain_vs_deployed_pct": p["gain_vs_deployed_pct"], "gain_ci_pct": p["gain_ci_pct"],
                             "vllm_args": p["vllm_args"]}
    return row


def exp_gpu(con: duckdb.DuckDBPyConnection, group: dict, exp: dict) -> str:
    """The GPU to re-score on: the segment's when the store has it for this family, else the store's first."""
    gpus = sorted({g for (_f, g) in load_matrices(con, (group["family"],))})
    if group.get("gpu") in gpus:
        return group["gpu"]
    if not gpus:
        raise_missing(group)
    return gpus[0]


def raise_missing(group: dict) -> None:
    raise UsageError(f"no benchmark cells for family {group['family']!r} in the store")
