"""Where a simulated number came from: a pure function of (method, family, workload, depth).

For a modelled cell it says how its acceptance was obtained — ``fitted`` from N published rows (which
sources), ``borrowed`` (the method's pool on that workload × the family's ratio, from whom), or ``prior``
(the TOML prior) — how the depth shape was obtained (fitted decay or prior), whether the depth lies outside
every depth a source measured for the method (``extrapolated``), and which draft-cost constants are priors
(no draft constant is fitted on the product's own family and GPU: each is a prior with a range, some
informed by batch-1 rows on other hardware, analysis/draft_evidence.py). ``winners``, ``curve`` and
``rescore`` JSON, the dashboard tooltip and drill-down, and the exports carry this object; measured cells get
``{"kind": "measured"}``.
"""

from __future__ import annotations

from functools import cache

from analysis import calibration, params

DRAFT_KEYS = ("pass_ms", "token_frac", "serial_head_ms")


def _host(url: str) -> str:
    return url.split("//", 1)[-1].split("/", 1)[0]


@cache
def provenance(method: str, family: str, workload: str, depth: int) -> dict:
    p = params.load()
    if method == "none" or depth <= 0:
        return {"kind": "modelled", "acceptance": None, "shape": None, "extrapolated": False,
                "measured_depths": [], "draft_cost_priors": [],
                "summary": "no speculation: step times from the cost model (data/sim_params.toml)"}
    if method not in p.methods or workload not in p.workloads:
        return {"kind": "modelled", "acceptance": {"kind": "unknown"}, "shape": None, "extrapolated": True,
                "measured_depths": [], "draft_cost_priors": [], "summary": "no model parameters for this cell"}
    src = calibration.alpha_source(method, family, workload)
    sources = sorted({r.source_url for r in src.rows})
    acc = {"kind": src.kind, "alpha": round(src.alpha, 4), "rows": len(src.rows), "sources": sources,
           "family_ratio": round(src.family_ratio, 4), "family_ratio_kind": src.family_ratio_kind,
           "how": src.how, "files": sorted({r.file for r in src.rows})}
    if src.kind == "borrowed":
        acc["borrowed_from"] = (f"{method} on {workload}: {len(src.rows)} rows from {len(sources)} sources "
                                f"(models: {', '.join(sorted({r.model for r in src.rows})[:6])}) × {family} ratio "
                                f"{src.family_ratio:.2f} ({src.family_ratio_kind})")
    fit = calibration.decay_fit(method)
    shape = {"decay": fit.value, "kind": fit.kind, "range": [fit.low, fit.high], "sources": list(fit.curves),
             "block": fit.block, "block_kind": fit.block_kind}
    measured = list(calibration.measured_depths(method))
    extrapolated = not measured or depth < min(measured) or depth > max(measured)
    pri = params.priors()
    draft_priors = [f"methods.{method}.draft.{k}" for k in DRAFT_KEYS
                    if (pr := pri.get(f"methods.{method}.draft.{k}")) is not None
                    and pr.low is not None and (k != "serial_head_ms" or pr.value > 0)]
    if src.kind == "fitted":
        how = (f"acceptance fitted from {len(src.rows)} published rows ({', '.join(_host(s) for s in sources)})"
               + (f" [{src.how}]" if src.how else ""))
    elif src.kind == "borrowed":
        how = f"acceptance borrowed: {src.how or acc['borrowed_from']}"
    else:
        how = "acceptance is a prior (no published row for this method and workload)"
    summary = (f"{how}; depth shape {fit.kind} (decay {fit.value:.3f}"
               + (f", depth exponent {fit.block:.3f}" if fit.block else "") + ")"
               + (f"; depth {depth} extrapolated (measured: {', '.join(map(str, measured)) or 'none'})"
                  if extrapolated else "")
               + (f"; draft-cost priors: {', '.join(k.rsplit('.', 1)[1] for k in draft_priors)}"
                  if draft_priors else ""))
    return {"kind": "modelled", "acceptance": acc, "shape": shape, "extrapolated": extrapolated,
            "measured_depths": measured, "draft_cost_priors": draft_priors, "summary": summary}


def for_row(row: dict) -> dict:
    """Provenance of a cell row (``backend`` decides measured vs modelled)."""
    if row.get("backend") != "sim":
        return {"kind": "measured", "backend": row.get("backend"), "run_id": row.get("run_id"),
                "summary": f"measured ({row.get('backend')}, run {row.get('run_id')})"}
    return provenance(row["method"], row["family"], row["workload"], int(row["depth"]))
