"""Production acceptance from a trace's observed counters, against the benchmark's: fit, drift, factors.

Owns what re-scoring does with per-request ``drafted_tokens`` / ``accepted_tokens`` (vLLM's
spec-decode counters, logged in production). They were produced by the config the user runs today
(``--default``, or ``--observed`` when it differs), at depth k, so per workload:

* observed α: :func:`analysis.acceptance.fit_alpha_from_counters` with drafts = drafted / k (vLLM
  drafts k tokens per draft), i.e. the i.i.d. α whose E(k) equals 1 + accepted/drafts;
* benchmark α: the same fit on the measured cell(s) of that config and workload (their acceptance
  length τ, averaged over loads: acceptance does not depend on batch size);
* drift = α_observed / α_benchmark − 1. Re-scoring then multiplies every candidate's α on that
  workload by α_observed / α_benchmark — the assumption being that traffic harder or easier than the
  benchmark prompts is harder or easier for every drafter alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from analysis import acceptance
from analysis.rescore import fill
from analysis.rescore.config import Choice
from analysis.rescore.matrix import Matrix


@dataclass(slots=True)
class Drift:
    factors: dict[str, float]  # store workload -> α multiplier
    rows: list[dict]  # one per trace workload with counters (JSON-ready)
    warnings: list[str]


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def benchmark_alpha(m: Matrix, choice: Choice, workload: str) -> tuple[float, str]:
    """(α, provenance) of ``choice`` on ``workload`` in the matrix: measured τ when there is one, else model."""
    taus, prov = [], "measured"
    for conc in m.concurrencies:
        cell = fill.fill(m, choice.method, choice.depth, workload, conc)
        if cell is not None and cell.tau is not None and np.isfinite(cell.tau):
            taus.append(float(cell.tau))
            if cell.provenance != "measured":
                prov = cell.provenance
    if not taus:
        return float("nan"), "none"
    tau = float(np.mean(taus))
    return acceptance.fit_alpha_from_counters(1.0, tau - 1.0, choice.depth), prov


def compute(counters: pl.DataFrame, m: Matrix, observed: Choice, mapping: dict[str, dict[int, float]],
            workloads: list[str]) -> Drift | None:
    """Factors per store workload and a drift row per trace workload; None when the trace has no counters."""
    if counters.height == 0:
        return None
    if observed.method == "none":
        return Drift({}, [], ["the trace has speculative-decoding counters but the observed config is 'none'; "
                              "pass --observed METHOD:DEPTH to use them"])
    k = observed.depth
    rows, warnings = [], []
    num: dict[int, float] = {}
    den: dict[int, float] = {}
    for tw, n_req, drafted, accepted in counters.select("workload", "requests", "drafted", "accepted").iter_rows():
        if not drafted:
            continue
        a_obs = acceptance.fit_alpha_from_counters(drafted / k, float(accepted), k)
        split = mapping.get(tw, {})
        bench = [(wi, wt, *benchmark_alpha(m, observed, workloads[wi])) for wi, wt in split.items()]
        bench = [b for b in bench if np.isfinite(b[2])]
        if not bench:
            warnings.append(f"no benchmark acceptance for {observed.label} on {tw!r}; counters not used there")
            continue
        a_bench = sum(wt * a for _wi, wt, a, _p in bench) / sum(wt for _wi, wt, _a, _p in bench)
        for wi, wt, a, _p in bench:  # request-weighted mean of observed/benchmark per store workload
            num[wi] = num.get(wi, 0.0) + n_req * wt * a_obs / a
            den[wi] = den.get(wi, 0.0) + n_req * wt
        rate_obs = accepted / drafted
        tau_bench = acceptance.expected_tokens_iid(a_bench, k)
        rows.append({
            "workload": tw, "requests_with_counters": int(n_req), "config": observed.label,
            "observed_acceptance_rate": _r(rate_obs), "benchmark_acceptance_rate": _r((tau_bench - 1) / k),
            "observed_alpha": _r(a_obs), "benchmark_alpha": _r(a_bench),
            "drift_pct": _r((a_obs / a_bench - 1) * 100, 2) if a_bench > 0 else None,
            "benchmark_source": ",".join(sorted({p for *_x, p in bench})),
        })
    factors = {workloads[wi]: num[wi] / den[wi] for wi in num if den[wi] > 0}
    return Drift(factors, rows, warnings)
